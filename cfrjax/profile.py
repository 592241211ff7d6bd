"""Load-immune cost measures of the compiled iteration: XLA kernels per iteration.

Wall-clock time depends on the machine's load; the number of kernels one iteration
launches does not. On GPU each top-level fusion, custom call, scatter or other
non-trivial instruction of the optimized entry computation is one kernel launch.
"""

from __future__ import annotations

import collections
import re

import jax

from cfrjax.game import CompiledGame
from cfrjax.iteration import step
from cfrjax.state import SolverState
from cfrjax.xla_options import XLA_OPTIONS

#: Instructions of the entry computation that launch nothing.
_FREE = frozenset({"parameter", "constant", "bitcast", "get-tuple-element", "tuple"})


def hlo_op_counts(game: CompiledGame, state: SolverState) -> collections.Counter:
    """Instruction kinds of the optimized HLO entry computation of one `step`.

    The state is donated, as it is inside `solve`'s scan, so leaves that pass through
    unchanged cost no copy.
    """
    text = jax.jit(step, donate_argnums=1, compiler_options=XLA_OPTIONS).lower(game, state).compile().as_text()
    entry = text[text.index("\nENTRY"):]
    entry = entry[:entry.index("\n}")]
    ops = collections.Counter()
    for line in entry.splitlines()[1:]:
        m = re.search(r"=\s*\S+\s+([\w-]+)\(", line)
        if m:
            ops[m.group(1)] += 1
    return ops


def kernels_per_iteration(game: CompiledGame, state: SolverState) -> int:
    """Kernels one compiled iteration launches on the current backend (see module docstring)."""
    return sum(n for op, n in hlo_op_counts(game, state).items() if op not in _FREE)
