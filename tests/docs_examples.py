"""The code examples of README.md and docs/: found, and run (`tests/test_docs.py`).

In a page, fenced blocks run in order, in one fresh namespace and one fresh working folder
per page (a later block sees an earlier one's variables and files):

* ```` ```python ````: executed;
* ```` ```bash ```` / ```` ```sh ````: each line starting with `cfrjax ` (continued by a
  trailing backslash) runs through `cfrjax.cli.main` in this process and must return 0;
  other lines (installs, comments) are not run;
* ```` ```toml ```` whose first line is a comment naming a file (`# my_river.toml`): written
  to that file, for the blocks below.

A block whose first line is `# not run: <reason>` is skipped; the reason is visible on the
page. Other blocks (output, text) are not code.

    python tests/docs_examples.py README.md docs/guides/poker.md ...
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import tempfile
import time

_FENCE = re.compile(r"^```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^```\s*$", re.M | re.S)
_NOT_RUN = re.compile(r"^#\s*not run:\s*(?P<reason>\S.*)$")
_FILE = re.compile(r"^#\s*(?P<name>[\w.-]+\.toml)\s*$")
RUN_LANGS = ("python", "bash", "sh", "toml")


def blocks(text: str) -> list[tuple[str, str, int]]:
    """`(lang, body, line)` of every fenced block of a markdown text (line: 1-based, the fence's)."""
    return [(m.group("lang"), m.group("body"), text.count("\n", 0, m.start()) + 1) for m in _FENCE.finditer(text)]


def skip_reason(body: str) -> str | None:
    """The reason given by a `# not run: <reason>` first line, else None."""
    first = body.lstrip("\n").split("\n", 1)[0].strip()
    m = _NOT_RUN.match(first)
    return m.group("reason") if m else None


def commands(body: str) -> list[str]:
    """The `cfrjax ...` command lines of a shell block, continuation lines joined."""
    out, cur = [], None
    for line in body.split("\n"):
        line = line.rstrip()
        if cur is None and not line.startswith("cfrjax "):
            continue
        part = line[:-1].strip() if line.endswith("\\") else line.strip()
        cur = part if cur is None else f"{cur} {part}"
        if not line.endswith("\\"):
            out.append(cur)
            cur = None
    return out


def runnable(path: str) -> list[tuple[str, str, int]]:
    """The blocks of the page at `path` that run, in order."""
    with open(path) as f:
        text = f.read()
    out = []
    for lang, body, line in blocks(text):
        if lang not in RUN_LANGS or skip_reason(body) is not None:
            continue
        if lang == "toml" and not _FILE.match(body.split("\n", 1)[0].strip()):
            continue
        out.append((lang, body, line))
    return out


def run_page(path: str) -> None:
    """Run the page's examples in a fresh folder; raises on the first failing one."""
    from cfrjax.cli import main

    path = os.path.abspath(path)
    namespace = {"__name__": "__docs_example__"}
    with tempfile.TemporaryDirectory(prefix="cfrjax-docs-") as work:
        old = os.getcwd()
        os.chdir(work)
        try:
            for lang, body, line in runnable(path):
                where = f"{os.path.relpath(path)}:{line}"
                start = time.perf_counter()
                if lang == "toml":
                    with open(_FILE.match(body.split("\n", 1)[0].strip()).group("name"), "w") as f:
                        f.write(body)
                elif lang == "python":
                    exec(compile(body, where, "exec"), namespace)
                else:
                    for cmd in commands(body):
                        rc = main(shlex.split(cmd, comments=True)[1:])
                        if rc:
                            raise RuntimeError(f"{where}: `{cmd}` exited with {rc}")
                print(f"docs example: {where} ({lang}) {time.perf_counter() - start:.1f} s", file=sys.stderr)
        finally:
            os.chdir(old)


if __name__ == "__main__":
    for page in sys.argv[1:]:
        t = time.perf_counter()
        run_page(page)
        print(f"docs example: {page} ran in {time.perf_counter() - t:.1f} s", file=sys.stderr)
