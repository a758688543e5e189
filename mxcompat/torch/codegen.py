"""An MXNet symbol graph (``Symbol.tojson()``) as the converter reads it: its nodes, the
operators it needs and which are not mapped, the RNN parameters that need no concatenation.
Imports neither torch nor mxnet: ``mxcompat torch --check`` lists what a model needs from here
alone.  ``tree``, ``body`` and ``classes`` write the module from it."""

from __future__ import annotations

import json
from typing import Any, Sequence

# The emitters register themselves in nodes.EMITTERS and nodes.LAYERS when their modules are
# imported.
from ..convert.shared import node_attrs
from . import detection, indexing, layers, recurrent, sequence, tensors  # noqa: F401
from .nodes import EMITTERS, Unsupported


def mxnet_name(name: str) -> str:
    """The MXNet name of a parameter of a module written before the module tree, whose names
    were MXNet's with ``.`` written ``%2E`` and ``%`` ``%25``."""
    return name.replace("%2E", ".").replace("%25", "%")


SUPPORTED = tuple(sorted(EMITTERS))

# The emitter modules by the family of operators each maps (the guide lists them so).
FAMILIES = {
    "layers": "layers: convolution, normalisation, pooling, activations, loss heads",
    "recurrent": "the fused RNN",
    "tensors": "tensors: creation, arithmetic, comparisons, reductions, shapes",
    "detection": "detection: boxes, anchors, regions of interest, proposals",
    "indexing": "indexing, sorting and resizing",
    "sequence": "sequences, attention and their normalisations",
}


def by_family() -> dict[str, list[str]]:
    """{family: the operators its emitters map, sorted}, in ``FAMILIES``' order."""
    found: dict[str, list[str]] = {family: [] for family in FAMILIES.values()}
    for op in SUPPORTED:
        module = EMITTERS[op].__module__.rsplit(".", 1)[-1]
        found[FAMILIES[module]].append(op)
    return {family: ops for family, ops in found.items() if ops}


# --- the graph ------------------------------------------------------------------------------------


def load(graph: Any) -> tuple[list[dict[str, Any]], list[tuple[int, int]]]:
    """(nodes, heads) of a symbol's JSON (text, or parsed), each node ``{"op", "name", "attrs",
    "inputs"}``."""
    if isinstance(graph, str):
        graph = json.loads(graph)
    nodes: list[dict[str, Any]] = []
    for node in graph["nodes"]:
        attrs = node_attrs(node)
        nodes.append(
            {
                "op": node["op"],
                "name": node["name"],
                "attrs": {k: v for k, v in attrs.items() if not k.startswith("__")},
                "inputs": [tuple(e[:2]) for e in node["inputs"]],
            }
        )
    return nodes, [tuple(h[:2]) for h in graph["heads"]]


def needed(nodes: Sequence[dict[str, Any]]) -> tuple[dict[str, list[str]], set[str]]:
    """{op: [node names]} of the graph's operators, and the set of those not supported."""
    ops: dict[str, list[str]] = {}
    for node in nodes:
        if node["op"] != "null":
            ops.setdefault(node["op"], []).append(node["name"])
    return ops, {op for op in ops if op not in EMITTERS}


def _where(nodes: Sequence[str]) -> str:
    if len(nodes) == 1:
        return "node %r" % nodes[0]
    return "%d nodes, the first %r" % (len(nodes), nodes[0])


def unsupported_message(
    ops: dict[str, list[str]], missing: set[str], refused: Sequence[Unsupported] = ()
) -> str:
    """One message for everything the converter does not map: the operators ``missing``
    (with their nodes, from ``ops``) and the nodes whose attributes were ``refused``."""
    said = ["operator %r (%s)" % (op, _where(ops[op])) for op in sorted(missing)]
    said += ["operator %r (node %r) with %s" % (e.op, e.node, e.detail) for e in refused]
    if len(said) == 1:
        head = "%s is not supported" % said[0]
    else:
        head = "%d parts of this graph are not supported: %s" % (
            len(said),
            "; ".join(said),
        )
    return "%s; supported operators: %s" % (head, ", ".join(SUPPORTED))
