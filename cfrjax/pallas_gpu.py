"""What the Pallas kernels share: where they compile, and Triton's block sizes.

The kernels (`cfrjax.matching_kernel`, `cfrjax.public.showdown_kernel`,
`cfrjax.public.fold_kernel`) lower to Triton, so they run on NVIDIA GPUs; elsewhere each
runs its XLA form, or Pallas's interpreter in the tests.
"""

from __future__ import annotations

import jax


def nvidia_gpu() -> bool:
    """Whether the default backend is an NVIDIA GPU (where Pallas lowers to Triton; every
    kernel's `used`)."""
    try:
        return jax.default_backend() == "gpu" and jax.devices()[0].device_kind.startswith("NVIDIA")
    except RuntimeError:
        return False


def pow2(n: int) -> int:
    """The least power of two `>= n` (Triton's block sizes)."""
    return 1 << max(0, int(n) - 1).bit_length()
