"""The notebooks in notebooks/ run top to bottom without an error (executed with nbclient).

Skipped when nbclient / nbformat / ipykernel are not installed (`pip install -e ".[test]"`
installs them). Each notebook runs in its own kernel with notebooks/ as working
directory, in float32 (the kernel does not inherit this test process's x64 switch). The
kernels are other processes: the notebooks run one after another in the background,
from the start of the session, while the in-process tests compile (`tests/background.py`).

Every notebook's first code cell installs cfrjax from `CFRJAX_SOURCE` (a git URL or a
wheel) in Colab. `INSTALLED` runs in that mode here, from the local checkout: its kernel
gets `CFRJAX_SOURCE` = the wheel of this checkout (`built_wheel.py`, shared with
`test_wheel.py`) and pip's `PIP_TARGET` (a throwaway folder) and `PIP_NO_DEPS`, so the cell
pip-installs the wheel there without downloading anything, and every later cell imports
that copy of cfrjax, not the checkout's.

A notebook that needs an optional extra (`EXTRAS`) is skipped, naming the extra, where
its modules are not installed.
"""

import importlib.util
import os
import re
import tomllib

import pytest

import background
from selection import cases
import built_wheel

nbformat = pytest.importorskip("nbformat", reason="nbformat not installed (pip install nbformat)")
nbclient = pytest.importorskip("nbclient", reason="nbclient not installed (pip install nbclient)")
pytest.importorskip("ipykernel", reason="ipykernel not installed (pip install ipykernel)")

NOTEBOOKS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "notebooks")
NAMES = sorted(f for f in os.listdir(NOTEBOOKS) if f.endswith(".ipynb")) if os.path.isdir(NOTEBOOKS) else []
INSTALLED = "01_quickstart.ipynb"  # run with its install cell installing the checkout's wheel
# Default suite: the installed quickstart and the poker notebook (in the background); the
# others are slow cases, run in the test itself.
FAST = [n for n in (INSTALLED, "03_poker_river.ipynb") if n in NAMES]
# Notebooks that need an optional extra of pyproject.toml.
EXTRAS = {"05_value_network.ipynb": "nn"}


def _extra_modules(extra):
    """The modules of pyproject.toml's optional extra `extra` (its packages' names)."""
    with open(os.path.join(os.path.dirname(NOTEBOOKS), "pyproject.toml"), "rb") as f:
        deps = tomllib.load(f)["project"]["optional-dependencies"][extra]
    return [re.split(r"[\s<>=!~;\[]", d, maxsplit=1)[0] for d in deps]


def _text(cell):
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.output_type == "stream")


def _execute(name, env=None):
    """`(None if every cell ran else the error text, the notebook as run)`."""
    nb = nbformat.read(os.path.join(NOTEBOOKS, name), as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": NOTEBOOKS}})
    try:
        client.execute(**({} if env is None else {"env": env}))
    except nbclient.exceptions.CellExecutionError as e:
        return str(e), nb
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    return (f"error outputs: {errors}" if errors else None), nb


def _install_env():
    """The kernel environment of `INSTALLED`: the install cell's Colab mode, from the checkout."""
    built = built_wheel.build()
    if built["wheel"] is None:
        return None, f"pip wheel failed (exit {built['returncode']}):\n{built['output']}"
    target = built_wheel.temp_dir("cfrjax-notebook-site-")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(CFRJAX_SOURCE=built["wheel"], PIP_TARGET=target, PIP_NO_DEPS="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env, target


def _execute_all():
    results = {}
    for name in FAST:
        if name == INSTALLED:
            env, target = _install_env()
            if env is None:
                results[name] = dict(error=target, install_output="", target=None)
                continue
            error, nb = _execute(name, env)
            code = [c for c in nb.cells if c.cell_type == "code"]
            results[name] = dict(error=error, install_output=_text(code[0]) if code else "", target=target)
        else:
            results[name] = dict(error=_execute(name)[0])
    return results


BACKGROUND = {"notebooks": _execute_all}


def test_there_are_notebooks():
    assert len(NAMES) >= 4, NAMES


# Only the default cases use the background job: a slow case alone does not start it.
@pytest.mark.parametrize("name", cases(NAMES, FAST, marks=lambda n: [pytest.mark.background("notebooks")] * (n in FAST)))
def test_notebook_runs(name):
    if name in EXTRAS:
        extra = EXTRAS[name]
        missing = [m for m in _extra_modules(extra) if importlib.util.find_spec(m) is None]
        if missing:
            pytest.skip(f"{name} needs the {extra!r} extra (pip install -e '.[{extra}]'): {', '.join(missing)} "
                        "not installed")
    result = background.result(__name__, "notebooks")[name] if name in FAST else dict(error=_execute(name)[0])
    if result["error"] is not None:
        pytest.fail(f"{name}: a cell failed:\n{result['error']}", pytrace=False)


def test_no_placeholder_in_install_cells():
    for name in NAMES:
        nb = nbformat.read(os.path.join(NOTEBOOKS, name), as_version=4)
        first = next(c for c in nb.cells if c.cell_type == "code")
        assert 'CFRJAX_SOURCE = ""' in first.source, (name, first.source)
        assert "OWNER" not in nbformat.writes(nb), name


@pytest.mark.background("notebooks")
def test_install_cell_installs_the_checkouts_wheel():
    """The install cell of `INSTALLED` pip-installed the wheel and the notebook ran on it."""
    res = background.result(__name__, "notebooks")[INSTALLED]
    if res["target"] is None:
        pytest.fail(res["error"], pytrace=False)
    where = os.path.realpath(os.path.join(res["target"], "cfrjax"))
    assert f"cfrjax from {where}" in res["install_output"] or f"cfrjax from {res['target']}" in res["install_output"], \
        (res["install_output"], res["target"])
    assert res["error"] is None, res["error"]
