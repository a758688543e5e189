"""Emitters of MXNet's layer operators (convolution, normalisation, pooling, softmax heads, ...;
the fused RNN's are in ``recurrent``), registered in ``nodes``: each as a functional expression
(``EMITTERS``) and, where MXNet's semantics are a stock layer's, as that layer (``LAYERS``:
``nn.Conv2d``, ``nn.Linear``, ``mxops.BatchNorm``, ...).  MXNet's semantics where PyTorch's
differ are in the expressions (and in ``runtime``): the guide's table lists each with its
test."""

from __future__ import annotations

from typing import Any

from .expr import BinOp, Call, Expr, Layer, Var, call, method
from .nodes import Node, _bool, _emits, _float, _layer

_CHANNELS_FIRST = (None, "NCW", "NCHW", "NCDHW")


def _same(values: tuple[Any, ...]) -> Any:
    """``(3, 3)`` as ``3``, as torchvision writes a square kernel."""
    return values[0] if values and all(v == values[0] for v in values) else values


def _conv_checks(n: Node) -> tuple[int, ...]:
    kernel = n.tuple("kernel")
    if n.str("layout") not in _CHANNELS_FIRST:
        n.refuse("layout=%s (only channels-first)" % n.str("layout"))
    if not 1 <= len(kernel) <= 3:
        n.refuse("kernel=%s" % (kernel,))
    if n.op == "Deconvolution" and n.tuple("target_shape"):
        n.refuse("target_shape=%s" % (n.tuple("target_shape"),))
    return kernel


def _conv_options(n: Node, dims: int) -> dict:
    """stride, padding, dilation, groups (and a deconvolution's output_padding) where not 1/0."""
    options = {}
    for key, torch_key, default in (
        ("stride", "stride", 1),
        ("pad", "padding", 0),
        ("adj", "output_padding", 0),
        ("dilate", "dilation", 1),
    ):
        if key == "adj" and n.op != "Deconvolution":
            continue
        value = n.tuple(key) or (default,) * dims
        if any(v != default for v in value):
            options[torch_key] = _same(value)
    if n.int("num_group", 1) != 1:
        options["groups"] = n.int("num_group")
    return options


def _no_bias(n: Node) -> bool:
    # Convolution has a bias unless no_bias; Deconvolution has none unless no_bias=False.
    return n.bool("no_bias", n.op == "Deconvolution")


@_emits("Convolution", "Deconvolution")
def _conv(n: Node) -> tuple[Expr, int]:
    dims = len(_conv_checks(n))
    options = _conv_options(n, dims)
    bias = Var("None") if _no_bias(n) else n.arg(2)
    if n.op == "Convolution":
        return call("F.conv%dd" % dims, n.args[0], n.args[1], bias, **options), 1
    return call("F.conv_transpose%dd" % dims, n.args[0], n.args[1], bias, **options), 1


@_layer("Convolution", "Deconvolution")
def _conv_layer(n: Node) -> Layer | None:
    kernel = _conv_checks(n)
    weight = n.shapes[1]
    if weight is None or (not _no_bias(n) and n.shapes[2] is None):
        return None
    groups = n.int("num_group", 1)
    if n.op == "Convolution":
        cls = "nn.Conv%dd" % len(kernel)
        sizes = (weight[1] * groups, weight[0])
    else:
        cls = "nn.ConvTranspose%dd" % len(kernel)
        sizes = (weight[0], weight[1] * groups)
    options = dict(kernel_size=_same(kernel), **_conv_options(n, len(kernel)))
    params = {"weight": 1}
    if _no_bias(n):
        options["bias"] = False
    else:
        params["bias"] = 2
    return Layer(
        cls,
        sizes,
        tuple(options.items()),
        params=params,
        names=("in_channels", "out_channels"),
    )


@_emits("FullyConnected")
def _fc(n: Node) -> tuple[Expr, int]:
    bias = Var("None") if n.bool("no_bias") else n.arg(2)
    x = call("torch.flatten", n.args[0], 1) if n.bool("flatten", True) else n.args[0]
    return call("F.linear", x, n.args[1], bias), 1


@_layer("FullyConnected")
def _fc_layer(n: Node) -> Layer | None:
    weight = n.shapes[1]
    if weight is None or (not n.bool("no_bias") and n.shapes[2] is None):
        return None
    params = {"weight": 1}
    options: tuple[tuple[str, Any], ...] = ()
    if n.bool("no_bias"):
        options = (("bias", False),)
    else:
        params["bias"] = 2
    return Layer(
        "nn.Linear",
        (weight[1], weight[0]),
        options,
        params=params,
        names=("in_features", "out_features"),
        # MXNet flattens every axis after the first (flatten=True, the default).
        flatten=n.bool("flatten", True),
    )


# BatchNorm's default eps in every 1.x release: the float32 literal 1e-3f, widened to the
# double MXNet computes with (an eps given is read as a double).
_BN_EPS = 0.0010000000474974513


def _bn_options(n: Node) -> dict:
    if n.bool("output_mean_var"):
        n.refuse("output_mean_var=True")
    return dict(
        eps=n.float("eps", _BN_EPS),
        momentum=n.float("momentum", 0.9),
        fix_gamma=n.bool("fix_gamma", True),
        use_global_stats=n.bool("use_global_stats"),
        axis=n.int("axis", 1),
        update_stats=n.name not in n.attrs.get("__frozen_stats__", ()),
    )


@_emits("BatchNorm")
def _bn(n: Node) -> tuple[Expr, int]:
    options = _bn_options(n)
    for key, default in (("axis", 1), ("update_stats", True)):
        if options[key] == default:
            del options[key]
    return call("mxops.batch_norm", *n.args[:5], Var("self.training"), **options), 1


# mxops.BatchNorm's defaults: Gluon's (the operator's own are eps=1e-3, fix_gamma=True).
_BN_DEFAULTS = dict(
    eps=1e-5, momentum=0.9, fix_gamma=False, use_global_stats=False, axis=1, update_stats=True
)


@_layer("BatchNorm")
def _bn_layer(n: Node) -> Layer | None:
    if any(s is None for s in n.shapes[1:5]):
        return None
    options = {k: v for k, v in _bn_options(n).items() if v != _BN_DEFAULTS[k]}
    gamma = n.shapes[1]
    assert gamma is not None
    return Layer(
        "mxops.BatchNorm",
        (gamma[0],),
        tuple(options.items()),
        params={"weight": 1, "bias": 2},
        buffers={"running_mean": 3, "running_var": 4},
        names=("num_features",),
    )


_ACTIVATIONS = {"relu": "F.relu", "sigmoid": "torch.sigmoid", "tanh": "torch.tanh"}
_ACTIVATION_LAYERS = {"relu": "nn.ReLU", "sigmoid": "nn.Sigmoid", "tanh": "nn.Tanh"}


@_emits("Activation")
def _act(n: Node) -> tuple[Expr, int]:
    act = n.str("act_type")
    if act in _ACTIVATIONS:
        return call(_ACTIVATIONS[act], n.args[0]), 1
    if act in ("softrelu", "softsign"):
        return call("mxops.activation", n.args[0], act), 1
    n.refuse("act_type=%s" % act)
    raise AssertionError  # refuse raises


@_layer("Activation")
def _act_layer(n: Node) -> Layer | None:
    act = n.str("act_type")
    return Layer(_ACTIVATION_LAYERS[act]) if act in _ACTIVATION_LAYERS else None


@_emits("LeakyReLU")
def _leaky(n: Node) -> tuple[Expr, int]:
    act = n.str("act_type", "leaky")
    if act not in ("leaky", "prelu", "elu", "selu", "gelu"):
        # rrelu draws a random slope per element in training.
        n.refuse("act_type=%s" % act)
    gamma = n.arg(1) if act == "prelu" else Var("None")
    return call("mxops.leaky_relu", n.args[0], gamma, act, n.float("slope", 0.25)), 1


@_layer("LeakyReLU")
def _leaky_layer(n: Node) -> Layer | None:
    act = n.str("act_type", "leaky")
    slope = n.float("slope", 0.25)
    if act == "leaky":
        return Layer("nn.LeakyReLU", (slope,), names=("negative_slope",))
    if act == "elu":
        return Layer("nn.ELU", (slope,), names=("alpha",))
    if act == "selu":
        return Layer("nn.SELU")
    if act == "gelu":
        return Layer("nn.GELU")  # MXNet's is the erf form, as nn.GELU's default
    if act == "prelu" and n.shapes[1] is not None and len(n.shapes[1]) == 1:
        return Layer("nn.PReLU", (n.shapes[1][0],), params={"weight": 1}, names=("channels",))
    return None


def _pool_checks(n: Node) -> tuple[str, str]:
    pool_type = n.str("pool_type", "max")
    convention = n.str("pooling_convention", "valid")
    if pool_type not in ("max", "avg", "sum"):
        n.refuse("pool_type=%s" % pool_type)
    if convention not in ("valid", "full"):
        n.refuse("pooling_convention=%s" % convention)
    if n.str("layout") not in _CHANNELS_FIRST:
        n.refuse("layout=%s (only channels-first)" % n.str("layout"))
    return pool_type, convention


@_emits("Pooling")
def _pool(n: Node) -> tuple[Expr, int]:
    pool_type, convention = _pool_checks(n)
    options = dict(
        stride=n.tuple("stride"),
        pad=n.tuple("pad"),
        convention=convention,
        global_pool=n.bool("global_pool"),
        count_include_pad=n.bool("count_include_pad", True),
    )
    return call("mxops.pooling", n.args[0], n.tuple("kernel"), pool_type, **options), 1


@_layer("Pooling")
def _pool_layer(n: Node) -> Layer | None:
    pool_type, convention = _pool_checks(n)
    kernel = n.tuple("kernel")
    if not 1 <= len(kernel) <= 3 or pool_type == "sum":
        return None
    dims = len(kernel)
    kind = {"max": "Max", "avg": "Avg"}[pool_type]
    if n.bool("global_pool"):
        return Layer("nn.Adaptive%sPool%dd" % (kind, dims), (1,), names=("output_size",))
    stride = n.tuple("stride") or (1,) * dims
    pad = n.tuple("pad") or (0,) * dims
    # PyTorch pads a max pool with -inf and counts the padding of an average, as MXNet's
    # 'valid' convention does; it allows at most half a window of padding.
    if convention != "valid" or any(2 * p > k for p, k in zip(pad, kernel)):
        return None
    if pool_type == "avg" and not n.bool("count_include_pad", True):
        return None
    options = [("stride", _same(stride))]
    if any(pad):
        options.append(("padding", _same(pad)))
    return Layer(
        "nn.%sPool%dd" % (kind, dims),
        (_same(kernel),),
        tuple(options),
        names=("kernel_size",),
    )


@_emits("Flatten", "flatten")
def _flatten(n: Node) -> tuple[Expr, int]:
    return call("mxops.flatten", n.args[0]), 1


@_layer("Flatten", "flatten")
def _flatten_layer(n: Node) -> Layer | None:
    return Layer("nn.Flatten")


@_emits("Concat", "concat")
def _concat(n: Node) -> tuple[Expr, int]:
    return call("torch.cat", Var("[%s]" % ", ".join(a.flat() for a in n.args)), n.int("dim", 1)), 1


@_emits("stack")
def _stack(n: Node) -> tuple[Expr, int]:
    items = Var("[%s]" % ", ".join(a.flat() for a in n.args))
    return call("torch.stack", items, n.int("axis", 0)), 1


@_emits("add_n", "ElementWiseSum")
def _add_n(n: Node) -> tuple[Expr, int]:
    return (BinOp("+", tuple(n.args)) if len(n.args) > 1 else n.args[0]), 1


def _dropout_checks(n: Node) -> str:
    if any(a < 0 for a in n.tuple("axes")):
        n.refuse("axes=%s (MXNet reads a negative axis outside the shape)" % (n.tuple("axes"),))
    return n.str("mode", "training")


@_emits("Dropout")
def _dropout(n: Node) -> tuple[Expr, int]:
    mode = _dropout_checks(n)
    training = Var("True" if mode == "always" else "self.training")
    if n.tuple("axes"):
        # Variational dropout: one draw shared along the axes.
        p, axes = n.float("p", 0.5), n.tuple("axes")
        return call("mxops.dropout", n.args[0], p, axes, training), 1
    return call("F.dropout", n.args[0], n.float("p", 0.5), training), 1


@_layer("Dropout")
def _dropout_layer(n: Node) -> Layer | None:
    if _dropout_checks(n) == "always" or n.tuple("axes"):
        return None
    return Layer("nn.Dropout", (n.float("p", 0.5),), names=("p",))


@_emits("clip")
def _clip(n: Node) -> tuple[Expr, int]:
    return call("torch.clamp", n.args[0], n.float("a_min"), n.float("a_max")), 1


@_layer("clip")
def _clip_layer(n: Node) -> Layer | None:
    if (n.float("a_min"), n.float("a_max")) == (0.0, 6.0):
        return Layer("nn.ReLU6")
    return None


@_emits("SoftmaxOutput", "Softmax")
def _softmax_output(n: Node) -> tuple[Expr, int]:
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
            extra.append((key, value))
    return Call("mxops.softmax_output", (n.args[0], n.arg(1)), tuple(extra)), 1


@_emits("LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput")
def _regression(n: Node) -> tuple[Expr, int]:
    kind = {"Linear": "linear", "Logistic": "logistic", "MAE": "mae"}[
        n.op[: -len("RegressionOutput")]
    ]
    options = {}
    if n.float("grad_scale", 1.0) != 1.0:
        options["grad_scale"] = n.float("grad_scale")
    return call("mxops.regression_output", n.args[0], n.arg(1), kind, **options), 1


@_emits("LayerNorm")
def _layer_norm(n: Node) -> tuple[Expr, int]:
    axis, eps = n.int("axis", -1), n.float("eps", 1e-5)
    if n.bool("output_mean_var"):  # and the mean and std
        return call("mxops.layer_norm_moments", *n.args[:3], axis=axis, eps=eps), 3
    return call("mxops.layer_norm", *n.args[:3], axis=axis, eps=eps), 1


@_layer("LayerNorm")
def _layer_norm_layer(n: Node) -> Layer | None:
    if n.bool("output_mean_var") or n.int("axis", -1) != -1:
        return None
    if n.shapes[1] is None or n.shapes[2] is None:
        return None
    options = () if n.float("eps", 1e-5) == 1e-5 else (("eps", n.float("eps")),)
    return Layer(
        "nn.LayerNorm",
        (n.shapes[1][0],),
        options,
        params={"weight": 1, "bias": 2},
        names=("normalized_shape",),
    )


@_emits("L2Normalization")
def _l2(n: Node) -> tuple[Expr, int]:
    mode, eps = n.str("mode", "instance"), n.float("eps", 1e-10)
    return call("mxops.l2_normalization", n.args[0], mode, eps), 1


@_emits("Embedding")
def _embedding(n: Node) -> tuple[Expr, int]:
    return call("F.embedding", method(n.args[0], "long"), n.args[1]), 1


@_layer("Embedding")
def _embedding_layer(n: Node) -> Layer | None:
    weight = n.shapes[1]
    if weight is None:
        return None
    return Layer(
        "mxops.Embedding",
        tuple(weight),
        params={"weight": 1},
        names=("num_embeddings", "embedding_dim"),
    )
