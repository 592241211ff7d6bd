"""The default suite and the slow cases.

The default `pytest` run (CI, and the README's test command) deselects tests marked
`slow` (`addopts` in pyproject.toml) so that it stays within six minutes on a 2-core CPU,
where compiling each case's executables dominates. A slow case is another instance of a
claim that a default case already checks (more games, rules or orders through the same
code); `pytest -m slow` runs them, `pytest -m "slow or not slow"` runs everything.
"""

from __future__ import annotations

import pytest


def cases(values, fast, *, key=None, unpack=False, marks=None):
    """`values` as `pytest.param`s, those whose `key(value)` (default: the value itself)
    is not in `fast` marked `slow`; `unpack` for several argument names (tuple values);
    `marks(value)`: more marks of a case (e.g. its background job)."""
    fast = set(fast)
    unknown = fast - {key(v) if key else v for v in values}
    if unknown:
        raise ValueError(f"fast cases not among the values: {sorted(map(str, unknown))}")
    out = []
    for v in values:
        more = tuple(marks(v)) if marks else ()
        more += () if (key(v) if key else v) in fast else (pytest.mark.slow,)
        out.append(pytest.param(*(v if unpack else (v,)), marks=more))
    return out


def selected(request, test_name, *argnames):
    """Parameter tuples of `test_name`'s cases that this session runs, for a module
    fixture that computes every case in one executable (slow cases not selected are then
    not compiled)."""
    return {tuple(item.callspec.params[a] for a in argnames) for item in request.session.items
            if getattr(item, "originalname", None) == test_name and hasattr(item, "callspec")}
