"""Test configuration: float64 everywhere (parity tests need it), unless a test asks for float32.

cfrjax never flips `jax_enable_x64` itself; the test suite does, for its own process.
Tests of the float32 default without x64 run in a subprocess (`test_solver.py`).
"""

import os
import sys

import jax

jax.config.update("jax_enable_x64", True)
sys.path.insert(0, os.path.dirname(__file__))
