"""The vectorized hand evaluator against eval7 (a test-only dependency) and known hands."""

import time

import numpy as np
import pytest

from cfrjax.games.poker import (
    CARD_NAMES, COMBOS, CATEGORY_NAMES, evaluate, hand_category, parse_board, parse_cards, rank5, rank6, rank7)

eval7 = pytest.importorskip("eval7")


def _random_hands(rng, num, n):
    return np.argsort(rng.random((num, 52)), axis=1)[:, :n]


def _eval7_values(hands):
    deck = [eval7.Card(c) for c in CARD_NAMES]
    return np.array([eval7.evaluate([deck[c] for c in h]) for h in hands.tolist()], dtype=np.int64)


def _assert_same_order(ours, ref):
    """A strictly monotone map ours -> ref exists: sort by ours, ref is non-decreasing,
    and neighbours tie in one ranking exactly when they tie in the other."""
    order = np.argsort(ours, kind="stable")
    a, b = ours[order], ref[order]
    assert np.all(np.diff(b) >= 0), "eval7 disagrees with our ordering"
    np.testing.assert_array_equal(a[1:] == a[:-1], b[1:] == b[:-1])


@pytest.mark.parametrize("n, num", [(7, 120_000), (6, 40_000), (5, 40_000)])
def test_matches_eval7_on_random_hands(n, num):
    rng = np.random.default_rng(1000 + n)
    hands = _random_hands(rng, num, n)
    ours = evaluate(hands)
    _assert_same_order(ours, _eval7_values(hands))
    # Every category shows up in a sample this size for 7 cards (straight flush ~0.03%).
    if n == 7:
        assert set(np.unique(hand_category(ours))) == set(range(9))


def test_matches_eval7_on_rare_categories():
    """Enrich for flushes, straights, full houses and quads: hands from few ranks/suits."""
    rng = np.random.default_rng(7)
    num = 30_000
    # Per hand: 2-5 distinct ranks and 1-4 distinct suits; the pool is their product. The
    # hand is the pool's cards in random order, then the other cards in random order, cut
    # at 7 (vectorized: a random sort key, pool cards before the rest).
    def chosen(size, low, high):
        k = rng.integers(low, high + 1, num)
        return np.argsort(rng.random((num, size)), axis=1).argsort(axis=1) < k[:, None]

    ranks, suits = chosen(13, 2, 5), chosen(4, 1, 4)
    pool = (ranks[:, :, None] & suits[:, None, :]).reshape(num, 52)  # card 4 * rank + suit
    hands = np.argsort(rng.random((num, 52)) + ~pool, axis=1)[:, :7]
    ours = evaluate(hands)
    _assert_same_order(ours, _eval7_values(hands))
    assert set(np.unique(hand_category(ours))) == set(range(9))


def test_known_hands():
    def v(s):
        return int(evaluate(parse_cards(s)))

    assert CATEGORY_NAMES[int(hand_category(v("As Ks Qs Js Ts 2d 3c")))] == "straight flush"
    assert v("5s 4s 3s 2s As Kd Kc") < v("6s 5s 4s 3s 2s Kd Kc")            # steel wheel < 6-high SF
    assert hand_category(v("Ah 2d 3c 4s 5h Kd Qc")) == 4                   # wheel is a straight
    assert v("Ah 2d 3c 4s 5h Kd Qc") < v("2d 3c 4s 5h 6h Kd Qc")
    assert v("Ah Ad Ac As 2h 3d 4c") > v("Kh Kd Kc Ks Ah Ad Ac")          # quads beat quads+trips
    assert v("Kh Kd Kc Ks Ah 2d 3c") > v("Kh Kd Kc Ks Qh Jd Tc")          # quads kicker
    assert v("Kh Kd Kc Qh Qd Qc 2s") == v("Kh Kd Kc Qh Qd 3c 2s")          # KKKQQ either way
    assert v("Ah Kh 9h 5h 3h 2h Qd") > v("Ah Kh 9h 5h 2h Qd Jd")          # best five of six hearts
    assert v("Ah Ad Kh Kd Qh Qd 2c") == v("Ah Ad Kh Kd Qc 3c 2s")          # third pair plays as kicker
    assert v("As Ks Qd Jh 9c 3d 2h") == v("Ah Kd Qh Jc 9s 4d 2c")         # sixth/seventh cards do not play
    assert v("As Ks Qd Jh 8c 3d 2h") < v("Ah Kd Qh Jc 9s 4d 2c")          # fifth card decides
    # Board plays: ties.
    assert v("As Ks Qs Js Ts 2d 3c") == v("As Ks Qs Js Ts 4h 8c")


def test_shape_and_helpers():
    rng = np.random.default_rng(3)
    hands = _random_hands(rng, 24, 7).reshape(2, 3, 4, 7)
    out = rank7(hands)
    assert out.shape == (2, 3, 4)
    np.testing.assert_array_equal(out.ravel(), evaluate(hands.reshape(-1, 7)))
    assert rank5(hands[..., :5]).shape == (2, 3, 4)
    assert rank6(hands[..., :6]).shape == (2, 3, 4)
    with pytest.raises(ValueError):
        rank7(hands[..., :6])
    with pytest.raises(ValueError):
        evaluate(np.zeros((3, 4), int))


def test_turn_board_all_hands_all_rivers_is_fast():
    """All 1,326 combos x 44 rivers of a turn board: well under a second."""
    board = parse_board("Ks Js Th 7d")
    rest = np.setdiff1d(np.arange(52), board)
    t = time.perf_counter()
    hands = COMBOS[:, None, :].repeat(rest.size, 1)                        # [1326, 48, 2]
    river = np.broadcast_to(rest[None, :, None], (COMBOS.shape[0], rest.size, 1))
    cards = np.concatenate([np.broadcast_to(board, (COMBOS.shape[0], rest.size, 4)), river, hands], axis=2)
    values = rank7(cards)
    elapsed = time.perf_counter() - t
    assert values.shape == (1326, 48)
    assert elapsed < 1.0, elapsed
