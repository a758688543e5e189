"""The forward of one block's class (``tree``): its own nodes and its children's calls in an
order that computes each value before its use, each value named (``x`` wherever the value it
held is no longer needed, as torchvision reuses ``x``), written through the emitters."""

from __future__ import annotations

import heapq
import keyword
import re
from dataclasses import dataclass
from typing import Any

from .expr import BinOp, Call, Expr, Index, Lit, Method, Var, literal
from .nodes import EMITTERS, Unsupported
from .tree import Entry, NotATree, Printer, _attribute, _Call

# --- the module of one block: statements, names, forward ------------------------------------------


@dataclass
class _Stmt:
    outputs: list[Entry]
    expr: Expr
    node: str | None  # the MXNet node whose output(s) this is (an own node)
    count: int = 1
    first: int = 0
    base: str = ""  # what to call its value where ``x`` is taken
    target: str = ""  # its placeholder name, until the values are named


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
        labels: list[str] = []
        if call.block.path:
            args = ["x"] if len(call.inputs) == 1 else ["x%d" % k for k in range(len(call.inputs))]
            for entry, arg in zip(call.inputs, args):
                names[entry] = Var(arg)
        else:
            args = []
            for i, node in enumerate(nodes):
                if node["op"] == "null" and node["name"] not in self.p.param_names:
                    var = _attribute(node["name"])
                    if var != re.sub(r"\W", "_", node["name"]):
                        raise Unsupported(
                            "null", node["name"], "an input whose name is not a Python name"
                        )
                    (labels if i in self.p.label_nodes else args).append(var)
                    names[(i, 0)] = Var(var)
        for i in call.own:
            for j, _ in self.nodes[i]["inputs"]:
                source = self.nodes[j]
                if source["op"] == "null" and source["name"] in self.p.param_names:
                    if (j, 0) not in names and not (
                        i in self.p.g.rnn_pieces and j == self.nodes[i]["inputs"][1][0]
                    ):
                        raise NotATree("%s reads a child's parameter" % call.block.path)
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
            pieces = [names.get((self.p.variables[p], 0)) for p in self.p.g.rnn_pieces[i]]
            if any(e is None for e in pieces):
                raise NotATree("%s reads another block's parameters" % node["name"])
            n.args[1] = Lit([e for e in pieces if e is not None])
        for k in self.p.g.zero_states.get(i, ()):
            n.args[k] = Var("None")  # the RNN starts from zeros
        expr, count = emitter(n)
        return _Stmt([(i, k) for k in range(count)], expr, node["name"], count, i)

    def _child(self, child: _Call, names: dict[Entry, Expr]) -> _Stmt:
        args: list[Expr] = [names[e] for e in child.inputs]
        if child.kind == "layer" and child.layer is not None and child.layer.flatten:
            args = [Call("torch.flatten", (args[0], 1))]
        name = child.block.name
        fn = "self." + name if name.isidentifier() else "getattr(self, %s)" % literal(name)
        expr: Expr = Call(fn, tuple(args))
        if child.kind == "layer" and child.layer is not None and child.layer.output:
            expr = Index(expr, child.layer.output)
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
        stmt.target = var.text


def _subst(expr: Any, mapping: dict[str, str]) -> Any:
    """``expr`` with each placeholder name replaced."""
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
