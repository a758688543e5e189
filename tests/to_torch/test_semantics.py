"""Each place where MXNet's operator means something PyTorch's namesake does not, held by
to_torch: every test compares with MXNet, and checks that the naive PyTorch mapping would
not pass (so it fails if the converter ever maps naively).  Also: the verifier names the
first node that differs, an unmapped operator is named, frozen parameters come over frozen.
The guide's semantics table (docs/guide/leaving-for-pytorch.md) names these tests."""

import importlib.util

import mxnet as mx
import numpy as np
import pytest

import mxcompat
from tests.support.torch_names import params_by_mxnet_name, state_by_mxnet_name

_SPEC = importlib.util.find_spec("torch")
pytestmark = pytest.mark.skipif(
    _SPEC is None or _SPEC.origin is None, reason="needs torch (the torch extra)"
)


def _random_params(symbol, shapes, seed=0):
    rng = np.random.RandomState(seed)
    arg_shapes, _, aux_shapes = symbol.infer_shape(**shapes)
    args = {
        n: mx.nd.array(rng.uniform(-1, 1, s))
        for n, s in zip(symbol.list_arguments(), arg_shapes)
        if n not in shapes and not n.endswith("label")
    }
    aux = {
        n: mx.nd.array(rng.uniform(0.5, 1.5, s) if n.endswith("var") else rng.uniform(-1, 1, s))
        for n, s in zip(symbol.list_auxiliary_states(), aux_shapes)
    }
    return args, aux


def _mx_forward(symbol, args, aux, feed, is_train=False, grad_of=None, labels=None):
    shapes = {n: v.shape for n, v in feed.items()}
    shapes.update({n: v.shape for n, v in (labels or {}).items()})
    req = {n: ("write" if n == grad_of else "null") for n in symbol.list_arguments()}
    ex = symbol.simple_bind(mx.cpu(), grad_req=req, **shapes)
    for n, a in ex.arg_dict.items():
        src = feed.get(n, (labels or {}).get(n, args.get(n)))
        a[:] = src
    for n, a in ex.aux_dict.items():
        a[:] = aux[n]
    outs = [o.asnumpy() for o in ex.forward(is_train=is_train)]
    grad = None
    if grad_of is not None:
        ex.backward([mx.nd.ones(o.shape) for o in ex.outputs])  # ignored by loss heads
        grad = ex.grad_dict[grad_of].asnumpy()
    return outs, grad, {n: a.asnumpy() for n, a in ex.aux_dict.items()}


def _torch(symbol, args, aux, feed, **kw):
    return mxcompat.to_torch((symbol, args, aux), {n: v.shape for n, v in feed.items()}, **kw)


def _run(module, *arrays, **labels):
    import torch

    with torch.no_grad():
        return module(*[torch.from_numpy(a) for a in arrays], **labels).numpy()


def _close(a, b, rtol=1e-5):
    return np.abs(a - b).max() <= rtol * max(np.abs(b).max(), 1e-6) + 1e-6


def _data(*shape, seed=3):
    return np.random.RandomState(seed).uniform(-1, 1, shape).astype(np.float32)


# --- BatchNorm ------------------------------------------------------------------------------------


def test_batchnorm_fix_gamma_ignores_the_stored_gamma():
    import torch

    sym = mx.sym.BatchNorm(mx.sym.var("data"), name="bn")  # fix_gamma=True by default
    x = _data(2, 3, 4, 4)
    args, aux = _random_params(sym, {"data": x.shape})
    args["bn_gamma"] = mx.nd.array([5.0, -2.0, 3.0])
    (want,), _, _ = _mx_forward(sym, args, aux, {"data": x})
    module = _torch(sym, args, aux, {"data": x})
    got = _run(module, x)
    assert _close(got, want)
    # MXNet writes 1 into the stored gamma at every forward (weight decay then starts from
    # 1 at each step); so does the converted layer.
    stored = args["bn_gamma"].copy()
    stats = [aux[n].copy() for n in ("bn_moving_mean", "bn_moving_var")]
    mx.nd.BatchNorm(mx.nd.array(x), stored, args["bn_beta"], *stats).wait_to_read()
    assert stored.asnumpy().tolist() == [1.0, 1.0, 1.0]
    assert params_by_mxnet_name(module)["bn_gamma"].tolist() == [1.0, 1.0, 1.0]
    naive = torch.nn.functional.batch_norm(
        *[
            torch.from_numpy(v)
            for v in (
                x,
                aux["bn_moving_mean"].asnumpy(),
                aux["bn_moving_var"].asnumpy(),
                args["bn_gamma"].asnumpy(),
                args["bn_beta"].asnumpy(),
            )
        ],
        eps=1e-3,
    ).numpy()
    assert not _close(naive, want)


def test_batchnorm_default_eps_is_1e_3():
    import torch

    sym = mx.sym.BatchNorm(mx.sym.var("data"), fix_gamma=False, name="bn")
    x = _data(2, 3, 4, 4) * 0.01
    args, aux = _random_params(sym, {"data": x.shape})
    aux["bn_moving_var"] = mx.nd.array([1e-4, 2e-4, 5e-4])
    (want,), _, _ = _mx_forward(sym, args, aux, {"data": x})
    assert _close(_run(_torch(sym, args, aux, {"data": x}), x), want)
    naive = torch.nn.functional.batch_norm(
        *[
            torch.from_numpy(v)
            for v in (
                x,
                aux["bn_moving_mean"].asnumpy(),
                aux["bn_moving_var"].asnumpy(),
                args["bn_gamma"].asnumpy(),
                args["bn_beta"].asnumpy(),
            )
        ],
    ).numpy()  # PyTorch's default eps, 1e-5
    assert not _close(naive, want)


def test_batchnorm_training_momentum_and_biased_variance():
    import torch

    sym = mx.sym.BatchNorm(mx.sym.var("data"), fix_gamma=False, momentum=0.8, name="bn")
    x = _data(2, 3, 2, 2)
    args, aux = _random_params(sym, {"data": x.shape})
    # MXNet moves the statistics in the training backward.
    (want,), _, stats = _mx_forward(sym, args, aux, {"data": x}, is_train=True, grad_of="bn_gamma")
    module = _torch(sym, args, aux, {"data": x})
    module.train()
    got = module(torch.from_numpy(x)).detach().numpy()
    assert _close(got, want)
    for name in ("bn_moving_mean", "bn_moving_var"):
        assert _close(state_by_mxnet_name(module)[name].numpy(), stats[name]), name
    # PyTorch's own: momentum 1 - 0.8 would move them the other way, an unbiased variance.
    mean = torch.from_numpy(aux["bn_moving_mean"].asnumpy())
    var = torch.from_numpy(aux["bn_moving_var"].asnumpy())
    torch.nn.functional.batch_norm(torch.from_numpy(x), mean, var, training=True, momentum=0.8)
    assert not _close(mean.numpy(), stats["bn_moving_mean"])
    mean = torch.from_numpy(aux["bn_moving_mean"].asnumpy())
    var = torch.from_numpy(aux["bn_moving_var"].asnumpy())
    torch.nn.functional.batch_norm(torch.from_numpy(x), mean, var, training=True, momentum=0.2)
    assert not _close(var.numpy(), stats["bn_moving_var"])


def test_gluon_batchnorm_statistics_move_in_training():
    """Gluon gives every BatchNorm statistic grad_req 'null' and still moves it in a training
    forward: read as 'frozen' (as a trained parameter's 'null' is), the converted statistics
    would stay where they were."""
    import torch
    from mxnet import autograd, gluon

    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Conv2D(3, 1), gluon.nn.BatchNorm(momentum=0.8))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = _data(2, 3, 4, 4)
    net(mx.nd.array(x))
    stats = [p for p in net.collect_params().values() if "running" in p.name]
    assert stats and all(p.grad_req == "null" for p in stats)
    module = mxcompat.to_torch(net, verify=False)
    assert "update_stats=False" not in module.code
    before = {p.name: p.data().asnumpy() for p in stats}
    with autograd.record():
        out = net(mx.nd.array(x))
    out.backward()  # where MXNet moves them
    mx.nd.waitall()
    module.train()
    module(torch.from_numpy(x))
    for p in stats:
        want = p.data().asnumpy()
        assert not _close(want, before[p.name]), p.name  # Gluon moved it
        assert _close(state_by_mxnet_name(module)[p.name].numpy(), want), p.name


# --- Pooling --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pool_type,pad,count_include_pad",
    [("max", (0, 0), True), ("avg", (1, 1), True), ("avg", (1, 1), False), ("sum", (0, 0), True)],
)
def test_pooling_full_convention_rounds_up(pool_type, pad, count_include_pad):
    import torch

    kw = {"count_include_pad": count_include_pad} if pool_type == "avg" else {}
    sym = mx.sym.Pooling(
        mx.sym.var("data"),
        kernel=(3, 3),
        stride=(2, 2),
        pad=pad,
        pool_type=pool_type,
        pooling_convention="full",
        name="pool",
        **kw,
    )
    x = _data(1, 2, 6, 6)
    (want,), _, _ = _mx_forward(sym, {}, {}, {"data": x})
    got = _run(_torch(sym, {}, {}, {"data": x}), x)
    assert got.shape == want.shape
    assert _close(got, want)
    naive = torch.nn.functional.max_pool2d(torch.from_numpy(x), 3, 2, pad)
    assert naive.shape != want.shape


# --- FullyConnected -------------------------------------------------------------------------------


def test_fully_connected_flatten_collapses_every_axis_after_the_first():
    data = mx.sym.var("data")
    for flatten, shape in ((True, (2, 3, 4)), (False, (2, 3, 4))):
        sym = mx.sym.FullyConnected(data, num_hidden=5, flatten=flatten, name="fc")
        x = _data(*shape)
        args, aux = _random_params(sym, {"data": shape})
        (want,), _, _ = _mx_forward(sym, args, aux, {"data": x})
        got = _run(_torch(sym, args, aux, {"data": x}), x)
        assert got.shape == want.shape and _close(got, want)
    # PyTorch's Linear on the last axis only: the flatten=True weight (5, 12) does not fit.
    assert want.shape == (2, 3, 5)


# --- SoftmaxOutput's gradient ---------------------------------------------------------------------

SOFTMAX_CASES = {
    "default": ({}, (4, 5), (4,)),
    "grad_scale_batch": ({"grad_scale": 3.0, "normalization": "batch"}, (4, 5), (4,)),
    "ignore_valid": (
        {"use_ignore": True, "ignore_label": 2, "normalization": "valid"},
        (4, 5),
        (4,),
    ),
    "multi_output": ({"multi_output": True}, (2, 5, 3), (2, 3)),
    "multi_output_batch": ({"multi_output": True, "normalization": "batch"}, (2, 5, 3), (2, 3)),
    "probabilities": ({}, (4, 5), (4, 5)),
}


@pytest.mark.parametrize("case", sorted(SOFTMAX_CASES))
def test_softmax_output_gradient_is_mxnets(case):
    import torch

    attrs, shape, label_shape = SOFTMAX_CASES[case]
    data = mx.sym.var("data")
    fc = mx.sym.identity(data, name="pre")
    sym = mx.sym.SoftmaxOutput(fc, name="softmax", **attrs)
    x = _data(*shape)
    rng = np.random.RandomState(5)
    if label_shape == shape:
        label = rng.dirichlet(np.ones(shape[-1]), shape[0]).astype(np.float32)
    else:
        label = rng.randint(0, shape[1], label_shape).astype(np.float32)
        label.flat[0] = 2  # an ignored one where use_ignore
    (want,), grad, _ = _mx_forward(
        sym, {}, {}, {"data": x}, grad_of="data", labels={"softmax_label": label}
    )
    module = _torch(sym, {}, {}, {"data": x})
    assert module.mxnet_labels == ["softmax_label"]
    xt = torch.from_numpy(x).requires_grad_()
    out = module(xt, torch.from_numpy(label))
    assert _close(out.detach().numpy(), want)
    out.backward(torch.ones_like(out))  # the incoming gradient is ignored, as in MXNet
    assert _close(xt.grad.numpy(), grad), (xt.grad.numpy(), grad)
    if label_shape != shape and not attrs.get("multi_output"):
        naive = torch.from_numpy(x).requires_grad_()
        torch.nn.functional.cross_entropy(naive, torch.from_numpy(label).long()).backward()
        assert not _close(naive.grad.numpy(), grad)


# --- reshape's special codes ----------------------------------------------------------------------

RESHAPES = [
    ((2, 3, 4), (4, 0, 2), False),
    ((2, 3, 4), (6, 1, -1), False),
    ((2, 3, 4), (-2, 1, 1), False),
    ((2, 3, 4), (-3, 4), False),
    ((2, 3, 4, 5), (-3, -3), False),
    ((2, 3, 4), (0, -3), False),
    ((2, 3, 4), (-4, 1, 2, -2), False),
    ((2, 3, 4), (2, -4, -1, 3, -2), False),
    ((10, 5, 4), (-1, 0), True),
]


@pytest.mark.parametrize("shape,codes,reverse", RESHAPES, ids=str)
def test_reshape_special_codes(shape, codes, reverse):
    sym = mx.sym.reshape(mx.sym.var("data"), shape=codes, reverse=reverse, name="r")
    x = _data(*shape)
    (want,), _, _ = _mx_forward(sym, {}, {}, {"data": x})
    got = _run(_torch(sym, {}, {}, {"data": x}), x)
    assert got.shape == want.shape and np.array_equal(got, want)
    try:
        naive = x.reshape(codes).shape  # NumPy/PyTorch read 0 and -2.. literally
    except ValueError:
        naive = None
    # (NumPy reads -3 as "infer" too, and (6, 1, -1) is literal.)
    assert naive != want.shape or codes in ((6, 1, -1), (-3, 4))


# --- the small ones -------------------------------------------------------------------------------


def test_reducing_every_axis_gives_shape_1_not_a_scalar():
    sym = mx.sym.sum(mx.sym.var("data"), name="s")
    x = _data(2, 3)
    (want,), _, _ = _mx_forward(sym, {}, {}, {"data": x})
    got = _run(_torch(sym, {}, {}, {"data": x}), x)
    assert want.shape == (1,) and got.shape == (1,) and _close(got, want)


def test_where_with_a_1d_condition_picks_rows():
    c, a, b = mx.sym.var("cond"), mx.sym.var("a"), mx.sym.var("b")
    sym = mx.sym.where(c, a, b, name="w")
    feed = {"cond": np.array([1, 0, 1], np.float32), "a": _data(3, 2), "b": _data(3, 2, seed=4)}
    (want,), _, _ = _mx_forward(sym, {}, {}, feed)
    module = mxcompat.to_torch((sym, {}, {}), verify=False)
    assert module.mxnet_inputs == ["cond", "a", "b"]
    got = _run(module, feed["cond"], feed["a"], feed["b"])
    assert np.array_equal(got, want)


# --- verification, errors, names, frozen ----------------------------------------------------------


def test_verify_names_the_first_diverging_node(monkeypatch):
    from mxcompat.torch import codegen

    data = mx.sym.var("data")
    a = mx.sym.Activation(data, act_type="relu", name="first_relu")
    b = mx.sym.Activation(a, act_type="tanh", name="then_tanh")
    sym = mx.sym.elemwise_add(b, a, name="the_sum")
    shapes = {"data": (2, 3)}
    mxcompat.to_torch((sym, {}, {}), shapes)  # the right mapping passes
    # A mapping broken on purpose: tanh as sigmoid.
    from mxcompat.torch.expr import call
    from mxcompat.torch.nodes import LAYERS

    monkeypatch.setitem(LAYERS, "Activation", lambda n: None)
    monkeypatch.setitem(
        codegen.EMITTERS,
        "Activation",
        lambda n: (
            call("torch.sigmoid" if n.str("act_type") == "tanh" else "F.relu", n.args[0]),
            1,
        ),
    )
    with pytest.raises(AssertionError, match="node 'then_tanh' \\(op Activation, in model\\)"):
        mxcompat.to_torch((sym, {}, {}), shapes)


def test_an_unmapped_operator_is_named_with_its_node_and_the_supported_list():
    sym = mx.sym.gammaln(mx.sym.var("data"), name="log_gamma")
    with pytest.raises(NotImplementedError) as info:
        mxcompat.to_torch((sym, {}, {}), {"data": (2, 5)})
    text = str(info.value)
    assert text.startswith(
        "mxcompat.to_torch: operator 'gammaln' (node 'log_gamma') is not supported; "
        "supported operators: "
    )
    assert "Convolution" in text


def test_every_unmapped_operator_and_refused_setting_in_one_error():
    data = mx.sym.var("data")
    lp = mx.sym.Pooling(data, kernel=(2, 2), pool_type="lp", p_value=2, name="lp")
    sym = mx.sym.Group(
        [mx.sym.gammaln(lp, name="g1"), mx.sym.gammaln(data, name="g2"), mx.sym.gamma(data)]
    )
    with pytest.raises(NotImplementedError) as info:
        mxcompat.to_torch((sym, {}, {}), {"data": (1, 1, 4, 4)})
    head = str(info.value).split("; supported operators: ")[0]
    assert head == (
        "mxcompat.to_torch: 3 parts of this graph are not supported: "
        "operator 'gamma' (node 'gamma0'); operator 'gammaln' (2 nodes, the first 'g1'); "
        "operator 'Pooling' (node 'lp') with pool_type=lp"
    )
    # Mapped operators only: each refused setting is named, all in the one error.
    sym = mx.sym.Group(
        [lp, mx.sym.Pooling(data, kernel=(2, 2), pool_type="lp", p_value=3, name="lp3")]
    )
    with pytest.raises(NotImplementedError) as info:
        mxcompat.to_torch((sym, {}, {}), {"data": (1, 1, 4, 4)})
    assert str(info.value).split("; supported operators: ")[0] == (
        "mxcompat.to_torch: 2 parts of this graph are not supported: "
        "operator 'Pooling' (node 'lp') with pool_type=lp; "
        "operator 'Pooling' (node 'lp3') with pool_type=lp"
    )


def test_an_unmapped_attribute_is_refused_not_approximated():
    sym = mx.sym.Pooling(mx.sym.var("data"), kernel=(2, 2), pool_type="lp", p_value=2, name="lp")
    with pytest.raises(NotImplementedError, match="'Pooling' \\(node 'lp'\\) with pool_type=lp"):
        mxcompat.to_torch((sym, {}, {}), {"data": (1, 1, 4, 4)})


def test_names_with_a_dot_map_both_ways():
    from mxcompat.torch import codegen

    sym = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="layer.1")
    args, aux = _random_params(sym, {"data": (1, 3)})
    module = mxcompat.to_torch((sym, args, aux), {"data": (1, 3)})
    # A name PyTorch refuses (a "." in it) becomes a Python name; mxnet_names maps it back.
    assert sorted(module.state_dict()) == ["layer_1_bias", "layer_1_weight"]
    assert set(module.mxnet_names.values()) == set(args)
    assert module.mxnet_names["layer_1_weight"] == "layer.1_weight"
    assert codegen.mxnet_name("layer%2E1_weight") == "layer.1_weight"  # the older naming


def test_frozen_parameters_come_over_with_requires_grad_false():
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(data, num_hidden=4, name="fc1")
    net = mx.sym.BatchNorm(net, fix_gamma=False, name="bn")
    net = mx.sym.FullyConnected(net, num_hidden=2, name="fc2")
    sym = mx.sym.SoftmaxOutput(net, name="softmax")
    mod = mx.mod.Module(sym, fixed_param_names=["fc1_weight"])
    mod.bind([("data", (4, 3))], [("softmax_label", (4,))])
    mod.init_params()
    mxcompat.freeze("fc2_bias", "bn_moving_*")
    try:
        module = mxcompat.to_torch(mod)
    finally:
        mxcompat.unfreeze("fc2_bias", "bn_moving_*")
    grads = {n: p.requires_grad for n, p in params_by_mxnet_name(module).items()}
    assert grads == {
        "fc1_weight": False,
        "fc1_bias": True,
        "bn_gamma": True,
        "bn_beta": True,
        "fc2_weight": True,
        "fc2_bias": False,
    }
    assert "update_stats=False" in module.code
    import torch

    before = {n: b.clone() for n, b in module.named_buffers()}
    module.train()
    module(torch.from_numpy(_data(4, 3)))
    for n, b in module.named_buffers():
        assert torch.equal(b, before[n]), n
