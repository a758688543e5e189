"""The printer that mirrors the model: the symbol graph written as a tree of ``torch.nn.Module``
classes, one per Gluon block class (its children as attributes under their Gluon names, a
``HybridSequential`` as ``nn.Sequential``, a one-node block whose operator is a stock layer's as
that layer), what differs between the instances of a class lifted into its constructor's
arguments, as torchvision writes its ``BasicBlock``.

Which block computes each node comes from the caller (``Blocks``: from a Gluon block's trace,
from Gluon's name prefixes, or nothing: one flat module); a block whose nodes are not one call
(a block called twice, or one whose input depends on its own output) makes the caller fall back
to a flatter tree (``NotATree``).  Imports neither torch nor mxnet."""

from __future__ import annotations

import heapq
import keyword
import re
from dataclasses import dataclass, field
from typing import Any, Tuple

from .expr import Call, Expr, Layer, Lit, Var, literal, statement
from .nodes import EMITTERS, LAYERS, Node, Unsupported

Entry = Tuple[int, int]  # (node index, output index)
PRELUDE_NAMES = ("torch", "nn", "F", "mxops")
# torch.nn.Module's own attributes: a parameter or child of that name would hide them.
MODULE_NAMES = frozenset(
    "add_module apply bfloat16 buffers call_super_init children compile cpu cuda double "
    "dump_patches eval extra_repr float forward get_buffer get_extra_state get_parameter "
    "get_submodule half ipu load_state_dict modules mtia named_buffers named_children "
    "named_modules named_parameters parameters register_buffer register_forward_hook "
    "register_forward_pre_hook register_full_backward_hook register_module "
    "register_parameter requires_grad_ set_extra_state share_memory state_dict to to_empty "
    "train training type xpu zero_grad".split()
)


class NotATree(Exception):
    """The blocks given do not cut the graph into one call per block."""


@dataclass
class Block:
    """A block of the model: its attribute ``name`` in its parent, its Gluon ``cls`` (None where
    unknown), whether it is a ``HybridSequential``, its children in order."""

    name: str
    cls: str | None = None
    sequential: bool = False
    children: list[Block] = field(default_factory=list)
    path: str = ""


@dataclass
class Blocks:
    """The tree of blocks and which block holds each op node (``owner``: node name -> path)
    and each parameter (``params``: MXNet name -> (path, attribute name))."""

    root: Block
    owner: dict[str, str]
    params: dict[str, tuple[str, str]]


@dataclass
class Graph:
    """The symbol graph as codegen reads it, with the arrays' shapes and which are states."""

    nodes: list[dict]
    heads: list[Entry]
    shapes: dict[str, tuple[int, ...]]  # every parameter's and auxiliary state's
    aux: set[str]
    frozen: set[str]
    frozen_stats: set[str]
    rnn_pieces: dict[int, list[str]] = field(default_factory=dict)
    skipped: set[int] = field(default_factory=set)


@dataclass
class Written:
    """The classes' source; the root class's name; the forward's inputs and labels; each
    state_dict key's MXNet name; which module path holds each node (a stock layer's node: its
    output is the module's); the lines that record each node's output (for verify)."""

    source: str
    record_source: str
    root: str
    inputs: list[str]
    labels: list[str]
    mxnet_names: dict[str, str]
    layer_nodes: dict[str, str]
    node_paths: dict[str, str]
    imports: set[str]


# --- the calls: each block's nodes, inputs and outputs -------------------------------------------


@dataclass
class _Call:
    block: Block
    nodes: list[int]  # op nodes of its subtree
    own: list[int]  # op nodes of its own
    inputs: list[Entry]
    outputs: list[Entry]
    params: dict[str, str]  # its own: attribute name -> MXNet name
    buffers: dict[str, str]
    layer: Layer | None = None
    kind: str = "class"  # or "layer", "sequential"
    cls: str = ""
    args: tuple[Any, ...] = ()  # its class's constructor arguments


def _walk(block: Block, path: str = "") -> list[Block]:
    block.path = path
    found = [block]
    for child in block.children:
        found += _walk(child, "%s.%s" % (path, child.name) if path else child.name)
    return found


def _inside(owner: str, path: str) -> bool:
    return not path or owner == path or owner.startswith(path + ".")


class Printer:
    """Writes ``graph`` as the module tree ``blocks`` says, the root class named ``root``."""

    def __init__(self, graph: Graph, blocks: Blocks, root: str, doc: str):
        self.g, self.blocks, self.root_name, self.doc = graph, blocks, root, doc
        self.nodes = graph.nodes
        self.param_names = set(graph.shapes)
        self.users: dict[int, set[int]] = {}
        for i, node in enumerate(self.nodes):
            for j, _ in node["inputs"]:
                self.users.setdefault(j, set()).add(i)
        self.head_set = set(graph.heads)
        self.label_nodes = set()
        from ..convert.shared import LOSS_HEADS

        for node in self.nodes:
            if node["op"] in LOSS_HEADS and len(node["inputs"]) > 1:
                self.label_nodes.add(node["inputs"][1][0])
        self.imports: set[str] = set()

    # --- which node is whose ---

    def calls(self) -> list[_Call]:
        blocks = _walk(self.blocks.root)
        by_path = {b.path: b for b in blocks}
        owner: dict[int, str] = {}
        for i, node in enumerate(self.nodes):
            if node["op"] != "null" and i not in self.g.skipped:
                path = self.blocks.owner.get(node["name"], "")
                owner[i] = path if path in by_path else ""
        param_owner = {}
        ordered = [n["name"] for n in self.nodes if n["op"] == "null"]
        for name in sorted(self.param_names, key=ordered.index):
            path, attr = self.blocks.params.get(name, ("", _attribute(name)))
            param_owner[name] = (path if path in by_path else "", attr)
        calls = []
        for block in blocks:
            calls.append(self._call(block, owner, param_owner))
        return calls

    def _call(self, block: Block, owner: dict[int, str], param_owner: dict) -> _Call:
        path = block.path
        mine = [i for i in sorted(owner) if _inside(owner[i], path)]
        inside = set(mine)
        own = [i for i in mine if owner[i] == path]
        params: dict[str, str] = {}
        buffers: dict[str, str] = {}
        for name, (where, attr) in param_owner.items():
            if where == path:
                base, k = attr, 1
                while attr in params or attr in buffers:
                    k += 1
                    attr = "%s_%d" % (base, k)
                (buffers if name in self.g.aux else params)[attr] = name
        inputs: list[Entry] = []
        for i in mine:
            for entry in self._inputs(i):
                j = entry[0]
                node = self.nodes[j]
                if j in inside or entry in inputs:
                    continue
                if node["op"] == "null" and node["name"] in self.param_names:
                    where = param_owner[node["name"]][0]
                    if not _inside(where, path):
                        raise NotATree("%s reads %s of another block" % (path, node["name"]))
                    continue
                inputs.append(entry)
        outputs = sorted(
            {e for i in mine for e in self._outputs_of(i) if e in self.head_set}
            | {
                e
                for i in mine
                for u in self.users.get(i, ())
                if u not in inside
                for e in self._inputs(u)
                if e[0] == i
            }
        )
        if path:
            self._check_convex(path, inside, inputs)
        return _Call(block, mine, own, inputs, outputs, params, buffers)

    def _inputs(self, i: int) -> list[Entry]:
        node = self.nodes[i]
        if i in self.g.rnn_pieces:
            return [e for k, e in enumerate(node["inputs"]) if k != 1]
        return [tuple(e) for e in node["inputs"]]

    def _outputs_of(self, i: int) -> list[Entry]:
        return [e for e in self.head_set if e[0] == i]

    def _check_convex(self, path: str, inside: set[int], inputs: list[Entry]) -> None:
        # An input computed from the block's own output: the block is not one call.
        seen: set[int] = set()
        stack = [j for j, _ in inputs]
        while stack:
            j = stack.pop()
            if j in seen:
                continue
            seen.add(j)
            if j in inside:
                raise NotATree("%s is not one call" % path)
            stack.extend(e[0] for e in self.nodes[j]["inputs"] if e[0] >= min(inside, default=0))

    # --- the kinds: stock layer, sequential, class ---

    def classify(self, calls: list[_Call]) -> dict[str, _Call]:
        by_path = {c.block.path: c for c in calls}
        for call in reversed(calls):  # children first
            used = [c for c in call.block.children if by_path[c.path].nodes]
            call.block.children = used
            if call.block.path and not call.nodes:
                if call.params or call.buffers:
                    raise NotATree("%s holds parameters but computes nothing" % call.block.path)
            layer = self._as_layer(call) if call.block.path else None
            if layer is not None:
                call.kind, call.layer = "layer", layer
            elif call.block.sequential and self._is_chain(call, by_path):
                call.kind = "sequential"
        return by_path

    def _as_layer(self, call: _Call) -> Layer | None:
        if call.block.children or len(call.own) != 1 or len(call.outputs) != 1:
            return None
        i = call.own[0]
        node = self.nodes[i]
        make = LAYERS.get(node["op"])
        if make is None or len(call.inputs) != 1 or i in self.g.rnn_pieces:
            return None
        layer = make(self._node(i, {}))
        if layer is None or layer.count != 1:
            return None
        inputs = node["inputs"]
        if tuple(inputs[k] for k in layer.inputs) != tuple(call.inputs):
            return None
        names = {**{n: inputs[k] for n, k in layer.params.items()}}
        buffers = {n: inputs[k] for n, k in layer.buffers.items()}
        mine = {self.nodes[j]["name"] for j, _ in list(names.values()) + list(buffers.values())}
        if mine != set(call.params.values()) | set(call.buffers.values()):
            return None
        if any(self.nodes[j]["name"] in self.g.aux for j, _ in names.values()):
            return None
        if any(self.nodes[j]["name"] not in self.g.aux for j, _ in buffers.values()):
            return None
        call.params = {n: self.nodes[j]["name"] for n, (j, _) in names.items()}
        call.buffers = {n: self.nodes[j]["name"] for n, (j, _) in buffers.items()}
        return layer

    def _is_chain(self, call: _Call, by_path: dict[str, _Call]) -> bool:
        children = [by_path[c.path] for c in call.block.children]
        if call.own or not children or len(call.inputs) != 1 or len(call.outputs) != 1:
            return False
        if [c.name for c in call.block.children] != [str(k) for k in range(len(children))]:
            return False
        flow = call.inputs
        for child in children:
            if child.inputs != flow or len(child.outputs) != 1:
                return False
            if child.layer is not None and child.layer.prepare:
                return False  # nn.Sequential would call the layer on its input as it is
            flow = child.outputs
        return flow == call.outputs and all(
            self._used_only_by(c.outputs[0], n) for c, n in zip(children, children[1:])
        )

    def _used_only_by(self, entry: Entry, consumer: _Call) -> bool:
        return all(u in set(consumer.nodes) for u in self.users.get(entry[0], ())) and (
            entry not in self.head_set
        )

    # --- one node as an emitter sees it ---

    def _node(self, i: int, names: dict[Entry, Expr], attrs_of: dict | None = None) -> Node:
        node = self.nodes[i]
        args: list[Expr] = []
        shapes = []
        for entry in node["inputs"]:
            entry = tuple(entry)
            args.append(names.get(entry, Var("None")))
            source = self.nodes[entry[0]]
            shapes.append(self.g.shapes.get(source["name"]) if source["op"] == "null" else None)
        attrs = dict(node["attrs"])
        if node["op"] == "BatchNorm":
            attrs["__frozen_stats__"] = self.g.frozen_stats
        return Node(node["op"], node["name"], attrs, args, shapes)


# --- the module of one block: statements, names, forward ------------------------------------------


@dataclass
class _Stmt:
    outputs: list[Entry]
    expr: Expr
    node: str | None  # the MXNet node whose output(s) this is (an own node)
    count: int = 1
    first: int = 0
    base: str = ""  # what to call its value where ``x`` is taken


def _attribute(name: str) -> str:
    base = re.sub(r"\W", "_", name)
    if not base or base[0].isdigit() or keyword.iskeyword(base) or base in PRELUDE_NAMES:
        base = "v_" + base
    if base in MODULE_NAMES or base.startswith("_"):
        base = "mx_" + base.lstrip("_")
    return base


_STEMS = {
    "Convolution": "conv",
    "FullyConnected": "fc",
    "BatchNorm": "bn",
    "Activation": "act",
    "Pooling": "pool",
    "elemwise_add": "add",
    "_plus": "add",
    "broadcast_add": "add",
    "Concat": "cat",
    "concat": "cat",
}


def _stem(op: str) -> str:
    stem = _STEMS.get(op) or re.sub(r"[^a-z0-9]+", "_", op.lower()).strip("_") or "out"
    return stem if stem.isidentifier() and not keyword.iskeyword(stem) else "v_" + stem


class _Body:
    """The forward of one class: statements in order, each value named (``x`` where the value
    it held is no longer needed, as torchvision reuses ``x``)."""

    def __init__(self, printer: Printer, call: _Call, by_path: dict[str, _Call]):
        self.p, self.call, self.by_path = printer, call, by_path
        self.nodes = printer.nodes

    def statements(self) -> tuple[list[str], list[_Stmt], dict[Entry, Expr]]:
        """(forward's argument names, statements, each value's expression)."""
        call, nodes = self.call, self.nodes
        names: dict[Entry, Expr] = {}
        attr_of = {v: k for k, v in list(call.params.items()) + list(call.buffers.items())}
        for i in range(len(nodes)):
            node = nodes[i]
            if node["op"] == "null" and node["name"] in attr_of:
                names[(i, 0)] = Var("self." + attr_of[node["name"]])
        if call.block.path:
            args = ["x"] if len(call.inputs) == 1 else ["x%d" % k for k in range(len(call.inputs))]
            labels: list[str] = []
        else:
            args, labels = [], []
            for i, node in enumerate(nodes):
                if node["op"] == "null" and node["name"] not in self.p.param_names:
                    var = _attribute(node["name"])
                    if var != re.sub(r"\W", "_", node["name"]):
                        raise Unsupported(
                            "null", node["name"], "an input whose name is not a Python name"
                        )
                    (labels if i in self.p.label_nodes else args).append(var)
            self.labels = labels
        if call.block.path:
            for entry, arg in zip(call.inputs, args):
                names[entry] = Var(arg)
        for i in call.own:
            for j, _ in self.nodes[i]["inputs"]:
                source = self.nodes[j]
                if source["op"] == "null" and source["name"] in self.p.param_names:
                    if (j, 0) not in names and not (
                        i in self.p.g.rnn_pieces and j == self.nodes[i]["inputs"][1][0]
                    ):
                        raise NotATree("%s reads a child's parameter" % call.block.path)
        if not call.block.path:
            for i, node in enumerate(nodes):
                if node["op"] == "null" and node["name"] not in self.p.param_names:
                    names[(i, 0)] = Var(_attribute(node["name"]))
        items = self._items()
        stmts: list[_Stmt] = []
        for kind, item in items:
            if kind == "node":
                stmts.append(self._own(item, names))
            else:
                stmts.append(self._child(item, names))
            self._name(stmts, names)
        return args + ["%s=None" % n for n in labels], stmts, names

    def _items(self) -> list[tuple[str, Any]]:
        """Own nodes and children's calls in an order that computes each before its use."""
        call = self.call
        child_of: dict[int, _Call] = {}
        for child in call.block.children:
            c = self.by_path[child.path]
            for i in c.nodes:
                child_of[i] = c
        keys: dict[Any, int] = {}
        deps: dict[Any, set[Any]] = {}
        for i in call.nodes:
            item: tuple[str, Any] = (
                ("child", child_of[i].block.path) if i in child_of else ("node", i)
            )
            keys[item] = min(keys.get(item, i), i)
            dep: tuple[str, Any]
            for j, _ in self.p._inputs(i):
                if j in child_of and j != i:
                    dep = ("child", child_of[j].block.path)
                elif j in set(call.nodes) and self.nodes[j]["op"] != "null":
                    dep = ("node", j)
                else:
                    continue
                if dep != item:
                    deps.setdefault(item, set()).add(dep)
        waiting = {k: set(deps.get(k, ())) for k in keys}
        ready = [(keys[k], k) for k, d in waiting.items() if not d]
        heapq.heapify(ready)
        order = []
        while ready:
            _, item = heapq.heappop(ready)
            order.append(item)
            for other, d in waiting.items():
                if item in d:
                    d.discard(item)
                    if not d:
                        heapq.heappush(ready, (keys[other], other))
        if len(order) != len(keys):
            raise NotATree("%s: its children's calls cannot be ordered" % call.block.path)
        return [(kind, self.by_path[ref] if kind == "child" else ref) for kind, ref in order]

    def _own(self, i: int, names: dict[Entry, Expr]) -> _Stmt:
        node = self.nodes[i]
        emitter = EMITTERS.get(node["op"])
        if emitter is None:
            raise Unsupported(node["op"], node["name"])
        n = self.p._node(i, names)
        if i in self.p.g.rnn_pieces:
            pieces = [names.get(self._var(p)) for p in self.p.g.rnn_pieces[i]]
            if any(e is None for e in pieces):
                raise NotATree("%s reads another block's parameters" % node["name"])
            n.args[1] = Lit([e for e in pieces if e is not None])
        expr, count = emitter(n)
        return _Stmt([(i, k) for k in range(count)], expr, node["name"], count, i)

    def _var(self, name: str) -> Entry:
        for i, node in enumerate(self.nodes):
            if node["op"] == "null" and node["name"] == name:
                return (i, 0)
        raise KeyError(name)

    def _child(self, child: _Call, names: dict[Entry, Expr]) -> _Stmt:
        args: list[Expr] = [names[e] for e in child.inputs]
        if child.kind == "layer" and child.layer is not None and child.layer.prepare:
            x = args[0].flat()
            args = [Var(child.layer.prepare.replace("x", x, 1))]
        name = child.block.name
        fn = "self." + name if name.isidentifier() else "getattr(self, %s)" % literal(name)
        expr = Call(fn, tuple(args))
        base = _attribute(name) if name.isidentifier() else "x%s" % re.sub(r"\W", "_", name)
        return _Stmt(list(child.outputs), expr, None, len(child.outputs), min(child.nodes), base)

    def _name(self, stmts: list[_Stmt], names: dict[Entry, Expr]) -> None:
        """Name the last statement's outputs: placeholders, fixed once liveness is known."""
        stmt = stmts[-1]
        var = Var("__v%d" % len(stmts))
        if stmt.count == 1 and len(stmt.outputs) == 1:
            names[stmt.outputs[0]] = var
        else:
            for k, entry in enumerate(stmt.outputs):
                names[entry] = Var("%s[%d]" % (var.text, k))
        stmt.target = var.text  # type: ignore[attr-defined]


def _subst(expr: Any, mapping: dict[str, str]) -> Any:
    """``expr`` with each placeholder name replaced."""
    from .expr import BinOp, Index, Method

    if not isinstance(expr, Expr):
        return expr
    if isinstance(expr, Var):
        return Var(_PLACEHOLDER.sub(lambda m: mapping.get(m.group(0), m.group(0)), expr.text))
    if isinstance(expr, Call):
        return Call(
            expr.fn,
            tuple(_subst(a, mapping) for a in expr.args),
            tuple((k, _subst(v, mapping)) for k, v in expr.kwargs),
        )
    if isinstance(expr, Method):
        return Method(
            _subst(expr.obj, mapping),
            expr.name,
            tuple(_subst(a, mapping) for a in expr.args),
            tuple((k, _subst(v, mapping)) for k, v in expr.kwargs),
        )
    if isinstance(expr, BinOp):
        return BinOp(expr.op, tuple(_subst(o, mapping) for o in expr.operands))
    if isinstance(expr, Index):
        return Index(_subst(expr.obj, mapping), expr.index)
    return expr


_PLACEHOLDER = re.compile(r"__v\d+")


def _used(expr: Expr) -> set[str]:
    return set(_PLACEHOLDER.findall(expr.flat()))


@dataclass
class _Class:
    """One instance's class: constructor statements (attribute, expression), forward lines."""

    call: _Call
    init: list[tuple[str, Expr]]
    after: list[str]  # lines after the attributes (a stock layer's frozen parameter)
    forward: list[str]
    record: list[str]
    record_nodes: dict[int, str]
    height: int


def _leaves(expr: Any, hint: str, out: list[tuple[str, Any]]) -> Any:
    """``expr`` with every literal replaced by a marker, its (hint, value) appended to out."""
    if isinstance(expr, Lit) or not isinstance(expr, Expr):
        value = expr.value if isinstance(expr, Lit) else expr
        out.append((hint, value))
        return Var("\x00")
    if isinstance(expr, Call):
        hints = _ARG_HINTS.get(expr.fn, ())
        args = tuple(
            _leaves(a, hints[k] if k < len(hints) else hint, out) for k, a in enumerate(expr.args)
        )
        kwargs = tuple((k, _leaves(v, k, out)) for k, v in expr.kwargs)
        return Call(expr.fn, args, kwargs)
    return expr


def _fill(expr: Any, values: list[Any]) -> Any:
    """The inverse of ``_leaves``: each marker replaced by the next value (an ``Expr``)."""
    if isinstance(expr, Var) and expr.text == "\x00":
        return values.pop(0)
    if isinstance(expr, Call):
        args = tuple(_fill(a, values) for a in expr.args)
        kwargs = tuple((k, _fill(v, values)) for k, v in expr.kwargs)
        return Call(expr.fn, args, kwargs)
    return expr


_ARG_HINTS: dict[str, tuple[str, ...]] = {}  # class name -> its constructor's argument names


def _class_name(block: Block) -> str:
    name = block.cls or re.sub(r"\d+$", "", block.name).title().replace("_", "") or "Block"
    name = re.sub(r"\W", "", name)
    if not name or not name[0].isalpha():
        name = "Block" + name
    return name[0].upper() + name[1:]


def write(graph: Graph, blocks: Blocks, root: str, doc: str) -> Written:
    """The module tree's source (``NotATree`` where ``blocks`` is not one)."""
    p = Printer(graph, blocks, root, doc)
    calls = p.calls()
    by_path = p.classify(calls)
    heights: dict[str, int] = {}
    for call in reversed(calls):  # children before parents
        kids = [by_path[c.path] for c in call.block.children]
        heights[call.block.path] = 1 + max((heights[c.block.path] for c in kids), default=0)
    _ARG_HINTS.clear()
    ctor: dict[str, Expr] = {}
    classes: list[tuple[str, list[str], _Class]] = []  # (name, arguments, template)
    every: list[_Class] = []
    taken = {root}
    for height in range(1, max(heights.values()) + 1):
        level = [c for c in calls if heights[c.block.path] == height]
        templates = []
        for call in level:
            path = call.block.path
            kids = [by_path[c.path] for c in call.block.children]
            if call.kind == "layer" and call.layer is not None:
                p.imports.add(call.layer.cls.split(".")[0])
                ctor[path] = call.layer.constructor()
                _ARG_HINTS[call.layer.cls] = call.layer.names
            elif call.kind == "sequential":
                p.imports.add("nn")
                ctor[path] = Call("nn.Sequential", tuple(ctor[c.block.path] for c in kids))
                if not path:
                    classes.append((root, [], _sequential_root(call, ctor[path], height)))
            elif call.nodes or not path:
                templates.append(_template(p, call, by_path, ctor, height))
        every += templates
        for name, arguments, members in _group(templates, taken, root):
            classes.append((name, arguments, members[0][0]))
            for template, values in members:
                ctor[template.call.block.path] = Call(name, tuple(values))
    return _emit(p, calls, classes, every)


def _template(
    p: Printer, call: _Call, by_path: dict[str, _Call], ctor: dict[str, Expr], height: int
) -> _Class:
    body = _Body(p, call, by_path)
    args, stmts, names = body.statements()
    returns = (
        [names[e] for e in call.outputs]
        if call.block.path
        else [names[(e[0], e[1])] for e in p.g.heads]
    )
    # Drop what nothing uses (an RNN's parameter concatenation), then name each value.
    while True:
        wanted: set[str] = set()
        for r in returns:
            wanted |= _used(r)
        for s in stmts:
            wanted |= _used(s.expr)
        dead = [s for s in stmts if s.target not in wanted]  # type: ignore[attr-defined]
        if not dead:
            break
        stmts = [s for s in stmts if s not in dead]
    last: dict[str, int] = {}
    for k, s in enumerate(stmts):
        for v in _used(s.expr):
            last[v] = k
    for r in returns:
        for v in _used(r):
            last[v] = len(stmts)
    for a in args:
        last.setdefault(a.split("=")[0], -1)
    holder: dict[str, str] = {a.split("=")[0]: a.split("=")[0] for a in args}  # name -> value
    mapping: dict[str, str] = {}
    live_until: dict[str, int] = {
        a.split("=")[0]: _last_use(a.split("=")[0], stmts, returns) for a in args
    }
    for k, s in enumerate(stmts):
        target = s.target  # type: ignore[attr-defined]
        free = [n for n, v in holder.items() if live_until.get(v, -1) <= k]
        if "x" not in holder or "x" in free:
            name = "x"
        else:
            base = _stem(p.nodes[s.first]["op"]) if s.node else s.base
            name, i = base, 1
            while name in holder and name not in free or name in PRELUDE_NAMES:
                i += 1
                name = "%s%d" % (base, i)
        holder[name] = target
        live_until[target] = last.get(target, k)
        mapping[target] = name
    lines = ["    def forward(self, %s):" % ", ".join(args)]
    record = list(lines)
    record_nodes = {}
    for k, s in enumerate(stmts):
        expr = _subst(s.expr, mapping)
        text = statement(mapping[s.target] + " = ", expr, "        ")  # type: ignore[attr-defined]
        lines += text
        record += text
        if s.node:
            record_nodes[k] = s.node
            record.append("        _rec(self, %d, %s)" % (k, mapping[s.target]))  # type: ignore[attr-defined]
    result = [_subst(r, mapping) for r in returns]
    if len(result) == 1:
        ret = statement("return ", result[0], "        ")
    else:
        ret = ["        return " + ", ".join(r.flat() for r in result)]
    lines += ret
    record += ret
    init: list[tuple[str, Expr]] = []
    after: list[str] = []
    for child in call.block.children:
        init.append((child.name, ctor[child.path]))
        c = by_path[child.path]
        if c.kind == "layer":
            for attr, mx_name in sorted(c.params.items()):
                if mx_name in p.g.frozen:
                    after.append("self.%s.%s.requires_grad_(False)" % (child.name, attr))
    for attr, mx_name in call.params.items():
        shape = Lit(tuple(p.g.shapes[mx_name]))
        options = (("requires_grad", False),) if mx_name in p.g.frozen else ()
        init.append((attr, Call("nn.Parameter", (Call("torch.empty", (shape,)),), options)))
        p.imports.update(("nn", "torch"))
    for attr, mx_name in call.buffers.items():
        shape = Lit(tuple(p.g.shapes[mx_name]))
        after.append(
            "self.register_buffer(%s, torch.empty(%s))" % (literal(attr), literal(shape.value))
        )
        p.imports.add("torch")
    return _Class(call, init, after, lines, record, record_nodes, height)


def _sequential_root(call: _Call, expr: Expr, height: int) -> _Class:
    assert isinstance(expr, Call)
    return _Class(call, [("", Call("super().__init__", expr.args))], [], [], [], {}, height)


def _last_use(name: str, stmts: list[_Stmt], returns: list[Expr]) -> int:
    pattern = re.compile(r"\b%s\b" % re.escape(name))
    last = -1
    for k, s in enumerate(stmts):
        if pattern.search(s.expr.flat()):
            last = k
    if any(pattern.search(r.flat()) for r in returns):
        last = len(stmts)
    return last


def _group(
    templates: list[_Class], taken: set[str], root: str
) -> list[tuple[str, list[str], list[tuple[_Class, list[Any]]]]]:
    """The classes of one height: instances of one Gluon class with the same structure share a
    class, whose constructor takes what differs between them."""
    groups: dict[Any, list[tuple[_Class, list[tuple[str, Any]]]]] = {}
    for t in templates:
        leaves: list[tuple[str, Any]] = []
        shape = [(attr, _leaves(e, attr, leaves).flat()) for attr, e in t.init]
        key = (
            _class_name(t.call.block) if t.call.block.path else root,
            repr(shape),
            tuple(t.after),
            tuple(t.forward),
            tuple(h for h, _ in leaves),
        )
        groups.setdefault(key, []).append((t, leaves))
    ordered = sorted(groups.items(), key=lambda kv: -len(kv[1]))
    result = []
    for key, members in ordered:
        name = key[0]
        if not members[0][0].call.block.path:
            name = root
        elif name in taken:
            i = 2
            while "%s%d" % (name, i) in taken:
                i += 1
            name = "%s%d" % (name, i)
        taken.add(name)
        columns = list(zip(*[[v for _, v in leaves] for _, leaves in members]))
        hints = [h for h, _ in members[0][1]]
        arguments: list[str] = []
        by_column: dict[Any, str] = {}
        position_value: list[Expr] = []
        for k, column in enumerate(columns):
            if len(set(map(repr, column))) == 1:
                position_value.append(Lit(column[0]))
                continue
            ref = tuple(map(repr, column))
            if ref not in by_column:
                arg = _arg_name(hints[k], arguments)
                by_column[ref] = arg
                arguments.append(arg)
            position_value.append(Var(by_column[ref]))
        template = members[0][0]
        # The class's constructor, the lifted values by name.
        values = list(position_value)
        template.init = [(a, _fill(_leaves(e, a, []), values)) for a, e in template.init]
        _ARG_HINTS[name] = tuple(arguments)
        per_instance = []
        for t, leaves in members:
            own = {}
            for k, column in enumerate(columns):
                ref = tuple(map(repr, column))
                if ref in by_column:
                    own[by_column[ref]] = leaves[k][1]
            per_instance.append((t, [Lit(own[a]) for a in arguments]))
        result.append((name, arguments, per_instance))
    return result


def _arg_name(hint: str, taken: list[str]) -> str:
    base = re.sub(r"\W", "_", hint) or "arg"
    if base[0].isdigit() or keyword.iskeyword(base) or base in ("self",) + PRELUDE_NAMES:
        base = "arg_" + base
    name, i = base, 1
    while name in taken:
        i += 1
        name = "%s%d" % (base, i)
    return name


def _emit(
    p: Printer,
    calls: list[_Call],
    classes: list[tuple[str, list[str], _Class]],
    every: list[_Class],
) -> Written:
    source, record = [], []
    for name, arguments, t in classes:
        is_root = not t.call.block.path
        base = "nn.Sequential" if is_root and not t.forward else "nn.Module"
        head = ["class %s(%s):" % (name, base)]
        if is_root and p.doc:
            head.append('    """%s"""' % p.doc)
            head.append("")
        head.append("    def __init__(%s):" % ", ".join(["self"] + arguments))
        init = [] if t.init and not t.init[0][0] else ["        super().__init__()"]
        for attr, expr in t.init:
            if not attr:
                init += statement("", expr, "        ")
            elif attr.isidentifier():
                init += statement("self.%s = " % attr, expr, "        ")
            else:
                init += statement("", Call("self.add_module", (Lit(attr), expr)), "        ")
        init += ["        " + line for line in t.after]
        block = head + init
        source.append("\n".join(block + ([""] + t.forward if t.forward else [])))
        record.append("\n".join(block + ([""] + t.record if t.record else [])))
    p.imports.add("nn")
    mxnet_names, layer_nodes, node_paths, record_nodes = {}, {}, {}, {}
    by_path = {c.block.path: c for c in calls}
    for call in calls:
        path = call.block.path
        for attr, mx_name in list(call.params.items()) + list(call.buffers.items()):
            mxnet_names["%s.%s" % (path, attr) if path else attr] = mx_name
        if call.kind == "layer":
            layer_nodes[path] = p.nodes[call.own[0]]["name"]
        for i in call.own:
            node_paths[p.nodes[i]["name"]] = path
    for t in every:
        record_nodes[t.call.block.path] = t.record_nodes
    del by_path
    inputs: list[str] = []
    labels: list[str] = []
    for i, node in enumerate(p.nodes):
        if node["op"] == "null" and node["name"] not in p.param_names:
            (labels if i in p.label_nodes else inputs).append(_attribute(node["name"]))
    written = Written(
        "\n\n\n".join(source) + "\n",
        "\n\n\n".join(record) + "\n",
        p.root_name,
        inputs,
        labels,
        mxnet_names,
        layer_nodes,
        node_paths,
        p.imports,
    )
    written.record_nodes = record_nodes  # type: ignore[attr-defined]
    return written
