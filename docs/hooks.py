"""mkdocs hook: the pages' generated parts, made from the code and the records at build time.

A page asks for one with an HTML comment on a line of its own:

* `<!-- generated: cli -->`: the command-line reference, from `cfrjax.cli._parser()` (every
  subcommand, its usage and every option with its default, choices and help), so it cannot
  drift from what `cfrjax --help` says;
* `<!-- generated: bench FILE.jsonl ... -->`: the tables `bench/report.py` renders from those
  records of `bench/results/`.

It also publishes `bench/results/*.png` under the same path in the site (`on_files`).

`tests/test_docs.py` imports this module to check the same expansions.
"""

from __future__ import annotations

import argparse
import html
import importlib.util
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_MARKER = re.compile(r"^<!-- generated: (?P<what>\w+)(?P<args>[^>]*)-->\s*$", re.M)


def _escape(text: str) -> str:
    """Markdown-table-safe text: `|` escaped, `<`/`>`/`&` as entities outside code spans."""
    parts = text.replace("|", "\\|").split("`")
    return "`".join(p if i % 2 else html.escape(p, quote=False) for i, p in enumerate(parts))


def _option_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = ["| argument | default | choices | meaning |", "|---|---|---|---|"]
    for a in parser._actions:
        if isinstance(a, argparse._HelpAction):
            continue
        if a.option_strings:
            name = ", ".join(a.option_strings)
            if a.nargs != 0:
                name += f" {a.metavar or a.dest.upper()}"
        else:
            name = a.metavar or a.dest
            if a.nargs == "?":
                name = f"[{name}]"
        if a.nargs == 0:
            default = "off"
        elif a.required:
            default = "required"
        elif a.default is None:
            default = "–"
        else:
            default = f"`{a.default}`"
        choices = ", ".join(f"`{c}`" for c in a.choices) if a.choices else ""
        rows.append(f"| `{name}` | {default} | {choices} | {_escape(' '.join((a.help or '').split()))} |")
    return rows


def cli_reference() -> str:
    """Markdown for every subcommand of `cfrjax.cli._parser()`: its help, usage and options."""
    from cfrjax.cli import _parser

    os.environ.setdefault("COLUMNS", "100")
    parser = _parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {a.dest: a.help for a in sub._choices_actions}
    out = []
    for name, p in sub.choices.items():
        out += [f"## `cfrjax {name}`", "", _escape(helps.get(name) or ""), "", "```text",
                p.format_usage().strip(), "```", ""]
        out += _option_rows(p) + [""]
    return "\n".join(out)


def _report():
    spec = importlib.util.spec_from_file_location("_cfrjax_bench_report", os.path.join(ROOT, "bench", "report.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def bench_tables(files: list[str]) -> str:
    """`bench/report.py`'s tables of the records in `bench/results/<file>` for each file."""
    report = _report()
    records = [r for f in files for r in report.load(os.path.join(ROOT, "bench", "results", f))]
    return report.render(records)


def expand(markdown: str) -> str:
    """`markdown` with every generated-part marker replaced by its content."""
    def one(m):
        what, args = m.group("what"), m.group("args").split()
        if what == "cli":
            return cli_reference()
        if what == "bench":
            return bench_tables(args)
        raise ValueError(f"unknown generated part {what!r} (known: cli, bench)")
    return _MARKER.sub(one, markdown)


def on_page_markdown(markdown, page, config, files):  # noqa: ARG001 (mkdocs hook signature)
    return expand(markdown)


def on_files(files, config):
    """The plots of `bench/results/` as site files (`bench/results/<name>.png`), so the
    performance pages show them without a copy in `docs/`."""
    from mkdocs.structure.files import File

    folder = os.path.join(ROOT, "bench", "results")
    for name in sorted(os.listdir(folder)):
        if name.endswith(".png"):
            files.append(File(f"bench/results/{name}", ROOT, config["site_dir"], config["use_directory_urls"]))
    return files
