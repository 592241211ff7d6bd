"""`FfiLibrary` builds a library once when several processes or threads need it at once
(a test suite's workers with an empty cache each compiled the native library, 17 s of
CPU each on the 2-core machine): the others wait on the build's lock file and load it."""

from __future__ import annotations

import os
import shutil
import threading

import pytest

from cfrjax.public import ffi_library


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_side_by_side_loads_build_once(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    source = tmp_path / "tiny.c"
    source.write_text("int cfrjax_tiny(void) { return 7; }\n")
    count = tmp_path / "builds"

    def command(sources, output):  # slow enough that every thread arrives while the first builds
        return ["sh", "-c", f'echo build >> "{count}" && sleep 0.5 && cc -shared -fPIC -o "$1" "$2"', "sh",
                output, sources[0]]

    libraries = [ffi_library.FfiLibrary(name="libtiny.so", sources=(str(source),), targets=(), platform="cpu",
                                        command=command, key=lambda: b"") for _ in range(3)]
    loaded = [None] * len(libraries)

    def load(i):
        loaded[i] = libraries[i].load(build=True)

    threads = [threading.Thread(target=load, args=(i,)) for i in range(len(libraries))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert loaded == [True] * len(libraries), [lib.error() for lib in libraries]
    assert count.read_text().split() == ["build"]
    assert libraries[0]._state["lib"].cfrjax_tiny() == 7
    assert os.path.exists(libraries[0].path())
