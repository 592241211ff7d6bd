"""The one way cfrjax writes a file: atomically and durably.

`atomic_write(path, write)` calls `write(f)` on a temporary file in the target's
directory, flushes and fsyncs it, renames it over `path` (`os.replace`) and fsyncs the
directory, so a crash or a kill at any moment leaves either the old file or the complete
new one, never a torn file. Checkpoints, compiled games, policies and strategy tables
all go through it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Callable, IO

__all__ = ["atomic_write"]


def atomic_write(path: str | os.PathLike, write: Callable[[IO], None], *, text: bool = False) -> None:
    """Write `path` atomically: `write(f)` fills an open temporary file (binary, or UTF-8
    text with `text=True`, newlines written as given); on success it replaces `path`, on any exception `path` is untouched
    and the temporary file removed."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w" if text else "wb", **({"encoding": "utf-8", "newline": ""} if text else {})) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    try:  # make the rename itself durable (best effort: not every platform can open a directory)
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
