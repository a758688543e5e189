"""An MXNet symbol graph (``Symbol.tojson()``) as the source of a ``torch.nn.Module``: one line
per MXNet node, named after it.  Imports neither torch nor mxnet: ``mxcompat torch --check``
lists what a model needs from here alone.

Names.  A parameter or auxiliary state keeps its MXNet name as the attribute (and state_dict
key) of the module, except that PyTorch refuses a ``.`` in one: ``torch_name`` writes ``%`` as
``%25`` and ``.`` as ``%2E`` (percent-encoding), ``mxnet_name`` undoes it, so the mapping is
one to one both ways.  A node's local variable is its name with every character that cannot
be in a Python name made ``_`` (numbered if two meet); its original name is in a comment then.
"""

import json
import keyword
import re

# What the generated module's code sees; `mxops` is mxcompat/torch/runtime.py.
PRELUDE = "import torch\nimport torch.nn.functional as F\n"


class Unsupported(Exception):
    """An operator or attribute the converter does not map (one per node)."""

    def __init__(self, op, node, detail=None):
        self.op, self.node, self.detail = op, node, detail
        super().__init__(op, node, detail)


def torch_name(mx_name):
    return mx_name.replace("%", "%25").replace(".", "%2E")


def mxnet_name(name):
    return name.replace("%2E", ".").replace("%25", "%")


# --- attributes (MXNet's JSON holds every value as a string) --------------------------------------


def _tuple(text, default=()):
    if text is None:
        return default
    text = str(text).strip()
    if text in ("", "()", "[]", "None"):
        return () if text != "None" else default
    items = [t.strip() for t in text.strip("()[]").split(",") if t.strip()]
    return tuple(None if t == "None" else int(float(t)) for t in items)


def _bool(text, default=False):
    if text is None:
        return default
    return str(text).strip().lower() in ("1", "true")


def _float(text, default=None):
    if text is None or str(text).strip() == "None":
        return default
    return float(text)


def _int(text, default=None):
    if text is None or str(text).strip() == "None":
        return default
    return int(float(text))


class Node:
    """One MXNet node as an emitter sees it: its attributes and its inputs' expressions."""

    def __init__(self, op, name, attrs, args):
        self.op, self.name, self.attrs, self.args = op, name, attrs, args

    def tuple(self, key, default=()):
        return _tuple(self.attrs.get(key), default)

    def bool(self, key, default=False):
        return _bool(self.attrs.get(key), default)

    def float(self, key, default=None):
        return _float(self.attrs.get(key), default)

    def int(self, key, default=None):
        return _int(self.attrs.get(key), default)

    def str(self, key, default=None):
        value = self.attrs.get(key)
        return default if value is None or value == "None" else value

    def refuse(self, detail):
        raise Unsupported(self.op, self.name, detail)

    def arg(self, i):
        return self.args[i] if i < len(self.args) else "None"


# --- the emitters: node -> (expression, number of outputs) ----------------------------------------

EMITTERS: dict = {}  # op name -> emitter


def _emits(*ops):
    def register(fn):
        for op in ops:
            EMITTERS[op] = fn
        return fn

    return register


@_emits("Convolution", "Deconvolution")
def _conv(n):
    kernel = n.tuple("kernel")
    dims = len(kernel)
    if n.str("layout") not in (None, "NCW", "NCHW", "NCDHW"):
        n.refuse("layout=%s (only channels-first)" % n.str("layout"))
    if not 1 <= dims <= 3:
        n.refuse("kernel=%s" % (kernel,))
    stride = n.tuple("stride") or (1,) * dims
    dilate = n.tuple("dilate") or (1,) * dims
    pad = n.tuple("pad") or (0,) * dims
    groups = n.int("num_group", 1)
    # Convolution has a bias unless no_bias; Deconvolution has none unless no_bias=False.
    no_bias = n.bool("no_bias", n.op == "Deconvolution")
    bias = "None" if no_bias else n.arg(2)
    if n.op == "Convolution":
        return "F.conv%dd(%s, %s, %s, %r, %r, %r, %d)" % (
            dims,
            n.args[0],
            n.args[1],
            bias,
            stride,
            pad,
            dilate,
            groups,
        ), 1
    if n.tuple("target_shape"):
        n.refuse("target_shape=%s" % (n.tuple("target_shape"),))
    adj = n.tuple("adj") or (0,) * dims
    return "F.conv_transpose%dd(%s, %s, %s, %r, %r, %r, %d, %r)" % (
        dims,
        n.args[0],
        n.args[1],
        bias,
        stride,
        pad,
        adj,
        groups,
        dilate,
    ), 1


@_emits("FullyConnected")
def _fc(n):
    bias = "None" if n.bool("no_bias") else n.arg(2)
    return "mxops.fully_connected(%s, %s, %s, flatten=%r)" % (
        n.args[0],
        n.args[1],
        bias,
        n.bool("flatten", True),
    ), 1


@_emits("BatchNorm")
def _bn(n):
    if n.bool("output_mean_var"):
        n.refuse("output_mean_var=True")
    frozen = n.name in n.attrs.get("__frozen_stats__", ())
    return (
        "mxops.batch_norm(%s, %s, %s, %s, %s, self.training, eps=%r, momentum=%r, "
        "fix_gamma=%r, use_global_stats=%r%s%s)"
        % (
            n.args[0],
            n.args[1],
            n.args[2],
            n.args[3],
            n.args[4],
            n.float("eps", 1e-3),
            n.float("momentum", 0.9),
            n.bool("fix_gamma", True),
            n.bool("use_global_stats"),
            "" if n.int("axis", 1) == 1 else ", axis=%d" % n.int("axis"),
            ", update_stats=False" if frozen else "",
        ),
        1,
    )


@_emits("Activation")
def _act(n):
    act = n.str("act_type")
    simple = {"relu": "F.relu", "sigmoid": "torch.sigmoid", "tanh": "torch.tanh"}
    if act in simple:
        return "%s(%s)" % (simple[act], n.args[0]), 1
    if act in ("softrelu", "softsign"):
        return "mxops.activation(%s, %r)" % (n.args[0], act), 1
    n.refuse("act_type=%s" % act)


@_emits("LeakyReLU")
def _leaky(n):
    act = n.str("act_type", "leaky")
    if act not in ("leaky", "prelu", "elu", "selu", "gelu"):
        # rrelu draws a random slope per element in training.
        n.refuse("act_type=%s" % act)
    return "mxops.leaky_relu(%s, %s, %r, %r)" % (
        n.args[0],
        n.arg(1) if act == "prelu" else "None",
        act,
        n.float("slope", 0.25),
    ), 1


@_emits("Pooling")
def _pool(n):
    pool_type = n.str("pool_type", "max")
    convention = n.str("pooling_convention", "valid")
    if pool_type not in ("max", "avg", "sum"):
        n.refuse("pool_type=%s" % pool_type)
    if convention not in ("valid", "full"):
        n.refuse("pooling_convention=%s" % convention)
    if n.str("layout") not in (None, "NCW", "NCHW", "NCDHW"):
        n.refuse("layout=%s (only channels-first)" % n.str("layout"))
    return "mxops.pooling(%s, %r, %r, %r, %r, %r, global_pool=%r, count_include_pad=%r)" % (
        n.args[0],
        n.tuple("kernel"),
        pool_type,
        n.tuple("stride"),
        n.tuple("pad"),
        convention,
        n.bool("global_pool"),
        n.bool("count_include_pad", True),
    ), 1


@_emits("Flatten", "flatten")
def _flatten(n):
    return "mxops.flatten(%s)" % n.args[0], 1


@_emits("Concat", "concat")
def _concat(n):
    return "torch.cat([%s], %d)" % (", ".join(n.args), n.int("dim", 1)), 1


@_emits("stack")
def _stack(n):
    return "torch.stack([%s], %d)" % (", ".join(n.args), n.int("axis", 0)), 1


@_emits("add_n", "ElementWiseSum")
def _add_n(n):
    return " + ".join(n.args), 1


@_emits("Dropout")
def _dropout(n):
    if n.tuple("axes"):
        n.refuse("axes=%s (variational dropout)" % (n.tuple("axes"),))
    mode = n.str("mode", "training")
    return "F.dropout(%s, %r, %s)" % (
        n.args[0],
        n.float("p", 0.5),
        "True" if mode == "always" else "self.training",
    ), 1


@_emits("clip")
def _clip(n):
    return "torch.clamp(%s, %r, %r)" % (n.args[0], n.float("a_min"), n.float("a_max")), 1


@_emits("SoftmaxOutput", "Softmax")
def _softmax_output(n):
    extra = []
    for key, conv, default in (
        ("multi_output", _bool, False),
        ("preserve_shape", _bool, False),
        ("grad_scale", _float, 1.0),
        ("use_ignore", _bool, False),
        ("ignore_label", _float, -1.0),
        ("normalization", str, "null"),
        ("out_grad", _bool, False),
        ("smooth_alpha", _float, 0.0),
    ):
        value = conv(n.attrs[key]) if key in n.attrs else default
        if value != default:
            extra.append("%s=%r" % (key, value))
    return "mxops.softmax_output(%s)" % ", ".join([n.args[0], n.arg(1)] + extra), 1


@_emits("LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput")
def _regression(n):
    kind = {"Linear": "linear", "Logistic": "logistic", "MAE": "mae"}[
        n.op[: -len("RegressionOutput")]
    ]
    return "mxops.regression_output(%s, %s, %r, grad_scale=%r)" % (
        n.args[0],
        n.arg(1),
        kind,
        n.float("grad_scale", 1.0),
    ), 1


@_emits("softmax", "log_softmax")
def _softmax(n):
    if n.bool("use_length"):
        n.refuse("use_length=True")
    x = n.args[0]
    t = n.float("temperature")
    if t is not None and t != 1.0:
        x = "%s / %r" % (x, t)
    return "torch.%s(%s, %d)" % (n.op, x, n.int("axis", -1)), 1


@_emits("SoftmaxActivation")
def _softmax_activation(n):
    if n.str("mode", "instance") == "channel":
        return "torch.softmax(%s, 1)" % n.args[0], 1
    return "torch.softmax(mxops.flatten(%s), 1).reshape(%s.shape)" % (n.args[0], n.args[0]), 1


@_emits("Reshape", "reshape")
def _reshape(n):
    if n.tuple("target_shape") and not n.tuple("shape"):
        n.refuse("target_shape (deprecated; shape=)")
    return "mxops.reshape(%s, %r%s)" % (
        n.args[0],
        n.tuple("shape"),
        ", reverse=True" if n.bool("reverse") else "",
    ), 1


@_emits("transpose")
def _transpose(n):
    axes = n.tuple("axes")
    if not axes:
        return "%s.permute(*reversed(range(%s.dim())))" % (n.args[0], n.args[0]), 1
    return "%s.permute(%s)" % (n.args[0], ", ".join(str(a) for a in axes)), 1


@_emits("SwapAxis", "swapaxes")
def _swapaxes(n):
    return "%s.transpose(%d, %d)" % (n.args[0], n.int("dim1", 0), n.int("dim2", 0)), 1


@_emits("expand_dims")
def _expand_dims(n):
    return "%s.unsqueeze(%d)" % (n.args[0], n.int("axis")), 1


@_emits("squeeze")
def _squeeze(n):
    axes = n.tuple("axis", None)
    if not axes:
        return "%s.squeeze()" % n.args[0], 1
    return "%s.squeeze(%r)" % (n.args[0], tuple(axes)), 1


@_emits("batch_dot")
def _batch_dot(n):
    a = n.args[0] + (".transpose(-1, -2)" if n.bool("transpose_a") else "")
    b = n.args[1] + (".transpose(-1, -2)" if n.bool("transpose_b") else "")
    return "torch.matmul(%s, %s)" % (a, b), 1


@_emits("dot")
def _dot(n):
    # MXNet's dot contracts a's last axis with b's first; transpose_* reverses every axis.
    a = n.args[0] + (
        ".permute(*reversed(range(%s.dim())))" % n.args[0] if n.bool("transpose_a") else ""
    )
    b = n.args[1] + (
        ".permute(*reversed(range(%s.dim())))" % n.args[1] if n.bool("transpose_b") else ""
    )
    return "torch.tensordot(%s, %s, 1)" % (a, b), 1


@_emits("LayerNorm")
def _layer_norm(n):
    if n.bool("output_mean_var"):
        n.refuse("output_mean_var=True")
    return "mxops.layer_norm(%s, %s, %s, %d, %r)" % (
        n.args[0],
        n.args[1],
        n.args[2],
        n.int("axis", -1),
        n.float("eps", 1e-5),
    ), 1


@_emits("L2Normalization")
def _l2(n):
    return "mxops.l2_normalization(%s, %r, %r)" % (
        n.args[0],
        n.str("mode", "instance"),
        n.float("eps", 1e-10),
    ), 1


@_emits("SliceChannel", "split")
def _split(n):
    count = n.int("num_outputs")
    return "mxops.split(%s, %d, %d, %r)" % (
        n.args[0],
        count,
        n.int("axis", 1),
        n.bool("squeeze_axis"),
    ), count


@_emits("slice_axis")
def _slice_axis(n):
    return "mxops.slice_axis(%s, %d, %d, %r)" % (
        n.args[0],
        n.int("axis"),
        n.int("begin"),
        n.int("end"),
    ), 1


@_emits("slice", "crop")
def _slice(n):
    begin, end = n.tuple("begin"), n.tuple("end")
    step = n.tuple("step") or (None,) * len(begin)
    if any(s is not None and s <= 0 for s in step):
        n.refuse("step=%s (a step <= 0)" % (step,))

    def part(b, e, s):
        text = "%s:%s" % ("" if b is None else b, "" if e is None else e)
        return text + ("" if s in (None, 1) else ":%d" % s)

    return "%s[%s]" % (n.args[0], ", ".join(part(*p) for p in zip(begin, end, step))), 1


@_emits("where")
def _where(n):
    return "mxops.where(%s, %s, %s)" % tuple(n.args[:3]), 1


@_emits("Embedding")
def _embedding(n):
    return "F.embedding(%s.long(), %s)" % (n.args[0], n.args[1]), 1


@_emits("_rnn_param_concat")
def _rnn_param_concat(n):
    return "torch.cat([%s], 0)" % ", ".join("%s.reshape(-1)" % a for a in n.args), 1


@_emits("RNN")
def _rnn(n):
    mode = n.str("mode")
    if mode not in ("lstm", "gru", "rnn_tanh", "rnn_relu"):
        n.refuse("mode=%s" % mode)
    for key in ("projection_size", "lstm_state_clip_min", "lstm_state_clip_max"):
        if n.str(key) is not None:
            n.refuse("%s=%s" % (key, n.str(key)))
    if n.bool("use_sequence_length"):
        n.refuse("use_sequence_length=True")
    outputs = (3 if mode == "lstm" else 2) if n.bool("state_outputs") else 1
    return (
        "mxops.rnn(%s, %s, %s, %s, %r, %d, %d, bidirectional=%r, p=%r, state_outputs=%r, "
        "training=self.training)"
        % (
            n.args[0],
            n.args[1],
            n.args[2],
            n.arg(3) if mode == "lstm" else "None",
            mode,
            n.int("state_size"),
            n.int("num_layers"),
            n.bool("bidirectional"),
            n.float("p", 0.0),
            n.bool("state_outputs"),
        ),
        outputs,
    )


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

SUPPORTED = tuple(sorted(EMITTERS))

# Loss heads: their label input is an optional forward argument (None: inference).
LOSS_HEADS = {
    "SoftmaxOutput",
    "Softmax",
    "LinearRegressionOutput",
    "LogisticRegressionOutput",
    "MAERegressionOutput",
}


# --- the graph ------------------------------------------------------------------------------------


def load(text):
    """(nodes, heads) of a symbol's JSON, each node ``{"op", "name", "attrs", "inputs"}``."""
    graph = json.loads(text)
    nodes = []
    for node in graph["nodes"]:
        attrs = node.get("attrs") or node.get("attr") or node.get("param") or {}
        nodes.append(
            {
                "op": node["op"],
                "name": node["name"],
                "attrs": {k: v for k, v in attrs.items() if not k.startswith("__")},
                "inputs": [tuple(e[:2]) for e in node["inputs"]],
            }
        )
    return nodes, [tuple(h[:2]) for h in graph["heads"]]


def needed(nodes):
    """{op: [node names]} of the graph's operators, and the set of those not supported."""
    ops = {}
    for node in nodes:
        if node["op"] != "null":
            ops.setdefault(node["op"], []).append(node["name"])
    return ops, {op for op in ops if op not in EMITTERS}


def unsupported_message(op, nodes, detail=None):
    where = (
        "node %r" % nodes[0]
        if len(nodes) == 1
        else "%d nodes, the first %r"
        % (
            len(nodes),
            nodes[0],
        )
    )
    return "operator %r (%s)%s is not supported by mxcompat.to_torch; supported: %s" % (
        op,
        where,
        " with %s" % detail if detail else "",
        ", ".join(SUPPORTED),
    )


def _identifier(name, taken):
    base = re.sub(r"\W", "_", name)
    if not base or base[0].isdigit() or keyword.iskeyword(base) or base in _RESERVED:
        base = "v_" + base
    candidate, i = base, 1
    while candidate in taken:
        i += 1
        candidate = "%s_%d" % (base, i)
    taken.add(candidate)
    return candidate


_RESERVED = {"self", "torch", "F", "mxops", "_rec"}


def attribute(name):
    name = torch_name(name)
    if name.isidentifier() and not keyword.iskeyword(name):
        return "self." + name
    return "getattr(self, %r)" % name


class Program:
    """The generated forward: ``lines`` (one per node), the forward's ``inputs`` (names of
    the graph's inputs, label inputs last with a default of None), what each MXNet node's
    output is called (``outputs``: node name -> [expressions]) and the returned ``heads``."""

    def __init__(self, inputs, labels, lines, outputs, returns, params, buffers):
        self.inputs, self.labels, self.lines = inputs, labels, lines
        self.outputs, self.returns = outputs, returns
        self.params, self.buffers = params, buffers

    def forward_source(self, record=False, indent="    "):
        args = ["self"] + [_py(n) for n in self.inputs] + ["%s=None" % _py(n) for n in self.labels]
        if record:
            args.insert(1, "_rec")
        head = "def %s(%s):" % ("_mx_record" if record else "forward", ", ".join(args))
        body = []
        for node_name, var, expr, comment in self.lines:
            if comment:
                body.append("# %s" % comment)
            body.append("%s = %s" % (var, expr))
            if record:
                body.append("_rec[%r] = %s" % (node_name, var))
        body.append("return %s" % self.returns)
        return "\n".join([indent + head] + [indent * 2 + line for line in body])


def _py(name):
    return re.sub(r"\W", "_", name)


def program(nodes, heads, params, buffers, frozen_stats=()):
    """The ``Program`` of a graph whose parameter names are ``params`` (arguments) and
    ``buffers`` (auxiliary states); every other variable is an input.  An operator or
    attribute that is not mapped raises ``Unsupported``."""
    taken = set()
    exprs = {}  # node index -> [expression of each output]
    inputs, labels = [], []
    label_nodes = set()
    for node in nodes:
        if node["op"] in LOSS_HEADS and len(node["inputs"]) > 1:
            label_nodes.add(node["inputs"][1][0])
    lines = []
    outputs = {}
    for i, node in enumerate(nodes):
        name = node["name"]
        if node["op"] == "null":
            if name in params or name in buffers:
                exprs[i] = [attribute(name)]
            else:
                var = _identifier(name, taken)
                if var != _py(name):
                    raise Unsupported("null", name, "an input whose name is not a Python name")
                (labels if i in label_nodes else inputs).append(name)
                exprs[i] = [var]
            continue
        args = [exprs[j][k] for j, k in node["inputs"]]
        attrs = dict(node["attrs"])
        if node["op"] == "BatchNorm":
            attrs["__frozen_stats__"] = frozen_stats
        emitter = EMITTERS.get(node["op"])
        if emitter is None:
            raise Unsupported(node["op"], name)
        expr, count = emitter(Node(node["op"], name, attrs, args))
        var = _identifier(name, taken)
        comment = name if var != name else None
        lines.append((name, var, expr, comment))
        exprs[i] = [var] if count == 1 else ["%s[%d]" % (var, k) for k in range(count)]
        outputs[name] = exprs[i]
    for j, k in heads:
        if nodes[j]["op"] == "null" and k:
            raise Unsupported("null", nodes[j]["name"], "an output")
    results = [exprs[j][k] for j, k in heads]
    returns = results[0] if len(results) == 1 else "(%s)" % ", ".join(results)
    return Program(inputs, labels, lines, outputs, returns, params, buffers)


def class_source(prog, class_name, shapes, frozen, doc):
    """The module's class: ``__init__`` registers every parameter (``frozen`` ones with
    requires_grad=False) and buffer by name and shape (values are loaded afterwards), then
    the forward."""
    lines = ["class %s(torch.nn.Module):" % class_name, '    """%s"""' % doc, ""]
    lines.append("    def __init__(self):")
    lines.append("        super().__init__()")
    for name in prog.params:
        lines.append(
            "        self.register_parameter(%r, torch.nn.Parameter(torch.empty(%r)%s))"
            % (
                torch_name(name),
                tuple(shapes[name]),
                ", requires_grad=False" if name in frozen else "",
            )
        )
    for name in prog.buffers:
        lines.append(
            "        self.register_buffer(%r, torch.empty(%r))"
            % (torch_name(name), tuple(shapes[name]))
        )
    if not prog.params and not prog.buffers:
        lines.append("        pass")
    lines.append("")
    lines.append(prog.forward_source())
    return "\n".join(lines) + "\n"
