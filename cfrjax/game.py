"""CompiledGame: a game as static index arrays (pytree leaves) and sizes (static metadata).

Nodes are numbered breadth-first, so the nodes of depth `d` are the contiguous range
`level_start[d]:level_start[d + 1]` and the edge into node `c > 0` belongs to the depth
block of its parent (paper, section 4.2(b)). Within a level, children are grouped by
parent in parent order, so every segment reduction over a level has sorted segment ids.

Slots are (information set, action) pairs, numbered information set by information set,
player 0's sets first; slot `num_slots` is the sentinel whose strategy entry is pinned to
one (paper, section 4.2(c)). Decision edges (edges leaving a player's node) are sorted by
slot, so player 0's edges come first (`dec_split`).

A `CompiledGame` is a pytree: the arrays below are its leaves, the sizes and level
boundaries its static metadata, so `jax.jit(cfrjax.step)(game, state)` needs no
`static_argnums` and `vmap` over a batch of games with different payoffs works.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax.atomic import atomic_write
from cfrjax.host import device_array
from cfrjax.layout import pull_layout



def hand_swapped(key: str, source) -> str | None:
    """`key` with the two cards of its `hand` part the other way round, for a source that
    declares the parts of its keys with a `hand` among them (`source["key_fields"]`; poker:
    `P{player}|{hand}|{history}`, hands printed high card first, "AsKs"): a hand is a set
    of two cards, so `"P1|KsAs|k"` (as typed, or as cfrjax printed hands before) names
    `"P1|AsKs|k"`. `None` for a key without such a part."""
    fields = source.get("key_fields") if isinstance(source, dict) else None
    if not fields or "hand" not in fields:
        return None
    parts = key.split("|", len(fields) - 1)
    i = list(fields).index("hand")
    if len(parts) != len(fields) or len(parts[i]) != 4:
        return None
    parts[i] = parts[i][2:] + parts[i][:2]
    return "|".join(parts)

@dataclasses.dataclass(frozen=True, eq=False)
class GameLabels:
    """Names behind the slots, kept out of the hot path.

    Compared and hashed by `fingerprint` (a digest of the compiled arrays), so it can sit
    in a pytree's static metadata without hashing thousands of strings on every call.

    Attributes:
      name: the game's name (for OpenSpiel games, the game string).
      infoset_keys: `[I]` information-set keys in slot order.
      action_names: `[I]` tuples of action labels.
      action_ids: `[I]` tuples of source action ids (OpenSpiel action ids), or `None`.
      infoset_player: `[I]` owner of each information set (NumPy).
      payoff_offset: added to player 0's value when reporting it (constant-sum sources).
      source: provenance, JSON-able (e.g. `{"openspiel": "leduc_poker"}`).
      fingerprint: hex digest of the compiled index arrays and payoffs.
    """

    name: str
    infoset_keys: tuple
    action_names: tuple
    action_ids: tuple | None
    infoset_player: np.ndarray
    payoff_offset: float
    source: dict
    fingerprint: str

    def __eq__(self, other):
        return isinstance(other, GameLabels) and other.fingerprint == self.fingerprint

    def __hash__(self):
        return hash(self.fingerprint)


_INDEX_FIELDS = ("parent", "lane_slot", "val_slot", "dec_child", "dec_parent", "dec_slot", "dec_opp",
                 "slot_infoset", "slot_own_reach")
_FLOAT_FIELDS = ("template", "payoff", "chance_reach", "edge_prob", "dec_sign", "dec_chance", "slot_uniform")
#: How the passes sum over the tree (`CompiledGame.reduction`).
REDUCTIONS = ("auto", "pull", "scatter")
#: Index leaves derived from the others when the game is placed (`cfrjax.layout`); not saved.
_DERIVED_FIELDS = ("child_start", "slot_edge_start", "infoset_slot_start", "path_slot")


@dataclasses.dataclass(frozen=True)
class CompiledGame:
    """The compiled game (see module docstring).

    Leaves (N nodes, S slots, I information sets, M decision edges):
      parent: `[N]` int32, parent node (the root is its own parent).
      lane_slot: `[2, N]` int32, slot multiplying reach lane `p` on the edge into each
        node: the edge's slot if player `p` owns the parent, else the sentinel.
      val_slot: `[N]` int32, slot weighting a child's value in the backward pass (the
        sentinel below chance nodes, where chance is already in `template`).
      template: `[N]` float, the backward pass's starting values: chance-folded terminal
        values `pi_c(z) u_0(z)` (or `u_0(z)` when `chance_folded` is off), 0 elsewhere.
      payoff: `[N]` float, player 0's terminal payoffs (0 elsewhere).
      chance_reach: `[N]` float, product of chance probabilities root-to-node.
      edge_prob: `[N]` float, chance probability of the edge into each node (1 below
        decision nodes and at the root); used only when `chance_folded` is off.
      dec_child, dec_parent, dec_slot: `[M]` int32, the decision edges sorted by slot.
      dec_opp: `[M]` int32, index into the flattened `[2 * N]` reach buffer of the
        opponent's lane at the edge's parent.
      dec_sign: `[M]` float, +1 for player 0's edges, -1 for player 1's.
      dec_chance: `[M]` float, chance reach at the edge's parent (used when
        `chance_folded` is off).
      slot_infoset: `[S]` int32, information set of each slot (sorted).
      slot_own_reach: `[S]` int32, index into the flattened reach buffer of the owner's
        lane at one member of the slot's information set (equal at every member under
        perfect recall).
      slot_uniform: `[S]` float, `1 / |A(I)|` (regret matching's fallback).
      child_start, slot_edge_start, infoset_slot_start: `[N + 1]`, `[S + 1]`, `[I + 1]`
        int32 boundaries of contiguous segments (children, a slot's decision edges, a
        set's slots), and path_slot: `[2, W, N]` int32 own-decision slots root -> node,
        sentinel-padded; derived (`cfrjax.layout`).

    Static metadata:
      num_nodes, num_slots, num_infosets: sizes.
      level_start: `D + 2` offsets; level `d` is nodes `level_start[d]:level_start[d+1]`.
      slot_split: player 0 owns slots `[0, slot_split)`, player 1 the rest.
      dec_split: player 0's decision edges are `[0, dec_split)`.
      br_rounds: per player, the longest chain of own decisions (best-response sweeps).
      level_fanout: `D + 1` widths, the most children of a node of each depth;
        max_slot_edges, max_actions: the most decision edges of a slot, actions of a set
        (the padded widths of the pull sums, `cfrjax.layout`).
      reduction: how the passes sum over the tree (`cfrjax.passes`): `"pull"`
        (gather-and-add, for accelerators), `"scatter"` (scatter-add, for CPUs) or
        `"auto"` (scatter on CPU, pull elsewhere; picked when the solve is lowered).
        Both add in the same order; e.g. `dataclasses.replace(game, reduction="pull")`.
      chance_folded: whether chance is folded into `template` (see `compile_game`).
      labels: names of information sets and actions (`GameLabels`).
    """

    parent: Any
    lane_slot: Any
    val_slot: Any
    template: Any
    payoff: Any
    chance_reach: Any
    edge_prob: Any
    dec_child: Any
    dec_parent: Any
    dec_slot: Any
    dec_opp: Any
    dec_sign: Any
    dec_chance: Any
    slot_infoset: Any
    slot_own_reach: Any
    slot_uniform: Any
    child_start: Any = None
    slot_edge_start: Any = None
    infoset_slot_start: Any = None
    path_slot: Any = None
    num_nodes: int = dataclasses.field(metadata=dict(static=True), default=0)
    num_slots: int = dataclasses.field(metadata=dict(static=True), default=0)
    num_infosets: int = dataclasses.field(metadata=dict(static=True), default=0)
    level_start: tuple = dataclasses.field(metadata=dict(static=True), default=())
    slot_split: int = dataclasses.field(metadata=dict(static=True), default=0)
    dec_split: int = dataclasses.field(metadata=dict(static=True), default=0)
    br_rounds: tuple = dataclasses.field(metadata=dict(static=True), default=(1, 1))
    chance_folded: bool = dataclasses.field(metadata=dict(static=True), default=True)
    level_fanout: tuple = dataclasses.field(metadata=dict(static=True), default=())
    max_slot_edges: int = dataclasses.field(metadata=dict(static=True), default=0)
    max_actions: int = dataclasses.field(metadata=dict(static=True), default=0)
    reduction: str = dataclasses.field(metadata=dict(static=True), default="auto")

    def __post_init__(self):
        if self.reduction not in REDUCTIONS:
            raise ValueError(f"unknown reduction {self.reduction!r}; allowed: {', '.join(map(repr, REDUCTIONS))}")
    labels: GameLabels | None = dataclasses.field(metadata=dict(static=True), default=None)
    #: The implementation plan (`cfrjax.plan.Plan`; `None`: the auto plan, `plan_of`).
    plan: Any = dataclasses.field(metadata=dict(static=True), default=None)

    #: Re-targetable float leaves (`cfrjax.forms`): name -> dimensions of one game's leaf.
    RETARGETABLE = {k: 1 for k in _FLOAT_FIELDS}

    @property
    def slot_shape(self) -> tuple:
        """Shape of slot arrays (regrets, averages, policies): `(S,)`."""
        return (self.num_slots,)

    def infoset_index(self, key):
        """The `slice` of an information set's slots in `[S]` arrays; `KeyError` if unknown.
        A poker key may name its hand's two cards in either order (`hand_swapped`)."""
        slots = self.infoset_slots()
        try:
            return slots[key] if key in slots else slots[hand_swapped(str(key), self.labels.source)]
        except KeyError:
            raise KeyError(f"{self.name}: no information set {key!r}") from None

    @property
    def depth(self) -> int:
        """Number of depth blocks D (levels that have children)."""
        return len(self.level_start) - 2

    @property
    def num_decision_edges(self) -> int:
        return int(self.dec_child.shape[-1])

    @property
    def name(self) -> str:
        return self.labels.name if self.labels is not None else "game"

    def infoset_slots(self) -> dict:
        """Information-set key -> its `slice` of the `[S]` slot vectors (slot order)."""
        out, offset = {}, 0
        for key, names in zip(self.labels.infoset_keys, self.labels.action_names):
            out[key] = slice(offset, offset + len(names))
            offset += len(names)
        return out

    def sizes(self) -> dict:
        """Sizes as a plain dict: nodes, infosets, slots, depth, decision edges."""
        return dict(nodes=self.num_nodes, infosets=self.num_infosets, slots=self.num_slots,
                    depth=self.depth, decision_edges=self.num_decision_edges)


jax.tree_util.register_dataclass(
    CompiledGame,
    data_fields=[f.name for f in dataclasses.fields(CompiledGame) if not f.metadata.get("static")],
    meta_fields=[f.name for f in dataclasses.fields(CompiledGame) if f.metadata.get("static")],
)


class Chunked(NamedTuple):
    """An array `fingerprint` reads in pieces, never whole: its `dtype`, its `shape`, and
    `chunks()` yielding consecutive pieces whose bytes, converted to `dtype`, are the
    array's in C order (e.g. an int64 digest of an int32 array, converted a slice at a
    time: the same digest without the int64 copy)."""

    dtype: Any
    shape: tuple
    chunks: Callable


def chunked(x: np.ndarray, dtype, size: int = 1 << 16) -> Chunked:
    """`x` read by `fingerprint` as if it were `x.astype(dtype)`, about `size` entries
    (whole leading rows) at a time."""
    x = np.asarray(x)
    rows = max(1, size // max(1, int(np.prod(x.shape[1:], dtype=np.int64))))
    return Chunked(np.dtype(dtype), x.shape, lambda: (x[i:i + rows] for i in range(0, max(len(x), 1), rows)))


def fingerprint(arrays: dict) -> str:
    """Digest of named arrays (names, dtypes, shapes and bytes), stable across runs. A
    value may be a `Chunked` (the digest of the array it describes)."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = arrays[name]
        if isinstance(a, Chunked):
            dt = np.dtype(a.dtype)
            h.update(f"{name}:{dt.str}:{tuple(a.shape)};".encode())
            for c in a.chunks():
                h.update(np.ascontiguousarray(c, dt).reshape(-1).view(np.uint8))
            continue
        a = np.ascontiguousarray(a)
        h.update(f"{name}:{a.dtype.str}:{a.shape};".encode())
        h.update(a.reshape(-1).view(np.uint8))
    return h.hexdigest()[:32]


def default_float_dtype():
    """float64 when the user enabled `jax_enable_x64`, else float32."""
    return jnp.float64 if jax.config.jax_enable_x64 else jnp.float32


def from_numpy(arrays: dict[str, np.ndarray], meta: dict, labels: GameLabels) -> CompiledGame:
    """Place host arrays on the default device as a `CompiledGame` (with its pull layout)."""
    derived, widths = pull_layout(arrays, meta)
    fdt = default_float_dtype()
    leaves = {k: device_array(arrays[k], jnp.int32) for k in _INDEX_FIELDS}
    leaves.update({k: device_array(v, jnp.int32) for k, v in derived.items()})
    meta = {**meta, **widths}
    leaves.update({k: device_array(arrays[k], fdt) for k in _FLOAT_FIELDS})
    return CompiledGame(**leaves, **meta, labels=labels)


_FORMAT = "cfrjax.compiled/1"


def save_game(game: CompiledGame, path: str | os.PathLike) -> None:
    """Write a compiled game to one `.npz` file (arrays plus JSON metadata).

    The file holds everything the solver needs, so a machine without OpenSpiel can load
    it with `cfrjax.load_game(path)`. Float arrays are stored in float64.
    """
    labels = game.labels
    meta = dict(
        format=_FORMAT, num_nodes=game.num_nodes, num_slots=game.num_slots,
        num_infosets=game.num_infosets, level_start=list(game.level_start),
        slot_split=game.slot_split, dec_split=game.dec_split, br_rounds=list(game.br_rounds),
        chance_folded=game.chance_folded,
        name=labels.name, infoset_keys=list(labels.infoset_keys),
        action_names=[list(a) for a in labels.action_names],
        action_ids=None if labels.action_ids is None else [list(a) for a in labels.action_ids],
        payoff_offset=labels.payoff_offset, source=labels.source, fingerprint=labels.fingerprint)
    arrays = {k: np.asarray(getattr(game, k)) for k in _INDEX_FIELDS}
    arrays.update({k: np.asarray(getattr(game, k), np.float64) for k in _FLOAT_FIELDS})
    arrays["infoset_player"] = np.asarray(labels.infoset_player, np.int8)
    atomic_write(path, lambda f: np.savez_compressed(f, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8),
                                                     **arrays))


def read_game_file(path: str | os.PathLike) -> CompiledGame:
    """Load a file written by `save_game`."""
    with np.load(os.fspath(path)) as z:
        meta = json.loads(z["meta"].tobytes().decode())
        if meta.get("format") != _FORMAT:
            raise ValueError(f"{path}: not a cfrjax compiled game (format {meta.get('format')!r}, expected {_FORMAT!r})")
        arrays = {k: z[k] for k in _INDEX_FIELDS + _FLOAT_FIELDS}
        infoset_player = z["infoset_player"]
    labels = GameLabels(
        name=meta["name"], infoset_keys=tuple(meta["infoset_keys"]),
        action_names=tuple(tuple(a) for a in meta["action_names"]),
        action_ids=None if meta["action_ids"] is None else tuple(tuple(a) for a in meta["action_ids"]),
        infoset_player=infoset_player, payoff_offset=meta["payoff_offset"], source=meta["source"],
        fingerprint=meta["fingerprint"])
    static = dict(num_nodes=meta["num_nodes"], num_slots=meta["num_slots"], num_infosets=meta["num_infosets"],
                  level_start=tuple(meta["level_start"]), slot_split=meta["slot_split"],
                  dec_split=meta["dec_split"], br_rounds=tuple(meta["br_rounds"]),
                  chance_folded=meta["chance_folded"])
    return from_numpy(arrays, static, labels)
