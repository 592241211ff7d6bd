"""The implementation plan (`cfrjax.plan`): resolved once, static on the game, so jit keys on
it; the only reader of cfrjax's environment switches; validated; said in the records."""

import dataclasses
import json
import logging
import os
import sys
import warnings

import jax
import numpy as np
import pytest

import cfrjax
from cfrjax import pallas_gpu
from cfrjax import plan as cplan
from cfrjax.games.poker import PokerSubgameSpec
from cfrjax.games.poker.public_tree import build_public
from cfrjax.public import cuda_showdown, native

# The CPU's plans (a GPU machine's default device is not the CPU).
pytestmark = pytest.mark.usefixtures("on_cpu")


@pytest.fixture(scope="module")
def river():
    return build_public(PokerSubgameSpec(board="Ks Js Th 7d 2c", random_hands=12, seed=3), hands="range")


class _Compiles:
    """Names of the programs JAX compiles inside the `with`."""

    def __init__(self, caplog):
        self.caplog = caplog

    def __enter__(self):
        self.caplog.clear()
        self._cm = jax.log_compiles(True)
        self._cm.__enter__()
        self.caplog.set_level(logging.DEBUG)
        return self

    def __exit__(self, *exc):
        self._cm.__exit__(*exc)
        self.names = [r.getMessage().split()[1] for r in self.caplog.records if r.getMessage().startswith("Compiling ")]


def test_two_plans_compile_two_programs_and_switching_back_compiles_nothing(river, caplog):
    """The plan is static on the game: a solve under another plan compiles its own program
    (here without the native code: no custom call in it), and the first plan's program is
    still in jit's cache. No `jax.clear_caches()` is needed to switch."""
    if not native.available():
        pytest.skip(f"native code unavailable: {native.why_unavailable()}")
    auto, xla = cfrjax.plan.use(river, "auto"), cfrjax.plan.use(river, "xla")
    assert auto.plan.native and not xla.plan.native
    state = cfrjax.init(river, rule="dcfr", order="alternating", dtype="float64")
    out = {}
    for name, game in (("auto", auto), ("xla", xla), ("auto again", auto), ("xla again", xla)):
        with _Compiles(caplog) as log:
            out[name] = cfrjax.solve(game, state, 3)
        out[name + " compiles"] = [n for n in log.names if "solve" in n]
    assert out["auto compiles"] and out["xla compiles"], out
    assert out["auto again compiles"] == [] and out["xla again compiles"] == []
    assert int(out["auto"].iteration) == int(out["xla"].iteration) == 3   # (values: tests/test_native*.py)
    lowered = lambda g: jax.jit(cfrjax.step).lower(g, state).as_text()   # noqa: E731
    assert "CfrjaxHalfF64" in lowered(auto) and "Cfrjax" not in lowered(xla)


def _caller() -> str:
    """The module that reads the environment (past `os` and this file)."""
    frame = sys._getframe(2)
    while frame.f_globals.get("__name__") in ("os", __name__):
        frame = frame.f_back
    return frame.f_globals.get("__name__", "")


class _Recorder(dict):
    """`os.environ` that records every key cfrjax reads (`(module, key)`; JAX's own reads,
    such as `XLA_FLAGS` for its compilation cache key, are not cfrjax's choices)."""

    def __init__(self, env, reads):
        super().__init__(env)
        self.reads = reads

    def _seen(self, key):
        who = _caller()
        if who.split(".")[0] == "cfrjax":
            self.reads.append((who, key))

    def __getitem__(self, key):
        self._seen(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self._seen(key)
        return super().get(key, default)

    def __contains__(self, key):
        self._seen(key)
        return super().__contains__(key)


def test_no_environment_read_outside_plan_resolution(river, monkeypatch):
    """Once the plan is resolved, cfrjax reads no environment variable in a solve (init,
    iterations, evaluation) or a fresh trace; resolving the plan reads its switches."""
    reads = []
    monkeypatch.setattr(os, "environ", _Recorder(os.environ, reads))
    cfrjax.plan.resolve_plan(river, "cpu")
    assert ("cfrjax.plan", "CFRJAX_NATIVE") in reads   # the recorder sees the resolution's reads
    game = cfrjax.plan.use(river)
    reads.clear()
    state = cfrjax.init(game, rule="cfr+", order="simultaneous", dtype="float32")
    state = cfrjax.solve(game, state, 2)
    cfrjax.evaluate(game, state)
    jax.jit(lambda s: cfrjax.step(game, s)).lower(state)   # traced anew
    assert reads == []


def test_resolution_reads_the_switches_and_records_a_failed_build(monkeypatch):
    """`CFRJAX_NATIVE=0` leaves the native code out (no fallback: a choice); a library that
    does not build is a fallback with its reason, warned once; on an NVIDIA GPU (faked)
    the Pallas kernels and the CUDA showdown likewise."""
    monkeypatch.setenv("CFRJAX_NATIVE", "0")
    off = cfrjax.plan.resolve_plan(platform="cpu")
    assert not off.native and off.fallbacks == () and off.name == "auto"
    monkeypatch.delenv("CFRJAX_NATIVE")
    monkeypatch.setattr(native, "available", lambda: False)
    monkeypatch.setattr(native, "why_unavailable", lambda: "RuntimeError: no C++ compiler found")
    monkeypatch.setattr(cplan, "_WARNED", set())
    with pytest.warns(cplan.KernelFallback, match=r"native is not available \(RuntimeError: no C\+\+ compiler found\)"):
        failed = cfrjax.plan.resolve_plan(platform="cpu")
    assert not failed.native and failed.fallbacks == (("native", "RuntimeError: no C++ compiler found"),)
    assert "fallback native: RuntimeError" in failed.summary()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cfrjax.plan.resolve_plan(platform="cpu") == failed   # said once
    tabular = cfrjax.load_game("kuhn_poker")
    assert cfrjax.plan.resolve_plan(tabular, "cpu").fallbacks == ()  # no native code in the tabular form
    monkeypatch.setattr(pallas_gpu, "nvidia_gpu", lambda: True)
    monkeypatch.setattr(cuda_showdown, "available", lambda: False)
    monkeypatch.setattr(cuda_showdown, "why_unavailable", lambda: "RuntimeError: no nvcc found")
    with pytest.warns(cplan.KernelFallback, match="cuda_showdown"):
        gpu = cfrjax.plan.resolve_plan(platform="gpu")
    assert gpu.pallas == cplan.PALLAS and not gpu.cuda_showdown and gpu.fallbacks[0][0] == "cuda_showdown"
    monkeypatch.setenv("CFRJAX_CUDA", "off")
    assert cfrjax.plan.resolve_plan(platform="gpu").fallbacks == ()


def test_presets_overrides_and_validation(river):
    xla = cfrjax.plan.resolve_plan(river, "cpu", "xla")
    assert (xla.name, xla.native, xla.native_half, xla.cpu_spot_half, xla.pallas) == ("xla", False, False, False, ())
    mine = cfrjax.Plan(native=False, dense_pair=False)
    assert cfrjax.plan.resolve_plan(river, "cpu", mine) is mine and cfrjax.plan.use(river, mine).plan is mine
    assert hash(mine) == hash(dataclasses.replace(mine)) and cfrjax.Plan(pallas=["fold", "matching"]).pallas == (
        "matching", "fold")                                           # kernel order, a tuple: hashable
    assert json.loads(json.dumps(mine.describe()))["dense_pair"] is False
    with pytest.raises(ValueError, match=r"unknown plan 'fast'; allowed: 'auto', 'xla'"):
        cfrjax.plan.resolve_plan(river, choice="fast")
    with pytest.raises(ValueError, match=r"bad Plan.pallas \('cuda',\); allowed: .*matching, fold"):
        cfrjax.Plan(pallas=("cuda",))
    with pytest.raises(ValueError, match="bad Plan.native 1; allowed: True or False"):
        cfrjax.Plan(native=1)
    with pytest.raises(ValueError, match="bad Plan.wide_columns -1"):
        cfrjax.Plan(wide_columns=-1)
    assert cplan.plan_of(river) == cfrjax.plan.resolve_plan(river, "cpu")  # no plan: the auto plan of its form


def test_command_line_plan_and_verbose(capsys):
    """`--plan` chooses the plan, `--verbose` prints it, the JSON record names it; an unknown
    plan is one line and exit code 2."""
    from cfrjax import cli
    assert cli.main(["solve", "kuhn_poker", "--iterations", "2", "--plan", "xla", "--verbose", "--json",
                     "--compile-cache", "off"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out.strip().splitlines()[-1])["plan"]["name"] == "xla"
    assert "cfrjax: plan xla on cpu" in err
    with pytest.raises(SystemExit) as e:
        cli.main(["solve", "kuhn_poker", "--plan", "fast"])
    assert e.value.code == 2
    assert "cfrjax: error: argument --plan: invalid choice: 'fast' (choose from 'auto', 'xla')" in capsys.readouterr().err


def test_no_test_drops_jaxs_caches():
    """A path is chosen by the plan, part of jit's key: no test needs `jax.clear_caches()`
    to see another path (and dropping every executable would cost later modules their
    compiles). Read from the test sources, so a new call is caught here."""
    import ast
    import pathlib

    calls = []
    for path in sorted(pathlib.Path(__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "clear_caches":
                calls.append(f"{path.name}:{node.lineno}")
    assert not calls, calls
