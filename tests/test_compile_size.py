"""What a call compiles (docs/design/compile.md): the evaluation's levels run as one loop
(`cfrjax.public.tree_passes.root_values`), bit for bit the unrolled levels on CPU, in a
program that does not grow with the tree's depth; and a second process solving another
spot of the same shape class compiles nothing.

Spots: narrow ranges, one or two bet sizes (a few seconds to compile); a turn spot has a
trunk and a forest, both looped.
"""

import functools
import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cfrjax
from cfrjax import driver, passes
from cfrjax.games.poker import PokerSubgameSpec
from cfrjax.games.poker.public_tree import build_public
from cfrjax.public import sweep, tree_passes


@functools.cache
def turn(raise_cap: int = 1):
    return build_public(PokerSubgameSpec(board="Ks Js Th 7d", pot=20, stack=60, bet_fractions=(0.5, 1.0),
                                         raise_cap=raise_cap, range0="AA,KK,AKs,QJs,T9s",
                                         range1="QQ,JJ,AQs,T9s,87s", name=f"turn_cap{raise_cap}"))


@pytest.mark.parametrize("stage,mode", [   # "br": the bitwise fixture's exploitability
    ("forest", "br_ev"), ("trunk", "ev"),
    pytest.param("trunk", "br_ev", marks=pytest.mark.slow), pytest.param("forest", "ev", marks=pytest.mark.slow)])
def test_root_values_equal_the_unrolled_levels(stage, mode):
    """`root_values` against `backward`'s top level, on random values and a random
    profile in float64: bit for bit with the scatter sums on a CPU, to rounding with the
    gathered sums (which pad every segment to the widest fan-out of all levels) and on a
    GPU (whose scatter sums add in no fixed order)."""
    g = turn()
    tree = tree_passes.Tree(g, stage)
    assert len(tree.levels) > 4                                   # several levels to loop over
    rng = np.random.default_rng(0)
    lanes = 4 if mode == "br_ev" else 2
    n, H, S = tree.levels[-1], g.num_hands, g.num_slots
    tv = rng.normal(size=(int(np.max(np.asarray(tree.term_pos))) + 1, lanes, H))
    tv[-1] = 0.0                             # the zero row of the inner nodes, as the passes' terminal values
    sigma = np.concatenate([rng.uniform(size=(S, H)), np.ones((1, H))])
    top = tree.levels[1]
    for pull in (False, True):
        with jax.enable_x64(True):   # as the evaluation runs
            want = jax.jit(lambda s, t: tree_passes.backward(tree, s, t, (0, 1), pull, mode)[:top])(sigma, tv)
            got = jax.jit(lambda s, t: tree_passes.root_values(tree, s, t, (0, 1), pull, mode))(sigma, tv)
        assert want.shape == got.shape == (top, lanes, H) and n > top
        if pull or jax.default_backend() != "cpu":   # a GPU's scatter sums add in no fixed order
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-12)
        else:
            assert np.asarray(got).tobytes() == np.asarray(want).tobytes()


def test_one_level_forest():
    """Stacks all in at the turn (nothing behind): every forest is one level, its roots
    terminals (the loop has nothing to run); the evaluation gives the roots' terminal
    values, as the unrolled levels do."""
    g = build_public(PokerSubgameSpec(board="Ks Js Th 7d", pot=20, behind=0, bet_fractions=(1.0,), range0="AA,KK",
                                      range1="QQ,JJ", name="all_in"))
    tree = tree_passes.Tree(g, "forest")
    assert len(tree.levels) == 2
    tv = np.random.default_rng(2).normal(size=(int(np.max(np.asarray(tree.term_pos))) + 1, 2, g.num_hands))
    sigma = np.ones((g.num_slots + 1, g.num_hands))
    for pull in (False, True):
        want = tree_passes.backward(tree, sigma, tv, (0, 1), pull, "ev")
        np.testing.assert_array_equal(tree_passes.root_values(tree, sigma, tv, (0, 1), pull, "ev"), want)
    e, _ = cfrjax.evaluate(g, cfrjax.solve(g, cfrjax.init(g), 2))
    assert abs(e) < 1e-12                                         # no decision left: nothing to exploit


def test_evaluation_lowerings_agree():
    """The evaluation's sweep (`"br_ev"`, the levels looped) in the accelerator's lowering
    traced on CPU (the boards vmapped, so the loop runs under `vmap`; gathered sums)
    against the CPU's (a loop over the boards, scatter sums), in float64."""
    g = turn()
    rng = np.random.default_rng(1)
    with jax.enable_x64(True):
        sigma = passes.extend(jnp.asarray(rng.uniform(size=(g.num_slots, g.num_hands))))
        g64 = driver.with_float_dtype(g, jnp.float64)
        cpu, accel = (jax.jit(lambda s, c=c: sweep.sweep(g64, s, (0, 1), "br_ev", c)[0])(sigma) for c in (True, False))
    assert cpu.shape == (4, g.num_hands)
    np.testing.assert_allclose(np.asarray(accel), np.asarray(cpu), rtol=1e-12, atol=1e-12 * float(np.abs(cpu).max()))


def _evaluation_scatters(g) -> int:
    s = cfrjax.init(g, dtype="float64")
    with jax.enable_x64(True):
        return driver._evaluate_jit.lower(g, s).as_text().count("stablehlo.scatter")


def test_evaluation_program_does_not_grow_with_depth():
    """Two raises per street make the trunk and the forest deeper (more levels); the
    evaluation's program keeps the same scatters (one level's, in a loop), where the
    unrolled levels added theirs per level."""
    shallow, deep = turn(1), turn(2)
    assert len(deep.trunk_levels) > len(shallow.trunk_levels) and len(deep.forest_levels) > len(shallow.forest_levels)
    assert _evaluation_scatters(shallow) == _evaluation_scatters(deep)


#: A process running `cfrjax solve ARGS` with every XLA compile of the process counted
#: (`compile_count` around the whole command): its record, then the count, as JSON lines.
#: With `kept` false the kept programs (`cfrjax.programs`) are off: JAX's persistent
#: compilation cache alone serves the programs.
_COUNTED = """
import json, sys
from cfrjax import cli, compile_cache
from cfrjax.compile_cache import compile_count
if sys.argv.pop(1) == "unkept":
    enable = compile_cache.enable_compile_cache
    compile_cache.enable_compile_cache = lambda path=None, keep_programs=True: enable(path, keep_programs=False)
with compile_count() as n:
    rc = cli.main(sys.argv[1:])
print(json.dumps(dict(rc=rc, compiles=n.compiles, cache_hits=n.cache_hits)))
"""


def _counted_solve(spot, cache, kept=True):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    run = subprocess.run([sys.executable, "-c", _COUNTED, "kept" if kept else "unkept", "solve", str(spot),
                          "--target", "1%", "--max-iterations", "30", "--json", "--compile-cache", str(cache)],
                         cwd=root, capture_output=True, text=True, timeout=120)
    lines = run.stdout.strip().splitlines()
    assert run.returncode == 0 and len(lines) >= 2, run.stderr
    record, count = json.loads(lines[-2]), json.loads(lines[-1])
    assert count["rc"] == 0
    return record, count


def _two_spots(tmp_path) -> list:
    """Two river spot files of one shape class (`pad_hands`: other boards of one suit
    pattern, other hand counts of one class)."""
    spots = []
    for i, (board, r0, r1) in enumerate([("Ks Js Th 7d 2c", "AA,KK,AKs,QJs", "QQ,JJ,AQs,T9s,87s"),
                                         ("Qh 9h 8c 4s 3d", "AA,KK,AKs,QJs,T9s", "QQ,JJ,AQs,T8s,87s")]):
        spots.append(tmp_path / f"river_{i}.toml")
        spots[-1].write_text(f'game = "poker_subgame"\nname = "river_{i}"\nboard = "{board}"\npot = 20\nstack = 30\n'
                             f'bet_fractions = [1.0]\npad_hands = true\n[ranges]\nrange0 = "{r0}"\nrange1 = "{r1}"\n')
    return spots


@pytest.mark.parametrize("kept", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_second_process_spot_of_a_class_compiles_nothing(tmp_path, kept):
    """Two spots of one shape class solved to a target by `cfrjax solve` in fresh processes
    sharing a compilation cache folder: the first compiles its programs, the second
    compiles nothing in the whole process. With the kept programs (the command's default)
    its programs are read back whole, JAX's cache not even asked; with them off
    (`kept=False`), JAX's persistent cache alone serves every program (the same HLO for
    every spot of the class): every compile request a hit."""
    spots, cache = _two_spots(tmp_path), tmp_path / "cache"
    first, counted = _counted_solve(spots[0], cache, kept)
    assert counted["compiles"] >= 2 and first["compile_cache"] == "miss"     # the chunk and the evaluation
    second, counted = _counted_solve(spots[1], cache, kept)
    assert counted["compiles"] == 0 and second["compile_cache"] == "hit"
    assert counted["cache_hits"] == 0 if kept else counted["cache_hits"] >= 2
    assert second["game"] != first["game"] and second["exploitability"] != first["exploitability"]
