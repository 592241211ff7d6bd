"""`cfrjax.host.device_array`: host data placed on the device as `jnp.asarray` would place
it (values, canonical dtype), without compiling anything; and a game built, a state made
and a batch of states stacked compile nothing eagerly op by op. `default_platform`: JAX's
default device decides before the default backend."""

import logging

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cfrjax
from cfrjax.batch import init_batch
from cfrjax.host import default_platform, device_array
from random_games import random_spec


@pytest.fixture
def compiles(caplog):
    """The names of the programs compiled inside the `with` of the returned context."""
    class Log:
        def __enter__(self):
            caplog.clear()
            self._cm = jax.log_compiles(True)
            self._cm.__enter__()
            caplog.set_level(logging.DEBUG)
            return self

        def __exit__(self, *exc):
            self._cm.__exit__(*exc)
            self.names = [r.getMessage().split()[1] for r in caplog.records if r.getMessage().startswith("Compiling ")]
    return Log


@pytest.mark.parametrize("x,dtype", [(np.arange(7, dtype=np.int64), jnp.int32), (np.linspace(0, 1, 9), None),
                                     (np.linspace(0, 1, 5), jnp.float32), ([[1, 2], [3, 4]], None),
                                     (np.ones((2, 3), bool), None), (2.5, jnp.float64), (np.int16(3), None)])
def test_same_array_as_asarray_and_nothing_compiled(x, dtype, compiles):
    want = jnp.asarray(x, dtype)
    with compiles() as log:
        got = device_array(x, dtype)
    assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(np.asarray(got), np.asarray(want))
    assert log.names == []
    with compiles() as log:                      # the detector sees a compile
        jax.jit(lambda a: a + 1)(np.zeros(11 + len(str(x)) % 5))
    assert log.names


def test_device_and_traced_arrays_pass_through():
    a = jnp.arange(4)
    assert device_array(a) is a or np.array_equal(device_array(a), a)
    assert jax.jit(lambda v: device_array(v, jnp.float32))(a).dtype == jnp.float32


def test_build_init_and_stack_compile_one_program(compiles):
    """A fresh tabular game (a random one: no OpenSpiel), a state and a batch of states: each array is placed, not
    compiled for, the small state's zeros too (`cfrjax.state.HOST_ZEROS_ENTRIES`); the batch's broadcast is one
    program (compiled here unless an earlier test of this process made it for these shapes)."""
    spec = random_spec(5, depth=3)
    with compiles() as log:
        game = cfrjax.compile.compile_game(spec)
        init_batch(game, 3, rule="dcfr", dtype="float32")
    assert set(log.names) <= {"jit(_stacked)"} and len(log.names) == len(set(log.names)), log.names


def test_default_device_decides_the_platform(monkeypatch):
    """On a GPU machine (its default backend faked here) a user working on the CPU device
    gets the CPU's choices: the passes' lowering, float32 compensation (so the native
    update applies), no dense terminal matrices; without a default device, the GPU's."""
    from cfrjax import passes
    from cfrjax.state import compensation_dtype
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert default_platform() == "gpu" and not passes.traced_for_cpu()
    assert compensation_dtype("float32") == jnp.bfloat16
    with jax.default_device(jax.devices("cpu")[0]):
        assert default_platform() == "cpu" and passes.traced_for_cpu()
        assert compensation_dtype("float32") == jnp.float32 and compensation_dtype("float64") == jnp.float64
        game = cfrjax.load_game("games/hunl_river.toml", form="public", random_hands=20, seed=1)
        assert game.dense_showdown is None
