"""Entries of two public games matched by information-set key, for tests comparing forms."""

import numpy as np


def key_index(a, b):
    """`((rows, cols) in a, (rows, cols) in b)`: the slot row and hand column of every
    (key, action) of `a`'s information sets, in `a` and in `b` (found there by key)."""
    ra, ca, rb, cb = [], [], [], []
    for key, sl, h in a.labels.infoset_keys():
        sl_b, h_b = b.infoset_index(key)
        ra += range(sl.start, sl.stop)
        rb += range(sl_b.start, sl_b.stop)
        ca += [h] * (sl.stop - sl.start)
        cb += [h_b] * (sl.stop - sl.start)
    return (np.array(ra), np.array(ca)), (np.array(rb), np.array(cb))
