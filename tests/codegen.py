"""How the test suite has XLA:CPU generate code, and how a test asks for XLA's defaults.

The suite spends most of its time compiling (thousands of small executables on a 2-core
CPU). Four flags make that cheaper without changing what any program computes; conftest.py
sets them for the test process and the processes it starts, where this jaxlib knows them:

* `--xla_cpu_multi_thread_eigen=false`: the CPU runtime runs a program's library calls on
  the calling thread instead of handing them between threads (and spinning) at sizes where
  that gains nothing while the other core runs another worker. With it the same tests took
  about 17% less CPU time (test_rules, test_solver, test_locking: 86-100 against 108-120
  CPU-seconds, two runs each, 2-core machine). It selects how the runtime runs a
  program's library calls, not what the program computes.
* `--xla_cpu_use_fusion_emitters=false`: XLA:CPU's older loop emitters instead of its
  MLIR fusion emitters. They compile in about 60-70% of the time (the default suite: 857
  -> 689 CPU-seconds, 430 -> 372 s, one run each; Kuhn, Leduc: 2.0 -> 1.1, 3.6 -> 2.2 s per solve) and
  compute the same bits (`test_bitwise_fixture.py::test_suite_code_generation_equals_xlas_default`
  compiles solves both ways and compares them; the bitwise fixture, recorded under XLA's
  defaults, passes under both), but the code they emit runs slower (Leduc 0.12 -> 0.19,
  the full-range river 0.31 -> 0.43 ms/iter), so cfrjax itself keeps XLA's default and
  only the suite uses them. A test about the code XLA emits for users (the kernel count)
  compiles with `xla_default_codegen()`.
* `--xla_backend_optimization_level=1`: LLVM's optimization level 1 for the generated code
  instead of 2. The same bits (the bitwise fixture, recorded under XLA's defaults, passes,
  and `test_suite_code_generation_equals_xlas_default` compares the two; level 0 does not:
  it computes other bits), about 8% less CPU time per compiling module (test_native_half,
  test_depth_limited and test_batch: 85 -> 77 CPU-seconds, the native library built).
* `--xla_cpu_parallel_codegen_split_count=1`: one LLVM module per program instead of 32
  compiled on parallel threads; with both cores already running a worker each, those
  threads only repeated work (test_public_form with test_rules in one process: 96-102 ->
  72-84 CPU-seconds).
"""

from __future__ import annotations

import os
import subprocess
import sys

#: The flags above, each with the compiler option that restores XLA's default for one compile.
SUITE_FLAGS = {"--xla_cpu_multi_thread_eigen=false": ("xla_cpu_multi_thread_eigen", True),
               "--xla_cpu_use_fusion_emitters=false": ("xla_cpu_use_fusion_emitters", True),
               "--xla_cpu_parallel_codegen_split_count=1": ("xla_cpu_parallel_codegen_split_count", 32),
               "--xla_backend_optimization_level=1": ("xla_backend_optimization_level", 2)}


def suite_flags() -> str:
    """Those of `SUITE_FLAGS` this process runs with (for a test that sets a child's
    `XLA_FLAGS` afresh)."""
    mine = os.environ.get("XLA_FLAGS", "").split()
    return " ".join(f for f in SUITE_FLAGS if f in mine)


def xla_default_codegen() -> dict:
    """Compiler options (`jax.jit(..., compiler_options=...)`, applied over `XLA_FLAGS`) that
    restore XLA's defaults for one compile, for each suite flag this process runs with."""
    return dict(SUITE_FLAGS[f] for f in suite_flags().split())


def with_suite_flags(flags: str) -> str:
    """`flags` plus each of `SUITE_FLAGS` that this jaxlib knows (an unknown flag aborts XLA,
    so the whole set is tried in a subprocess first; if it fails, each alone)."""
    missing = [f for f in SUITE_FLAGS if f.split("=")[0] not in flags]

    def works(extra):
        probe = subprocess.run([sys.executable, "-c", "import jax; jax.devices('cpu')"], capture_output=True,
                               env={**os.environ, "XLA_FLAGS": " ".join([flags, *extra]).strip(),
                                    "JAX_PLATFORMS": "cpu"})
        return probe.returncode == 0

    if missing and not works(missing):
        missing = [f for f in missing if works([f])]
    return " ".join([flags, *missing]).strip()
