"""Emitters of MXNet's layer operators (convolution, normalisation, pooling, softmax heads,
the fused RNN, ...): node -> (torch expression, number of outputs), registered in
``nodes.EMITTERS``.  MXNet's semantics where PyTorch's differ are in the expressions (and in
``runtime``): the guide's table lists each with its test."""

from .nodes import _bool, _emits, _float


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
