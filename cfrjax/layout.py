"""The pull layout: segment boundaries and root-to-node slot paths (NumPy, once per game).

Derived from a compiled game's index arrays, so saved games (`save_game`) need not store
them. They let every sum of one iteration be a *pull* — a gather of each segment's
members and a sum along a short padded axis, one deterministic kernel — instead of an
atomic scatter-add into zeroed memory (two kernels, contended atomics):

- `child_start` `[N + 1]`: node `i`'s children are nodes `child_start[i]:child_start[i+1]`.
  Breadth-first numbering with children grouped by parent in parent order makes the
  children of consecutive nodes consecutive, so this is a prefix sum of child counts.
- `slot_edge_start` `[S + 1]`: slot `s`'s decision edges (sorted by slot) are
  `slot_edge_start[s]:slot_edge_start[s+1]`.
- `infoset_slot_start` `[I + 1]`: information set `i`'s slots.
- `path_slot` `[2, W, N]`: for lane `p`, the slots of player `p`'s own decisions on the path
  root -> node, in path order, padded with the sentinel (whose strategy entry is one). The
  reach of lane `p` at a node is the product down this column: one gather-and-multiply
  kernel for every node at once, instead of one kernel per depth level.

Static widths: `level_fanout[d]` (most children of a node of depth `d`), `max_slot_edges`,
`max_actions`; `W` is `path_slot`'s last dimension.
"""

from __future__ import annotations

import numpy as np


def segment_starts(sorted_ids: np.ndarray, num_segments: int) -> np.ndarray:
    """`[K + 1]` boundaries of the runs of `sorted_ids` (non-decreasing) over ids `0..K-1`."""
    return np.searchsorted(sorted_ids, np.arange(num_segments + 1), side="left").astype(np.int64)


def pull_layout(arrays: dict, static: dict) -> tuple[dict, dict]:
    """Derived arrays (`child_start`, `slot_edge_start`, `infoset_slot_start`, `path_slot`)
    and static widths (`level_fanout`, `max_slot_edges`, `max_actions`) of a compiled game."""
    n, num_slots, num_inf = static["num_nodes"], static["num_slots"], static["num_infosets"]
    ls = static["level_start"]
    parent = np.asarray(arrays["parent"], np.int64)
    if n > 1 and np.any(np.diff(parent[1:]) < 0):
        raise ValueError("compiled nodes are not grouped by parent in parent order")
    counts = np.bincount(parent[1:], minlength=n)
    child_start = np.concatenate([[1], 1 + np.cumsum(counts)])
    child_start[n] = n
    level_fanout = tuple(int(counts[ls[d]:ls[d + 1]].max(initial=0)) for d in range(len(ls) - 1))

    slot_edge_start = segment_starts(np.asarray(arrays["dec_slot"], np.int64), num_slots)
    infoset_slot_start = segment_starts(np.asarray(arrays["slot_infoset"], np.int64), num_inf)

    lane_slot = np.asarray(arrays["lane_slot"], np.int64)
    own = lane_slot != num_slots  # [2, N]
    depth = np.zeros((2, n), np.int64)  # own decisions on the path root -> node
    for d in range(1, len(ls) - 1):
        lo, hi = ls[d], ls[d + 1]
        depth[:, lo:hi] = depth[:, parent[lo:hi]] + own[:, lo:hi]
    width = int(depth.max(initial=0))
    path = np.full((2, width, n), num_slots, np.int32)  # [2, W, N]: coalesced per column
    for d in range(1, len(ls) - 1):
        lo, hi = ls[d], ls[d + 1]
        path[:, :, lo:hi] = path[:, :, parent[lo:hi]]
        for p in (0, 1):
            idx = np.flatnonzero(own[p, lo:hi]) + lo
            path[p, depth[p, idx] - 1, idx] = lane_slot[p, idx]

    derived = dict(child_start=child_start, slot_edge_start=slot_edge_start,
                   infoset_slot_start=infoset_slot_start, path_slot=path)
    widths = dict(level_fanout=level_fanout,
                  max_slot_edges=int(np.diff(slot_edge_start).max(initial=0)),
                  max_actions=int(np.diff(infoset_slot_start).max(initial=0)))
    return derived, widths
