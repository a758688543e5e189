"""An MXNet symbol graph (``Symbol.tojson()``) as the converter reads it: its nodes, the
operators it needs and which are not mapped, the RNN parameters that need no concatenation.
Imports neither torch nor mxnet: ``mxcompat torch --check`` lists what a model needs from here
alone.  ``tree``, ``body`` and ``classes`` write the module from it."""

from __future__ import annotations

import json
from typing import Any, Container, Sequence

# The emitters register themselves in nodes.EMITTERS and nodes.LAYERS when their modules are
# imported.
from ..convert.shared import node_attrs
from . import layers, tensors  # noqa: F401
from .nodes import EMITTERS, _bool, _tuple


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


def _zero_states(
    nodes: Sequence[dict[str, Any]], heads: Sequence[tuple[int, int]]
) -> dict[int, tuple[int, ...]]:
    """{RNN node index: positions of its state inputs} where those states are zeros of a batch
    size left to inference, read by that node alone: Gluon's RNN layers called without states
    (``begin_state``).  The RNN then starts from zeros itself, as ``nn.LSTM`` does."""
    users: dict[int, set[int]] = {}
    for i, node in enumerate(nodes):
        for j, _ in node["inputs"]:
            users.setdefault(j, set()).add(i)
    for j, _ in heads:
        users.setdefault(j, set()).add(-1)
    found: dict[int, tuple[int, ...]] = {}
    for i, node in enumerate(nodes):
        if node["op"] != "RNN":
            continue
        positions = (2, 3) if node["attrs"].get("mode") == "lstm" else (2,)
        if len(node["inputs"]) <= positions[-1]:
            continue
        for k in positions:
            j, _ = node["inputs"][k]
            source = nodes[j]
            shape = _tuple(source["attrs"].get("shape"))
            if source["op"].strip("_") != "zeros" or 0 not in shape or users.get(j) != {i}:
                break
        else:
            found[i] = positions
    return found


def _rnn_pieces(
    nodes: Sequence[dict[str, Any]], heads: Sequence[tuple[int, int]], params: Container[str]
) -> tuple[dict[int, list[str]], set[int]]:
    """{RNN node index: [its parameters' names]} where the RNN's parameter vector is a
    ``_rnn_param_concat`` of parameters (each maybe through ``reshape(-1)``), as Gluon's RNN
    layers build it, used by nothing else; and the indices of those in-between nodes.  The
    RNN then takes the parameters as they are, concatenated and split by no one."""
    users: dict[int, int] = {}
    for node in nodes:
        for j, _ in node["inputs"]:
            users[j] = users.get(j, 0) + 1
    for j, _ in heads:
        users[j] = users.get(j, 0) + 1

    def only_here(j: int) -> bool:
        return users.get(j) == 1

    pieces: dict[int, list[str]]
    skipped: set[int]
    pieces, skipped = {}, set()
    for i, node in enumerate(nodes):
        if node["op"] != "RNN" or len(node["inputs"]) < 2:
            continue
        c = node["inputs"][1][0]
        concat = nodes[c]
        if concat["op"] != "_rnn_param_concat" or not only_here(c):
            continue
        if str(concat["attrs"].get("dim", "0")).strip() != "0":
            continue
        names, between = [], [c]
        for j, k in concat["inputs"]:
            source = nodes[j]
            if source["op"] in ("Reshape", "reshape") and k == 0 and only_here(j):
                attrs = source["attrs"]
                flat = _tuple(attrs.get("shape")) == (-1,) and not _tuple(attrs.get("target_shape"))
                if not flat or _bool(attrs.get("reverse")):
                    break
                between.append(j)
                j, k = source["inputs"][0]
                source = nodes[j]
            if source["op"] != "null" or source["name"] not in params:
                break
            names.append(source["name"])
        else:
            pieces[i] = names
            skipped.update(between)
    return pieces, skipped
