"""Test configuration: float64 everywhere (parity tests need it), unless a test asks for float32.

cfrjax never flips `jax_enable_x64` itself; the test suite does, for its own process.
Tests of the float32 default without x64 run in a subprocess (`test_solver.py`).
"""

import os
import shutil
import sys
import tempfile

import jax

jax.config.update("jax_enable_x64", True)
sys.path.insert(0, os.path.dirname(__file__))

import codegen  # noqa: E402

# One compilation cache for this session and the processes it starts, in a fresh folder
# removed at the end: the suite still compiles every executable at least once, but the
# same computation compiled again (another module's fixture building the same game, a
# command-line run repeating what another one compiled, a module after `jax.clear_caches`)
# is read back instead of compiled. Compiling is most of the suite's time on a CPU; on
# this project's 2-core machine the cache took the suite from 569 s to 448 s. The values
# are bit for bit those of a fresh compile (the same executable, serialized). Under
# pytest-xdist the controller makes the folder and its workers (started after this runs,
# with its environment) share it; the process that made it removes it.
_CACHE_OWNER = "CFRJAX_TESTS_XLA_CACHE"
_OWN_CACHE = _CACHE_OWNER not in os.environ
if _OWN_CACHE:
    os.environ[_CACHE_OWNER] = tempfile.mkdtemp(prefix="cfrjax-tests-xla-cache-")
_COMPILATION_CACHE = os.environ[_CACHE_OWNER]
for _name, _value in (("jax_compilation_cache_dir", _COMPILATION_CACHE),
                      ("jax_persistent_cache_min_compile_time_secs", 0),
                      ("jax_persistent_cache_min_entry_size_bytes", -1)):
    jax.config.update(_name, _value)
    os.environ[_name.upper()] = str(_value)


# Set before any backend starts (XLA reads XLA_FLAGS once); the processes tests start inherit it.
# The suite's code generation flags (tests/codegen.py: compiling is most of its time).
os.environ["XLA_FLAGS"] = codegen.with_suite_flags(os.environ.get("XLA_FLAGS", ""))

#: This process is a pytest-xdist worker: it runs the modules it is sent, one at a time.
XDIST_WORKER = "PYTEST_XDIST_WORKER" in os.environ

import pytest  # noqa: E402

FIXED_ORDER_REASON = ("needs the CPU's scatter lowering (bitwise equality, or a CFR+ trajectory through exact ties); "
                      "on GPU the passes pull, which XLA may round differently (fused multiply-adds), and a "
                      "scatter-add is atomic, its order varies (documented in README)")


def pytest_configure(config):
    config.addinivalue_line("markers", f"fixed_order: {FIXED_ORDER_REASON}")
    config.addinivalue_line("markers", "background(*names): uses these jobs of its module's BACKGROUND, started at "
                                       "collection (under xdist: when the module starts; tests/background.py)")


def _start_background(items):
    import background

    for item in items:
        if item.get_closest_marker("skip") is None:
            for mark in item.iter_markers("background"):
                for name in mark.args:
                    background.start(item.module.__name__, name)


def pytest_collection_finish(session):
    """Start the background jobs of the tests to run (`tests/background.py`), in test order.

    An xdist worker does not know at collection which modules it will be sent: it starts a
    module's jobs when the module starts (`_module_background`)."""
    if not XDIST_WORKER:
        _start_background(session.items)


@pytest.fixture(autouse=True, scope="module")
def _module_background(request):
    if XDIST_WORKER:
        _start_background(item for item in request.session.items if item.module is request.module)


def pytest_sessionfinish(session):
    import background

    if XDIST_WORKER and hasattr(session.config, "workeroutput"):
        background.shutdown()
        session.config.workeroutput["background_durations"] = dict(background.durations)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """xdist controller: collect a worker's background job times for the summary."""
    import background

    background.durations.update(getattr(node, "workeroutput", {}).get("background_durations", {}))


def pytest_terminal_summary(terminalreporter):
    import background

    if background.durations:
        terminalreporter.write_line("background jobs (wall s, in the order they ran): " + ", ".join(
            f"{name} {s:.1f}" for name, s in background.durations.items()))


def pytest_unconfigure(config):
    import background

    background.shutdown()
    if _OWN_CACHE:
        shutil.rmtree(_COMPILATION_CACHE, ignore_errors=True)


#: The order modules are sent to the xdist workers (`--no-loadscope-reorder` in
#: pyproject.toml keeps it; the others follow, alphabetically): first those whose tests
#: wait on their `BACKGROUND` jobs (a wheel build and its venv, the multi-process runs, the
#: float32 processes, notebook kernels, the docs' build and examples, the 4-device
#: subprocess), so that the waiting
#: overlaps the in-process tests, then the longest in-process modules, so that the last
#: ones are short and both workers finish together. xdist's default order (modules with
#: more tests first) left the waiting modules last, both workers waiting on them at the
#: end: 352 s on the 2-core machine, 328 s with the waiting modules first, and a 20 s tail
#: of one worker alone on test_solver.
EARLY_MODULES = ("test_wheel", "test_multiprocess", "test_precision", "test_notebooks", "test_docs", "test_shard",
                 "test_public_solver", "test_public_form", "test_parity", "test_solver", "test_rules",
                 "test_batch", "test_depth_limited", "test_checkpoint", "test_boards", "test_datagen")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(EARLY_MODULES)}
    items.sort(key=lambda item: rank.get(getattr(getattr(item, "module", None), "__name__", ""), len(rank)))
    if jax.default_backend() == "cpu":
        return
    skip = pytest.mark.skip(reason=FIXED_ORDER_REASON)
    for item in items:
        if "fixed_order" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _programs_off():
    """`cfrjax.programs` switched off after every test: a command-line run inside this
    process (`cli.main`) turns it on with the compilation cache, and a later test that
    patches a function the solve traces must trace again, not run a kept executable."""
    yield
    from cfrjax import programs
    programs.enable(None)


@pytest.fixture(scope="module")
def on_cpu():
    """The CPU as JAX's default device for a whole module, the games its module fixtures
    build included: the CPU's own paths (native code, the one-piece spot update) then run
    and are checked on a GPU machine as well. Request it with
    `pytestmark = pytest.mark.usefixtures("on_cpu")`."""
    with jax.default_device(jax.devices("cpu")[0]):
        yield
