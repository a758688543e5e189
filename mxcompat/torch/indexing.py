"""Emitters of MXNet's indexing, sorting and resizing operators (gather/scatter, topk, sort,
shapes of tensors, adaptive pooling, bilinear resizing), registered in ``nodes``.  Imports
neither torch nor mxnet."""

from __future__ import annotations

from typing import Any, Tuple

from .expr import Expr, Var, call
from .nodes import Node, _emits

Emitted = Tuple[Expr, int]

_INDEX_TYPES = ("uint8", "int32", "int64", "float16", "float32", "float64")


def _dtype(n: Node, default: str = "float32", allowed: tuple[str, ...] = _INDEX_TYPES) -> Var:
    dtype = n.str("dtype", default)
    if dtype not in allowed:
        n.refuse("dtype=%s (%s)" % (dtype, ", ".join(allowed)))
    return Var("torch.%s" % dtype)


_FLOAT32 = Var("torch.float32")


def _changed(**pairs: tuple[Any, Any]) -> dict[str, Any]:
    """The keyword arguments whose value (``name=(value, default)``) is not the default."""
    return {k: value for k, (value, default) in pairs.items() if value != default}


def _axis(n: Node, default: Any = -1) -> Any:
    # MXNet writes an axis of None as "None" (the flattened array).
    if "axis" not in n.attrs:
        return default
    return n.int("axis")


# --- shapes and slices ------------------------------------------------------------------------


@_emits("shape_array")
def _shape_array(n: Node) -> Emitted:
    return call("mxops.shape_array", n.args[0]), 1


@_emits("size_array")
def _size_array(n: Node) -> Emitted:
    return call("mxops.size_array", n.args[0]), 1


@_emits("slice_like")
def _slice_like(n: Node) -> Emitted:
    options = _changed(axes=(n.tuple("axes"), ()))
    return call("mxops.slice_like", n.args[0], n.args[1], **options), 1


@_emits("reverse", "flip")
def _reverse(n: Node) -> Emitted:
    axes = n.tuple("axis")
    if any(a < 0 for a in axes):
        n.refuse("axis=%s (a negative axis: MXNet fails)" % (axes,))
    return call("torch.flip", n.args[0], n.tuple("axis")), 1


# --- modulo ---------------------------------------------------------------------------------


@_emits("broadcast_mod", "_mod", "_Mod")
def _mod(n: Node) -> Emitted:
    return call("mxops.mod", n.args[0], n.args[1]), 1


@_emits("_mod_scalar", "_ModScalar")
def _mod_scalar(n: Node) -> Emitted:
    return call("mxops.mod_scalar", n.args[0], n.float("scalar")), 1


@_emits("_rmod_scalar", "_RModScalar")
def _rmod_scalar(n: Node) -> Emitted:
    return call("mxops.mod_scalar", n.args[0], n.float("scalar"), reverse=True), 1


# --- gather and scatter ---------------------------------------------------------------------


@_emits("gather_nd")
def _gather_nd(n: Node) -> Emitted:
    return call("mxops.gather_nd", n.args[0], n.args[1]), 1


@_emits("scatter_nd")
def _scatter_nd(n: Node) -> Emitted:
    return call("mxops.scatter_nd", n.args[0], n.args[1], n.tuple("shape")), 1


@_emits("pick")
def _pick(n: Node) -> Emitted:
    axis = _axis(n, -1)
    if axis is None:
        n.refuse("axis=None (an axis)")
    mode = n.str("mode", "clip")
    if mode not in ("clip", "wrap"):
        n.refuse("mode=%s (clip, wrap)" % mode)
    options = _changed(axis=(axis, -1), keepdims=(n.bool("keepdims"), False), mode=(mode, "clip"))
    return call("mxops.pick", n.args[0], n.args[1], **options), 1


@_emits("one_hot")
def _one_hot(n: Node) -> Emitted:
    options = _changed(
        on_value=(n.float("on_value", 1.0), 1.0),
        off_value=(n.float("off_value", 0.0), 0.0),
        dtype=(_dtype(n, allowed=(*_INDEX_TYPES, "int8")), _FLOAT32),
    )
    return call("mxops.one_hot", n.args[0], n.int("depth"), **options), 1


# --- sorting --------------------------------------------------------------------------------


@_emits("topk")
def _topk(n: Node) -> Emitted:
    ret = n.str("ret_typ", "indices")
    if ret not in ("value", "indices", "mask", "both"):
        n.refuse("ret_typ=%s" % ret)
    dtype = _dtype(n) if ret in ("indices", "both") else _FLOAT32
    options = _changed(
        axis=(_axis(n), -1),
        k=(n.int("k", 1), 1),
        ret_typ=(ret, "indices"),
        is_ascend=(n.bool("is_ascend"), False),
        dtype=(dtype, _FLOAT32),
    )
    return call("mxops.topk", n.args[0], **options), 2 if ret == "both" else 1


@_emits("sort")
def _sort(n: Node) -> Emitted:
    options = _changed(axis=(_axis(n), -1), is_ascend=(n.bool("is_ascend", True), True))
    return call("mxops.sort", n.args[0], **options), 1


@_emits("argsort")
def _argsort(n: Node) -> Emitted:
    options = _changed(
        axis=(_axis(n), -1),
        is_ascend=(n.bool("is_ascend", True), True),
        dtype=(_dtype(n), _FLOAT32),
    )
    return call("mxops.argsort", n.args[0], **options), 1


# --- resizing -------------------------------------------------------------------------------


@_emits("_contrib_AdaptiveAvgPooling2D")
def _adaptive_avg_pooling(n: Node) -> Emitted:
    size = n.tuple("output_size", ())
    if any(s is None or s < 1 for s in size[:2]):
        n.refuse("output_size=%s (sizes >= 1)" % (size,))
    # MXNet: none or more than two sizes is (1, 1); one is a square.
    pair = (size[0], size[-1]) if 0 < len(size) <= 2 else (1, 1)
    return call("mxops.adaptive_avg_pool2d", n.args[0], pair), 1


_RESIZE_MODES = (
    "size",
    "odd_scale",
    "like",
    "to_even_down",
    "to_even_up",
    "to_odd_down",
    "to_odd_up",
)


@_emits("_contrib_BilinearResize2D")
def _bilinear_resize(n: Node) -> Emitted:
    mode = n.str("mode", "size")
    if mode not in _RESIZE_MODES:
        n.refuse("mode=%s" % mode)
    scale_h, scale_w = n.float("scale_height"), n.float("scale_width")
    options: dict[str, Any] = {}
    if mode == "size" and scale_h is None:
        # MXNet reads scale_width only where scale_height is given.
        options.update(height=n.int("height", 1), width=n.int("width", 1))
    elif mode in ("size", "odd_scale"):
        if scale_h is None or scale_w is None:
            n.refuse("mode=%s without scale_height and scale_width (MXNet fails)" % mode)
        options.update(scale_height=scale_h, scale_width=scale_w)
    if mode != "size":
        options["mode"] = mode
    if not n.bool("align_corners", True):
        options["align_corners"] = False
    if mode == "like":
        options["like"] = n.args[1]
    return call("mxops.bilinear_resize2d", n.args[0], **options), 1


@_emits("UpSampling")
def _upsampling(n: Node) -> Emitted:
    scale, kind = n.int("scale"), n.str("sample_type")
    if kind == "nearest":
        mode = n.str("multi_input_mode", "concat")
        inputs = n.args[: n.int("num_args", 1)]
        if len(inputs) == 1:
            return call("F.interpolate", inputs[0], scale_factor=scale, mode="nearest"), 1
        return call("mxops.upsampling_nearest", list(inputs), scale, mode), 1
    if kind != "bilinear":
        n.refuse("sample_type=%s (nearest, bilinear)" % kind)
    return call("mxops.upsampling_bilinear", *n.args[:2], scale, n.int("num_filter")), 1
