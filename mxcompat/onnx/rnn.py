"""Our converter of MXNet's fused ``RNN`` (Gluon's LSTM, GRU and RNN layers) for MXNet 1.9's
exporter (see ``converters``): any number of layers, bidirectional, with or without states, as
ONNX's LSTM/GRU/RNN one layer at a time."""

import sys

from .nodes import Limit, _const, _flag, _input_names

# MXNet's gate order -> ONNX's: LSTM i f g o -> i o f c; GRU r z n -> z r h.
_RNN_MODES = {
    "lstm": ("LSTM", 4, (0, 3, 1, 2), {}),
    "gru": ("GRU", 3, (1, 0, 2), {"linear_before_reset": 1}),
    "rnn_tanh": ("RNN", 1, (0,), {"activations": ["Tanh"]}),
    "rnn_relu": ("RNN", 1, (0,), {"activations": ["Relu"]}),
}


def rnn_limits(node):
    """Why our RNN converter cannot convert ``node`` (None: it can)."""
    attrs = node.get("attrs", {})
    if str(attrs.get("mode")) not in _RNN_MODES:
        return "mode=%s" % attrs.get("mode")
    if _flag(attrs, "use_sequence_length"):
        return "use_sequence_length=True (ONNX's sequence_lens keeps no state past a length)"
    if str(attrs.get("projection_size", "None")) != "None":
        return "projection_size=%s (ONNX's LSTM has no projection)" % attrs["projection_size"]
    for clip in ("lstm_state_clip_min", "lstm_state_clip_max"):
        if str(attrs.get(clip, "None")) != "None":
            return "%s=%s (ONNX's LSTM clips its gates, not its cell)" % (clip, attrs[clip])
    return None


def _constant(symbol, nodes, entry, weights):
    """The value of graph entry ``entry`` computed from the model's parameters alone (Gluon's
    RNN layers concatenate theirs in the graph: ``_rnn_param_concat``), or None."""
    import numpy as np

    from .._core.conversion import import_mxnet

    node = nodes[entry[0]]
    if node["op"] == "null":
        value = weights.get(node["name"])
        return None if value is None else np.asarray(value)
    mx = import_mxnet()
    internals = symbol.get_internals()
    outputs = [o for o in internals.list_outputs() if o.startswith(node["name"] + "_output")]
    if len(outputs) != 1 or entry[1] != 0:
        return None
    part = internals[outputs[0]]
    if part.list_auxiliary_states() or any(a not in weights for a in part.list_arguments()):
        return None
    args = {a: mx.nd.array(weights[a], dtype=weights[a].dtype) for a in part.list_arguments()}
    return part.eval(ctx=mx.cpu(), **args)[0].asnumpy()


def rnn(node, shapes, kwargs, symbol=None):
    import numpy as np

    make_node = sys.modules["onnx"].helper.make_node
    name = node["name"]
    attrs = node.get("attrs", {})
    reason = rnn_limits(node)
    if reason:
        raise Limit(reason)
    op, gates, order, extra = _RNN_MODES[str(attrs["mode"])]
    hidden = int(attrs["state_size"])
    layers = int(attrs.get("num_layers", 1))
    dirs = 2 if _flag(attrs, "bidirectional") else 1
    inputs = _input_names(node, kwargs)
    entry = node["inputs"][1]
    flat = _constant(symbol, kwargs["mx_graph"], entry, kwargs["weights"])
    if flat is None:
        raise Limit(
            "its parameters %r are computed from the input, not from the model's parameters"
            % kwargs["mx_graph"][entry[0]]["name"]
        )
    flat = flat.reshape(-1)
    seq_shape = shapes[node["inputs"][0][0]][node["inputs"][0][1]]
    width = seq_shape[2]
    rows = gates * hidden

    def take(offset, count, shape):
        return flat[offset : offset + count].reshape(shape), offset + count

    offset = 0
    w, r = {}, {}
    for layer in range(layers):
        size = width if layer == 0 else dirs * hidden
        for d in range(dirs):
            w[layer, d], offset = take(offset, rows * size, (rows, size))
            r[layer, d], offset = take(offset, rows * hidden, (rows, hidden))
    b = {}
    for layer in range(layers):
        for d in range(dirs):
            bw, offset = take(offset, rows, (rows,))
            br, offset = take(offset, rows, (rows,))
            b[layer, d] = (bw, br)
    if offset != flat.size:
        raise Limit("%d parameters, %d expected" % (flat.size, offset))

    def gated(array):
        parts = np.split(array, gates, axis=0)
        return np.concatenate([parts[g] for g in order], axis=0)

    def tensor(suffix, arrays):
        return _const(kwargs, name + suffix, np.stack(arrays), dtype=flat.dtype)

    nodes = []
    states_h, states_c = [], []
    current = inputs[0]
    for layer in range(layers):
        key = "_l%d" % layer
        ins = [
            current,
            tensor(key + "_W", [gated(w[layer, d]) for d in range(dirs)]),
            tensor(key + "_R", [gated(r[layer, d]) for d in range(dirs)]),
            tensor(
                key + "_B",
                [
                    np.concatenate([gated(b[layer, d][0]), gated(b[layer, d][1])])
                    for d in range(dirs)
                ],
            ),
            "",
        ]
        first = _const(kwargs, name + key + "_from", [layer * dirs])
        last = _const(kwargs, name + key + "_to", [(layer + 1) * dirs])
        zero = _const(kwargs, name + key + "_axis", [0])
        for state in inputs[2 : 4 if op == "LSTM" else 3]:
            part = "%s%s_init%d" % (name, key, len(ins))
            nodes.append(make_node("Slice", [state, first, last, zero], [part]))
            ins.append(part)
        outs = [name + key + "_Y", name + key + "_Yh"] + (
            [name + key + "_Yc"] if op == "LSTM" else []
        )
        nodes.append(
            make_node(
                op,
                ins,
                outs,
                hidden_size=hidden,
                direction="bidirectional" if dirs == 2 else "forward",
                **extra,
            )
        )
        states_h.append(outs[1])
        if op == "LSTM":
            states_c.append(outs[2])
        # Y is (steps, directions, batch, hidden); MXNet's (steps, batch, directions * hidden).
        out = name if layer == layers - 1 else name + key + "_out"
        nodes.append(make_node("Transpose", [outs[0]], [out + "_t"], perm=[0, 2, 1, 3]))
        nodes.append(
            make_node("Reshape", [out + "_t", _const(kwargs, out + "_shape", [0, 0, -1])], [out])
        )
        current = out
    if _flag(attrs, "state_outputs"):
        nodes.append(make_node("Concat", states_h, [name + "1"], axis=0))
        if op == "LSTM":
            nodes.append(make_node("Concat", states_c, [name + "2"], axis=0))
    return nodes
