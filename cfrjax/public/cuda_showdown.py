"""The sorted showdown as a CUDA kernel (an XLA FFI custom call) on NVIDIA GPUs.

`cfrjax.public.showdown_kernel`'s Pallas (Triton) kernel writes each row's prefix table
to global memory and gathers from it after a barrier: six random reads per hand through
the caches. Triton has no shared memory a program can gather from, so this kernel is
written in CUDA (`cuda_showdown.cu`): the row's reach and its whole table live in shared
memory, and global memory sees the row read, the values written and the subgame's index
tables. Same tables and formula; sums in another order (equal to rounding, tested on a
GPU against the XLA form).

Built on first use (`cfrjax.public.ffi_library`) with the CUDA toolkit's `nvcc`
(`$CUDACXX`, `$CUDA_HOME/bin/nvcc`, `nvcc` on the path, `/usr/local/cuda/bin/nvcc`) for the
architectures it supports among sm_75 (Turing, Colab's T4), sm_80 (Ampere, Ada runs it)
and sm_90 (Hopper), plus PTX for newer GPUs, side by side (`--threads=0`): seconds once
per machine, kept beside the CPU library under `~/.cache/cfrjax/native`. Without
`nvcc`, or where the build fails, `available()` is false (the reason in
`why_unavailable()`) and the Pallas kernel runs. `CFRJAX_CUDA=0` switches it off.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax.pallas_gpu import nvidia_gpu
from cfrjax.public.ffi_library import FfiLibrary

__all__ = ["available", "fits", "showdown", "why_unavailable"]

#: Threads per block, and node rows per block (side by side: each table index read serves
#: them all): `MANY_ROWS_BLOCK` rows where a call has `MANY_ROWS` rows or more, else
#: `ROWS`; built for 512 threads and 1, 2 or 4 rows (fewer where the GPU's shared memory
#: per block does not hold them: a T4 has 64 KB, four of the turn's rows take 76); two
#: hands a lane in the cards' scans (the fastest measured on the full-range turn; the
#: settings and forms tried: `bench/README.md`).
THREADS, ROWS, MANY_ROWS, MANY_ROWS_BLOCK = 512, 2, 2400, 4

_HERE = os.path.dirname(os.path.abspath(__file__))
_TARGET = "CfrjaxShowdownCuda"
_ARCHS = (75, 80, 90)


@functools.lru_cache(maxsize=None)
def _nvcc() -> str | None:
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    for cand in (os.environ.get("CUDACXX"), home and os.path.join(home, "bin", "nvcc"), shutil.which("nvcc"),
                 "/usr/local/cuda/bin/nvcc"):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def _nvcc_required() -> str:
    """`_nvcc()`, or a `RuntimeError` saying how to provide one (the build's reason)."""
    nvcc = _nvcc()
    if nvcc is None:
        raise RuntimeError("no nvcc found (set CUDA_HOME or CUDACXX, or install the CUDA toolkit)")
    return nvcc


@functools.lru_cache(maxsize=None)
def _archs() -> tuple:
    """The architectures of `_ARCHS` that `nvcc` compiles for."""
    nvcc = _nvcc_required()
    listed = subprocess.run([nvcc, "--list-gpu-arch"], capture_output=True, text=True).stdout.split()
    archs = tuple(a for a in _ARCHS if f"compute_{a}" in listed) if listed else _ARCHS
    if not archs:
        raise RuntimeError(f"{nvcc} compiles for none of sm_{', sm_'.join(map(str, _ARCHS))}")
    return archs


def _command(sources: tuple, output: str) -> list:
    archs = _archs()
    gencode = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs]
    gencode.append(f"-gencode=arch=compute_{archs[-1]},code=compute_{archs[-1]}")
    # --threads=0: the architectures compiled side by side on every core (nvcc 11.2 and later).
    return [_nvcc(), "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", "--threads=0", *gencode, "-I",
            jax.ffi.include_dir(), *sources, "-o", output]


def _key() -> bytes:
    """The toolkit the library is built with: `nvcc`'s path, size and time (no subprocess,
    so registering a built library at import stays cheap)."""
    nvcc = _nvcc_required()
    st = os.stat(os.path.realpath(nvcc))
    return f"{os.path.realpath(nvcc)} {st.st_size} {st.st_mtime_ns} {_ARCHS}".encode()


_LIBRARY = FfiLibrary(name="libcfrjax_cuda.so", sources=(os.path.join(_HERE, "cuda_showdown.cu"),),
                      targets=(_TARGET,), platform="CUDA", command=_command, key=_key)


#: The kernel's register tiles hold at most this many hands, cards and hands per card
#: (`kMaxHands`, `kMaxCards`, `kMaxPerCard` in `cuda_showdown.cu`): every hold'em spot.
MAX_HANDS, MAX_CARDS, MAX_PER_CARD = 1536, 52, 64


def fits(H: int, C: int, M: int) -> bool:
    """Whether `H` hands, `C` cards and `M` hands per card fit the kernel."""
    return H <= MAX_HANDS and C <= MAX_CARDS and M <= MAX_PER_CARD


def available() -> bool:
    """Whether the CUDA kernel can run here: an NVIDIA GPU where the library builds and
    loads (whether it runs is the plan's choice, `cfrjax.plan.Plan.cuda_showdown`, where
    `CFRJAX_CUDA=0` switches it off)."""
    return nvidia_gpu() and _LIBRARY.load(build=True)


def why_unavailable() -> str | None:
    """Why `available()` is false (`None` when it is true)."""
    if not nvidia_gpu():
        return "the default backend is not an NVIDIA GPU"
    return None if available() else _LIBRARY.error()


def showdown(x, sorted_t, cards_t, index_t):
    """`Wk - St` of `nb` subgames with `Q` showdown nodes each: `x [nb, Q, H]` float32,
    tables `sorted [nb, H]`, `cards [nb, C, M]`, `index [nb, H, 6]` (int32,
    `terminals.showdown_tables`, every index in range: not checked in the call) ->
    `[nb, Q, H]`. Batching is `cfrjax.public.showdown_kernel.showdown`'s (it calls this)."""
    if not available():
        raise RuntimeError(f"the CUDA showdown is not available: {why_unavailable()}")
    call = jax.ffi.ffi_call(_TARGET, jax.ShapeDtypeStruct(x.shape, jnp.float32))
    i32 = lambda a: jnp.asarray(a, jnp.int32)   # noqa: E731
    rows = MANY_ROWS_BLOCK if x.shape[0] * x.shape[1] >= MANY_ROWS else ROWS
    return call(jnp.asarray(x, jnp.float32), i32(sorted_t), i32(cards_t), i32(index_t),
                rows=np.int64(rows), threads=np.int64(THREADS))


def _register_built() -> None:
    """Register a library already built (no build, no device query), so an executable read
    back from a compilation cache finds its custom call without tracing anything."""
    if _nvcc() is not None:
        _LIBRARY.load(build=False)


_register_built()
