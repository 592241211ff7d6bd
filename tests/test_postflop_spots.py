"""The pure pieces of bench/peers/postflop_spots.py (the postflop-solver comparison on the
realistic spots): the manifest for offline crates, the second board of a shape class, range
strings of single combos, the same-tree verdict. No driver is built or run here."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench", "peers"))
import postflop_peer  # noqa: E402
import postflop_spots  # noqa: E402

MANIFEST = """[package]
name = "postflop-solver"

[dependencies]
bincode = { version = "2.0.0-rc.3", optional = true }
once_cell = "1.18.0"
rayon = { version = "1.8.0", optional = true }
regex = "1.9.6"
zstd = { version = "0.12.4", optional = true, default-features = false }

[features]
default = ["bincode", "rayon"]
custom-alloc = []
rayon = ["dep:rayon", "zstd?/zstdmt"]
"""


def test_debian_manifest_pins_the_debian_crates_and_drops_bincode_and_zstd():
    out = postflop_spots.debian_manifest(MANIFEST)
    assert out == """[package]
name = "postflop-solver"

[dependencies]
once_cell = "1.17"
rayon = { version = "1.6", optional = true }
regex = "1.7"

[features]
default = ["rayon"]
custom-alloc = []
rayon = ["dep:rayon"]
"""


def test_debian_manifest_refuses_another_manifest():
    with pytest.raises(ValueError, match="expected one match of 'bincode"):
        postflop_spots.debian_manifest(MANIFEST.replace("bincode = {", "serde = {"))


def test_moved_board_keeps_suits_and_moves_ranks():
    assert postflop_spots.moved_board("Qs 7h 2c 9d") == "Ks 8h 3c Td"
    assert postflop_spots.moved_board("Ah Kd 2s 3s 4s") == "2h Ad 3s 4s 5s"


def test_second_spec_replaces_board_and_name_and_pads(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('game = "poker_subgame"\nname = "river"\nboard = "Qs 7h 2c 9d 3s"\npot = 55\n')
    out = postflop_spots.second_spec(str(spec), "Ks 8h 3c Td 4s", str(tmp_path / ".."))
    assert open(out).read() == \
        'pad_hands = true\ngame = "poker_subgame"\nname = "river_second"\nboard = "Ks 8h 3c Td 4s"\npot = 55\n'
    first = postflop_spots.second_spec(str(spec), None, str(tmp_path / ".."))     # the first spot, padded too
    assert open(first).read() == 'pad_hands = true\n' + spec.read_text()
    spec.write_text('name = "x"\n')
    with pytest.raises(ValueError, match="no single `board"):
        postflop_spots.second_spec(str(spec), "Ks 8h 3c", str(tmp_path))


def test_combo_string_puts_the_higher_rank_first_and_drops_zero_weights():
    assert postflop_peer.combo_string(["QdAc", "7h7s", "2c3d", "KsKh"], [1.0, 0.5, 0.25, 0.0]) == \
        "AcQd,7h7s:0.5,3d2c:0.25"


def test_same_tree_needs_nodes_hands_and_values_within_both_exploitabilities():
    pf = dict(decision_nodes=[10, 2112], num_hands=[469, 498], current_ev=[-1.0, 1.0], exploitability=0.2)
    cj = dict(infosets=2122, value=-1.25, exploitability=0.1)
    assert postflop_spots.same_tree("t", pf, cj, [469, 498])["ok"]
    assert not postflop_spots.same_tree("t", pf, dict(cj, value=-1.31), [469, 498])["ok"]   # 0.31 > 0.2 + 0.1
    assert not postflop_spots.same_tree("t", pf, dict(cj, infosets=2121), [469, 498])["ok"]
    assert not postflop_spots.same_tree("t", pf, cj, [469, 497])["ok"]
