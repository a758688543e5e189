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
from .nodes import EMITTERS


def mxnet_name(name: str) -> str:
    """The MXNet name of a parameter of a module written before the module tree, whose names
    were MXNet's with ``.`` written ``%2E`` and ``%`` ``%25``."""
    return name.replace("%2E", ".").replace("%25", "%")


SUPPORTED = tuple(sorted(EMITTERS))


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


def unsupported_message(op: str, nodes: Sequence[str], detail: str | None = None) -> str:
    where = (
        "node %r" % nodes[0]
        if len(nodes) == 1
        else "%d nodes, the first %r"
        % (
            len(nodes),
            nodes[0],
        )
    )
    return "operator %r (%s)%s is not supported by mxcompat.to_torch; supported: %s" % (
        op,
        where,
        " with %s" % detail if detail else "",
        ", ".join(SUPPORTED),
    )
