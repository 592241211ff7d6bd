"""The CUDA showdown kernel's host side: where it runs, how it is built, how a failed build
falls back. Its values are tested against the XLA form on an NVIDIA GPU
(`tests/test_boards.py`, the `cuda` cases, skipped elsewhere)."""

from __future__ import annotations

import os
import stat

import jax
import jax.numpy as jnp
import pytest

from cfrjax.public import cuda_showdown, showdown_kernel
from cfrjax.public.ffi_library import FfiLibrary


def test_off_an_nvidia_gpu_it_is_unavailable_with_its_reason():
    if jax.default_backend() == "gpu":
        pytest.skip("on a GPU the kernel may be available")
    assert not cuda_showdown.available()
    assert cuda_showdown.why_unavailable() == "the default backend is not an NVIDIA GPU"
    with pytest.raises(RuntimeError, match="not available: the default backend is not an NVIDIA GPU"):
        cuda_showdown.showdown(None, None, None, None)


def test_fits_every_holdem_spot_and_refuses_larger_tiles():
    assert cuda_showdown.fits(1326, 52, 51)                 # a full preflop hand list
    assert cuda_showdown.fits(1536, 52, 64)
    assert not cuda_showdown.fits(1537, 52, 51)
    assert not cuda_showdown.fits(1326, 53, 51)
    assert not cuda_showdown.fits(1326, 52, 65)


def _fake_nvcc(tmp_path, archs):
    path = tmp_path / "nvcc"
    path.write_text("#!/bin/sh\n[ \"$1\" = --list-gpu-arch ] && printf '%s\\n' " + " ".join(f"compute_{a}" for a in archs) + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.fixture
def nvcc_env(monkeypatch):
    def use(path):
        monkeypatch.setenv("CUDACXX", path)
        cuda_showdown._nvcc.cache_clear()
        cuda_showdown._archs.cache_clear()
    yield use
    cuda_showdown._nvcc.cache_clear()
    cuda_showdown._archs.cache_clear()


def test_build_targets_the_toolkits_architectures_plus_ptx(tmp_path, nvcc_env):
    """Binaries for the architectures of sm_75, sm_80 and sm_90 that the toolkit lists,
    PTX of the newest for later GPUs."""
    nvcc_env(_fake_nvcc(tmp_path, [80, 86, 90, 100]))                  # a toolkit without Turing
    cmd = cuda_showdown._command(("k.cu",), "out.so")
    assert cmd[0] == str(tmp_path / "nvcc")
    assert [a for a in cmd if a.startswith("-gencode")] == [
        "-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90,code=sm_90",
        "-gencode=arch=compute_90,code=compute_90"]
    assert cmd[-3:] == ["k.cu", "-o", "out.so"] and jax.ffi.include_dir() in cmd and "--threads=0" in cmd
    nvcc_env(_fake_nvcc(tmp_path, [100, 120]))
    with pytest.raises(RuntimeError, match="compiles for none of sm_75, sm_80, sm_90"):
        cuda_showdown._command(("k.cu",), "out.so")


def test_the_key_changes_with_the_toolkit(tmp_path, nvcc_env):
    nvcc_env(_fake_nvcc(tmp_path, [90]))
    first = cuda_showdown._key()
    os.utime(tmp_path / "nvcc", ns=(1, 1))
    assert cuda_showdown._key() != first


def test_a_failed_build_is_remembered_with_its_reason_and_not_retried(tmp_path, monkeypatch):
    """A library whose compiler fails is not loaded; `error()` gives the command's stderr,
    and the build is tried once per process (every later call answers from memory)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    src = tmp_path / "x.cc"
    src.write_text("int main() {}\n")
    calls = []

    def command(sources, output):
        calls.append(output)
        return ["sh", "-c", "echo 'x.cc:1: no such type' >&2; exit 1"]

    lib = FfiLibrary(name="libx.so", sources=(str(src),), targets=("X",), platform="cpu", command=command,
                     key=lambda: b"k")
    assert lib.error() is None
    assert not lib.load(build=False) and not calls                  # not built, not building: nothing tried
    assert not lib.load(build=True)
    assert "failed: x.cc:1: no such type" in lib.error()
    assert not lib.load(build=True) and len(calls) == 1
    left = [f for f in os.listdir(os.path.dirname(lib.path())) if not f.endswith(".lock")]  # the build's lock file
    assert not left                                                 # no partial library left behind


def test_a_compiler_missing_is_a_reason_too(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    src = tmp_path / "x.cc"
    src.write_text("")

    def command(sources, output):
        raise RuntimeError("no nvcc found (set CUDA_HOME or CUDACXX, or install the CUDA toolkit)")

    lib = FfiLibrary(name="libx.so", sources=(str(src),), targets=("X",), platform="cpu", command=command,
                     key=lambda: b"k")
    assert not lib.load(build=True)
    assert lib.error() == "RuntimeError: no nvcc found (set CUDA_HOME or CUDACXX, or install the CUDA toolkit)"


def test_the_pallas_kernel_runs_where_the_tiles_do_not_fit(monkeypatch):
    """`showdown_kernel.showdown` calls the CUDA kernel only where the plan has it
    (`cuda=True`) and the sizes fit it."""
    calls = []
    monkeypatch.setattr(cuda_showdown, "showdown", lambda *a: calls.append(a) or jnp.full_like(a[0], 7.0))
    x = jnp.zeros((1, 1, 4), jnp.float32)
    out = showdown_kernel.showdown(x, jnp.zeros((1, 4), jnp.int32), jnp.zeros((1, 3, 2), jnp.int32),
                                   jnp.zeros((1, 4, 6), jnp.int32), cuda=True, interpret=True)
    assert len(calls) == 1 and float(out.max()) == 7.0
    wide = jnp.zeros((1, 1, 4), jnp.float32)
    out = showdown_kernel.showdown(wide, jnp.zeros((1, 4), jnp.int32), jnp.full((1, 3, 65), 4, jnp.int32),
                                   jnp.zeros((1, 4, 6), jnp.int32), cuda=True, interpret=True)
    # 65 hands a card: the Pallas kernel (interpreted) ran, not the stub. Its values are not
    # asserted: these lists point past the hands, which reads zeros on a CPU, NaN on a GPU.
    assert len(calls) == 1 and out.shape == (1, 1, 4) and not bool((out == 7.0).any())
