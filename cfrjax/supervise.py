"""Run a command of this program in a child process and report the child's death by a
signal in one line.

Why: in a multi-host run (`cfrjax solve-batch --num-processes N`, `cfrjax.multihost`),
process 0 hosts JAX's coordination service. When another process is lost, process 0
notices it and stops with a `PeerLostError`; but when process 0 itself is lost, jaxlib's
client in every other process aborts the whole process (a C++ fatal error: `SIGABRT`
and a page of runtime log), which Python cannot catch. The command line therefore runs
such a process's work in a child (`run`), passes the child's own `cfrjax:` lines through
as they come, holds its other stderr lines, and, if the child is killed by a signal it
did not receive from us, prints one line built by `describe(signal_number)` instead of
the runtime's log. The child dies with the parent (Linux `PR_SET_PDEATHSIG`), so killing
the command kills its work too.
"""

from __future__ import annotations

import collections
import ctypes
import os
import signal
import subprocess
import sys
from typing import Callable

__all__ = ["CHILD_ENV", "available", "run"]

#: Set (to "1") in the child's environment: the child runs the work itself.
CHILD_ENV = "CFRJAX_SUPERVISED_CHILD"
#: Most stderr lines held from the child (the last ones), shown if it ends normally.
HELD_LINES = 2000
_PR_SET_PDEATHSIG = 1


def available() -> bool:
    """Whether this process can supervise a child: Linux (for `PR_SET_PDEATHSIG`) and not
    already the supervised child."""
    return sys.platform.startswith("linux") and os.environ.get(CHILD_ENV) != "1"


def _die_with_parent(parent: int) -> Callable[[], None]:
    def preexec():
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)
    return preexec


def run(argv: list[str], describe: Callable[[int], str]) -> int:
    """Run `python -m cfrjax ARGV` as a child; return its exit code, or print
    `cfrjax: error: <describe(signum)>` and return 1 if a signal killed it.

    Ctrl-C reaches the child from the terminal (same process group) and the child
    reports it; SIGTERM sent to this process is passed on to the child.
    """
    env = dict(os.environ, **{CHILD_ENV: "1"})
    child = subprocess.Popen([sys.executable, "-m", "cfrjax", *argv], env=env, stderr=subprocess.PIPE,
                             text=True, errors="replace", preexec_fn=_die_with_parent(os.getpid()))
    forwarded = set()

    def forward(signum, _frame):
        forwarded.add(signum)
        child.send_signal(signum)

    old = {signal.SIGINT: signal.signal(signal.SIGINT, signal.SIG_IGN),
           signal.SIGTERM: signal.signal(signal.SIGTERM, forward)}
    held = collections.deque(maxlen=HELD_LINES)
    try:
        for line in child.stderr:
            if line.startswith("cfrjax:"):
                sys.stderr.write(line)
                sys.stderr.flush()
            else:
                held.append(line)
        rc = child.wait()
    finally:
        for signum, handler in old.items():
            signal.signal(signum, handler)
    if rc < 0 and -rc not in forwarded and -rc != signal.SIGINT:
        print(f"cfrjax: error: {' '.join(describe(-rc).split())}", file=sys.stderr)
        return 1
    sys.stderr.writelines(held)
    return rc
