"""The public-tree builder builds the same game as before it was vectorised (issue 51).

`tests/data/build_reference.json` holds, for a few small spots (rivers, turns, reduced
flops: narrow ranges, few sizes, raked and unraked, paired and monotone boards), a sha256
per array leaf (dtype, shape and bytes), per static field (its `repr`), per label field
(materialised) and the fingerprint, written ONCE by the builder of commit 2e0fa20 (the
last commit before the vectorised build; `python tests/test_build_identity.py --write`
there). The test builds the same spots with today's builder and compares every entry,
so any change to an array, a static field, a label or the digest (checkpoints depend on
it) fails here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE = os.path.join(ROOT, "tests", "data", "build_reference.json")
#: The label fields compared after materialising them (the builder may defer them).
LABEL_FIELDS = ("name", "fingerprint", "payoff_offset", "node_codes", "node_player", "action_names", "node_dealt",
                "node_slot_start", "hands", "hand_names", "hand_cards", "node_committed")


def _spot(name: str):
    from cfrjax.games.poker import PokerSubgameSpec, load_poker_config

    games = os.path.join(ROOT, "games")
    if name == "river_all":        # one board, every live combo (a spot kernel plan)
        return load_poker_config(os.path.join(games, "hunl_river.toml"), hands="all")
    if name == "river_raked":      # size strings with raises, all-in threshold, rake
        return PokerSubgameSpec(board="Ah 9c 5d 5s 2h", pot=30, stack=115, name=name,
                                betting={"bet": "50%, a", "raise": "3x", "add_allin_threshold": 1.5},
                                range0="AA,KK,55,A9s,98s,KQo", range1="QQ+,A5s,T9s,AKo", rake_rate=0.05, rake_cap=3.0)
    if name == "turn_small":       # the suite's turn, five random hands each
        return load_poker_config(os.path.join(games, "hunl_turn.toml"), random_hands=5, seed=2)
    if name == "turn_donk":        # donk sizes, raises, all-in called on the turn
        return PokerSubgameSpec(board="Qs 7h 2c 9d", pot=40, stack=110, name=name,
                                betting={"bet": "75%", "raise": "2.5x", "river": {"donk": "33%", "bet": "a"},
                                         "force_allin_threshold": 0.15},
                                range0="99,77,AQs,KQs,JTs,A2o", range1="QQ,T8s,A9s,KJo,22")
    if name == "flop_one_size":    # a dry flop, one bet size, no raises
        return PokerSubgameSpec(board="Ks 7d 2c", pot=20, stack=60, name=name, bet_fractions=(0.5,), raise_cap=0,
                                range0="AA,KQs,76s,JTo", range1="KK,22,A7s,QJo")
    if name == "flop_monotone":    # flushes and straight flushes on the river, raises, rake
        return PokerSubgameSpec(board="8s 6s 2s", pot=30, stack=90, name=name,
                                betting={"bet": "50%", "raise": "3x", "turn": {"raise": ""}, "river": {"raise": ""}},
                                range0="AsKs,9s7s,5s4s,QQ,T9s,Ah5h", range1="KsQs,JsTs,As2d,88,66,T9o",
                                rake_rate=0.05, rake_cap=4.0)
    if name == "flop_paired":      # paired board (full houses, quads), all-in threshold
        return PokerSubgameSpec(board="Kd Kc 4h", pot=55, stack=100, name=name,
                                betting={"bet": "75%", "raise": "", "add_allin_threshold": 1.5},
                                range0="KhQh,44,AhAd,Ks4s,JcTc", range1="AsKs,QQ,4d4c,76s")
    raise KeyError(name)


SPOTS = ("river_all", "river_raked", "turn_small", "turn_donk", "flop_one_size", "flop_monotone", "flop_paired")


def _h(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:24]


def _array_hash(x) -> str:
    a = np.ascontiguousarray(np.asarray(x))
    return _h(f"{a.dtype.str}:{a.shape};".encode() + a.tobytes())


def game_digests(game) -> dict:
    """`{entry: sha256}` of a `PublicGame`: `leaf:NAME` per array leaf, `static:NAME` per
    static field (its `repr`), `label:NAME` per label field, `source` (the provenance
    without the build time)."""
    out = {}
    for f in dataclasses.fields(game):
        v = getattr(game, f.name)
        if f.name in ("labels", "plan"):
            continue
        if f.metadata.get("static"):
            out[f"static:{f.name}"] = _h(repr(v).encode())
        elif v is not None:
            out[f"leaf:{f.name}"] = _array_hash(v)
    lb = game.labels
    for k in LABEL_FIELDS:
        v = getattr(lb, k)
        out[f"label:{k}"] = _array_hash(v) if isinstance(v, np.ndarray) else _h(repr(v).encode())
    src = json.loads(json.dumps(lb.source))
    src["poker"].pop("build_s", None)
    out["source"] = _h(json.dumps(src, sort_keys=True).encode())
    return out


def build(name: str):
    from cfrjax.games.poker.public_tree import build_public

    return build_public(_spot(name), terminals="sorted")


@pytest.mark.parametrize("name", SPOTS)
def test_build_equals_reference(name):
    with open(REFERENCE) as f:
        ref = json.load(f)["spots"][name]
    game = build(name)
    got = game_digests(game)
    assert got["label:fingerprint"] == ref["label:fingerprint"]
    for f in dataclasses.fields(game):   # a static field added since the reference: at its default
        if f.metadata.get("static") and f.name not in ("labels", "plan") and f"static:{f.name}" not in ref:
            assert getattr(game, f.name) == f.default, f"{name}: new static field {f.name} not at its default"
            got.pop(f"static:{f.name}")
    bad = sorted(k for k in set(ref) | set(got) if ref.get(k) != got.get(k))
    assert not bad, f"{name}: differs from the reference in {bad}"


def test_build_with_numpy_tables_equals_reference(monkeypatch):
    """The NumPy showdown tables (`CFRJAX_NATIVE=0`) build the same flop as the reference."""
    monkeypatch.setenv("CFRJAX_NATIVE", "0")
    test_build_equals_reference("flop_monotone")


def test_board_values_equal_the_evaluator():
    """`board_values` (rank tables plus the flush suit) equals `evaluate` of the 7 cards for
    every live hand: rainbow, two-tone, monotone, paired and trips flops with turn and
    river cards, so straights, flushes, straight flushes, full houses and quads occur."""
    from cfrjax.games.poker.cards import COMBOS
    from cfrjax.games.poker.evaluator import board_values, evaluate

    rng = np.random.default_rng(3)
    for flop in ([48, 44, 40], [0, 4, 8], [1, 5, 9], [44, 45, 20], [44, 45, 46], [24, 29, 34]):
        rest = np.setdiff1d(np.arange(52), flop)
        extra = np.array([rng.choice(rest, 2, replace=False) for _ in range(40)])
        boards = np.concatenate([np.broadcast_to(flop, (40, 3)), extra], axis=1)
        hc = COMBOS[~np.isin(COMBOS, flop).any(1)]
        got = board_values(boards, hc)
        live = ~(hc[None, :, :, None] == extra[:, None, None, :]).any((-1, -2))
        cards = np.concatenate([np.broadcast_to(boards[:, None], (40, hc.shape[0], 5)),
                                np.broadcast_to(hc, (40,) + hc.shape)], axis=2)
        assert np.array_equal(got[live], evaluate(cards[live])), flop
    assert board_values(np.zeros((0, 5), np.int64), COMBOS[:3]).shape == (0, 3)


def test_labels_are_made_on_first_read():
    """The per-node label strings are not made by the build (a `Deferred`), are made once
    on first read, and a pickled copy carries them."""
    import pickle

    from cfrjax.public.game import Deferred

    game = build("flop_one_size")
    lb = game.labels
    assert isinstance(lb.__dict__["_deferred_node_codes"], Deferred)
    codes = lb.node_codes
    assert isinstance(codes, tuple) and len(codes) == game.num_infosets and lb.node_codes is codes
    assert not isinstance(lb.__dict__["_deferred_action_names"], tuple)   # read on demand, field by field
    assert len(lb.action_names) == game.num_infosets
    copy = pickle.loads(pickle.dumps(lb))
    assert copy.node_codes == codes and copy == lb and np.array_equal(copy.node_committed, lb.node_committed)


def test_chunked_digest_equals_the_whole_arrays():
    from cfrjax.game import Chunked, chunked, fingerprint

    x = np.arange(100_003, dtype=np.int32).reshape(-1, 1)
    u = np.linspace(0, 1, 70_001)
    whole = fingerprint({"x": x.astype(np.int64), "u": u, "s": np.float64(2.5)})
    assert fingerprint({"x": chunked(x, np.int64, 1000), "u": Chunked(np.float64, u.shape, lambda: np.array_split(u, 7)),
                        "s": np.float64(2.5)}) == whole
    assert fingerprint({"x": x.astype(np.int64), "u": u[::-1].copy(), "s": np.float64(2.5)}) != whole


def test_aligned_host_arrays_are_placed_without_a_copy():
    """On a CPU `device_array` of an `aligned_empty` array in its own dtype aliases it:
    the built game's large leaves are not held twice."""
    import jax

    from cfrjax.host import aligned_empty, device_array

    a = aligned_empty((1000, 6), np.int32)
    assert a.ctypes.data % 64 == 0 and a.shape == (1000, 6)
    a[...] = 7
    d = device_array(a, np.int32)
    assert np.array_equal(np.asarray(d), a)
    if jax.default_backend() == "cpu":
        assert d.unsafe_buffer_pointer() == a.ctypes.data


def test_showdown_tables_checks_out():
    from cfrjax.public.terminals import card_table, showdown_tables

    hc = np.array([[0, 1], [2, 3], [0, 2]], np.int32)
    s = np.array([[3, 1, 2]])
    out = {"sd_sorted": np.empty((1, 3), np.int32), "sd_card_sorted": np.empty((1, 52, 2), np.int32),
           "sd_index": np.empty((1, 3, 6), np.int32)}
    assert showdown_tables(s, hc, card_table(hc), out=out) is out
    assert out["sd_sorted"].tolist() == [[1, 2, 0]]
    out["sd_index"] = np.empty((1, 6, 3), np.int32).transpose(0, 2, 1)
    with pytest.raises(ValueError, match="sd_index.*C-contiguous int32"):
        showdown_tables(s, hc, card_table(hc), out=out)


def test_native_showdown_tables_equal_numpy():
    """The native tables (`native_tables.cc`) equal the NumPy form entry for entry: many
    ties, no ties, dead hands (-1), one hand list per board position (river boards as
    data: 47 cards), a full range."""
    from cfrjax.games.poker.boards import CARD_HANDS, HAND_CARDS
    from cfrjax.games.poker.cards import COMBOS
    from cfrjax.public import native
    from cfrjax.public.terminals import card_table, showdown_tables

    if not native.available():
        pytest.skip(f"native code unavailable: {native.why_unavailable()}")
    rng = np.random.default_rng(5)
    for H, top in ((40, 3), (300, 10 ** 6), (1326, 60), (7, 1)):
        hc = COMBOS[np.sort(rng.choice(1326, H, replace=False))].astype(np.int32)
        s = rng.integers(-1, top, (9, H)).astype(np.int32)
        a, b = (showdown_tables(s, hc, card_table(hc), native=n) for n in (True, False))
        assert all(np.array_equal(a[k], b[k]) for k in a), H
    s = rng.integers(-1, 30, (5, HAND_CARDS.shape[0])).astype(np.int32)
    a, b = (showdown_tables(s, HAND_CARDS, CARD_HANDS, native=n) for n in (True, False))
    assert all(np.array_equal(a[k], b[k]) for k in a)
    with pytest.raises(ValueError, match="card_hands does not list"):
        showdown_tables(s[:, :3], HAND_CARDS[:3], card_table(HAND_CARDS[[0, 1, 50]], 47), native=True)


def test_slot_runs_are_the_runs_of_equal_sizes():
    from cfrjax import passes

    rng = np.random.default_rng(0)
    for _ in range(20):
        sizes = rng.choice([2, 3], size=int(rng.integers(1, 40)), p=[0.8, 0.2])
        start = np.concatenate([[0], np.cumsum(sizes)])
        runs, i = [], 0
        while i < sizes.size:   # the runs, one set at a time
            j = i
            while j < sizes.size and sizes[j] == sizes[i]:
                j += 1
            runs.append((int(start[i]), j - i, int(sizes[i])))
            i = j
        assert passes.slot_runs(start) == (tuple(runs) if len(runs) <= passes.MAX_RUNS else ())
    assert passes.slot_runs(np.zeros(1, np.int64)) == ()


if __name__ == "__main__":   # regenerate only from the pre-vectorised builder (commit 2e0fa20)
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_build_identity.py --write   (at commit 2e0fa20 only)")
    import jax

    jax.config.update("jax_enable_x64", True)   # as tests/conftest.py: float64 leaves
    sys.path.insert(0, ROOT)
    spots = {n: game_digests(build(n)) for n in SPOTS}
    with open(REFERENCE, "w") as f:
        json.dump({"commit": "2e0fa20", "note": "sha256[:24] per entry, tests/test_build_identity.py", "spots": spots},
                  f, indent=0, sort_keys=True)
        f.write("\n")
