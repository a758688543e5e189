"""Emitters of MXNet's tensor operators (creation, casts, reductions, broadcasting, element-wise
and scalar arithmetic, comparisons): node -> (torch expression, number of outputs), registered
in ``nodes.EMITTERS``."""

from .nodes import EMITTERS, _emits


@_emits("_zeros", "zeros", "_ones", "ones")
def _filled(n):
    shape = n.tuple("shape")
    if n.op.strip("_") == "zeros" and 0 in shape:
        return "mxops.unknown_zeros(%r)" % (shape,), 1
    if 0 in shape:
        n.refuse("shape=%s (a size left to inference)" % (shape,))
    return "torch.%s(%r, dtype=torch.%s)" % (
        n.op.strip("_"),
        shape,
        n.str("dtype", "float32"),
    ), 1


@_emits("zeros_like", "ones_like")
def _filled_like(n):
    return "torch.%s(%s)" % (n.op, n.args[0]), 1


@_emits("_arange", "arange")
def _arange(n):
    start, stop = n.float("start", 0.0), n.float("stop")
    if stop is None:
        start, stop = 0.0, start
    text = "torch.arange(%r, %r, %r, dtype=torch.%s)" % (
        start,
        stop,
        n.float("step", 1.0),
        n.str("dtype", "float32"),
    )
    if n.int("repeat", 1) != 1:
        text = "%s.repeat_interleave(%d)" % (text, n.int("repeat"))
    return text, 1


@_emits("_copy", "identity", "_copyto")
def _copy(n):
    return "%s.clone()" % n.args[0], 1


@_emits("BlockGrad", "stop_gradient")
def _block_grad(n):
    return "%s.detach()" % n.args[0], 1


_DTYPES = {"float16", "float32", "float64", "uint8", "int8", "int32", "int64", "bool"}


@_emits("Cast", "cast", "amp_cast")
def _cast(n):
    dtype = n.str("dtype")
    if dtype not in _DTYPES:
        n.refuse("dtype=%s" % dtype)
    return "%s.to(torch.%s)" % (n.args[0], dtype), 1


@_emits("sum", "sum_axis", "mean", "max", "max_axis", "min", "min_axis", "prod")
def _reduce(n):
    return "mxops.reduce(%s, %r, %r, %r, %r)" % (
        n.args[0],
        n.op.split("_")[0],
        n.tuple("axis"),
        n.bool("keepdims"),
        n.bool("exclude"),
    ), 1


@_emits("broadcast_to")
def _broadcast_to(n):
    # A 0 in MXNet's shape keeps that axis (-1 in expand).
    shape = tuple(-1 if s == 0 else s for s in n.tuple("shape"))
    return "%s.expand(%r)" % (n.args[0], shape), 1


@_emits("broadcast_like")
def _broadcast_like(n):
    if n.tuple("lhs_axes", None) or n.tuple("rhs_axes", None):
        n.refuse("lhs_axes/rhs_axes")
    return "%s.expand_as(%s)" % (n.args[0], n.args[1]), 1


@_emits("broadcast_axis", "broadcast_axes")
def _broadcast_axis(n):
    axes, sizes = n.tuple("axis"), n.tuple("size")
    return "%s.expand(%s)" % (
        n.args[0],
        "[dict(zip(%r, %r)).get(i, s) for i, s in enumerate(%s.shape)]" % (axes, sizes, n.args[0]),
    ), 1


@_emits("tile")
def _tile(n):
    return "torch.tile(%s, %r)" % (n.args[0], n.tuple("reps")), 1


@_emits("repeat")
def _repeat(n):
    axis = n.int("axis")
    return "torch.repeat_interleave(%s, %d%s)" % (
        n.args[0],
        n.int("repeats"),
        "" if axis is None else ", dim=%d" % axis,
    ), 1


@_emits("UpSampling")
def _upsampling(n):
    if n.str("sample_type") != "nearest" or len(n.args) != 1:
        n.refuse(
            "sample_type=%s with %d input(s) (nearest, one input)"
            % (n.str("sample_type"), len(n.args))
        )
    return "F.interpolate(%s, scale_factor=%d, mode='nearest')" % (n.args[0], n.int("scale")), 1


@_emits("Pad", "pad")
def _pad(n):
    width = n.tuple("pad_width")
    mode = n.str("mode", "constant")
    spec = []
    for i in range(len(width) // 2 - 1, 1, -1):
        spec += [width[2 * i], width[2 * i + 1]]
    if any(width[:4]):
        n.refuse("pad_width=%s (padding the batch or channel axis)" % (width,))
    torch_mode = {"constant": "constant", "edge": "replicate", "reflect": "reflect"}[mode]
    if torch_mode == "constant":
        return "F.pad(%s, %r, value=%r)" % (n.args[0], spec, n.float("constant_value", 0.0)), 1
    return "F.pad(%s, %r, mode=%r)" % (n.args[0], spec, torch_mode), 1


_UNARY = {
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
}
for _op, _fn in _UNARY.items():
    EMITTERS[_op] = lambda n, _fn=_fn: ("%s(%s)" % (_fn, n.args[0]), 1)

# Element-wise and broadcasting binaries: the same in MXNet and PyTorch (MXNet's broadcast
# rule is NumPy's); comparisons give 0/1 in the inputs' type, as MXNet's do.
_BINARY = {
    "add": "%s + %s",
    "plus": "%s + %s",
    "sub": "%s - %s",
    "minus": "%s - %s",
    "mul": "%s * %s",
    "div": "%s / %s",
    "power": "torch.pow(%s, %s)",
    "maximum": "torch.maximum(%s, %s)",
    "minimum": "torch.minimum(%s, %s)",
    "hypot": "torch.hypot(%s, %s)",
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
for _op in _BINARY_OPS:
    _form = _BINARY[_op.split("_", 1)[1].lower()]
    EMITTERS[_op] = lambda n, _form=_form: ("(%s)" % (_form % (n.args[0], n.args[1])), 1)
for _name, _sym in _COMPARE.items():
    for _op in ("broadcast_" + _name, "_" + _name):
        EMITTERS[_op] = lambda n, _sym=_sym: (
            "(%s %s %s).to(%s.dtype)" % (n.args[0], _sym, n.args[1], n.args[0]),
            1,
        )

_SCALAR = {
    "_plus_scalar": "%s + %r",
    "_minus_scalar": "%s - %r",
    "_rminus_scalar": "%r - %s",
    "_mul_scalar": "%s * %r",
    "_div_scalar": "%s / %r",
    "_rdiv_scalar": "%r / %s",
    "_power_scalar": "torch.pow(%s, %r)",
    "_rpower_scalar": "torch.pow(%r, %s)",
    "_maximum_scalar": "torch.clamp(%s, min=%r)",
    "_minimum_scalar": "torch.clamp(%s, max=%r)",
}
for _op, _form in _SCALAR.items():

    def _scalar(n, _form=_form):
        value = n.float("scalar")
        pair = (value, n.args[0]) if _form.startswith("%r") else (n.args[0], value)
        return "(%s)" % (_form % pair), 1

    EMITTERS[_op] = _scalar
for _name, _sym in _COMPARE.items():
    EMITTERS["_%s_scalar" % _name] = lambda n, _sym=_sym: (
        "(%s %s %r).to(%s.dtype)" % (n.args[0], _sym, n.float("scalar"), n.args[0]),
        1,
    )
