"""The classes of the module tree (``tree``): each block's constructor and forward, instances
of one Gluon block class with the same structure sharing a class whose constructor takes what
differs between them, the root class last; and the twin source that records every node's
output for the verification."""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from typing import Any

from .body import _Body, _stem, _Stmt, _subst, _used
from .expr import Call, Expr, Lit, Var, literal, statement
from .tree import (
    PRELUDE_NAMES,
    Block,
    Blocks,
    Graph,
    Printer,
    Written,
    _attribute,
    _Call,
)


@dataclass
class _Class:
    """One instance's class: constructor statements (attribute, expression), forward lines."""

    call: _Call
    init: list[tuple[str, Expr]]
    after: list[str]  # lines after the attributes (a stock layer's frozen parameter)
    forward: list[str]
    record: list[str]
    record_nodes: dict[int, str]


def _leaves(expr: Any, hint: str, out: list[tuple[str, Any]], hints: Hints) -> Any:
    """``expr`` with every literal replaced by a marker, its (hint, value) appended to out;
    ``hints``: the names of each class's positional arguments."""
    if isinstance(expr, Lit) or not isinstance(expr, Expr):
        value = expr.value if isinstance(expr, Lit) else expr
        out.append((hint, value))
        return Var("\x00")
    if isinstance(expr, Call):
        names = hints.get(expr.fn, ())
        args = tuple(
            _leaves(a, names[k] if k < len(names) else hint, out, hints)
            for k, a in enumerate(expr.args)
        )
        kwargs = tuple((k, _leaves(v, k, out, hints)) for k, v in expr.kwargs)
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


Hints = dict  # class name -> its constructor's positional arguments' names


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
    hints: Hints = {}
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
                ctor[path] = call.layer.constructor()
                hints[call.layer.cls] = call.layer.names
            elif call.kind == "sequential":
                ctor[path] = Call("nn.Sequential", tuple(ctor[c.block.path] for c in kids))
                if not path:
                    classes.append((root, [], _sequential_root(call, ctor[path])))
            elif call.nodes or not path:
                templates.append(_template(p, call, by_path, ctor))
        every += templates
        for name, arguments, members in _group(templates, taken, root, hints):
            classes.append((name, arguments, members[0][0]))
            for template, values in members:
                ctor[template.call.block.path] = Call(name, tuple(values))
    return _emit(p, calls, classes, every)


def _template(p: Printer, call: _Call, by_path: dict[str, _Call], ctor: dict[str, Expr]) -> _Class:
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
        dead = [s for s in stmts if s.target not in wanted]
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
    holder: dict[str, str] = {a.split("=")[0]: a.split("=")[0] for a in args}  # name -> value
    mapping: dict[str, str] = {}
    live_until: dict[str, int] = {
        a.split("=")[0]: _last_use(a.split("=")[0], stmts, returns) for a in args
    }
    for k, s in enumerate(stmts):
        target = s.target
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
        text = statement(mapping[s.target] + " = ", expr, "        ")
        lines += text
        record += text
        if s.node:
            record_nodes[k] = s.node
            # _rec keeps the value, or gives MXNet's in its place (verify's forced run).
            record.append(
                "        %s = _rec(self, %d, %s)" % (mapping[s.target], k, mapping[s.target])
            )
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
    for attr, mx_name in call.buffers.items():
        shape = Lit(tuple(p.g.shapes[mx_name]))
        after.append(
            "self.register_buffer(%s, torch.empty(%s))" % (literal(attr), literal(shape.value))
        )
    return _Class(call, init, after, lines, record, record_nodes)


def _sequential_root(call: _Call, expr: Expr) -> _Class:
    assert isinstance(expr, Call)
    return _Class(call, [("", Call("super().__init__", expr.args))], [], [], [], {})


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
    templates: list[_Class], taken: set[str], root: str, hints: Hints
) -> list[tuple[str, list[str], list[tuple[_Class, list[Any]]]]]:
    """The classes of one height: instances of one Gluon class with the same structure share a
    class, whose constructor takes what differs between them."""
    groups: dict[Any, list[tuple[_Class, list[tuple[str, Any]]]]] = {}
    for t in templates:
        leaves: list[tuple[str, Any]] = []
        shape = [(attr, _leaves(e, attr, leaves, hints).flat()) for attr, e in t.init]
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
    children: dict[str, set[str]] = {}  # a class named here -> its attributes
    for key, members in ordered:
        name = key[0]
        attrs = {a for a, _ in members[0][0].init}
        if not members[0][0].call.block.path:
            name = root
        elif name in taken:
            name = _variant(name, attrs, children.get(name), taken)
        taken.add(name)
        children.setdefault(name, attrs)
        columns = list(zip(*[[v for _, v in leaves] for _, leaves in members]))
        leaf_hints = [h for h, _ in members[0][1]]
        arguments: list[str] = []
        by_column: dict[Any, str] = {}
        position_value: list[Expr] = []
        for k, column in enumerate(columns):
            if len(set(map(repr, column))) == 1:
                position_value.append(Lit(column[0]))
                continue
            ref = tuple(map(repr, column))
            if ref not in by_column:
                arg = _arg_name(leaf_hints[k], arguments)
                by_column[ref] = arg
                arguments.append(arg)
            position_value.append(Var(by_column[ref]))
        template = members[0][0]
        # The class's constructor, the lifted values by name.
        values = list(position_value)
        template.init = [(a, _fill(_leaves(e, a, [], hints), values)) for a, e in template.init]
        hints[name] = tuple(arguments)
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


def _variant(name: str, attrs: set[str], first: set[str] | None, taken: set[str]) -> str:
    """The name of a second class for blocks of Gluon class ``name``: after the child it has
    and the first lacks (``BasicBlockV1WithDownsample``), else a number."""
    extra = sorted(a for a in attrs - (first or set()) if a.isidentifier())
    if first is not None and extra:
        variant = name + "With" + "".join(p.capitalize() for p in extra[0].split("_"))
        if variant not in taken:
            return variant
    joint = "_" if name[-1:].isdigit() else ""
    i = 2
    while "%s%s%d" % (name, joint, i) in taken:
        i += 1
    return "%s%s%d" % (name, joint, i)


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
    mxnet_names, layer_nodes, node_paths = {}, {}, {}
    for call in calls:
        path = call.block.path
        for attr, mx_name in list(call.params.items()) + list(call.buffers.items()):
            mxnet_names["%s.%s" % (path, attr) if path else attr] = mx_name
        if call.kind == "layer":
            layer_nodes[path] = p.nodes[call.own[0]]["name"]
        for i in call.own:
            node_paths[p.nodes[i]["name"]] = path
    record_nodes = {t.call.block.path: t.record_nodes for t in every}
    inputs: list[str] = []
    labels: list[str] = []
    for i, node in enumerate(p.nodes):
        if node["op"] == "null" and node["name"] not in p.param_names:
            (labels if i in p.label_nodes else inputs).append(_attribute(node["name"]))
    return Written(
        "\n\n\n".join(source) + "\n",
        "\n\n\n".join(record) + "\n",
        p.root_name,
        inputs,
        labels,
        mxnet_names,
        layer_nodes,
        node_paths,
        record_nodes,
    )
