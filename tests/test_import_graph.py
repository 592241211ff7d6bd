"""The package's import graph: no cycles, and the core never imports a game source.

Core = every module of `cfrjax` except the game sources (`cfrjax.games.*`) and the
entry points and applications above them (`cfrjax` itself, `cfrjax.load`, `cfrjax.cli`,
`cfrjax.__main__`, the poker data generator `cfrjax.datagen.*`). Data flows source ->
spec -> compiled game -> state -> policy -> evaluation; a core module that imported a
game source would make the solver depend on one kind of game. Imports are read from the
source (top level and inside functions).
"""

import ast
import os

import cfrjax

PKG = os.path.dirname(cfrjax.__file__)
ENTRY = {"cfrjax", "cfrjax.load", "cfrjax.cli", "cfrjax.__main__"}
#: Packages built on the game sources for one kind of game (poker), above the core.
APPLICATIONS = "cfrjax.datagen"


def _modules() -> dict:
    out = {}
    for root, _, files in os.walk(PKG):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(root, f), os.path.dirname(PKG))[:-3].replace(os.sep, ".")
                out[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = os.path.join(root, f)
    return out


def _imports(path: str, modules: dict) -> set:
    found = set()
    for node in ast.walk(ast.parse(open(path).read())):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for n in names:
            while n and n not in modules:
                n = n.rpartition(".")[0]
            if n.startswith("cfrjax"):
                found.add(n)
    return found


def _graph():
    modules = _modules()
    return {m: _imports(p, modules) - {m} for m, p in modules.items()}


def test_no_core_module_imports_a_game_source():
    graph = _graph()
    core = [m for m in graph if m not in ENTRY and not m.startswith(("cfrjax.games", APPLICATIONS))]
    assert len(core) > 15  # the test sees the package
    bad = {m: sorted(d for d in deps if d.startswith("cfrjax.games")) for m, deps in graph.items() if m in core}
    assert not {m: d for m, d in bad.items() if d}


def test_no_import_cycles():
    graph = _graph()
    # A package imports its own submodules by design (`__init__` re-exports); only
    # cycles among modules count (a package's edges to its submodules are dropped).
    graph = {m: {d for d in deps if not d.startswith(m + ".")} for m, deps in graph.items()}
    state, stack, cycles = {}, [], []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not cycles, cycles


def test_the_deck_size_is_defined_once():
    """`cfrjax.deck.NUM_CARDS` is the one definition of the card count: no other module
    assigns the literal 52 (the public form and the poker builders import it)."""
    found = []
    for m, path in _modules().items():
        for node in ast.walk(ast.parse(open(path).read())):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant) \
                    and node.value.value == 52:
                found.append(m)
    assert found == ["cfrjax.deck"], found
