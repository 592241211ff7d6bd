"""Test configuration: float64 everywhere (parity tests need it), unless a test asks for float32.

cfrjax never flips `jax_enable_x64` itself; the test suite does, for its own process.
Tests of the float32 default without x64 run in a subprocess (`test_solver.py`).
"""

import os
import sys

import jax

jax.config.update("jax_enable_x64", True)
sys.path.insert(0, os.path.dirname(__file__))

import pytest  # noqa: E402

FIXED_ORDER_REASON = ("needs the CPU's scatter lowering (bitwise equality, or a CFR+ trajectory through exact ties); "
                      "on GPU the passes pull, which XLA may round differently (fused multiply-adds), and a "
                      "scatter-add is atomic, its order varies (documented in README)")


def pytest_configure(config):
    config.addinivalue_line("markers", f"fixed_order: {FIXED_ORDER_REASON}")


def pytest_collection_modifyitems(config, items):
    if jax.default_backend() == "cpu":
        return
    skip = pytest.mark.skip(reason=FIXED_ORDER_REASON)
    for item in items:
        if "fixed_order" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True, scope="module")
def _release_executables():
    """Drop JAX's compiled executables after each test module. XLA:CPU maps every
    executable's code into memory; the whole suite keeps thousands alive and crossed the
    kernel's per-process map limit (vm.max_map_count, 65,530 by default), crashing inside
    a later compile."""
    yield
    jax.clear_caches()
