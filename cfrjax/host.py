"""Host (NumPy) data placed on the device without compiling anything.

In this JAX, `jnp.asarray(x, dtype)` of a NumPy array runs a small XLA program for each
new shape and dtype (a copy, `stage`, or a conversion, `convert_element_type`), compiled on
first use: tens of milliseconds apiece on a CPU, and a game built from some thirty host
arrays compiled some thirty programs. `device_array` converts on the host with NumPy and places
the result with `jax.device_put`, which compiles nothing; arrays already on a device (or
traced) go through `jnp.asarray` as before.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["aligned_empty", "default_platform", "device_array"]


def default_platform() -> str:
    """The platform ("cpu", "gpu", ...) that new arrays and traced programs are for: that
    of JAX's default device where one is set (`jax.default_device(...)`, part of jit's
    cache key), else the default backend's. A GPU machine's user who works on its CPU
    with `jax.default_device(jax.devices("cpu")[0])` then gets the CPU's choices
    throughout (lowerings, the compensation's dtype, terminal forms, native code)."""
    device = jax.config.jax_default_device
    if device is not None:
        return device if isinstance(device, str) else device.platform
    return jax.default_backend()


def device_array(x, dtype=None):
    """`x` as a device array of `dtype` (default: its own), the dtype made canonical as
    `jnp.asarray` does (float64 is float32 without `jax_enable_x64`). Host data (NumPy
    arrays, lists, scalars) is converted by NumPy and placed by `jax.device_put`."""
    if isinstance(x, (jax.Array, jax.core.Tracer)):
        return jnp.asarray(x, dtype)
    a = np.asarray(x) if dtype is None else np.asarray(x, dtype=np.dtype(dtype))
    return jax.device_put(a.astype(jax.dtypes.canonicalize_dtype(a.dtype), copy=False))


#: Byte alignment at which `jax.device_put` on a CPU aliases a NumPy array instead of copying it.
HOST_ALIGNMENT = 64


def aligned_empty(shape, dtype) -> np.ndarray:
    """An uninitialised NumPy array whose data starts on a `HOST_ALIGNMENT`-byte boundary.
    A builder that fills its large arrays in place in their final dtype hands them to
    `device_array` without a copy on a CPU (`jax.device_put` aliases aligned host memory),
    so the built game is not held twice (the array must not be written after that)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(n + HOST_ALIGNMENT, np.uint8)
    off = -raw.ctypes.data % HOST_ALIGNMENT
    return raw[off:off + n].view(dtype).reshape(shape)
