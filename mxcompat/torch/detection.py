"""Emitters of MXNet's detection operators (boxes, regions of interest, anchors, proposals),
registered in ``nodes``; their semantics are in ``runtime`` (``mxops.box_nms``, ...).
Imports neither torch nor mxnet."""

from __future__ import annotations

from typing import Any

from .expr import Expr, call
from .nodes import Node, _emits

_FORMATS = ("corner", "center")


def _floats(n: Node, key: str, default: tuple[float, ...]) -> tuple[float, ...]:
    """A tuple of floats (MXNet writes ``(0.1, 0.2)`` or ``[0.1,0.2]``); ``n.tuple`` reads
    ints."""
    text = n.str(key)
    if text is None:
        return default
    items = [t.strip() for t in str(text).strip("()[] ").split(",") if t.strip()]
    try:
        return tuple(float(t) for t in items)
    except ValueError:
        n.refuse("%s=%s" % (key, text))
        raise


def _options(n: Node, defaults: dict[str, Any]) -> dict[str, Any]:
    """The node's attributes that differ from MXNet's defaults, typed as the defaults are."""
    options: dict[str, Any] = {}
    for key, default in defaults.items():
        if isinstance(default, bool):
            value: Any = n.bool(key, default)
        elif isinstance(default, int):
            value = n.int(key, default)
        elif isinstance(default, float):
            value = n.float(key, default)
        elif isinstance(default, tuple):
            value = _floats(n, key, default)
        else:
            value = n.str(key, default)
            if default in _FORMATS and value not in _FORMATS:
                n.refuse("%s=%s" % (key, value))
        if value != default:
            options[key] = value
    return options


_NMS = {
    "overlap_thresh": 0.5,
    "valid_thresh": 0.0,
    "topk": -1,
    "coord_start": 2,
    "score_index": 1,
    "id_index": -1,
    "background_id": -1,
    "force_suppress": False,
    "in_format": "corner",
    "out_format": "corner",
}


@_emits("_contrib_box_nms", "_contrib_box_non_maximum_suppression")
def _box_nms(n: Node) -> tuple[Expr, int]:
    # MXNet's second output (the kept rows' input positions, for its backward) is hidden.
    return call("mxops.box_nms", n.args[0], **_options(n, _NMS)), 1


@_emits("_contrib_box_encode")
def _box_encode(n: Node) -> tuple[Expr, int]:
    return call("mxops.box_encode", *n.args[:6]), 2


_DECODE = {"std0": 1.0, "std1": 1.0, "std2": 1.0, "std3": 1.0, "clip": -1.0, "format": "center"}


@_emits("_contrib_box_decode")
def _box_decode(n: Node) -> tuple[Expr, int]:
    return call("mxops.box_decode", n.args[0], n.args[1], **_options(n, _DECODE)), 1


@_emits("_contrib_ROIAlign")
def _roi_align(n: Node) -> tuple[Expr, int]:
    options = _options(n, {"sample_ratio": -1, "position_sensitive": False, "aligned": False})
    pooled, scale = n.tuple("pooled_size"), n.float("spatial_scale")
    return call("mxops.roi_align", n.args[0], n.args[1], pooled, scale, **options), 1


@_emits("ROIPooling", "_npx_roi_pooling")
def _roi_pooling(n: Node) -> tuple[Expr, int]:
    # MXNet's second output (each bin's argmax, for its backward) is hidden.
    pooled, scale = n.tuple("pooled_size"), n.float("spatial_scale")
    return call("mxops.roi_pooling", n.args[0], n.args[1], pooled, scale), 1


_PRIOR = {
    "sizes": (1.0,),
    "ratios": (1.0,),
    "steps": (-1.0, -1.0),
    "offsets": (0.5, 0.5),
    "clip": False,
}
_VARIANCES = (0.1, 0.1, 0.2, 0.2)


@_emits("_contrib_MultiBoxPrior", "_npx_multibox_prior")
def _multibox_prior(n: Node) -> tuple[Expr, int]:
    options = _options(n, _PRIOR)
    return call("mxops.multibox_prior", n.args[0], **options), 1


_DETECTION = {
    "clip": True,
    "threshold": 0.01,
    "nms_threshold": 0.5,
    "force_suppress": False,
    "nms_topk": -1,
    "variances": _VARIANCES,
}


@_emits("_contrib_MultiBoxDetection", "_npx_multibox_detection")
def _multibox_detection(n: Node) -> tuple[Expr, int]:
    # background_id: MXNet 1.9.1 reads class 0 as the background whatever its value.
    options = _options(n, _DETECTION)
    return call("mxops.multibox_detection", *n.args[:3], **options), 1


_TARGET = {
    "overlap_threshold": 0.5,
    "ignore_label": -1.0,
    "negative_mining_ratio": -1.0,
    "negative_mining_thresh": 0.5,
    "variances": _VARIANCES,
}


@_emits("_contrib_MultiBoxTarget", "_npx_multibox_target")
def _multibox_target(n: Node) -> tuple[Expr, int]:
    # minimum_negative_samples: MXNet 1.9.1 passes it on and never reads it.
    options = _options(n, _TARGET)
    return call("mxops.multibox_target", *n.args[:3], **options), 3


_PROPOSAL = {
    "rpn_pre_nms_top_n": 6000,
    "rpn_post_nms_top_n": 300,
    "threshold": 0.7,
    "rpn_min_size": 16,
    "feature_stride": 16,
    "output_score": False,
    "iou_loss": False,
    "scales": (4.0, 8.0, 16.0, 32.0),
    "ratios": (0.5, 1.0, 2.0),
}


@_emits("_contrib_Proposal", "_contrib_MultiProposal")
def _proposal(n: Node) -> tuple[Expr, int]:
    options = _options(n, _PROPOSAL)
    if n.op == "_contrib_Proposal":
        options["batched"] = False
    # MXNet's second output (the scores) is hidden unless output_score.
    outputs = 2 if n.bool("output_score") else 1
    return call("mxops.proposal", *n.args[:3], **options), outputs
