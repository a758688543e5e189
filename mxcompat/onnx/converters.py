"""mxcompat's own converters beside MXNet 1.9's exporter, for ``to_onnx`` only.

MXNet 1.9.1's converters refuse or get wrong operators ONNX expresses exactly:
``_contrib_AdaptiveAvgPooling2D`` with an output size above 1 (PSPNet's pyramid) raises, and the
fused ``RNN`` converter handles one or two layers, bidirectional only for one LSTM layer, and for
two LSTM layers takes the first layer's input weights as wide as the state (onnxruntime refuses
the model unless the embedding is as wide as the state).  Ours are used on the exporting thread of a ``to_onnx``
export (``mxnet_exporter.wrap_convert_layer``); MXNet's own ``export_model`` keeps MXNet's.
Each converter gets the node (MXNet's JSON), the shapes of the graph's entries (the input size is
static) and the exporter's keyword arguments, and returns the ONNX nodes as MXNet's converters
do: the node's outputs named ``name``, ``name + "1"`` ...; its own tensors ``name + "_..."``.
"""

import json
import sys


class Limit(Exception):
    """An attribute value neither MXNet's converter nor ours converts: the reason, in words."""


def entry_shapes(symbol, shapes):
    """[[shape of each output] of each node of ``symbol``'s JSON], for input ``shapes``."""
    internals = symbol.get_internals()
    _, out_shapes, _ = internals.infer_shape(**shapes)
    names = [internals[i].name for i in range(len(out_shapes))]
    # get_internals lists every node's outputs in the JSON's (topological) order.
    groups = []
    for name, shape in zip(names, out_shapes):
        if groups and groups[-1][0] == name:
            groups[-1][1].append(tuple(shape))
        else:
            groups.append((name, [tuple(shape)]))
    nodes = json.loads(symbol.tojson())["nodes"]
    if [g[0] for g in groups] != [n["name"] for n in nodes]:
        return None  # two neighbours of one name: shapes unknown, our converters stand aside
    return [g[1] for g in groups]


def _ints(text, default):
    text = str(text).strip("()[] ")
    if not text or text == "None":
        return default
    return tuple(int(v) for v in text.split(",") if v.strip())


def _flag(attrs, key):
    return str(attrs.get(key, "False")) in ("True", "true", "1")


def _input_names(node, kwargs):
    lookup = kwargs["outputs_lookup"]
    return [lookup[i[0]][i[1]].name for i in node["inputs"]]


def _const(kwargs, name, values, dtype="int64"):
    import numpy as np

    onnx = sys.modules["onnx"]
    kwargs["initializer"].append(
        onnx.numpy_helper.from_array(np.asarray(values, dtype=dtype), name)
    )
    return name


# --- _contrib_AdaptiveAvgPooling2D -------------------------------------------------------


def _adaptive_sizes(node):
    size = _ints(node.get("attrs", {}).get("output_size", "1"), (1,))
    return size * 2 if len(size) == 1 else size


def _pool_bounds(length, out):
    # MXNet's adaptive pooling: cell i covers [floor(i * length / out),
    # ceil((i + 1) * length / out)).
    return [((i * length) // out, -((-(i + 1) * length) // out)) for i in range(out)]


def adaptive_avg_pool(node, shapes, kwargs, symbol=None):
    make_node = sys.modules["onnx"].helper.make_node
    name = node["name"]
    (data,) = _input_names(node, kwargs)[:1]
    src, index = node["inputs"][0][:2]
    shape = shapes[src][index]
    out_h, out_w = _adaptive_sizes(node)
    if len(shape) != 4:
        raise Limit("the input is %d-d, not 4-d" % len(shape))
    height, width = shape[2:]
    if (out_h, out_w) == (1, 1):
        return [make_node("GlobalAveragePool", [data], [name], name=name)]
    if height % out_h == 0 and width % out_w == 0:
        kernel = (height // out_h, width // out_w)
        return [make_node("AveragePool", [data], [name], kernel_shape=kernel, strides=kernel)]
    # Cells of unequal or overlapping extent: the mean over a cell's rows of the means over its
    # columns (every row of a cell has as many columns), one axis at a time.
    nodes = []
    current = data
    for axis, length, out in ((2, height, out_h), (3, width, out_w)):
        final = name if axis == 3 else name + "_rows"
        if length % out == 0:
            kernel = (length // out, 1) if axis == 2 else (1, length // out)
            nodes.append(
                make_node("AveragePool", [current], [final], kernel_shape=kernel, strides=kernel)
            )
            current = final
            continue
        axes = _const(kwargs, "%s_axis%d" % (name, axis), [axis])
        cells = []
        for i, (start, end) in enumerate(_pool_bounds(length, out)):
            cell = "%s_a%d_%d" % (name, axis, i)
            starts = _const(kwargs, cell + "_start", [start])
            ends = _const(kwargs, cell + "_end", [end])
            nodes.append(make_node("Slice", [current, starts, ends, axes], [cell + "_slice"]))
            nodes.append(make_node("ReduceMean", [cell + "_slice"], [cell], axes=[axis]))
            cells.append(cell)
        nodes.append(make_node("Concat", cells, [final], axis=axis))
        current = final
    return nodes


# --- _zeros, _ones, _full with a shape MXNet infers ---------------------------------------


def filled(node, shapes, kwargs, symbol=None):
    """A constant whose shape attribute has a 0 (Gluon's RNN layers begin from
    ``zeros((layers, 0, hidden))``; shape inference fills the batch): MXNet's converter writes 1
    there, which its RNN converter broadcast, and ours and others do not; the inferred shape."""
    import numpy as np

    onnx = sys.modules["onnx"]
    attrs = node.get("attrs", {})
    if 0 not in _ints(attrs.get("shape", "()"), ()):
        return None
    name = node["name"]
    dtype = np.dtype(str(attrs.get("dtype", "float32")))
    value = {"_zeros": 0, "_ones": 1}.get(node["op"], attrs.get("value", 0))
    shape = _const(kwargs, name + "_shape", shapes[kwargs["idx"]][0])
    fill = onnx.numpy_helper.from_array(np.array([value], dtype=dtype), name + "_value")
    return (
        [onnx.helper.make_node("ConstantOfShape", [shape], [name], name=name, value=fill)],
        (dtype.name,),
    )


# --- repeat ----------------------------------------------------------------------------------


def repeat(node, shapes, kwargs, symbol=None):
    """MXNet 1.9.1's converter computes the shapes in the graph (Shape, Range, Equal, Mul ...),
    which onnxruntime 1.32's ReshapeFusion fails to load in YOLOv3 ("Attempt to replace the
    existing tensor"); the input's shape is static here: Unsqueeze, Tile, Reshape to constants."""
    make_node = sys.modules["onnx"].helper.make_node
    name = node["name"]
    attrs = node.get("attrs", {})
    (data,) = _input_names(node, kwargs)
    src, index = node["inputs"][0][:2]
    shape = list(shapes[src][index])
    repeats = int(attrs.get("repeats", 1))
    axis = str(attrs.get("axis", "None"))
    if repeats <= 0:
        return None  # MXNet's refuses it in its words
    if axis == "None":
        shape, axis = [-1], 0
        flat = name + "_flat"
        data_in = [make_node("Reshape", [data, _const(kwargs, name + "_flat_shape", [-1])], [flat])]
        data = flat
    else:
        axis = int(axis) % len(shape)
        data_in = []
    tiles = [1] * (len(shape) + 1)
    tiles[axis + 1] = repeats
    out_shape = list(shapes[kwargs["idx"]][0])
    return data_in + [
        make_node("Unsqueeze", [data, _const(kwargs, name + "_axes", [axis + 1])], [name + "_u"]),
        make_node("Tile", [name + "_u", _const(kwargs, name + "_tiles", tiles)], [name + "_t"]),
        make_node(
            "Reshape",
            [name + "_t", _const(kwargs, name + "_out_shape", out_shape)],
            [name],
            name=name,
        ),
    ]


# --- _contrib_box_nms ------------------------------------------------------------------------

_LOW = -3.0e38  # the score of a box out of the running: below _FLOOR, NonMaxSuppression's cut
_FLOOR = -1.0e38


def box_nms(node, shapes, kwargs, symbol=None):
    """MXNet's box_nms exactly, for a static input: valid boxes (score > valid_thresh, id not
    background_id), the ``topk`` best of them, suppressed greedily in score order by a better
    box of the same class (every class, ``force_suppress``) overlapping more than
    ``overlap_thresh``; the kept rows in score order, then rows of -1.  MXNet 1.9.1's converter
    suppresses across classes whatever ``force_suppress`` says (it logs a warning) and cuts at
    ``topk`` per class after suppressing, not before.  Per class here: ONNX NonMaxSuppression
    over one score row per class id (OneHot of the ids)."""
    import numpy as np

    onnx = sys.modules["onnx"]
    make_node = onnx.helper.make_node
    name = node["name"]
    attrs = node.get("attrs", {})
    (data,) = _input_names(node, kwargs)[:1]
    src, index = node["inputs"][0][:2]
    shape = list(shapes[src][index])
    boxes_n, width = shape[-2], shape[-1]
    batch = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    overlap = float(attrs.get("overlap_thresh", 0.5))
    valid_thresh = float(attrs.get("valid_thresh", 0))
    topk = int(attrs.get("topk", -1))
    coord = int(attrs.get("coord_start", 2))
    score_at = int(attrs.get("score_index", 1))
    id_at = int(attrs.get("id_index", -1))
    force = str(attrs.get("force_suppress", "False")) in ("True", "1", "true")
    background = float(attrs.get("background_id", -1))
    center = 1 if str(attrs.get("in_format", "corner")) == "center" else 0
    n = name + "_nms"
    f32 = "float32"

    def c(suffix, values, dtype="int64"):
        return _const(kwargs, n + suffix, values, dtype)

    def column(at, suffix):
        nodes.append(
            make_node(
                "Slice",
                [
                    n + "_data",
                    c(suffix + "_b", [at]),
                    c(suffix + "_e", [at + 1]),
                    c(suffix + "_ax", [2]),
                ],
                [n + suffix + "_3d"],
            )
        )
        nodes.append(
            make_node(
                "Reshape",
                [n + suffix + "_3d", c(suffix + "_shape", [batch, boxes_n])],
                [n + suffix],
            )
        )
        return n + suffix

    nodes = [make_node("Reshape", [data, c("_shape3", [batch, boxes_n, width])], [n + "_data"])]
    nodes.append(
        make_node(
            "Slice",
            [n + "_data", c("_cb", [coord]), c("_ce", [coord + 4]), c("_cax", [2])],
            [n + "_boxes"],
        )
    )
    score = column(score_at, "_score")
    nodes.append(make_node("Greater", [score, c("_vt", [valid_thresh], f32)], [n + "_valid0"]))
    valid = n + "_valid0"
    if id_at >= 0:
        ids = column(id_at, "_ids")
        nodes.append(make_node("Equal", [ids, c("_bg", [background], f32)], [n + "_isbg"]))
        nodes.append(make_node("Not", [n + "_isbg"], [n + "_notbg"]))
        nodes.append(make_node("And", [valid, n + "_notbg"], [n + "_valid1"]))
        valid = n + "_valid1"
    low = c("_low", [_LOW], f32)
    nodes.append(make_node("Where", [valid, score, low], [n + "_vscore0"]))
    vscore = n + "_vscore0"
    if 0 < topk < boxes_n:
        # Only the topk best valid boxes take part (MXNet cuts before suppressing).
        nodes.append(
            make_node("TopK", [vscore, c("_k", [topk])], [n + "_topv", n + "_topi"], axis=1)
        )
        nodes.append(
            make_node(
                "ScatterElements",
                [
                    c("_zeros", np.zeros((batch, boxes_n)), f32),
                    n + "_topi",
                    c("_ones", np.ones((batch, topk)), f32),
                ],
                [n + "_intop_f"],
                axis=1,
            )
        )
        nodes.append(make_node("Cast", [n + "_intop_f"], [n + "_intop"], to=onnx.TensorProto.BOOL))
        nodes.append(make_node("And", [valid, n + "_intop"], [n + "_valid2"]))
        valid = n + "_valid2"
        nodes.append(make_node("Where", [valid, score, low], [n + "_vscore1"]))
        vscore = n + "_vscore1"
    if id_at >= 0 and not force:
        # One score row per class: class k's row holds the scores of the boxes of id k.
        nodes += [
            make_node("Cast", [ids], [n + "_cls0"], to=onnx.TensorProto.INT64),
            make_node("ReduceMin", [n + "_cls0"], [n + "_clsmin"], keepdims=0),
            make_node("Sub", [n + "_cls0", n + "_clsmin"], [n + "_cls"]),
            make_node("ReduceMax", [n + "_cls"], [n + "_clsmax"], keepdims=0),
            make_node("Add", [n + "_clsmax", c("_one", 1)], [n + "_depth"]),
            make_node(
                "OneHot", [n + "_cls", n + "_depth", c("_offon", [0, 1])], [n + "_onehot0"], axis=1
            ),
            make_node("Cast", [n + "_onehot0"], [n + "_onehot"], to=onnx.TensorProto.BOOL),
            make_node("Unsqueeze", [vscore, c("_ax1", [1])], [n + "_vscore_b"]),
            make_node("Where", [n + "_onehot", n + "_vscore_b", low], [n + "_scores"]),
        ]
    else:
        nodes.append(make_node("Unsqueeze", [vscore, c("_ax1", [1])], [n + "_scores"]))
    nodes += [
        make_node(
            "NonMaxSuppression",
            [
                n + "_boxes",
                n + "_scores",
                c("_maxout", [boxes_n]),
                c("_iou", [overlap], f32),
                c("_floor", [_FLOOR], f32),
            ],
            [n + "_selected"],
            center_point_box=center,
        ),
        # Kept: the (batch, box) pairs NonMaxSuppression selected, as a mask.
        make_node("Gather", [n + "_selected", c("_bcols", [0, 2])], [n + "_bn"], axis=1),
        make_node("Shape", [n + "_selected"], [n + "_selshape"]),
        make_node("Slice", [n + "_selshape", c("_s0", [0]), c("_s1", [1])], [n + "_count"]),
        make_node("Expand", [c("_onef", [1.0], f32), n + "_count"], [n + "_upd"]),
        make_node(
            "ScatterND",
            [c("_zeros2", np.zeros((batch, boxes_n)), f32), n + "_bn", n + "_upd"],
            [n + "_kept_f"],
        ),
        make_node("Cast", [n + "_kept_f"], [n + "_kept"], to=onnx.TensorProto.BOOL),
        make_node("Where", [n + "_kept", score, low], [n + "_key"]),
        # The kept rows by score (ties: the lower index first), then rows of -1.
        make_node(
            "TopK", [n + "_key", c("_all", [boxes_n])], [n + "_sorted", n + "_order"], axis=1
        ),
        make_node("Unsqueeze", [n + "_order", c("_ax2", [2])], [n + "_order3"]),
        make_node(
            "Expand", [n + "_order3", c("_shape3b", [batch, boxes_n, width])], [n + "_orderw"]
        ),
        make_node("GatherElements", [n + "_data", n + "_orderw"], [n + "_rows"], axis=1),
        make_node("Greater", [n + "_sorted", c("_floor2", [_FLOOR], f32)], [n + "_keep2"]),
        make_node("Unsqueeze", [n + "_keep2", c("_ax2b", [2])], [n + "_keep3"]),
        make_node("Where", [n + "_keep3", n + "_rows", c("_minus1", [-1.0], f32)], [n + "_out"]),
        make_node("Reshape", [n + "_out", c("_outshape", shape)], [name + "0"], name=name),
    ]
    return nodes


# --- RNN (the fused operator of Gluon's LSTM, GRU and RNN layers) --------------------------

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


CONVERTERS = {
    "_contrib_AdaptiveAvgPooling2D": adaptive_avg_pool,
    "RNN": rnn,
    "_zeros": filled,
    "_ones": filled,
    "_full": filled,
    "repeat": repeat,
    "_contrib_box_nms": box_nms,
}


def _adaptive_limits(node, shapes):
    src, index = node["inputs"][0][:2]
    rank = len(shapes[src][index])
    return None if rank == 4 else "the input is %d-d, not 4-d" % rank


def _rnn_limits(node, shapes):
    return rnn_limits(node)


def _box_nms_limits(node, shapes):
    attrs = node.get("attrs", {})
    formats = (str(attrs.get("in_format", "corner")), str(attrs.get("out_format", "corner")))
    if formats[0] != formats[1]:
        return "in_format=%s, out_format=%s" % formats
    src, index = node["inputs"][0][:2]
    if len(shapes[src][index]) < 2:
        return "the input is 1-d"
    return None


_OWN_LIMITS = {
    "_contrib_AdaptiveAvgPooling2D": _adaptive_limits,
    "RNN": _rnn_limits,
    "_contrib_box_nms": _box_nms_limits,
}


def _is(*values):
    return lambda value: value in values


def _not(*values):
    return lambda value: value not in values


# The attribute values MXNet 1.9.1's converters refuse (read in its _op_translations), checked
# before a node is converted: op -> [(attribute, its default, refused(value), words)].
MXNET_19_LIMITS = {
    "Convolution": [("layout", "NCHW", _not("NCHW", "NCDHW"), "layout=%s")],
    "Deconvolution": [
        ("target_shape", "", lambda v: v != "", "target_shape=%s"),
        ("layout", "NCHW", _not("NCHW", "NCDHW", "NCW"), "layout=%s"),
    ],
    "Crop": [("center_crop", "False", _is("True", "1"), "center_crop=%s")],
    "BatchNorm": [("axis", "1", lambda v: int(v) != 1, "axis=%s")],
    "Pooling": [
        ("pooling_convention", "valid", _is("same"), "pooling_convention=%s"),
        ("pool_type", "max", _is("sum"), "pool_type=%s"),
        ("layout", "NCHW", _not("NCHW", "NCDHW"), "layout=%s"),
    ],
    "Dropout": [("mode", "training", _not("training"), "mode=%s")],
    "topk": [("ret_typ", "indices", _is("mask"), "ret_typ=%s")],
    "L2Normalization": [("mode", "instance", _not("channel"), "mode=%s")],
    "log_softmax": [
        ("temperature", "None", _not("None"), "temperature=%s"),
        ("use_length", "False", _is("1", "True"), "use_length=%s"),
    ],
    "UpSampling": [
        ("num_args", "1", lambda v: int(v) > 1, "num_args=%s"),
        ("sample_type", None, _not("nearest"), "sample_type=%s"),
    ],
    "SwapAxis": [
        ("dim1", "0", lambda v: int(v) < 0, "dim1=%s"),
        ("dim2", "0", lambda v: int(v) < 0, "dim2=%s"),
    ],
    "_contrib_BilinearResize2D": [("mode", "size", _not("size"), "mode=%s")],
    "_contrib_box_nms": [
        ("background_id", "-1", lambda v: int(v) != -1, "background_id=%s"),
        ("in_format", "corner", None, None),
    ],
    "_contrib_ROIAlign": [
        ("position_sensitive", "False", _not("False"), "position_sensitive=%s"),
        ("aligned", "False", _not("False"), "aligned=%s"),
    ],
}


def refusals(symbol, own):
    """[(node name, op, reason)] of the nodes that neither our converters nor MXNet 1.9.1's
    convert for the attribute values they have, in the graph's order."""
    found = []
    if not own.mxnet19:
        return found
    for node in json.loads(symbol.tojson())["nodes"]:
        op = node["op"]
        own_limits = _OWN_LIMITS.get(op) if own.shapes is not None else None
        if own_limits is not None:
            reason = own_limits(node, own.shapes)
            if reason:
                found.append((node["name"], op, reason))
            continue
        attrs = node.get("attrs", {})
        for limit in MXNET_19_LIMITS.get(op, ()):
            if callable(limit):
                reason = limit(attrs)
            elif limit[0] == "in_format":  # box_nms: in_format != out_format
                formats = (
                    str(attrs.get("in_format", "corner")),
                    str(attrs.get("out_format", "corner")),
                )
                reason = (
                    "in_format=%s, out_format=%s" % formats if formats[0] != formats[1] else None
                )
            else:
                attr, default, refused, words = limit
                value = str(attrs.get(attr, default))
                reason = words % value if refused(value) else None
            if reason:
                found.append((node["name"], op, reason))
                break
    return found


class OwnConverters:
    """For one ``to_onnx`` export: our converters, with the graph's entry shapes (None before
    MXNet 1.9: MXNet's converters only, their refusals named with the node)."""

    def __init__(self, symbol, shapes, mxnet19):
        self.symbol = symbol
        self.shapes = shapes
        self.mxnet19 = mxnet19

    def convert(self, node, kwargs):
        """(ONNX nodes, their dtypes or None) of ``node`` by our converter, or None (MXNet's
        converts it)."""
        converter = CONVERTERS.get(node["op"])
        if converter is None or self.shapes is None or kwargs.get("is_input"):
            return None
        converted = converter(node, self.shapes, kwargs, self.symbol)
        return converted if converted is None or isinstance(converted, tuple) else (converted, None)


def own_converters(symbol, shapes):
    """Ours for an export of ``symbol`` at input ``shapes`` (none before MXNet 1.9)."""
    from .._core import facts

    if not facts.since(facts.MX_ONNX_PACKAGE):
        return OwnConverters(symbol, None, False)
    return OwnConverters(symbol, entry_shapes(symbol, shapes), True)
