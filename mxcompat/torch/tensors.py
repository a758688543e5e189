"""Emitters of MXNet's tensor operators (creation, casts, reductions, broadcasting, element-wise
and scalar arithmetic, comparisons): node -> (expression, number of outputs), registered in
``nodes.EMITTERS``."""

from __future__ import annotations

from typing import Any, Tuple

from .expr import BinOp, Expr, Index, Lit, Var, call, method
from .nodes import EMITTERS, Emitter, Node, _emits, emit_each

Emitted = Tuple[Expr, int]


@_emits("_zeros", "zeros", "_ones", "ones")
def _filled(n: Node) -> Emitted:
    shape = n.tuple("shape")
    if n.op.strip("_") == "zeros" and 0 in shape:
        return call("mxops.unknown_zeros", shape), 1
    if 0 in shape:
        n.refuse("shape=%s (a size left to inference)" % (shape,))
    dtype = Var("torch.%s" % n.str("dtype", "float32"))
    return call("torch.%s" % n.op.strip("_"), shape, dtype=dtype), 1


@_emits("zeros_like", "ones_like")
def _filled_like(n: Node) -> Emitted:
    return call("torch.%s" % n.op, n.args[0]), 1


@_emits("_arange", "arange")
def _arange(n: Node) -> Emitted:
    start, stop = n.float("start", 0.0), n.float("stop")
    if stop is None:
        start, stop = 0.0, start
    dtype = Var("torch.%s" % n.str("dtype", "float32"))
    expr: Expr = call("torch.arange", start, stop, n.float("step", 1.0), dtype=dtype)
    if n.int("repeat", 1) != 1:
        expr = method(expr, "repeat_interleave", n.int("repeat"))
    return expr, 1


@_emits("_copy", "identity", "_copyto")
def _copy(n: Node) -> Emitted:
    return method(n.args[0], "clone"), 1


@_emits("BlockGrad", "stop_gradient")
def _block_grad(n: Node) -> Emitted:
    return method(n.args[0], "detach"), 1


_DTYPES = {"float16", "float32", "float64", "uint8", "int8", "int32", "int64", "bool"}


@_emits("Cast", "cast", "amp_cast")
def _cast(n: Node) -> Emitted:
    dtype = n.str("dtype")
    if dtype not in _DTYPES:
        n.refuse("dtype=%s" % dtype)
    return method(n.args[0], "to", Var("torch.%s" % dtype)), 1


@_emits("sum", "sum_axis", "mean", "max", "max_axis", "min", "min_axis", "prod")
def _reduce(n: Node) -> Emitted:
    how, axis = n.op.split("_")[0], n.tuple("axis")
    return call("mxops.reduce", n.args[0], how, axis, n.bool("keepdims"), n.bool("exclude")), 1


@_emits("broadcast_to")
def _broadcast_to(n: Node) -> Emitted:
    # A 0 in MXNet's shape keeps that axis (-1 in expand).
    shape = tuple(-1 if s == 0 else s for s in n.tuple("shape"))
    return method(n.args[0], "expand", shape), 1


@_emits("broadcast_like")
def _broadcast_like(n: Node) -> Emitted:
    if n.tuple("lhs_axes", None) or n.tuple("rhs_axes", None):
        n.refuse("lhs_axes/rhs_axes")
    return method(n.args[0], "expand_as", n.args[1]), 1


@_emits("broadcast_axis", "broadcast_axes")
def _broadcast_axis(n: Node) -> Emitted:
    axes, sizes, x = n.tuple("axis"), n.tuple("size"), n.args[0].flat()
    sizes_of = "[dict(zip(%r, %r)).get(i, s) for i, s in enumerate(%s.shape)]" % (axes, sizes, x)
    return method(n.args[0], "expand", Var(sizes_of)), 1


@_emits("tile")
def _tile(n: Node) -> Emitted:
    return call("torch.tile", n.args[0], n.tuple("reps")), 1


@_emits("repeat")
def _repeat(n: Node) -> Emitted:
    axis = n.int("axis")
    options = {} if axis is None else {"dim": axis}
    return call("torch.repeat_interleave", n.args[0], n.int("repeats"), **options), 1


@_emits("Pad", "pad")
def _pad(n: Node) -> Emitted:
    width = n.tuple("pad_width")
    mode = n.str("mode", "constant")
    spec = []
    for i in range(len(width) // 2 - 1, 1, -1):
        spec += [width[2 * i], width[2 * i + 1]]
    if any(width[:4]):
        n.refuse("pad_width=%s (padding the batch or channel axis)" % (width,))
    torch_mode = {"constant": "constant", "edge": "replicate", "reflect": "reflect"}[mode]
    if torch_mode == "constant":
        return call("F.pad", n.args[0], spec, value=n.float("constant_value", 0.0)), 1
    return call("F.pad", n.args[0], spec, mode=torch_mode), 1


def _unary(fn: str) -> Emitter:
    return lambda n: (call(fn, n.args[0]), 1)


emit_each(
    EMITTERS,
    {
        "relu": "F.relu",
        "sigmoid": "torch.sigmoid",
        "tanh": "torch.tanh",
        "exp": "torch.exp",
        "log": "torch.log",
        "log1p": "torch.log1p",
        "expm1": "torch.expm1",
        "sqrt": "torch.sqrt",
        "rsqrt": "torch.rsqrt",
        "square": "torch.square",
        "abs": "torch.abs",
        "negative": "torch.neg",
        "reciprocal": "torch.reciprocal",
        "sign": "torch.sign",
        "erf": "torch.erf",
        "sin": "torch.sin",
        "cos": "torch.cos",
        "floor": "torch.floor",
        "ceil": "torch.ceil",
        "softsign": "F.softsign",
    },
    _unary,
)

# Element-wise and broadcasting binaries: the same in MXNet and PyTorch (MXNet's broadcast
# rule is NumPy's); comparisons give 0/1 in the inputs' type, as MXNet's do.
_BINARY = {
    "add": "+",
    "plus": "+",
    "sub": "-",
    "minus": "-",
    "mul": "*",
    "div": "/",
    "power": "torch.pow",
    "maximum": "torch.maximum",
    "minimum": "torch.minimum",
    "hypot": "torch.hypot",
}
_BINARY_OPS = (
    ["elemwise_" + k for k in ("add", "sub", "mul", "div")]
    + ["broadcast_" + k for k in _BINARY]
    + ["_" + k for k in ("plus", "minus", "mul", "div", "power", "maximum", "minimum", "hypot")]
    + ["_" + k.capitalize() for k in ("plus", "minus", "mul", "div", "power", "maximum", "minimum")]
)
_COMPARE = {
    "equal": "==",
    "not_equal": "!=",
    "greater": ">",
    "greater_equal": ">=",
    "lesser": "<",
    "lesser_equal": "<=",
}


def _binary(form: str) -> Emitter:
    if form.startswith("torch."):
        return lambda n: (call(form, n.args[0], n.args[1]), 1)

    def emit(n: Node) -> Emitted:
        if form == "/" and n.attrs.get("__integer__"):  # C's division of integers
            return call("torch.div", n.args[0], n.args[1], rounding_mode="trunc"), 1
        return BinOp(form, (n.args[0], n.args[1])), 1

    return emit


def _compare(sym: str) -> Emitter:
    def emit(n: Node) -> Emitted:
        test = BinOp(sym, (n.args[0], n.args[1]))
        return method(test, "to", Var(n.args[0].flat() + ".dtype")), 1

    return emit


emit_each(EMITTERS, {op: _BINARY[op.split("_", 1)[1].lower()] for op in _BINARY_OPS}, _binary)
emit_each(
    EMITTERS,
    {op + name: sym for name, sym in _COMPARE.items() for op in ("broadcast_", "_")},
    _compare,
)


def _scalar(form: tuple[str, bool]) -> Emitter:
    """``form``: the operator or function, and whether the scalar comes first."""
    sym, scalar_first = form

    def emit(n: Node) -> Emitted:
        value = Lit(n.float("scalar"))
        pair = (value, n.args[0]) if scalar_first else (n.args[0], value)
        if sym.startswith("torch.clamp"):
            return call("torch.clamp", n.args[0], **{sym.split(":")[1]: value}), 1
        if sym.startswith("torch."):
            return call(sym, *pair), 1
        if sym == "/" and not scalar_first and n.attrs.get("__integer__"):
            # The scalar in the array's type first (2.5 is 2), then C's division.
            return call(
                "torch.div", n.args[0], Lit(int(n.float("scalar"))), rounding_mode="trunc"
            ), 1
        return BinOp(sym, pair), 1

    return emit


emit_each(
    EMITTERS,
    {
        "_plus_scalar": ("+", False),
        "_minus_scalar": ("-", False),
        "_rminus_scalar": ("-", True),
        "_mul_scalar": ("*", False),
        "_div_scalar": ("/", False),
        "_rdiv_scalar": ("/", True),
        "_power_scalar": ("torch.pow", False),
        "_rpower_scalar": ("torch.pow", True),
        "_maximum_scalar": ("torch.clamp:min", False),
        "_minimum_scalar": ("torch.clamp:max", False),
    },
    _scalar,
)


def _compare_scalar(sym: str) -> Emitter:
    def emit(n: Node) -> Emitted:
        test = BinOp(sym, (n.args[0], Lit(n.float("scalar"))))
        return method(test, "to", Var(n.args[0].flat() + ".dtype")), 1

    return emit


emit_each(EMITTERS, {"_%s_scalar" % name: sym for name, sym in _COMPARE.items()}, _compare_scalar)


# --- shapes, indexing and products ----------------------------------------------------------------


@_emits("Reshape", "reshape")
def _reshape(n: Node) -> tuple[Expr, int]:
    if n.tuple("target_shape") and not n.tuple("shape"):
        n.refuse("target_shape (deprecated; shape=)")
    options = {"reverse": True} if n.bool("reverse") else {}
    return call("mxops.reshape", n.args[0], n.tuple("shape"), **options), 1


@_emits("transpose")
def _transpose(n: Node) -> tuple[Expr, int]:
    axes = n.tuple("axes")
    x = n.args[0]
    if not axes:
        return method(x, "permute", Var("*reversed(range(%s.dim()))" % x.flat())), 1
    return method(x, "permute", *axes), 1


@_emits("SwapAxis", "swapaxes")
def _swapaxes(n: Node) -> tuple[Expr, int]:
    return method(n.args[0], "transpose", n.int("dim1", 0), n.int("dim2", 0)), 1


@_emits("expand_dims")
def _expand_dims(n: Node) -> tuple[Expr, int]:
    return method(n.args[0], "unsqueeze", n.int("axis")), 1


@_emits("squeeze")
def _squeeze(n: Node) -> tuple[Expr, int]:
    axes = n.tuple("axis", None)
    if not axes:
        return method(n.args[0], "squeeze"), 1
    return method(n.args[0], "squeeze", tuple(axes)), 1


def _transposed(x: Expr, last_two: bool) -> Expr:
    if last_two:
        return method(x, "transpose", -1, -2)
    # MXNet's dot with transpose_* reverses every axis.
    return method(x, "permute", Var("*reversed(range(%s.dim()))" % x.flat()))


@_emits("batch_dot")
def _batch_dot(n: Node) -> tuple[Expr, int]:
    a = _transposed(n.args[0], True) if n.bool("transpose_a") else n.args[0]
    b = _transposed(n.args[1], True) if n.bool("transpose_b") else n.args[1]
    return call("torch.matmul", a, b), 1


@_emits("dot")
def _dot(n: Node) -> tuple[Expr, int]:
    # MXNet's dot contracts a's last axis with b's first.
    a = _transposed(n.args[0], False) if n.bool("transpose_a") else n.args[0]
    b = _transposed(n.args[1], False) if n.bool("transpose_b") else n.args[1]
    return call("torch.tensordot", a, b, 1), 1


@_emits("SliceChannel", "split")
def _split(n: Node) -> tuple[Expr, int]:
    count = n.int("num_outputs")
    x, axis, squeeze = n.args[0], n.int("axis", 1), n.bool("squeeze_axis")
    parts = call("mxops.split", x, count, axis, squeeze)
    # One part is the node's one output, not a list of one (Faster R-CNN's heads split so).
    return (Index(parts, "0") if count == 1 else parts), count


@_emits("slice_axis")
def _slice_axis(n: Node) -> tuple[Expr, int]:
    return call("mxops.slice_axis", n.args[0], n.int("axis"), n.int("begin"), n.int("end")), 1


@_emits("slice", "crop")
def _slice(n: Node) -> tuple[Expr, int]:
    begin, end = n.tuple("begin"), n.tuple("end")
    step = n.tuple("step") or (None,) * len(begin)
    if any(s is not None and s <= 0 for s in step):
        n.refuse("step=%s (a step <= 0)" % (step,))

    def part(b: Any, e: Any, s: Any) -> str:
        text = "%s:%s" % ("" if b is None else b, "" if e is None else e)
        return text + ("" if s in (None, 1) else ":%d" % s)

    return Index(n.args[0], ", ".join(part(*p) for p in zip(begin, end, step))), 1


@_emits("where")
def _where(n: Node) -> tuple[Expr, int]:
    return call("mxops.where", *n.args[:3]), 1


@_emits("softmax", "log_softmax")
def _softmax(n: Node) -> tuple[Expr, int]:
    x: Expr = n.args[0]
    t = n.float("temperature")
    if n.bool("use_length") and n.op == "log_softmax":
        n.refuse("use_length=True (MXNet's log_softmax has no lengths input)")
    if n.bool("use_length") or n.str("dtype") is not None:
        # Lengths (the entries after them come out 0) or an output type: mxops's.
        options: dict[str, Any] = {"temperature": t} if t not in (None, 1.0) else {}
        if n.bool("use_length"):
            options["lengths"] = n.args[1]
        if n.str("dtype") is not None:
            options["dtype"] = Var("torch.%s" % n.str("dtype"))
        if n.op == "log_softmax":
            options["log"] = True
        return call("mxops.softmax", x, n.int("axis", -1), **options), 1
    if t is not None and t != 1.0:
        x = BinOp("/", (x, Var(repr(t))))
    return call("torch.%s" % n.op, x, n.int("axis", -1)), 1


@_emits("SoftmaxActivation")
def _softmax_activation(n: Node) -> tuple[Expr, int]:
    x = n.args[0]
    if n.str("mode", "instance") == "channel":
        return call("torch.softmax", x, 1), 1
    flat = call("torch.softmax", call("torch.flatten", x, 1), 1)
    return method(flat, "reshape", Var(x.flat() + ".shape")), 1
