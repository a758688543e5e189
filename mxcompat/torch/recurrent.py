"""MXNet's fused ``RNN`` operator: its emitters (``mxops.rnn``; ``nn.LSTM``/``nn.GRU``/``nn.RNN``
where a Gluon layer's own parameters feed it from zero states) and what of the graph feeds
it: the pieces its parameter vector is concatenated from, its begin states."""

from __future__ import annotations

import re
from typing import Any, Container, Sequence

from .expr import Expr, Layer, Var, call, method
from .nodes import Node, _bool, _emits, _layer, _tuple


@_emits("_rnn_param_concat")
def _rnn_param_concat(n: Node) -> tuple[Expr, int]:
    flat = ", ".join(method(a, "reshape", -1).flat() for a in n.args)
    return call("torch.cat", Var("[%s]" % flat), 0), 1


@_emits("RNN")
def _rnn(n: Node) -> tuple[Expr, int]:
    mode = n.str("mode")
    if mode not in ("lstm", "gru", "rnn_tanh", "rnn_relu"):
        n.refuse("mode=%s" % mode)
    for key in ("projection_size", "lstm_state_clip_min", "lstm_state_clip_max"):
        if n.str(key) is not None:
            n.refuse("%s=%s" % (key, n.str(key)))
    if n.bool("use_sequence_length"):
        n.refuse("use_sequence_length=True")
    outputs = (3 if mode == "lstm" else 2) if n.bool("state_outputs") else 1
    options = dict(
        bidirectional=n.bool("bidirectional"),
        p=n.float("p", 0.0),
        state_outputs=n.bool("state_outputs"),
        training=Var("self.training"),
    )
    cell = n.arg(3) if mode == "lstm" else Var("None")
    args = (n.args[0], n.args[1], n.args[2], cell, mode, n.int("state_size"), n.int("num_layers"))
    return call("mxops.rnn", *args, **options), outputs


_RNN_LAYERS = {"lstm": "nn.LSTM", "gru": "nn.GRU", "rnn_tanh": "nn.RNN", "rnn_relu": "nn.RNN"}
# Gluon's RNN layers name their parameters l0_i2h_weight, r1_h2h_bias, ...: torch's own names for
# the same matrices (gates in the same order: i, f, g, o and r, z, n).
RNN_PIECE = re.compile(r"([lr])(\d+)_(i2h|h2h)_(weight|bias)$")


@_layer("RNN")
def _rnn_layer(n: Node) -> Layer | None:
    """``nn.LSTM``/``nn.GRU``/``nn.RNN`` with torch's parameters, where the node reads Gluon's
    layer parameters concatenated and starts from zero states."""
    mode = n.str("mode")
    if mode not in _RNN_LAYERS or not n.pieces or n.bool("use_sequence_length"):
        return None
    clip = ("projection_size", "lstm_state_clip_min", "lstm_state_clip_max")
    if any(n.str(k) is not None for k in clip):
        return None
    pieces: dict[str, str] = {}
    input_size = None
    for name, shape in n.pieces:
        m = RNN_PIECE.search(name)
        if m is None:
            return None
        side, layer, kind, what = m.groups()
        torch_name = "%s_%s_l%s%s" % (what, kind[0] + "h", layer, "_reverse" if side == "r" else "")
        pieces[torch_name] = name
        if torch_name == "weight_ih_l0":
            input_size = shape[1] if len(shape) == 2 else None
    layers, bidirectional = n.int("num_layers", 1), n.bool("bidirectional")
    expected = 4 * layers * (2 if bidirectional else 1)
    if input_size is None or len(pieces) != expected:
        return None
    kwargs: dict[str, Any] = {}
    if layers != 1:
        kwargs["num_layers"] = layers
    if mode == "rnn_relu":
        kwargs["nonlinearity"] = "relu"
    if n.float("p", 0.0):
        kwargs["dropout"] = n.float("p")
    if bidirectional:
        kwargs["bidirectional"] = True
    return Layer(
        _RNN_LAYERS[mode],
        (input_size, n.int("state_size")),
        tuple(kwargs.items()),
        names=("input_size", "hidden_size"),
        pieces=pieces,
        output="0",
    )


# --- what of the graph feeds it ---------------------------------------------------------------


def zero_states(
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


def rnn_pieces(
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
