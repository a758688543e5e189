"""Which block computes each node, for the printer (``tree``): a Gluon block's own tree, taken
while the block is traced on symbols (each block's forward hooks see the nodes its call adds);
for a graph without blocks (a Module, a symbol, a checkpoint), the tree Gluon's name prefixes
spell (``resnetv10_stage1_conv0_weight``: ``stage1.conv0.weight``); or none: one module, each
node whose operator is a stock layer's as an attribute named after it."""

from __future__ import annotations

import re
from typing import Any, Sequence

from .nodes import LAYERS, Node
from .recurrent import RNN_PIECE
from .tree import Block, Blocks, Graph, _attribute, _walk

_OUTPUT = re.compile(r"_output\d*$")


def gluon_blocks(block: Any, input_names: Sequence[str], graph: Graph) -> Blocks | None:
    """The tree of the Gluon ``block``, or None where its trace does not name the graph's nodes
    (a block called twice, a graph built otherwise)."""
    from .._core.conversion import import_mxnet

    mx = import_mxnet()
    sequential = tuple(
        c for c in (getattr(mx.gluon.nn, n, None) for n in ("HybridSequential", "Sequential")) if c
    )
    # One walk: the tree, each parameter's block (a parameter shared with a child, as Gluon's
    # RNN layers share theirs with their unfused cells: the outermost block's) and the hooks.
    paths: dict[int, str] = {}
    params: dict[str, tuple[str, str]] = {}
    handles = []

    def walk(b: Any, name: str, path: str) -> Block | None:
        if id(b) in paths:
            return None  # one block twice in the tree: not a tree
        paths[id(b)] = path
        handles.append(b.register_forward_hook(after))
        for attr, param in b._reg_params.items():
            params.setdefault(param.name, (path, attr))
        node = Block(name, type(b).__name__, isinstance(b, sequential))
        for child_name, child in b._children.items():
            found = walk(child, child_name, "%s.%s" % (path, child_name) if path else child_name)
            if found is None:
                return None
            node.children.append(found)
        return node

    owner: dict[str, str] = {}
    calls: dict[int, int] = {}

    def internals(symbols: Any) -> set[str]:
        found: set[str] = set()
        for s in symbols if isinstance(symbols, (list, tuple)) else [symbols]:
            if isinstance(s, mx.sym.Symbol):
                found.update(_OUTPUT.sub("", n) for n in s.get_internals().list_outputs())
            elif isinstance(s, (list, tuple)):
                found |= internals(s)
        return found

    def after(b: Any, args: Any, out: Any) -> None:
        calls[id(b)] = calls.get(id(b), 0) + 1
        for name in internals(out) - internals(args):
            owner.setdefault(name, paths[id(b)])

    try:
        root = walk(block, "", "")
        if root is None:
            return None
        block(*[mx.sym.var(n) for n in input_names])
    except Exception:  # a block that cannot be traced this way: the names' tree instead
        return None
    finally:
        for h in handles:
            h.detach()
    if any(count > 1 for count in calls.values()):
        return None
    names = {n["name"] for n in graph.nodes if n["op"] != "null"}
    if not names <= set(owner):
        return None
    return Blocks(root, {n: p for n, p in owner.items() if n in names}, params)


_SUFFIXES = (
    "running_mean",
    "running_var",
    "moving_mean",
    "moving_var",
    "i2h_weight",
    "i2h_bias",
    "h2h_weight",
    "h2h_bias",
)


def name_blocks(graph: Graph) -> Blocks | None:
    """The tree Gluon's name prefixes spell, or None where the names spell none."""
    owners: dict[str, tuple[str, str]] = {}  # parameter -> (prefix, attribute)
    pieces = {name for names in graph.rnn_pieces.values() for name in names}
    for name in graph.shapes:
        suffix = next((s for s in _SUFFIXES if name.endswith("_" + s)), None)
        piece = RNN_PIECE.search(name) if name in pieces else None
        if piece is not None:  # an RNN layer's l0_i2h_weight: the layer's own
            suffix = piece.group(0)
        if suffix is None:
            if "_" not in name:
                return None
            suffix = name.rsplit("_", 1)[1]
        owners[name] = (name[: -len(suffix) - 1], suffix)
    prefixes = {p for p, _ in owners.values()}
    parts = {p: p.split("_") for p in prefixes}
    if not parts or any(not all(parts[p]) for p in parts):
        return None
    first = {ps[0] for ps in parts.values()}
    strip = 1 if len(first) == 1 and all(len(ps) > 1 for ps in parts.values()) else 0
    if not strip and all(len(ps) < 2 for ps in parts.values()):
        return None  # no nesting, no model's name: the flat module says as much
    root = Block("")
    by_prefix: dict[str, Block] = {}
    blocks: dict[str, Block] = {"": root}
    # Children in the order the graph first reads them, as print(model) shows a block's.
    seen = {n["name"]: i for i, n in reversed(list(enumerate(graph.nodes)))}
    rank: dict[str, int] = {}
    for name, (prefix, _) in owners.items():
        rank[prefix] = min(rank.get(prefix, len(seen)), seen.get(name, len(seen)))
    for p in sorted(prefixes, key=lambda q: rank[q]):
        comps = parts[p][strip:]
        path = ""
        parent = root
        for k, comp in enumerate(comps):
            path = "%s.%s" % (path, _attribute(comp)) if path else _attribute(comp)
            if path not in blocks:
                child = Block(_attribute(comp))
                parent.children.append(child)
                blocks[path] = child
                by_prefix["_".join(parts[p][: strip + k + 1])] = child
            parent = blocks[path]
    path_of = {id(b): path for path, b in blocks.items()}
    params = {n: (path_of[id(by_prefix[p])], _attribute(a)) for n, (p, a) in owners.items()}
    owner = {}
    ordered = sorted(by_prefix, key=len, reverse=True)
    for node in graph.nodes:
        if node["op"] == "null":
            continue
        for prefix in ordered:
            if node["name"] == prefix or node["name"].startswith(prefix + "_"):
                owner[node["name"]] = path_of[id(by_prefix[prefix])]
                break
    tree = Blocks(root, owner, params)
    _stock_leaves(graph, tree)
    return tree


def flat_blocks(graph: Graph) -> Blocks:
    """One module: each node whose operator is a stock layer's as an attribute of its own."""
    tree = Blocks(Block(""), {}, {})
    _stock_leaves(graph, tree)
    return tree


def _stock_leaves(graph: Graph, tree: Blocks) -> None:
    """A child of its own for each node a stock layer computes from parameters no other node
    reads (``self.conv0 = nn.Conv2d(...)``), where the node's block holds more than it."""
    users: dict[str, int] = {}
    for node in graph.nodes:
        for j, _ in node["inputs"]:
            users[graph.nodes[j]["name"]] = users.get(graph.nodes[j]["name"], 0) + 1
    blocks = {b.path: b for b in _walk(tree.root)}
    # A named block with children of its own keeps its other nodes in its forward; decided
    # before any leaf is added (the first leaf would otherwise end a block's leaves).
    nested = {p for p, b in blocks.items() if p and b.children}
    own: dict[str, list[str]] = {}
    for node in graph.nodes:
        if node["op"] != "null":
            own.setdefault(tree.owner.get(node["name"], ""), []).append(node["name"])
    for i, node in enumerate(graph.nodes):
        make = LAYERS.get(node["op"])
        path = tree.owner.get(node["name"], "")
        if make is None or i in graph.rnn_pieces or len(own.get(path, ())) < 2:
            continue
        if path in nested:
            continue
        inputs = [graph.nodes[j] for j, _ in node["inputs"]]
        shapes = [graph.shapes.get(s["name"]) if s["op"] == "null" else None for s in inputs]
        params = [s["name"] for s in inputs if s["op"] == "null" and s["name"] in graph.shapes]
        if any(users.get(p) != 1 for p in params):
            continue
        if any(tree.params.get(p, ("", ""))[0] != path for p in params):
            continue
        try:
            layer = make(Node(node["op"], node["name"], graph.attrs(node), [], shapes))
        except Exception:
            layer = None
        if layer is None:
            continue
        name = _leaf_name(node["name"], path, blocks[path])
        leaf = Block(name)
        blocks[path].children.append(leaf)
        leaf_path = "%s.%s" % (path, name) if path else name
        blocks[leaf_path] = leaf
        tree.owner[node["name"]] = leaf_path
        for p in params:
            tree.params[p] = (leaf_path, p)


def _leaf_name(node: str, path: str, parent: Block) -> str:
    name = re.sub(r"_(fwd|forward)$", "", node)
    # The part after the enclosing block's name, where the names nest.
    tail = path.split(".")[-1] if path else ""
    if tail and "_%s_" % tail in "_%s" % name:
        name = name.split("_%s_" % tail, 1)[1]
    name = _attribute(name)
    taken = {c.name for c in parent.children}
    base, k = name, 1
    while name in taken:
        k += 1
        name = "%s_%d" % (base, k)
    return name
