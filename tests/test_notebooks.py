"""The notebooks in notebooks/ run top to bottom without an error (executed with nbclient).

Skipped when nbclient / nbformat / ipykernel are not installed (`pip install -e ".[test]"`
installs them). Each notebook runs in its own kernel with notebooks/ as working
directory, in float32 (the kernel does not inherit this test process's x64 switch). The
kernels are other processes: the notebooks run one after another in the background,
from the start of the session, while the in-process tests compile (`tests/background.py`).
"""

import os

import pytest

import background

nbformat = pytest.importorskip("nbformat", reason="nbformat not installed (pip install nbformat)")
nbclient = pytest.importorskip("nbclient", reason="nbclient not installed (pip install nbclient)")
pytest.importorskip("ipykernel", reason="ipykernel not installed (pip install ipykernel)")

NOTEBOOKS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "notebooks")
NAMES = sorted(f for f in os.listdir(NOTEBOOKS) if f.endswith(".ipynb")) if os.path.isdir(NOTEBOOKS) else []


def _execute(name):
    """`None` if every cell ran, else the error text."""
    nb = nbformat.read(os.path.join(NOTEBOOKS, name), as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": NOTEBOOKS}})
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as e:
        return str(e)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    return f"error outputs: {errors}" if errors else None


def _execute_all():
    return {name: _execute(name) for name in NAMES}


BACKGROUND = {"notebooks": _execute_all}


def test_there_are_notebooks():
    assert len(NAMES) >= 4, NAMES


@pytest.mark.background("notebooks")
@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs(name):
    results = background.result(__name__, "notebooks")
    if results[name] is not None:
        pytest.fail(f"{name}: a cell failed:\n{results[name]}", pytrace=False)
