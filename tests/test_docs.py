"""The documentation: the site builds strictly, its examples and the README's run, the
README stays short, and the spec-file reference names every key the code accepts.

The build and the examples are other processes (the examples run with JAX's float32
default, which this test process, x64 on, does not have); they start in the background
when the module starts (`tests/background.py`), and the tests read their results.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import subprocess
import sys
import tempfile
import tomllib

import pytest

import background
import docs_examples

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
README = os.path.join(ROOT, "README.md")
#: README first: the pages' examples reuse its programs (the same spot, the same solves).
PAGES = [README] + sorted(glob.glob(os.path.join(DOCS, "**", "*.md"), recursive=True))
MAX_README_LINES = 400


def _run(cmd, env=None) -> dict:
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1", **(env or {})})
    return dict(rc=proc.returncode, out=proc.stdout[-6000:], err=proc.stderr[-6000:])


def _build() -> dict:
    with tempfile.TemporaryDirectory(prefix="cfrjax-site-") as site:
        res = _run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", site])
        res["files"] = sorted(os.path.relpath(os.path.join(d, f), site)
                              for d, _, fs in os.walk(site) for f in fs if f.endswith(".html"))
        return res


def _examples() -> dict:
    with tempfile.TemporaryDirectory(prefix="cfrjax-docs-xla-") as cache:
        return _run([sys.executable, os.path.join(ROOT, "tests", "docs_examples.py"), *PAGES],
                    env={"CFRJAX_COMPILE_CACHE": cache, "PYTHONPATH": ROOT})


BACKGROUND = {"build": _build, "examples": _examples}


def test_readme_is_short():
    with open(README) as f:
        n = sum(1 for _ in f)
    assert n < MAX_README_LINES, f"README.md has {n} lines; keep it under {MAX_README_LINES} (details go to docs/)"


@pytest.mark.background("build")
def test_site_builds_strictly():
    res = background.result(__name__, "build")
    assert res["rc"] == 0, res["err"]
    for page in ("index.html", "spec-files/index.html", "cli/index.html", "api/index.html",
                 "performance/index.html", "guides/research/index.html"):
        assert page in res["files"]


@pytest.mark.background("examples")
def test_examples_run():
    res = background.result(__name__, "examples")
    assert res["rc"] == 0, res["err"]
    for page in PAGES:  # each page that has examples ran to its end
        if docs_examples.runnable(page):
            assert f"docs example: {page} ran" in res["err"], res["err"]


def test_examples_are_found_and_skips_say_why():
    """The runner sees the README's examples (three python blocks, the spot file, the CLI
    lines), and a skipped block gives a reason: the `# not run:` marker needs one."""
    langs = [lang for lang, _, _ in docs_examples.runnable(README)]
    assert langs.count("python") == 2 and "toml" in langs and "bash" in langs, langs
    cmds = [c for lang, body, _ in docs_examples.runnable(README) if lang == "bash"
            for c in docs_examples.commands(body)]
    assert any(c.startswith("cfrjax solve ") for c in cmds) and any(c.startswith("cfrjax show ") for c in cmds)
    assert docs_examples.skip_reason("# not run: needs two hosts\ncfrjax x\n") == "needs two hosts"
    assert docs_examples.skip_reason("# not run:\ncfrjax x\n") is None
    assert docs_examples.commands("cfrjax a \\\n  --b 1\npip install x\ncfrjax c\n") == ["cfrjax a --b 1", "cfrjax c"]


def _spec_keys() -> dict[str, set]:
    """Every key a spot file or the suite file accepts, and every field of the spec
    dataclasses, read from the code (and from the suite file itself)."""
    from cfrjax.games.poker import betting, toml
    from cfrjax.games.poker.config import PokerSubgameSpec
    from cfrjax.spec import GameSpec

    with open(os.path.join(ROOT, "games", "suite.toml"), "rb") as f:
        suite = {k for g in tomllib.load(f)["game"] for k in g}
    return {"top-level keys": set(toml._TOML_KEYS), "[rake] keys": set(toml._RAKE_KEYS),
            "[betting] keys": set(betting.TABLE_KEYS),
            "PokerSubgameSpec fields": {f.name for f in dataclasses.fields(PokerSubgameSpec)},
            "GameSpec fields": {f.name for f in dataclasses.fields(GameSpec)}, "suite.toml keys": suite}


def test_spec_reference_names_every_key():
    with open(os.path.join(DOCS, "spec-files.md")) as f:
        page = f.read()
    missing = {what: sorted(k for k in keys if f"`{k}`" not in page) for what, keys in _spec_keys().items()}
    assert not any(missing.values()), f"docs/spec-files.md does not document: {missing}"
    # The shipped spots use only documented keys (they are the reference's examples).
    for path in glob.glob(os.path.join(ROOT, "cfrjax", "specs", "*.toml")):
        with open(path, "rb") as f:
            data = tomllib.load(f)
        for key, value in data.items():
            assert f"`{key}`" in page, (path, key)
            if isinstance(value, dict):
                assert all(f"`{k}`" in page for k in value), (path, key, value)


def test_generated_parts():
    """The CLI reference lists every option of every subcommand; the benchmark tables render."""
    sys.path.insert(0, DOCS)
    try:
        import hooks
    finally:
        sys.path.remove(DOCS)
    from cfrjax.cli import _parser

    with open(os.path.join(DOCS, "cli.md")) as f:
        assert "<!-- generated: cli -->" in f.read()
    text = hooks.expand("<!-- generated: cli -->\n")
    parser = _parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, p in sub.choices.items():
        assert f"## `cfrjax {name}`" in text
        for a in p._actions:
            for opt in a.option_strings:
                if opt not in ("-h", "--help"):
                    assert f"`{opt}" in text, (name, opt)
    with open(os.path.join(DOCS, "performance", "index.md")) as f:
        perf = f.read()
    files = [m.split()[3:-1] for m in perf.split("\n") if m.startswith("<!-- generated: bench")]
    assert files and all(os.path.exists(os.path.join(ROOT, "bench", "results", f)) for fs in files for f in fs)
    assert hooks.expand(perf).count("|---") >= len(files)
