"""What the Pallas kernels share: where they compile, and Triton's block sizes.

The kernels (`cfrjax.matching_kernel`, `cfrjax.public.showdown_kernel`,
`cfrjax.public.fold_kernel`) lower to Triton, so they run on NVIDIA GPUs; elsewhere each
runs its XLA form, or Pallas's interpreter in the tests.
"""

from __future__ import annotations

import sys

import jax

#: Where MLIR's Python bindings look for the module of the Triton dialect (`<their
#: dialect prefix>.<namespace>`).
_TT_DIALECT_NAME = "jaxlib.mlir.dialects.tt"


def _register_triton_dialect_module() -> None:
    """Make the Triton dialect's Python module importable under the name MLIR's bindings
    try for it, so they find it once.

    Lowering a Pallas kernel to Triton downcasts every `tt` value it builds; each
    downcast asks the bindings for the `tt` dialect's module, which jaxlib keeps elsewhere
    (`jax._src.lib.triton.dialect`), so each one ran a failing import that searched the
    whole of `sys.path` (3,190 times for the full-range turn's chunk of iterations, each
    under three names). With the module found under that name (an alias of jaxlib's own,
    nothing new loaded) the lowering is the same text, and faster. Done on the first `nvidia_gpu()` that is true (every
    kernel asks it before it lowers); nothing where jaxlib has no Triton dialect."""
    if _TT_DIALECT_NAME in sys.modules:
        return
    try:
        from jax._src.lib import triton
    except ImportError:
        return
    dialect = getattr(triton, "dialect", None)
    if dialect is not None:
        sys.modules[_TT_DIALECT_NAME] = dialect


def nvidia_gpu() -> bool:
    """Whether the default backend is an NVIDIA GPU (where Pallas lowers to Triton; every
    kernel's `used`)."""
    try:
        gpu = jax.default_backend() == "gpu" and jax.devices()[0].device_kind.startswith("NVIDIA")
    except RuntimeError:
        return False
    if gpu:
        _register_triton_dialect_module()
    return gpu


def pow2(n: int) -> int:
    """The least power of two `>= n` (Triton's block sizes)."""
    return 1 << max(0, int(n) - 1).bit_length()
