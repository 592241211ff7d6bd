"""The flop classes under suit isomorphism, against a brute force over card names."""

import collections
import itertools

import numpy as np
import pytest

from cfrjax.games.poker import PokerSpecError, card_id
from cfrjax.games.poker import flops as F

_NAMES = [r + s for r in "23456789TJQKA" for s in "shdc"]


def _brute_force_classes():
    """Every flop's class as a frozenset of flops (frozensets of card names), found by
    renaming the suits of each flop in the 24 ways: shares no code with `flops`."""
    classes, seen = [], set()
    for flop in itertools.combinations(_NAMES, 3):
        key = frozenset(flop)
        if key in seen:
            continue
        members = {frozenset(c[0] + dict(zip("shdc", perm))[c[1]] for c in flop)
                   for perm in itertools.permutations("shdc")}
        seen |= members
        classes.append(frozenset(members))
    return classes


def _as_names(flop):
    return frozenset(_NAMES[c] for c in flop)


def test_classes_and_weights_equal_the_brute_force():
    brute = _brute_force_classes()
    assert collections.Counter(len(c) for c in brute) == {4: 299, 12: 1170, 24: 286}
    flops, weights = F.flop_classes()
    assert len(flops) == 1755 and weights.sum() == 22100
    by_flop = {flop: cls for cls in brute for flop in cls}
    got = {}
    for rep, w in zip(flops, weights):
        cls = by_flop[_as_names(rep)]
        assert w == len(cls)
        got[cls] = rep
        # the representative is the class's smallest sorted triple of card ids
        assert tuple(rep) == min(tuple(sorted(card_id(c) for c in m)) for m in cls)
    assert set(got) == set(brute)                     # every class once
    for cls in brute[::97]:                           # members of a sample of classes
        rep = got[cls]
        assert {_as_names(m) for m in F.flop_members(rep)} == set(cls)
        assert len(F.flop_members(rep)) == len(cls)
        any_member = sorted(next(iter(cls)))
        assert tuple(F.canonical_flop("".join(any_member))) == tuple(rep)


def test_textures_of_known_flops():
    tex = F.flop_textures([F.canonical_flop(f) for f in ("Qs7h2c", "8s6s2s", "KdKc4h", "5h4d3c", "Ah2d3c", "7c7d7h",
                                                          "As8s4d", "AhKhQh")])
    assert tex["high"].tolist() == ["Q", "8", "K", "5", "A", "7", "A", "A"]
    assert tex["suits"].tolist() == ["rainbow", "monotone", "rainbow", "rainbow", "rainbow", "rainbow", "two-tone",
                                     "monotone"]
    assert tex["pairing"].tolist() == ["unpaired", "unpaired", "paired", "unpaired", "unpaired", "trips", "unpaired",
                                       "unpaired"]
    assert tex["straight"].tolist() == [False, False, False, True, True, False, False, True]


def test_stratified_subset_covers_every_texture_and_is_stable():
    flops, weights = F.stratified_flops(25)
    assert len(flops) == 25 and len({tuple(f) for f in flops}) == 25
    all_flops, all_weights = F.flop_classes()
    index = {tuple(f): w for f, w in zip(all_flops, all_weights)}
    assert [index[tuple(f)] for f in flops] == weights.tolist()
    tex = F.flop_textures(flops)
    kinds = set(zip(tex["suits"], tex["pairing"] != "unpaired"))
    assert kinds == {("rainbow", False), ("rainbow", True), ("two-tone", False), ("two-tone", True),
                     ("monotone", False)}
    assert len(set(tex["high"])) >= 8                 # high cards spread, not all aces
    again, _ = F.stratified_flops(25)
    np.testing.assert_array_equal(flops, again)


def test_flop_sets_and_bad_input():
    assert len(F.flop_set("all")[0]) == 1755
    reps, weights = F.flop_set("Qs7h2c, 8s6s2s,KdKc4h")
    assert [_as_names(r) for r in reps] == [_as_names(F.canonical_flop(f)) for f in ("Qs7h2c", "8s6s2s", "KdKc4h")]
    assert weights.tolist() == [24, 4, 12]
    assert F.flop_str(F.canonical_flop("2c7hKd")) == "Kd7h2s"
    for bad, words in [("Ks7h", "a flop has 3"), ("Ks7h2c,8s6s2s,Kd7h2s", r"same flop up to suits \(Kd7h2s\)"), ("", "allowed: all"),
                       ("Ks7h2c,", "allowed: all"), ("Xx7h2c", "unknown card")]:
        with pytest.raises(PokerSpecError, match=words):
            F.flop_set(bad)
    for n in (0, 4, 1756, 2.5):
        with pytest.raises(PokerSpecError, match="stratified"):
            F.stratified_flops(n)
