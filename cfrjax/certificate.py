"""The value-agreement certificate across backends (paper, appendix E, eq. `valuecert`).

For a profile with per-player best-response gains `d0, d1` and `NashConv = d0 + d1`,
`|u0(x, y) - v*| <= max(d0, d1) <= NashConv`, so any two backends that solve *the same*
zero-sum tree satisfy `|v_i - v_j| <= NashConv_i + NashConv_j`. A violation proves that
at least one of them solves a different game (a mislabeled export, a wrong payoff sign,
a dropped chance branch). It needs two scalars per backend, so it scales to any tree.

Values are player 0's expected payoff under each backend's own average profile, in the
same units; NashConv is the *sum* of both best-response gains (twice
`cfrjax.exploitability`). Zero-sum games only: a raked poker spot has no unique value
(its equilibria may pay player 0 differently), so the bound does not apply to it.
"""

from __future__ import annotations

import itertools
from typing import Mapping


class CertificateError(AssertionError):
    """Two backends' values are further apart than their NashConvs allow."""


def value_certificate(results: Mapping[str, tuple[float, float]], *, atol: float = 1e-12,
                      strict: bool = True) -> list[dict]:
    """Check `|v_i - v_j| <= NashConv_i + NashConv_j + atol` for every pair of backends.

    Args:
      results: backend name -> `(value v0, NashConv)`.
      atol: slack for floating-point rounding in the evaluators.
      strict: raise `CertificateError` (listing every violating pair) when any pair fails.

    Returns:
      One row per pair: `a`, `b`, `gap` (|v_a - v_b|), `bound` (NashConv_a + NashConv_b),
      `used` (gap / bound), `ok`.
    """
    for name, (v, nc) in results.items():
        if not (float(nc) >= -atol):
            raise ValueError(f"{name}: NashConv {nc} is negative or not a number")
        if v != v:
            raise ValueError(f"{name}: value is NaN")
    rows = []
    for (a, (va, na)), (b, (vb, nb)) in itertools.combinations(results.items(), 2):
        gap = abs(float(va) - float(vb))
        bound = float(na) + float(nb)
        rows.append(dict(a=a, b=b, value_a=float(va), value_b=float(vb), gap=gap, bound=bound,
                         used=gap / bound if bound > 0 else (0.0 if gap <= atol else float("inf")),
                         ok=gap <= bound + atol))
    bad = [r for r in rows if not r["ok"]]
    if bad and strict:
        lines = [f"  {r['a']} vs {r['b']}: |{r['value_a']:.10g} - {r['value_b']:.10g}| = {r['gap']:.3e} "
                 f"> NashConv sum {r['bound']:.3e}" for r in bad]
        raise CertificateError("value-agreement certificate violated: these backends do not solve the same "
                               "game:\n" + "\n".join(lines) + "\n" + format_table(rows))
    return rows


def format_table(rows: list[dict]) -> str:
    """The pairs as a markdown table."""
    out = ["| a | b | v_a | v_b | gap | bound | used | holds |", "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        out.append(f"| {r['a']} | {r['b']} | {r['value_a']:.10g} | {r['value_b']:.10g} | {r['gap']:.3e} | "
                   f"{r['bound']:.3e} | {r['used']:.1%} | {'yes' if r['ok'] else '**NO**'} |")
    return "\n".join(out)
