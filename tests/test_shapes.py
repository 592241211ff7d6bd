"""Shape classes of poker spots (`PokerSubgameSpec.pad_hands`, `public_tree.hand_class`):
padding changes no result, and a second spot of a seen class compiles nothing.

Spots: one bet size, no raises, narrow ranges (a few seconds to compile). `A` and `B` of a
street are different boards of one suit pattern with different hand counts of one class.
"""

import dataclasses

import jax
import numpy as np
import pytest

import cfrjax
from cfrjax import driver
from cfrjax.compile_cache import compile_count
from cfrjax.games.poker import PokerSpecError, PokerSubgameSpec
from cfrjax.games.poker.public_tree import build_public, hand_class, public_shapes
from cfrjax.memory import memory_plan
from cfrjax.public import native
from selection import cases

jax.config.update("jax_enable_x64", True)

SPOTS = {
    "river": (("Ks Js Th 7d 2c", "AA,KK,AKs,QJs", "QQ,JJ,AQs,T9s,87s"),
              ("Qh 9h 8c 4s 3d", "AA,KK,AKs,QJs,T9s", "QQ,JJ,AQs,T8s,87s")),
    "turn": (("Ks Js Th 7d", "AA,KK,AKs,QJs", "QQ,JJ,AQs,T9s,87s"),
             ("Qh 9h 8c 4s", "AA,KK,AKs,QJs,T9s", "QQ,JJ,AQs,T8s,87s")),
}


def spot(street: str, which: int, pad: bool = True) -> PokerSubgameSpec:
    board, r0, r1 = SPOTS[street][which]
    return PokerSubgameSpec(board=board, pot=20, stack=30, bet_fractions=(1.0,), range0=r0, range1=r1,
                            pad_hands=pad, name=f"{street}_{which}")


#: Iterations of every solve here (one program per class and solver config, shared by the tests).
ITERS = 12
_GAMES: dict = {}


def game(street: str, which: int, pad: bool = True, terminals: str = "auto"):
    key = (street, which, pad, terminals)
    if key not in _GAMES:
        _GAMES[key] = build_public(spot(street, which, pad), terminals=terminals)
    return _GAMES[key]


def test_hand_class():
    assert [hand_class(n) for n in (1, 7, 8, 9, 11, 64, 65, 81, 97, 113, 129, 161, 193, 225, 257)] == \
        [1, 7, 8, 10, 12, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
    n = np.arange(1, 5001)
    c = np.array([hand_class(int(x)) for x in n])
    assert np.all(c >= n) and np.all(c <= 1.25 * n) and np.all(np.diff(c) >= 0)
    assert all(hand_class(int(x)) == x for x in np.unique(c))                     # a class is its own class
    for k in range(3, 12):                                                         # four classes per power of two
        assert np.unique(c[(n > 2 ** k) & (n <= 2 ** (k + 1))]).size == 4
    for bad in (0, -3, 2.5, True, "8"):
        with pytest.raises((ValueError, TypeError), match="count"):
            hand_class(bad)
    with pytest.raises(PokerSpecError, match="pad_hands 'yes' must be true or false"):
        PokerSubgameSpec(board="Ks Js Th 7d 2c", pad_hands="yes")


@pytest.mark.parametrize("street", cases(["river", "turn"], ["turn"]))
def test_padding_changes_no_result(street):
    """CPU, float64: the padding hands' averages 0, the normaliser equal; exploitability
    and values (sums over the hands) to 1e-12 relative. The real hands' regrets and
    averages bit for bit where the native update runs (`cfrjax.public.native`, where a
    C++ compiler builds it: loops over the hands in order). XLA's own form vectorises its
    sums over the hand axis by vector width, so an unpadded list's remainder is summed in
    another order: there one iteration agrees to rounding (the dense test below), and a
    solve can part where a regret sits on 0 (regret matching is not continuous there)."""
    plain, padded = game(street, 0, pad=False), game(street, 0)
    H = plain.num_hands
    assert padded.num_hands == hand_class(H) > H and padded.card_hands.shape[1] >= plain.card_hands.shape[1]
    np.testing.assert_array_equal(padded.weights[:, :H], plain.weights)
    assert float(padded.norm) == float(plain.norm) and not np.any(padded.weights[:, H:])
    runs = [("dcfr", "alternating"), ("cfr+", "simultaneous")] if street == "river" else [("dcfr", "alternating")]
    for rule, order in runs if native.available() else ():   # without the native code: XLA's form (see above)
        a = cfrjax.solve(plain, cfrjax.init(plain, rule=rule, order=order, dtype="float64"), ITERS)
        b = cfrjax.solve(padded, cfrjax.init(padded, rule=rule, order=order, dtype="float64"), ITERS)
        assert not np.any(np.asarray(b.avg)[:, H:])
        np.testing.assert_allclose(cfrjax.evaluate(padded, b), cfrjax.evaluate(plain, a), rtol=1e-12, atol=0)
        for f in ("regret", "avg"):
            np.testing.assert_array_equal(np.asarray(getattr(b, f))[:, :H], np.asarray(getattr(a, f)),
                                          err_msg=f"{rule} {order} {f}")
        np.testing.assert_array_equal(np.asarray(cfrjax.average_policy(padded, b))[:, :H],
                                      np.asarray(cfrjax.average_policy(plain, a)))


def test_dense_terminals_pad_to_rounding():
    """Dense terminal matrices sum over the hands in a matmul, in XLA's form (the native
    code runs sorted terminals only): two iterations' regrets and averages agree to
    rounding."""
    plain, padded = game("river", 0, False, "dense"), game("river", 0, True, "dense")
    H = plain.num_hands
    step = jax.jit(cfrjax.step)
    a, b = (step(g, step(g, cfrjax.init(g, dtype="float64"))) for g in (plain, padded))
    for f in ("regret", "avg"):
        x = np.asarray(getattr(a, f))
        np.testing.assert_allclose(np.asarray(getattr(b, f))[:, :H], x, rtol=1e-12, atol=1e-12 * np.abs(x).max())
    assert not np.any(np.asarray(b.avg)[:, H:])


@pytest.mark.parametrize("street", ["river", "turn"])
def test_second_spot_of_a_class_compiles_nothing(street):
    a, b = game(street, 0), game(street, 1)
    assert len(a.labels.hands) != len(b.labels.hands) and a.num_hands == b.num_hands
    assert a.labels.fingerprint != b.labels.fingerprint and a.labels == b.labels      # per spot; one cache key
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for g in (a, b):
        with compile_count() as count:
            s = cfrjax.solve(g, cfrjax.init(g, dtype="float64"), ITERS)
            e = cfrjax.evaluate(g, s)
        assert np.isfinite(e).all()
    assert count.requests == 0                      # the second spot: no compile (nor a cache lookup)
    with compile_count() as control:                # the counter sees a compile
        jax.jit(lambda x: x * 3 + 0.75)(np.float64(e[0]))
    assert control.requests == 1


def test_lowered_programs_of_a_class_are_identical():
    """Identical HLO: the persistent compilation cache serves a second process's spot of
    the same class (river and turn; the solve and the evaluation)."""
    for street in ("river", "turn"):
        texts = []
        for g in (game(street, 0), game(street, 1), game(street, 0, pad=False)):
            s = cfrjax.init(g, dtype="float64")
            texts.append((jax.jit(cfrjax.solve, static_argnums=2).lower(g, s, 3).as_text(),
                          driver._evaluate_jit.lower(g, s).as_text()))
        assert texts[0] == texts[1] and texts[2][0] != texts[0][0], street   # another class: other HLO


def test_plan_accounts_for_padding():
    """`public_shapes` (and so the memory plan, and the refusal before building) gives the
    padded game's leaves exactly."""
    for street in ("river", "turn"):
        cfg, built = spot(street, 1), game(street, 1)
        shapes = public_shapes(cfg)
        assert shapes.sizes() == built.sizes() and built.num_hands == hand_class(len(built.labels.hands))
        for k, v in vars(shapes).items():
            if hasattr(v, "shape"):
                assert v.shape == np.shape(getattr(built, k)), k
        assert memory_plan(shapes).total_bytes == memory_plan(built).total_bytes
    # `hands = "all"` is not padded: one count per street already (1,081 on a river).
    assert public_shapes(spot("river", 0), hands="all").num_hands == 1081


def test_outputs_list_real_hands_only(tmp_path):
    """Policies, strategy tables, saved policies and node reports of a padded spot list
    the real hands, with the unpadded spot's numbers."""
    from cfrjax.public.report import node_report
    from cfrjax.strategy import load_policy, policy_dict, read_policy_file, save_policy, strategy_table

    plain, padded = game("river", 0, pad=False), game("river", 0)
    H = plain.num_hands
    a = cfrjax.solve(plain, cfrjax.init(plain, dtype="float64"), ITERS)
    b = cfrjax.solve(padded, cfrjax.init(padded, dtype="float64"), ITERS)
    pa, pb = cfrjax.average_policy(plain, a), cfrjax.average_policy(padded, b)
    assert policy_dict(padded, pb) == policy_dict(plain, pa)
    assert strategy_table(padded, pb) == strategy_table(plain, pa)
    for name in ("p.npz", "p.json"):
        path = save_policy(tmp_path / name, padded, pb)
        assert read_policy_file(path)["infosets"] == policy_dict(plain, pa)
        np.testing.assert_array_equal(np.asarray(load_policy(path, plain)), np.asarray(pa))   # by key
    ra, rb = node_report(plain, pa, "k"), node_report(padded, pb, "k")
    assert rb.hands == ra.hands and len(rb.hands) == H
    for f in ("weight", "combos", "ev", "equity", "strategy"):
        np.testing.assert_allclose(getattr(rb, f), getattr(ra, f), rtol=1e-12, equal_nan=True, err_msg=f)


def test_locks_on_a_padded_spot():
    """A locked information set (by key: a real hand) solves as on the unpadded spot."""
    plain, padded = game("river", 0, pad=False), game("river", 0)
    key = next(k for k, _, h in plain.labels.infoset_keys() if k.startswith("P0|") and plain.weights[0, h] > 0)
    states = [cfrjax.lock(g, cfrjax.init(g, dtype="float64"), {key: [1.0, 0.0]}) for g in (plain, padded)]
    assert not np.asarray(states[1].locked)[:, plain.num_hands:].any()
    a, b = (cfrjax.solve(g, s, ITERS) for g, s in zip((plain, padded), states))
    np.testing.assert_allclose(cfrjax.evaluate(padded, b), cfrjax.evaluate(plain, a), rtol=1e-12, atol=0)
    sl, h = padded.infoset_index(key)
    np.testing.assert_array_equal(np.asarray(cfrjax.average_policy(padded, b))[sl, h], [1.0, 0.0])
    if native.available():   # bit for bit where the native update runs (`test_padding_changes_no_result`)
        np.testing.assert_array_equal(np.asarray(b.regret)[:, :plain.num_hands], np.asarray(a.regret))


def test_retarget_checkpoint_and_depth_on_padded_spots(tmp_path):
    """`set_root_ranges` on a padded spot equals the padded spot built with those ranges
    (and reads back); a checkpoint of one spot is refused for another of its class; a
    depth-limited cut of a padded spot is refused in one line."""
    a, b = game("turn", 0), game("turn", 1)
    r0, r1 = cfrjax.poker.root_ranges(b)
    moved = cfrjax.poker.set_root_ranges(game("turn", 1, pad=False), r0, r1)   # the unpadded game, for contrast
    assert moved.num_hands == len(b.labels.hands)
    again = cfrjax.poker.set_root_ranges(b, r0 * 0.5, r1)
    np.testing.assert_array_equal(np.asarray(again.weights)[0, :len(b.labels.hands)],
                                  0.5 * np.asarray(b.weights)[0, :len(b.labels.hands)])
    assert not np.any(np.asarray(again.weights)[:, len(b.labels.hands):])
    np.testing.assert_allclose(float(again.norm), 0.5 * float(b.norm), rtol=1e-12)
    np.testing.assert_array_equal(cfrjax.poker.root_ranges(again)[1], r1)
    # traced (a batch of ranges under vmap): the same weights
    batch = jax.vmap(cfrjax.poker.set_root_ranges, (None, 0, 0), cfrjax.batch_axes(b))(
        b, np.stack([r0 * 0.5, r0]), np.stack([r1, r1]))
    np.testing.assert_array_equal(np.asarray(batch.weights)[0], np.asarray(again.weights))
    np.testing.assert_array_equal(np.asarray(batch.weights)[1], np.asarray(b.weights))
    s = cfrjax.init(a, dtype="float64")
    cfrjax.save_checkpoint(tmp_path / "a.ckpt", a, s)
    cfrjax.load_checkpoint(tmp_path / "a.ckpt", a)
    with pytest.raises(ValueError, match="fingerprint"):
        cfrjax.load_checkpoint(tmp_path / "a.ckpt", b)
    from cfrjax.games.poker.depth import leaf_inputs
    with pytest.raises(PokerSpecError, match="pad_hands = false"):
        leaf_inputs(a)


def test_cli_show_lists_real_hands_only(tmp_path, capsys):
    """`cfrjax show` of a spot file with `pad_hands = true` (loaded as the command line
    loads it): the table and `--csv --all` list the real live hands, as the unpadded spot's
    report."""
    import csv

    from cfrjax import cli
    from cfrjax.public.report import node_report

    board, r0, r1 = SPOTS["river"][0]
    path = tmp_path / "padded_river.toml"
    path.write_text(f'game = "poker_subgame"\nname = "river_0"\nboard = "{board}"\npot = 20\nstack = 30\n'
                    f'bet_fractions = [1.0]\npad_hands = true\n[ranges]\nrange0 = "{r0}"\nrange1 = "{r1}"\n')
    padded, plain = cfrjax.load_game(str(path)), game("river", 0, pad=False)
    assert padded.num_hands > plain.num_hands and padded.labels.fingerprint == game("river", 0).labels.fingerprint
    state = cfrjax.solve(padded, cfrjax.init(padded, dtype="float64"), ITERS)
    ckpt, out_csv = str(tmp_path / "s.ckpt"), str(tmp_path / "r.csv")
    cfrjax.save_checkpoint(ckpt, padded, state)
    assert cli.main(["show", str(path), "k", "--checkpoint", ckpt, "--csv", out_csv, "--all"]) == 0
    capsys.readouterr()
    want = node_report(plain, cfrjax.solve(plain, cfrjax.init(plain, dtype="float64"), ITERS), "k")
    with open(out_csv, newline="") as f:
        table = list(csv.reader(f))[1:]
    live = np.flatnonzero(~np.isnan(want.equity[0]))
    assert [row[0] for row in table] == [want.hands[h] for h in live] and len(live) == plain.num_hands
    got = np.array([[float(x) for x in row[1:]] for row in table])
    ref = np.concatenate([want.weight.T, want.combos.T, want.ev.T, want.equity.T, want.strategy], axis=1)[live]
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
