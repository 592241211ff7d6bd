"""Kept programs (`cfrjax.programs`): a solve read back from the store runs without being
traced and equals the jit bit for bit; the key changes with what changes the program."""

import os

import jax
import numpy as np
import pytest

import cfrjax
from cfrjax import driver, programs
from cfrjax.games.poker.pot import starting_pot
from cfrjax.games.poker import PokerSubgameSpec
from cfrjax.games.poker.public_tree import build_public
from cfrjax.public import showdown_kernel


def _untraceable(*args, **kwargs):
    raise AssertionError("traced")


def _uncompilable(lowered):
    raise AssertionError("compiled")


def _equal(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def _kept(folder):
    return sorted((folder / "programs").rglob("*.bin"))


def _river():
    return build_public(PokerSubgameSpec(board="Ks Js Th 7d 2c", random_hands=12, seed=3), hands="range")


@pytest.fixture
def no_persistent_cache():
    """JAX's persistent compilation cache (on for the suite) off for one test: an earlier
    module's entry for the same program, read by this test's jit, would make the test
    depend on the modules run before it (`programs.call` then drops the kept copy and
    traces, which this test forbids)."""
    from jax._src import compilation_cache

    jax.config.update("jax_enable_compilation_cache", False)
    compilation_cache.reset_cache()
    yield
    jax.config.update("jax_enable_compilation_cache", True)
    compilation_cache.reset_cache()


@pytest.mark.parametrize("case", ["kuhn-fixed", "river-target"])
def test_kept_solve_runs_without_tracing_and_equals_the_jit(case, tmp_path, monkeypatch, no_persistent_cache):
    if case == "kuhn-fixed":
        game = cfrjax.load_game("kuhn_poker")
        kw = dict(iterations=20, eval_every=5)
    else:   # the public form, target-driven (x64 evaluation inside the kept program)
        game = _river()
        kw = dict(eval_every=5, target_exploitability=1e-3 * starting_pot(game), max_iterations=200)
    state = cfrjax.init(game, rule="dcfr", order="alternating", dtype="float32")
    want = cfrjax.solve_with_trace(game, state, **kw)       # jit, nothing kept
    programs.enable(tmp_path)
    first = cfrjax.solve_with_trace(game, state, **kw)      # compiled and kept
    kept = 1 if case == "kuhn-fixed" else 2                 # a target-driven solve: its chunk and its evaluation
    assert len(_kept(tmp_path)) == kept
    programs.enable(None)                                   # a new process: nothing in memory
    programs.enable(tmp_path)
    monkeypatch.setattr(driver, "run_steps", _untraceable)  # tracing would fail
    # jit's own caches still hold this trace (no `jax.clear_caches()`): a call that missed the
    # store would lower from them and compile, which fails here instead
    monkeypatch.setattr(programs, "_compile_fresh", _uncompilable)
    again = cfrjax.solve_with_trace(game, state, **kw)
    _equal(first, want)
    _equal(again, want)
    # another iteration count is another program: it is traced
    with pytest.raises(AssertionError, match="traced"):
        cfrjax.solve_with_trace(game, state, **(dict(kw, iterations=21) if case == "kuhn-fixed" else dict(kw, eval_every=4)))
    assert len(_kept(tmp_path)) == kept
    if case == "kuhn-fixed":
        (path,) = _kept(tmp_path)   # a kept file that cannot be read is compiled again and rewritten
        monkeypatch.undo()
        path.write_bytes(b"not an executable")
        programs.enable(None)
        programs.enable(tmp_path)
        _equal(cfrjax.solve_with_trace(game, state, **kw), want)
        assert path.stat().st_size > 100


def test_key_follows_what_decides_the_program(monkeypatch):
    fun = driver._solve._fun
    g = _river()
    s = cfrjax.init(g, dtype="float32")
    k = programs.key(fun, {"iterations": 5}, ((g, s), {}))
    assert programs.key(fun, {"iterations": 5}, ((_river(), cfrjax.init(_river(), dtype="float32")), {})) == k
    assert programs.key(fun, {"iterations": 6}, ((g, s), {})) != k                              # a static
    assert programs.key(fun, {"iterations": 5}, ((g, cfrjax.init(g, dtype="float64")), {})) != k   # dtypes
    assert programs.key(fun, {"iterations": 5}, ((g, cfrjax.init(g, rule="cfr+", dtype="float32")), {})) != k
    other = build_public(PokerSubgameSpec(board="Ks Js Th 7d 2c", random_hands=12, seed=4), hands="range")
    assert other.labels.fingerprint != g.labels.fingerprint and other.num_hands == g.num_hands
    assert programs.key(fun, {"iterations": 5}, ((other, s), {})) != k     # another hand list, unpadded
    padded = [build_public(PokerSubgameSpec(board="Ks Js Th 7d 2c", random_hands=n, seed=seed, pad_hands=True))
              for n, seed in ((12, 3), (12, 4), (14, 3))]
    kp = [programs.key(fun, {"iterations": 5}, ((p, cfrjax.init(p, dtype="float32")), {})) for p in padded]
    assert padded[0].num_hands == padded[1].num_hands and kp[0] == kp[1]   # padded, one class: one program
    assert padded[2].num_hands != padded[0].num_hands and kp[2] != kp[0]   # another class
    with jax.enable_x64(False):
        assert programs.key(fun, {"iterations": 5}, ((g, s), {})) != k
    xla = cfrjax.plan.use(g, "xla")                                        # another plan
    assert programs.key(fun, {"iterations": 5}, ((xla, s), {})) != k
    assert programs.key(fun, {"iterations": 5}, ((cfrjax.plan.use(_river(), "xla"), s), {})) == \
        programs.key(fun, {"iterations": 5}, ((xla, s), {}))
    monkeypatch.setattr(showdown_kernel, "FEW_PROGRAMS", showdown_kernel.FEW_PROGRAMS + 1)   # a module constant:
    assert programs.key(fun, {"iterations": 5}, ((g, s), {})) == k                           # not a choice, source
    with pytest.raises(programs.Unkept, match="function"):
        programs.key(fun, {"leaf": lambda: 0}, ((g, s), {}))
    # two functions of one module and name (lambdas, even on one line) are told apart; a closure is not kept
    a, b = (lambda x: x), (lambda x: x + 1)
    assert programs.key(a, {}, ((g,), {})) != programs.key(b, {}, ((g,), {}))
    with pytest.raises(programs.Unkept, match="closure"):
        programs.key((lambda y: (lambda x: x + y))(1), {}, ((g,), {}))


_PROCESS = """
import sys, jax, numpy as np, cfrjax
from cfrjax import programs
jax.config.update("jax_compilation_cache_dir", sys.argv[1])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
if sys.argv[2] == "keep":
    programs.enable(sys.argv[1])
game = cfrjax.load_game("kuhn_poker")
state = cfrjax.solve(game, cfrjax.init(game, dtype="float32"), 9)
print(float(np.asarray(state.regret).sum()).hex())
"""


def test_kept_after_jaxs_cache_runs_in_a_new_process(tmp_path):
    """A program first kept where JAX's persistent cache already held its executable (a
    new cfrjax, a warm cache) is compiled afresh and runs when read back by another
    process: re-serialized from that cache, XLA:CPU's copy lacked its code."""
    import subprocess
    import sys

    def run(mode):
        env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
        out = subprocess.run([sys.executable, "-c", _PROCESS, str(tmp_path), mode], capture_output=True, text=True,
                             env=env, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout.split()[-1]

    want = run("jit")                       # fills JAX's cache only
    assert not _kept(tmp_path)
    assert run("keep") == want              # kept, its executable in JAX's cache already
    kept = _kept(tmp_path)
    assert len(kept) == 1                   # the solve (a small state's zeros come from the host)
    assert run("keep") == want              # read back in a new process and run
    assert _kept(tmp_path) == kept


def test_a_kept_program_is_compiled_afresh_when_jaxs_cache_holds_it(tmp_path, monkeypatch):
    """The same program kept in a second store after the first one compiled it: JAX's
    persistent cache (on for the suite) then holds its executable, which on XLA:CPU
    serializes without its code; `programs` compiles past that cache, so the second
    store's copy runs when read back. (JAX decides once per process whether its cache is
    used, so turning its switch off alone did not keep the compile away from it: the
    copy failed with `Function ... not found` in whole-suite runs.)"""
    game = cfrjax.load_game("kuhn_poker")
    state = cfrjax.init(game, rule="cfr+", dtype="float32")
    kw = dict(iterations=7, eval_every=7)
    want = cfrjax.solve_with_trace(game, state, **kw)
    for store in ("a", "b"):            # each store compiles it (the second after JAX's cache holds it)
        programs.enable(tmp_path / store)
        cfrjax.solve_with_trace(game, state, **kw)
        assert len(_kept(tmp_path / store)) == 1
    programs.enable(None)
    programs.enable(tmp_path / "b")     # a new process reading the second store
    monkeypatch.setattr(programs, "_compile_fresh", _uncompilable)   # it is read back, not compiled
    _equal(cfrjax.solve_with_trace(game, state, **kw), want)
    assert len(_kept(tmp_path / "b")) == 1    # it ran: not dropped for missing code (`programs.call`)


class _NotFound:
    """A leaf whose wait fails as a kept executable missing its code does."""

    def block_until_ready(self):
        raise jax.errors.JaxRuntimeError("NOT_FOUND: Function iota_convert_fusion not found (type id: 1)")


def test_a_kept_program_that_cannot_run_is_dropped_and_jit_runs(tmp_path, monkeypatch):
    """A kept executable read back whose first run fails for missing code (see
    `programs.call`) is dropped from the store and the call runs through jit: the user gets
    the jit's result, and the next call keeps the program anew."""
    game = cfrjax.load_game("kuhn_poker")
    state = cfrjax.init(game, rule="cfr+", dtype="float32")
    want = cfrjax.solve(game, state, 5)
    programs.enable(tmp_path)
    cfrjax.solve(game, state, 5)
    (path,) = _kept(tmp_path)
    programs.enable(None)
    programs.enable(tmp_path)
    monkeypatch.setattr(programs, "_deserialize", lambda data: (lambda *a, **k: _NotFound()))
    _equal(cfrjax.solve(game, state, 5), want)
    assert not path.exists()
    monkeypatch.undo()
    _equal(cfrjax.solve(game, state, 5), want)
    assert path.exists()
