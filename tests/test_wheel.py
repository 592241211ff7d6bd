"""The wheel works outside the source tree: built from this checkout (`built_wheel.py`),
installed with `pip install --no-deps` into a fresh venv that sees the running
environment's packages (jax, OpenSpiel, ... are not downloaded again), then run from /tmp:
`cfrjax games` lists the shipped poker specs and `cfrjax solve hunl_river` finds its spec
by name. The running environment is the one pytest runs in, a venv or not: its
site-packages folders are named in a `.pth` file of the new venv (`--system-site-packages`
would expose the base interpreter's packages instead, without jax when the suite runs in a
user's venv). The folders are appended to the path as they are, their own `.pth` files
not processed, so this checkout's editable install (an import hook set up by such a file)
is not active, and the venv's `cfrjax` is the wheel's. The `cuda12` extra is checked by name in
the wheel's METADATA.

The build, the venv and the two command-line runs are one background job
(`tests/background.py`), overlapped with the in-process tests; the tests read its result.
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
import time
import zipfile

import pytest

import background
import built_wheel

SPECS = ("hunl_river", "hunl_river_full", "hunl_turn", "hunl_turn_full", "hunl_turn_full_raise", "hunl_flop_full",
         "hunl_river_full_rake", "hunl_turn_full_rake")
TIMEOUT_S = 240


def _run(argv, **kw):
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def _collect(p):
    try:
        out, _ = p.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        out += f"\n[killed after {TIMEOUT_S} s]"
    return dict(returncode=p.returncode, output=out)


def _see_running_packages(python: str) -> dict:
    """Name this process's site-packages folders in a `.pth` file of the venv whose
    interpreter is `python` (its own site-packages stays first on the path)."""
    try:
        purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 capture_output=True, text=True, timeout=TIMEOUT_S, check=True).stdout.strip()
        with open(os.path.join(purelib, "_cfrjax_tests_running_env.pth"), "w") as f:
            f.write("".join(p + "\n" for p in site.getsitepackages() if os.path.isdir(p)))
    except (OSError, subprocess.SubprocessError) as e:
        return dict(returncode=1, output=f"{type(e).__name__}: {e}")
    return dict(returncode=0, output=purelib)


def _install_and_run():
    t0 = time.perf_counter()
    built = built_wheel.build()
    res = dict(build=built)
    if built["wheel"] is None:
        return res
    with zipfile.ZipFile(built["wheel"]) as z:
        res["names"] = z.namelist()
        meta = next(n for n in res["names"] if n.endswith(".dist-info/METADATA"))
        res["metadata"] = z.read(meta).decode()
    venv = os.path.join(built_wheel.temp_dir("cfrjax-venv-"), "venv")
    res["venv"] = os.path.realpath(venv)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", JAX_PLATFORMS="cpu")
    python = os.path.join(venv, "bin", "python")
    steps = [[sys.executable, "-m", "venv", "--without-pip", venv],
             None,  # the running environment's packages made visible (_see_running_packages)
             # the running environment's pip, run by the venv's interpreter, installs into the venv
             [python, "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed", built["wheel"]]]
    for argv in steps:
        r = _see_running_packages(python) if argv is None else _collect(_run(argv, env=env, cwd="/tmp"))
        res.setdefault("setup", []).append(dict(argv=argv or ["(write .pth)"], **r))
        if r["returncode"] != 0:
            return res
    bin_ = os.path.join(venv, "bin")
    runs = {  # started together: the two CLI runs mostly compile, one core each
        "solve": [os.path.join(bin_, "cfrjax"), "solve", "hunl_river", "--iterations", "100"],
        "games": [os.path.join(bin_, "cfrjax"), "games"],
        "where": [os.path.join(bin_, "python"), "-c",
                  "import os, cfrjax, cfrjax.load as l; print(os.path.realpath(cfrjax.__file__)); "
                  "print(os.path.realpath(l.spec_path('hunl_river')))"],
    }
    procs = {k: _run(argv, env=env, cwd="/tmp") for k, argv in runs.items()}
    res.update({k: _collect(p) for k, p in procs.items()})
    res["seconds"] = time.perf_counter() - t0
    return res


BACKGROUND = {"wheel": _install_and_run}


def _result():
    res = background.result(__name__, "wheel")
    b = res["build"]
    if b["wheel"] is None:
        pytest.fail(f"pip wheel failed (exit {b['returncode']}, isolated build: {b['isolated']}):\n{b['output']}",
                    pytrace=False)
    return res


def _installed(res):
    for step in res.get("setup", []):
        if step["returncode"] != 0:
            pytest.fail(f"{' '.join(step['argv'])} failed (exit {step['returncode']}):\n{step['output']}",
                        pytrace=False)
    return res


@pytest.mark.background("wheel")
def test_wheel_ships_specs_and_names_cuda12_extra():
    res = _result()
    for name in SPECS:
        assert f"cfrjax/specs/{name}.toml" in res["names"], (name, [n for n in res["names"] if "specs" in n])
    assert "cfrjax/public/native_showdown.cc" in res["names"]      # the native CPU showdown's source (built on use)
    headers = [line.strip() for line in res["metadata"].splitlines()]
    assert "Provides-Extra: cuda12" in headers, [h for h in headers if h.startswith(("Provides-Extra", "Requires"))]
    assert any(h.startswith("Requires-Dist: jax[cuda12]") and 'extra == "cuda12"' in h for h in headers)


@pytest.mark.background("wheel")
def test_installed_wheel_is_imported_not_the_checkout():
    res = _installed(_result())
    where = res["where"]
    assert where["returncode"] == 0, where["output"]
    module, spec = where["output"].split()[-2:]
    assert module.startswith(res["venv"] + os.sep), (module, res["venv"])
    assert spec.startswith(res["venv"] + os.sep) and spec.endswith("cfrjax/specs/hunl_river.toml"), spec


@pytest.mark.background("wheel")
def test_installed_cli_lists_shipped_specs():
    res = _installed(_result())
    games = res["games"]
    assert games["returncode"] == 0, games["output"]
    rows = {line.split()[0]: line for line in games["output"].splitlines() if line.strip()}
    for name in SPECS:
        assert name in rows, (name, games["output"])
        assert res["venv"] in rows[name] or "/specs/" in rows[name], rows[name]


@pytest.mark.background("wheel")
def test_installed_cli_solves_a_spec_by_name_from_tmp():
    res = _installed(_result())
    solve = res["solve"]
    assert solve["returncode"] == 0, solve["output"]
    assert "hunl_river" in solve["output"] and "100 iterations" in solve["output"], solve["output"]
    assert "exploitability" in solve["output"], solve["output"]
