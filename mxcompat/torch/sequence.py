"""Emitters of MXNet's sequence and attention operators (``Sequence*``, the interleaved
attention matmuls, lengths in softmax) and the normalisations beside them, registered in
``nodes``.  Imports neither torch nor mxnet."""

from __future__ import annotations

from typing import Tuple

from .expr import Expr, call
from .nodes import Node, _emits

Emitted = Tuple[Expr, int]


def _lengths(n: Node) -> dict[str, Expr]:
    return {"lengths": n.args[1]} if n.bool("use_sequence_length") else {}


def _time_axis(n: Node) -> int:
    """SequenceMask's and SequenceLast's time axis: MXNet takes 0 or 1 only."""
    axis = n.int("axis", 0)
    if axis not in (0, 1):
        n.refuse("axis=%d (MXNet's are 0 and 1)" % axis)
    return axis


@_emits("SequenceMask")
def _sequence_mask(n: Node) -> Emitted:
    axis = _time_axis(n)
    options: dict[str, object] = dict(_lengths(n))
    if n.float("value", 0.0) != 0.0:
        options["value"] = n.float("value")
    if axis:
        options["axis"] = axis
    return call("mxops.sequence_mask", n.args[0], **options), 1


@_emits("SequenceLast")
def _sequence_last(n: Node) -> Emitted:
    axis = _time_axis(n)
    options: dict[str, object] = dict(_lengths(n))
    if axis:
        options["axis"] = axis
    return call("mxops.sequence_last", n.args[0], **options), 1


@_emits("SequenceReverse")
def _sequence_reverse(n: Node) -> Emitted:
    axis = n.int("axis", 0)
    if axis != 0:
        n.refuse("axis=%d (MXNet's is 0)" % axis)
    return call("mxops.sequence_reverse", n.args[0], **_lengths(n)), 1


# --- attention ------------------------------------------------------------------------------


def _heads(n: Node) -> int:
    heads = n.int("heads")
    if heads is None or heads < 1:
        n.refuse("heads=%s (a count >= 1)" % heads)
    return int(heads)


@_emits("_contrib_interleaved_matmul_selfatt_qk")
def _selfatt_qk(n: Node) -> Emitted:
    return call("mxops.interleaved_matmul_selfatt_qk", n.args[0], heads=_heads(n)), 1


@_emits("_contrib_interleaved_matmul_selfatt_valatt")
def _selfatt_valatt(n: Node) -> Emitted:
    x, att = n.args[:2]
    return call("mxops.interleaved_matmul_selfatt_valatt", x, att, heads=_heads(n)), 1


@_emits("_contrib_interleaved_matmul_encdec_qk")
def _encdec_qk(n: Node) -> Emitted:
    q, kv = n.args[:2]
    return call("mxops.interleaved_matmul_encdec_qk", q, kv, heads=_heads(n)), 1


@_emits("_contrib_interleaved_matmul_encdec_valatt")
def _encdec_valatt(n: Node) -> Emitted:
    kv, att = n.args[:2]
    return call("mxops.interleaved_matmul_encdec_valatt", kv, att, heads=_heads(n)), 1


@_emits("_contrib_div_sqrt_dim")
def _div_sqrt_dim(n: Node) -> Emitted:
    return call("mxops.div_sqrt_dim", n.args[0]), 1


@_emits("_contrib_arange_like")
def _arange_like(n: Node) -> Emitted:
    # ctx places the output of an imperative call only; the output is on x's device.
    options: dict[str, object] = {}
    for key, default in (("start", 0.0), ("step", 1.0)):
        if n.float(key, default) != default:
            options[key] = n.float(key)
    repeat = n.int("repeat", 1)
    if repeat < 1:
        n.refuse("repeat=%d (a count >= 1)" % repeat)
    if repeat != 1:
        options["repeat"] = repeat
    if n.int("axis") is not None:
        options["axis"] = n.int("axis")
    return call("mxops.arange_like", n.args[0], **options), 1


# --- normalisations -------------------------------------------------------------------------


@_emits("GroupNorm")
def _group_norm(n: Node) -> Emitted:
    groups = n.int("num_groups", 1)
    options: dict[str, object] = {}
    if n.float("eps", 1e-5) != 1e-5:
        options["eps"] = n.float("eps")
    if n.bool("output_mean_var"):
        options["output_mean_var"] = True
    count = 3 if n.bool("output_mean_var") else 1
    return call("mxops.group_norm", *n.args[:3], groups, **options), count


@_emits("InstanceNorm")
def _instance_norm(n: Node) -> Emitted:
    # PyTorch's instance_norm is MXNet's: per sample and channel, the biased variance.
    x, gamma, beta = n.args[:3]
    return call("F.instance_norm", x, weight=gamma, bias=beta, eps=n.float("eps", 1e-3)), 1
