"""The benchmark suite (`games/suite.toml`): one list of games for every benchmark.

    from suite import load_suite, build_spec, select
    for entry in select(load_suite(), "kuhn,leduc"):
        spec = build_spec(entry, specs_dir=".carry/specs")

An entry is a dict with `name` (short name, used in records and file names), `title`
(the paper's name) and `source` (an OpenSpiel game string or a `.toml` poker subgame path
relative to the repository root). `build_spec` prefers a pickled `GameSpec`
(`<specs_dir>/<name>.spec.pkl`, written by `write_specs` on a machine with OpenSpiel), so
the GPU machine needs no OpenSpiel; poker subgames are always built from their TOML.
"""

from __future__ import annotations

import os
import pickle
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUITE_PATH = os.path.join(ROOT, "games", "suite.toml")


def load_suite(path: str = SUITE_PATH) -> list[dict]:
    """The suite's entries in file order (each: name, title, source)."""
    with open(path, "rb") as f:
        games = tomllib.load(f)["game"]
    names = [g["name"] for g in games]
    if len(set(names)) != len(names):
        raise ValueError(f"{path}: duplicate game names")
    return [dict(g) for g in games]


def select(entries: list[dict], names: str | None) -> list[dict]:
    """Entries named in the comma-separated `names` (all when empty/None), in that order."""
    if not names or names == "all":
        return entries
    by_name = {e["name"]: e for e in entries}
    unknown = [n for n in names.split(",") if n not in by_name]
    if unknown:
        raise SystemExit(f"unknown game(s) {', '.join(unknown)}; suite: {', '.join(by_name)}")
    return [by_name[n] for n in names.split(",")]


def is_poker(entry: dict) -> bool:
    return entry["source"].endswith(".toml")


def source_path(entry: dict) -> str:
    """The entry's source, with `.toml` paths made absolute."""
    src = entry["source"]
    return os.path.join(ROOT, src) if is_poker(entry) and not os.path.isabs(src) else src


def spec_file(entry: dict, specs_dir: str) -> str:
    return os.path.join(specs_dir, entry["name"] + ".spec.pkl")


def build_spec(entry: dict, specs_dir: str | None = None):
    """The entry's `GameSpec`: from `specs_dir` when pickled there, else built from source."""
    if is_poker(entry):
        from cfrjax.games.poker import load_poker_toml
        return load_poker_toml(source_path(entry))
    if specs_dir and os.path.isfile(spec_file(entry, specs_dir)):
        with open(spec_file(entry, specs_dir), "rb") as f:
            return pickle.load(f)
    from cfrjax.games.openspiel import spec_from_openspiel
    return spec_from_openspiel(entry["source"])


def write_specs(out_dir: str, entries: list[dict] | None = None, verbose: bool = True) -> None:
    """Pickle the `GameSpec` of every OpenSpiel entry into `out_dir` (needs OpenSpiel)."""
    os.makedirs(out_dir, exist_ok=True)
    for entry in entries if entries is not None else load_suite():
        if is_poker(entry):
            continue
        spec = build_spec(entry)
        with open(spec_file(entry, out_dir), "wb") as f:
            pickle.dump(spec, f)
        if verbose:
            print(f"{entry['name']:16s} {spec.num_nodes:9,d} nodes -> {spec_file(entry, out_dir)}", flush=True)
