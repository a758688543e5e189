"""Emitters of MXNet's tensor operators (creation, casts, reductions, broadcasting, element-wise
and scalar arithmetic, comparisons): node -> (expression, number of outputs), registered in
``nodes.EMITTERS``."""

from __future__ import annotations

from typing import Tuple

from .expr import BinOp, Expr, Lit, Var, call, method
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


@_emits("UpSampling")
def _upsampling(n: Node) -> Emitted:
    if n.str("sample_type") != "nearest" or len(n.args) != 1:
        n.refuse(
            "sample_type=%s with %d input(s) (nearest, one input)"
            % (n.str("sample_type"), len(n.args))
        )
    return call("F.interpolate", n.args[0], scale_factor=n.int("scale"), mode="nearest"), 1


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
    return lambda n: (BinOp(form, (n.args[0], n.args[1])), 1)


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
