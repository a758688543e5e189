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

import keyword
import re
from dataclasses import dataclass, field
from typing import Iterator, Tuple

from .expr import Expr, Layer, Var
from .nodes import EMITTERS, LAYERS, Node, Unsupported, sort_indices

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


# The divisions whose result on integers truncates in MXNet; the operators whose output has
# their first input's type.
_DIVISIONS = frozenset(["elemwise_div", "broadcast_div", "_div", "_Div", "_div_scalar"])
_SAME_TYPE = frozenset(
    "Reshape reshape SliceChannel split slice slice_axis slice_like transpose expand_dims "
    "squeeze Flatten flatten Concat concat stack tile repeat reverse flip abs negative _copy "
    "identity broadcast_to broadcast_like broadcast_axis elemwise_add elemwise_sub elemwise_mul "
    "elemwise_div broadcast_add broadcast_plus broadcast_sub broadcast_minus broadcast_mul "
    "broadcast_div broadcast_mod _plus _minus _mul _div _mod _Plus _Minus _Mul _Div _Mod "
    "_plus_scalar _minus_scalar _mul_scalar _div_scalar _mod_scalar _rminus_scalar "
    "_rmod_scalar broadcast_maximum broadcast_minimum _maximum_scalar _minimum_scalar clip "
    "pick take gather_nd".split()
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
    zero_states: dict[int, tuple[int, ...]] = field(default_factory=dict)

    def check_entries(self) -> None:
        """Every input and head names an output its node's emitter gives: a file without
        node_row_ptr (0.8's form) cannot say how many an operator has, the emitters can."""
        counts = {i: found for i, found in self._asked() if isinstance(found, int)}
        entries = [(e, "node %r" % n["name"]) for n in self.nodes for e in n["inputs"]]
        entries += [(h, "the graph's output") for h in self.heads]
        for entry, reader in entries:
            node, index = entry[0], entry[1]
            if node in counts and index >= counts[node]:
                source = self.nodes[node]
                raise ValueError(
                    "mxcompat.to_torch: %s reads output %d of node %r (op %s), which has %d"
                    % (reader, index, source["name"], source["op"], counts[node])
                )

    def attrs(self, node: dict) -> dict:
        """The node's attributes as its emitters read them: a BatchNorm's with the nodes whose
        statistics are frozen."""
        attrs = dict(node["attrs"])
        if node["op"] == "BatchNorm":
            attrs["__frozen_stats__"] = self.frozen_stats
        if node["op"] in _DIVISIONS and node["inputs"]:
            attrs["__integer__"] = self.integer(node["inputs"][0])
        return attrs

    def integer(self, entry: Entry) -> bool:
        """Whether the array of ``entry`` holds integers, as far as the operators that make
        them tell (a ``Cast``, ``shape_array``, a sort's indices and what passes them on):
        MXNet divides integers as C does, truncating."""
        node = self.nodes[entry[0]]
        while node["op"] in _SAME_TYPE and node["inputs"]:  # back to what made the type
            entry = node["inputs"][0]
            node = self.nodes[entry[0]]
        op, attrs = node["op"], node["attrs"]
        if op in ("shape_array", "size_array"):
            return True
        if op in ("argsort", "topk") and not sort_indices(op, attrs, entry[1]):
            return False
        if op in ("Cast", "cast", "argsort", "topk", "one_hot", "_contrib_arange_like"):
            return str(attrs.get("dtype", "float32")).startswith(("int", "uint"))
        return False

    def refusals(self) -> list[Unsupported]:
        """Every node whose attributes its emitter refuses, asked of each node before any is
        written, so that one error names them all."""
        return [found for _, found in self._asked() if isinstance(found, Unsupported)]

    def _asked(self) -> Iterator[tuple[int, int | Unsupported]]:
        """(node index, its emitter's number of outputs, or its refusal) for each node whose
        emitter can be asked alone, before anything is written.  The fused RNN's nodes, whose
        inputs the writer rearranges, and what fails otherwise are left to the writer, which
        meets them again."""
        for i, node in enumerate(self.nodes):
            emitter = EMITTERS.get(node["op"])
            if emitter is None or i in self.rnn_pieces or i in self.zero_states:
                continue
            sources = [self.nodes[entry[0]] for entry in node["inputs"]]
            args = [Var("x%d" % k) for k in range(len(sources))]
            shapes = [self.shapes.get(s["name"]) if s["op"] == "null" else None for s in sources]
            found: int | Unsupported
            try:
                found = emitter(Node(node["op"], node["name"], self.attrs(node), args, shapes))[1]
            except Unsupported as exc:
                found = exc
            except Exception:  # the writer raises it again, where it is written
                continue
            yield i, found


@dataclass
class Written:
    """The classes' source and their twin that records each node's output (for verify); the
    root class's name; the forward's inputs and labels; each state_dict key's MXNet name; the
    stock layer of each node a stock layer computes (module path -> node: its output is the
    module's); which module computes each node; and which node each recorded statement of each
    class instance computes (module path -> {statement index: node})."""

    source: str
    record_source: str
    root: str
    inputs: list[str]
    labels: list[str]
    mxnet_names: dict[str, str]
    layer_nodes: dict[str, str]
    node_paths: dict[str, str]
    record_nodes: dict[str, dict[int, str]]


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
        # Each variable's node (a parameter, a state, an input).
        self.variables = {n["name"]: i for i, n in enumerate(self.nodes) if n["op"] == "null"}
        self.label_nodes = set()
        from ..convert.shared import LOSS_HEADS

        for node in self.nodes:
            if node["op"] in LOSS_HEADS and len(node["inputs"]) > 1:
                self.label_nodes.add(node["inputs"][1][0])

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
        unread = set(self.g.zero_states.get(i, ()))
        if i in self.g.rnn_pieces:
            unread.add(1)
        return [tuple(e) for k, e in enumerate(node["inputs"]) if k not in unread]

    def _outputs_of(self, i: int) -> list[Entry]:
        return [e for e in self.head_set if e[0] == i]

    def _check_convex(self, path: str, inside: set[int], inputs: list[Entry]) -> None:
        # An input computed from the block's own output: the block is not one call.
        # Nodes come in topological order: one before the block's first cannot depend on it.
        first = min(inside, default=0)
        seen: set[int] = set()
        stack = [j for j, _ in inputs]
        while stack:
            j = stack.pop()
            if j in seen:
                continue
            seen.add(j)
            if j in inside:
                raise NotATree("%s is not one call" % path)
            stack.extend(e[0] for e in self.nodes[j]["inputs"] if e[0] >= first)

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
        if make is None or len(call.inputs) != 1:
            return None
        if i in self.g.rnn_pieces and (i not in self.g.zero_states or call.outputs != [(i, 0)]):
            return None
        layer = make(self._node(i, {}))
        if layer is None or layer.count != 1 or (i in self.g.rnn_pieces) != bool(layer.pieces):
            return None
        inputs = [tuple(e) for e in node["inputs"]]
        if tuple(inputs[k] for k in layer.inputs) != tuple(call.inputs):
            return None
        names = {n: inputs[k] for n, k in layer.params.items()}
        names.update((n, (self.variables[mx], 0)) for n, mx in layer.pieces.items())
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
            if child.layer is not None and child.layer.flatten:
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

    def _node(self, i: int, names: dict[Entry, Expr]) -> Node:
        node = self.nodes[i]
        args: list[Expr] = []
        shapes = []
        for entry in node["inputs"]:
            entry = tuple(entry)
            args.append(names.get(entry, Var("None")))
            source = self.nodes[entry[0]]
            shapes.append(self.g.shapes.get(source["name"]) if source["op"] == "null" else None)
        pieces = [(p, self.g.shapes[p]) for p in self.g.rnn_pieces.get(i, ())]
        return Node(node["op"], node["name"], self.g.attrs(node), args, shapes, pieces)


def _attribute(name: str) -> str:
    base = re.sub(r"\W", "_", name)
    if not base or base[0].isdigit() or keyword.iskeyword(base) or base in PRELUDE_NAMES:
        base = "v_" + base
    if base in MODULE_NAMES or base.startswith("_"):
        base = "mx_" + base.lstrip("_")
    return base
