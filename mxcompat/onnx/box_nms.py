"""Our converter of MXNet's ``_contrib_box_nms`` for MXNet 1.9's exporter (see
``converters``): MXNet's semantics exactly, per class, for a static input."""

import sys

from .nodes import _const, _input_names

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
