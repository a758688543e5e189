"""mxcompat's own converters beside MXNet 1.9's exporter, for ``to_onnx`` only.

MXNet 1.9.1's converters refuse or get wrong operators ONNX expresses exactly:
``_contrib_AdaptiveAvgPooling2D`` with an output size above 1 (PSPNet's pyramid) raises, and the
fused ``RNN`` converter handles one or two layers, bidirectional only for one LSTM layer, and for
two LSTM layers takes the first layer's input weights as wide as the state (onnxruntime refuses
the model unless the embedding is as wide as the state); ``box_nms`` suppresses across classes
and cuts ``topk`` after suppressing.  Ours (here, ``rnn``, ``box_nms``) are used on the exporting
thread of a ``to_onnx`` export (``mxnet_exporter._convert_layer``); MXNet's own ``export_model``
keeps MXNet's.
Each converter gets the node (MXNet's JSON), the shapes of the graph's entries (the input size is
static) and the exporter's keyword arguments, and returns the ONNX nodes as MXNet's converters
do: the node's outputs named ``name``, ``name + "1"`` ...; its own tensors ``name + "_..."``.
"""

import json
import sys

from .box_nms import box_nms
from .nodes import Limit, _const, _input_names, _ints, entry_shapes
from .rnn import rnn, rnn_limits

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
