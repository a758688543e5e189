"""What mxcompat's ONNX converters share (``converters``, ``rnn``, ``box_nms``): MXNet's JSON
node read, the shapes of the graph's entries, the constants a converter adds."""

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
