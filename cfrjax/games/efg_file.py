"""LiteEFG's generic extensive-form text format (`LiteEFG.FileEnv`), both directions.

The format, as parsed by LiteEFG 1.0.0's `FileEnvironment::FileEnvironment`
(`LiteEFG/src/Environment/FileEnvironment/FileEnvironment.cpp`, tokenizer in
`LiteEFG/src/Basic/FileReader.cpp`)::

    # <free text>                      header comment lines; must close with a line `# }`
    # Opt {
    #     num_players: 2,              required (`players: 2,` works too)
    # }
    node / chance actions 0=0.5 1=0.5
    node /C:0 player 1 actions Pass Bet
    node /C:0/P1:Pass leaf payoffs 1=-1 2=1
    ...
    infoset pl1_0__<name> nodes /C:0 /C:3

Players are numbered 1 and 2 (0 is chance). Node lines come first (any order), then
infoset lines (every member node must already be declared). A child's name is its
parent's name, `/` (unless the parent name ends in `/`), then `C:` (chance) or `P<k>:`
(player `k`), then the action label. Tokens are separated by single spaces, lines end
in `\\n` with no trailing space, and a `#` line after the infoset lines ends the parse.
LiteEFG divides chance probabilities by their sum and gives singleton sets to decision
nodes no infoset line names. A header word `openspiel,` switches LiteEFG to a mode where
actions are the children's node names (written by its `OpenSpielEnv`); `read_efg`
accepts that mode too, with positional action names.

What cfrjax writes (`write_efg`), and the canonical form that makes the round trip exact:

* Action labels are percent-encoded (`urllib.parse.quote(label, safe="")`) so that
  they contain no space, `/`, `=` or `%`; chance actions are labelled by their index.
* Information sets are named `pl<k>_<i>__<quote(key)>` (LiteEFG's own convention; its
  OpenSpiel bridge also strips everything up to the first `__`). `i` is the set's
  index among player `k`'s sets in the `GameSpec`. Every set is listed, singletons too.
* Payoffs are player 0's zero-sum payoff `u` and `-u` written with `repr` (shortest
  round-tripping decimal), chance probabilities likewise, so numbers read back exactly.
* Game name, payoff offset and `source` go in header comments (`# cfrjax_...:` lines);
  OpenSpiel action ids, when present, in trailing `# cfrjax_action_ids` lines after the
  infoset lines, which LiteEFG never reads.

`read_efg` of a cfrjax-written file restores keys, labels, ids and metadata exactly, so
`compile_arrays` of the result equals that of the original spec (arrays, static sizes and
labels). Node numbering may differ (nodes are written depth-first), which compilation
erases. For files written by others the infoset key is the whole infoset name and
labels are taken verbatim.

Label semantics. LiteEFG identifies an information set's actions by *position* among
each member node's children. `read_efg` (default `check_labels=True`) refuses a file in
which two members of one set list different labels, because positional reading would
then solve a different game than the labels describe (the silent labelling bug of the
paper's appendix E). `check_labels=False` reads positionally, as LiteEFG does.
"""

from __future__ import annotations

import json
import os
from urllib.parse import quote, unquote

import numpy as np

from cfrjax.atomic import atomic_write
from cfrjax.spec import CHANCE, PLAYER0, PLAYER1, PROB_TOL, TERMINAL, GameSpec, SpecError, zero_sum_payoffs

FORMAT_TAG = "cfrjax_efg: 1,"
_PREFIX = {CHANCE: "C:", PLAYER0: "P1:", PLAYER1: "P2:"}


def _children_csr(spec: GameSpec) -> tuple[np.ndarray, np.ndarray]:
    """Children of every node ordered by action: `kids[start[h]:start[h + 1]]`."""
    nonroot = np.flatnonzero(spec.parent >= 0)
    order = np.lexsort((spec.action[nonroot], spec.parent[nonroot]))
    kids = nonroot[order]
    start = np.searchsorted(spec.parent[kids], np.arange(spec.num_nodes + 1))
    return kids, start


def _infoset_names(spec: GameSpec) -> list[str]:
    count = [0, 0]
    names = []
    for i, key in enumerate(spec.infoset_keys):
        p = int(spec.infoset_player[i])
        names.append(f"pl{p + 1}_{count[p]}__{quote(key, safe='')}")
        count[p] += 1
    return names


def write_efg(spec: GameSpec, path: str | os.PathLike, *, mislabel_infoset: int | None = None) -> None:
    """Write `spec` in LiteEFG's `FileEnv` format, streaming node by node.

    Memory beyond the spec's own arrays is a few `[N]` integer index arrays (children,
    infoset membership) and one path string per tree level; lines go straight to the
    file. Nodes are written depth-first, root first, then one line per information set.

    Args:
      spec: the game.
      path: output file (written atomically, `cfrjax.atomic`).
      mislabel_infoset: for tests only: at the *first* member node of this information
        set, list the action labels in reverse order (children unchanged). This is the
        silent labelling bug of the paper's appendix E; `read_efg` rejects such a file
        unless `check_labels=False`.
    """
    path = os.fspath(path)
    kids, start = _children_csr(spec)
    labels = [[quote(a, safe="") for a in names] for names in spec.action_names]
    for i, names in enumerate(labels):
        if len(set(names)) != len(names):
            raise SpecError(f"{spec.name}: information set {spec.infoset_keys[i]!r} has repeated action labels "
                            f"{list(spec.action_names[i])}; labels must name actions uniquely")
    root = int(np.flatnonzero(spec.parent < 0)[0])
    mislabel_node = -1
    if mislabel_infoset is not None:
        mislabel_node = int(np.flatnonzero(spec.infoset == mislabel_infoset)[0])

    def write(f):
        f.write(f"# cfrjax export of {quote(spec.name, safe='')}\n")
        f.write("# Opt {\n")
        f.write("#     num_players: 2,\n")
        f.write(f"#     {FORMAT_TAG}\n")
        f.write(f"#     cfrjax_name: {quote(spec.name, safe='')}\n")
        f.write(f"#     cfrjax_payoff_offset: {float(spec.payoff_offset)!r}\n")
        f.write(f"#     cfrjax_source: {quote(json.dumps(spec.source, sort_keys=True), safe='')}\n")
        f.write("# }\n")
        # Depth-first, root first; the stack holds (node, its path name).
        stack = [(root, "/")]
        while stack:
            h, name = stack.pop()
            k = int(spec.kind[h])
            lo, hi = int(start[h]), int(start[h + 1])
            if k == TERMINAL:
                u = float(spec.payoff[h])
                f.write(f"node {name} leaf payoffs 1={u!r} 2={-u!r}\n")
                continue
            base = name if name.endswith("/") else name + "/"
            base += _PREFIX[k]
            if k == CHANCE:
                acts = " ".join(f"{a}={float(spec.chance_prob[c])!r}" for a, c in enumerate(kids[lo:hi]))
                f.write(f"node {name} chance actions {acts}\n")
            else:
                row = labels[spec.infoset[h]]
                shown = row[::-1] if h == mislabel_node else row
                f.write(f"node {name} player {k + 1} actions {' '.join(shown)}\n")
            for a in range(hi - lo - 1, -1, -1):
                c = int(kids[lo + a])
                stack.append((c, base + _label_for(spec, labels, h, a)))
        # Infoset lines: members by walking parent links (O(depth) per member).
        dec = np.flatnonzero(spec.kind <= PLAYER1)
        dec = dec[np.argsort(spec.infoset[dec], kind="stable")]
        bounds = np.searchsorted(spec.infoset[dec], np.arange(spec.num_infosets + 1))
        for i, iname in enumerate(_infoset_names(spec)):
            members = " ".join(_path_name(spec, labels, int(h)) for h in dec[bounds[i]:bounds[i + 1]])
            f.write(f"infoset {iname} nodes {members}\n")
        if spec.action_ids is not None:
            for i, ids in enumerate(spec.action_ids):
                f.write(f"# cfrjax_action_ids {i} {','.join(str(x) for x in ids)}\n")

    atomic_write(path, write, text=True)


def _label_for(spec, labels, parent, action):
    return str(action) if spec.kind[parent] == CHANCE else labels[spec.infoset[parent]][action]


def _path_name(spec: GameSpec, labels: list, node: int) -> str:
    parts = []
    h = node
    while spec.parent[h] >= 0:
        p = int(spec.parent[h])
        parts.append(_PREFIX[int(spec.kind[p])] + _label_for(spec, labels, p, int(spec.action[h])))
        h = p
    return "/" + "/".join(reversed(parts))


def read_efg(path: str | os.PathLike, *, check_labels: bool = True, name: str | None = None) -> GameSpec:
    """Read a LiteEFG `FileEnv` file into a validated `GameSpec`.

    Args:
      path: the file.
      check_labels: refuse information sets whose member nodes list different action
        labels (see the module docstring). With `False` actions are positional, as in
        LiteEFG, and the labels of the set's first member are kept.
      name: the game's name (default: the name in a cfrjax header, else the file name).

    Raises:
      SpecError: a malformed file, a child that is never declared, an information set
        over nodes of different players or with disagreeing labels, or any `GameSpec`
        validation failure.
    """
    path = os.fspath(path)
    meta = {}
    num_players = None
    openspiel_mode = False
    names: list[str] = []
    kinds: list[int] = []
    acts: list[list[str]] = []
    probs: list[list[float]] = []
    pays: list[tuple[float, float]] = []
    node_of: dict[str, int] = {}
    infoset_lines: list[tuple[str, list[str]]] = []
    action_ids: dict[int, tuple[int, ...]] = {}

    def bad(lineno, what):
        raise SpecError(f"{path}:{lineno}: {what}")

    with open(path, encoding="utf-8") as f:
        in_header = True
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.startswith("#"):
                words = line[1:].split()
                if in_header:
                    if words[:1] in (["num_players:"], ["players:"]) and len(words) > 1:
                        num_players = int(words[1].rstrip(","))
                    elif words[:1] == ["openspiel,"]:
                        openspiel_mode = True
                    elif words and words[0].startswith("cfrjax_"):
                        meta[words[0].rstrip(":,")] = words[1] if len(words) > 1 else ""
                    continue
                if words[:1] == ["cfrjax_action_ids"] and len(words) == 3:
                    action_ids[int(words[1])] = tuple(int(x) for x in words[2].split(","))
                continue
            in_header = False
            if not line.strip():
                continue
            tok = line.split()
            if tok[0] == "node":
                if len(tok) < 3:
                    bad(lineno, "a node line needs a name and a type")
                nm, typ = tok[1], tok[2]
                if nm in node_of:
                    bad(lineno, f"node {nm!r} is declared twice")
                node_of[nm] = len(names)
                names.append(nm)
                if typ == "chance":
                    kinds.append(CHANCE)
                    labs, ps = [], []
                    for w in tok[4:]:
                        a, eq, q = w.partition("=")
                        if not eq:
                            bad(lineno, f"chance action {w!r} is not label=probability")
                        labs.append(a)
                        ps.append(float(q))
                    acts.append(labs)
                    probs.append(ps)
                    pays.append((0.0, 0.0))
                elif typ == "player":
                    pl = int(tok[3])
                    if pl not in (1, 2):
                        bad(lineno, f"node {nm!r} belongs to player {pl}; cfrjax solves two-player games (players 1, 2)")
                    kinds.append(pl - 1)
                    acts.append(tok[5:])
                    probs.append([])
                    pays.append((0.0, 0.0))
                elif typ == "leaf":
                    r = [0.0, 0.0]
                    for w in tok[4:]:
                        p, eq, v = w.partition("=")
                        if not eq or p not in ("1", "2"):
                            bad(lineno, f"payoff {w!r} is not 1=<value> or 2=<value>")
                        r[int(p) - 1] = float(v)
                    kinds.append(TERMINAL)
                    acts.append([])
                    probs.append([])
                    pays.append((r[0], r[1]))
                else:
                    bad(lineno, f"unknown node type {typ!r}; allowed: chance, player, leaf")
                if kinds[-1] != TERMINAL and not acts[-1]:
                    bad(lineno, f"node {nm!r} has no actions")
            elif tok[0] == "infoset":
                infoset_lines.append((tok[1], tok[3:]))
            else:
                bad(lineno, f"unexpected line starting with {tok[0]!r}")

    if num_players is None:
        raise SpecError(f"{path}: no `num_players: N,` in the header (LiteEFG requires it)")
    if num_players != 2:
        raise SpecError(f"{path}: has {num_players} players; cfrjax solves two-player games")
    ours = "cfrjax_efg" in meta
    n = len(names)
    if n == 0:
        raise SpecError(f"{path}: no node lines")

    # Children by name (as LiteEFG's GetNextNode), then parent/action/prob arrays.
    parent = np.full(n, -1, np.int64)
    action = np.full(n, -1, np.int64)
    prob = np.ones(n)
    for h in range(n):
        k = kinds[h]
        if k == TERMINAL:
            continue
        nm = names[h]
        base = (nm if nm.endswith("/") else nm + "/") + _PREFIX[k]
        ps = probs[h]
        if k == CHANCE:
            tot = sum(ps)
            if abs(tot - 1.0) > PROB_TOL and tot > 0:  # LiteEFG normalizes; keep exact values when they sum to 1
                ps = [q / tot for q in ps]
        for a, lab in enumerate(acts[h]):
            cname = lab if openspiel_mode else base + lab
            c = node_of.get(cname)
            if c is None:
                raise SpecError(f"{path}: node {nm!r}: its child {cname!r} (action {lab!r}) is never declared")
            if parent[c] >= 0:
                raise SpecError(f"{path}: node {cname!r} is the child of two nodes")
            parent[c] = h
            action[c] = a
            if k == CHANCE:
                prob[c] = ps[a]

    # Information sets: listed ones, then singletons for unlisted decision nodes.
    infoset = np.full(n, -1, np.int64)
    keys, owners, action_names = [], [], []
    first_member = []
    for iname, members in infoset_lines:
        i = len(keys)
        key = iname
        if ours:
            key = unquote(iname.partition("__")[2])
        owner = None
        for m in members:
            h = node_of.get(m)
            if h is None:
                raise SpecError(f"{path}: information set {iname!r} names node {m!r}, which is never declared")
            if kinds[h] not in (PLAYER0, PLAYER1):
                raise SpecError(f"{path}: information set {iname!r} contains {m!r}, which is not a player node")
            if owner is None:
                owner = kinds[h]
                first_member.append(h)
            elif kinds[h] != owner:
                raise SpecError(f"{path}: information set {iname!r} has nodes of players {owner + 1} and {kinds[h] + 1}")
            if infoset[h] >= 0:
                raise SpecError(f"{path}: node {m!r} is listed in two information sets")
            if check_labels and acts[h] != acts[first_member[-1]]:
                raise SpecError(
                    f"{path}: information set {iname!r}: member {m!r} lists actions {acts[h]} but member "
                    f"{names[first_member[-1]]!r} lists {acts[first_member[-1]]}; read positionally this is another "
                    "game (pass check_labels=False to read it as LiteEFG does)")
            infoset[h] = i
        if owner is None:
            continue
        keys.append(key)
        owners.append(owner)
    for h in range(n):
        if kinds[h] in (PLAYER0, PLAYER1) and infoset[h] < 0:
            infoset[h] = len(keys)
            keys.append(f"singleton:{names[h]}")
            owners.append(kinds[h])
            first_member.append(h)
    for i, h in enumerate(first_member):
        labs = acts[h]
        if openspiel_mode:
            labs = [str(a) for a in range(len(labs))]
        elif ours:
            labs = [unquote(a) for a in labs]
        action_names.append(tuple(labs))

    term = [h for h in range(n) if kinds[h] == TERMINAL]
    payoff = np.zeros(n)
    offset = 0.0
    if term:
        u0, offset = zero_sum_payoffs(np.array([pays[h] for h in term], np.float64).reshape(-1, 2),
                                      where=[f"{path}: leaf {names[h]!r}" for h in term])
        payoff[np.array(term)] = u0
    ids = None
    if action_ids and len(action_ids) == len(keys):
        ids = tuple(action_ids[i] for i in range(len(keys)))
    if ours:
        offset += float(meta.get("cfrjax_payoff_offset", "0.0"))
        source = json.loads(unquote(meta.get("cfrjax_source", "%7B%7D")))
        game_name = name or unquote(meta.get("cfrjax_name", os.path.basename(path)))
    else:
        source = {"efg_file": os.path.basename(path)}
        game_name = name or os.path.basename(path)
    return GameSpec(parent=parent, action=action, kind=np.array(kinds, np.int8), infoset=infoset,
                    chance_prob=prob, payoff=payoff, infoset_player=np.array(owners, np.int8),
                    infoset_keys=tuple(keys), action_names=tuple(action_names), name=game_name,
                    payoff_offset=offset, source=source, action_ids=ids)
