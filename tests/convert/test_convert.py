"""Module ⇄ Gluon in memory: real MXNet models converted both ways, outputs compared.

Tolerance: |diff| ≤ 1e-6 + 1e-6·|value| on CPU float32 between a converted model and its
source.  MXNet's MKLDNN builds fuse ops differently in an executor and a CachedOp and pick
kernels by CPU, so sums are taken in another order: ~2e-7 absolute with AVX-512 kernels, and
up to 3 ulp of outputs near 5 (2.4e-6) with AVX2 kernels (DNNL_MAX_CPU_ISA=AVX2).
"""

import os

import mxnet as mx  # noqa: E402  (after mxcompat)
import numpy as np
import pytest
from mxnet import autograd, gluon  # noqa: E402
from mxnet.gluon import nn  # noqa: E402

import mxcompat
from tests.support.processes import run_threads  # noqa: E402

ATOL = 1e-6
RTOL = 1e-6


def close(a, b):
    a = a.asnumpy() if hasattr(a, "asnumpy") else np.asarray(a)
    b = b.asnumpy() if hasattr(b, "asnumpy") else np.asarray(b)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)


def cnn(classes=10):
    """conv + BN + relu + pool + dropout + dense: the issue's inference-mode round-trip net."""
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(
            nn.Conv2D(8, 3, padding=1),
            nn.BatchNorm(),
            nn.Activation("relu"),
            nn.MaxPool2D(2),
            nn.Dropout(0.5),
            nn.Flatten(),
            nn.Dense(16, activation="relu"),
            nn.Dense(classes),
        )
    return net


def data(shape=(4, 3, 8, 8), seed=0):
    rng = np.random.RandomState(seed)
    return mx.nd.array(rng.uniform(-1, 1, size=shape).astype("float32"))


def trained_cnn(x, steps=3, hybridize=True):
    """A small CNN after a few SGD steps: BatchNorm's running statistics have moved."""
    mx.random.seed(1)
    net = cnn()
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    y = mx.nd.array(np.arange(x.shape[0]) % 10)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for _ in range(steps):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(x.shape[0])
    return net


def predict(mod, *arrays, batch_size=None):
    names = (
        [d[0] if isinstance(d, tuple) else d.name for d in mod.data_shapes]
        if mod.binded
        else mod.data_names
    )
    it = mx.io.NDArrayIter(dict(zip(names, arrays)), batch_size=batch_size or arrays[0].shape[0])
    return mod.predict(it)


def unbound_params(mod):
    # Module.get_params() asserts the module is bound before MXNet 1.6.
    return mod._arg_params, mod._aux_params


def params_of(block):
    return {name: p.data().asnumpy().copy() for name, p in block.collect_params().items()}


def sgd_step(net, x, y=None, lr=0.5):
    y = y if y is not None else mx.nd.array(np.arange(x.shape[0]) % 10)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr})
    with autograd.record():
        loss = gluon.loss.SoftmaxCrossEntropyLoss()(net(x), y)
    loss.backward()
    trainer.step(x.shape[0])
    return float(loss.mean().asscalar())


def symbol_module(x, label_names=("softmax_label",), fit=True):
    """A Module built with the symbol API (conv + BN + FC + dropout + SoftmaxOutput)."""
    d = mx.sym.var("data")
    net = mx.sym.Convolution(d, num_filter=6, kernel=(3, 3), pad=(1, 1), name="conv1")
    net = mx.sym.BatchNorm(net, fix_gamma=False, eps=1e-5, name="bn1")  # as Gluon's
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool1")
    net = mx.sym.Dropout(net, p=0.3, name="drop1")
    net = mx.sym.FullyConnected(mx.sym.flatten(net), num_hidden=10, name="fc1")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    mod = mx.mod.Module(net, label_names=label_names)
    y = mx.nd.array(np.arange(x.shape[0]) % 10)
    it = mx.io.NDArrayIter(x, y, batch_size=x.shape[0])
    mx.random.seed(2)
    if fit:
        mod.fit(
            it, num_epoch=2, optimizer_params={"learning_rate": 0.1}, initializer=mx.init.Xavier()
        )
    return mod


# --- Gluon -> Module -> Gluon --------------------------------------------------------------


@pytest.mark.parametrize("hybridize", [True, False], ids=["cached-graph", "symbol-call"])
def test_gluon_module_gluon_round_trip(hybridize):
    x = data()
    net = trained_cnn(x, hybridize=hybridize)
    ref = net(x)
    mod = net.to_module(data_shapes=[("data", x.shape)])
    assert mod.binded and mod.params_initialized
    close(predict(mod, x), ref)

    back = mod.to_gluon()
    assert isinstance(back, gluon.SymbolBlock)
    close(back(x), ref)

    net2 = cnn()  # another prefix: hybridsequential<N>_
    assert net2.prefix != net.prefix
    assert mod.to_gluon(net2) is net2
    close(net2(x), ref)
    for a, b in zip(net.collect_params().values(), net2.collect_params().values()):
        assert np.array_equal(a.data().asnumpy(), b.data().asnumpy())


def test_unbound_to_module_binds_later_and_keeps_batchnorm_statistics():
    x = data()
    net = trained_cnn(x)
    mod = net.to_module()
    assert not mod.binded and mod.params_initialized
    arg_params, aux_params = unbound_params(mod)
    bn = [p for n, p in net.collect_params().items() if n.endswith("running_mean")][0]
    assert bn.name in aux_params
    assert np.array_equal(aux_params[bn.name].asnumpy(), bn.data().asnumpy())
    assert not np.allclose(bn.data().asnumpy(), 0)  # training moved it
    mod.bind(data_shapes=[("data", x.shape)], for_training=False)
    close(predict(mod, x), net(x))


def test_module_gluon_module_round_trip():
    x = data()
    mod = symbol_module(x)
    ref = predict(mod, x)  # softmax probabilities
    net = mod.to_gluon()
    close(net(x), ref)
    mod2 = net.to_module(data_shapes=[("data", x.shape)])
    close(predict(mod2, x), ref)
    args1, auxs1 = mod.get_params()
    args2, auxs2 = mod2.get_params()
    assert sorted(args1) == sorted(args2) and sorted(auxs1) == sorted(auxs2)
    for name in args1:
        assert np.array_equal(args1[name].asnumpy(), args2[name].asnumpy())


def test_resnet18_round_trips():
    from mxnet.gluon.model_zoo import vision

    x = data((2, 3, 32, 32))
    mx.random.seed(3)
    net = vision.resnet18_v1(classes=10)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    with autograd.record():  # move BatchNorm statistics off their init
        net(x)
    ref = net(x)

    mod = net.to_module(data_shapes=[("data", x.shape)])
    close(predict(mod, x), ref)
    close(mod.to_gluon()(x), ref)

    fresh = vision.resnet18_v1(classes=10)  # never initialised: deferred shapes
    mod.to_gluon(fresh)
    close(fresh(x), ref)

    again = fresh.to_module(data_shapes=[("data", x.shape)])  # Module -> Gluon -> Module
    close(predict(again, x), ref)


def test_seed_flow_train_gluon_then_module_then_fresh_copy():
    x = data((8, 3, 8, 8))
    net = trained_cnn(x, steps=5)
    mod = net.to_module(data_shapes=[("data", x.shape)])
    close(predict(mod, x), net(x))
    fresh = cnn()
    fresh.initialize()  # initialised, random values: overwritten
    fresh.hybridize()
    fresh(x)
    mod.to_gluon(fresh)
    close(fresh(x), net(x))


# --- Module -> Gluon ------------------------------------------------------------------------


def test_module_straight_from_load_has_only_params(tmp_path):
    x = data()
    mod = symbol_module(x)
    ref = predict(mod, x)
    mod.save_checkpoint(str(tmp_path / "m"), 1)
    loaded = mx.mod.Module.load(str(tmp_path / "m"), 1)
    assert not loaded.binded
    net = loaded.to_gluon()
    close(net(x), ref)
    net2 = net.to_module()
    net2.bind(data_shapes=[("data", x.shape)], for_training=False)
    close(predict(net2, x), ref)


def test_module_bound_without_label_names_still_gets_softmax():
    # label_names=None makes MXNet treat softmax_label as a parameter; it is no input of the
    # inference graph.
    x = data()
    mod = symbol_module(x, fit=False, label_names=None)
    mod.bind(data_shapes=[("data", x.shape)], for_training=False)
    mod.init_params(
        mx.init.Xavier(), arg_params={"softmax_label": mx.nd.zeros(4)}, allow_missing=True
    )
    net = mod.to_gluon()
    assert "softmax_label" not in net.collect_params()
    close(net(x), predict(mod, x))


LOSS_HEADS = {
    "SoftmaxOutput": lambda s: mx.sym.SoftmaxOutput(s, name="head"),
    "LinearRegressionOutput": lambda s: mx.sym.LinearRegressionOutput(s, name="head"),
    "LogisticRegressionOutput": lambda s: mx.sym.LogisticRegressionOutput(s, name="head"),
    "MAERegressionOutput": lambda s: mx.sym.MAERegressionOutput(s, name="head"),
    "SVMOutput": lambda s: mx.sym.SVMOutput(s, name="head"),
}


@pytest.mark.parametrize("head", sorted(LOSS_HEADS))
def test_loss_heads_become_their_inference_op(head):
    x = mx.nd.array(np.random.RandomState(4).uniform(-2, 2, size=(3, 5)).astype("float32"))
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc")
    mod = mx.mod.Module(LOSS_HEADS[head](fc), label_names=["head_label"])
    label_shape = (3,) if head in ("SoftmaxOutput", "SVMOutput") else (3, 4)
    mod.bind(
        data_shapes=[("data", x.shape)],
        label_shapes=[("head_label", label_shape)],
        for_training=False,
    )
    mx.random.seed(5)
    mod.init_params(mx.init.Xavier())
    ref = predict(mod, x)
    net = mod.to_gluon()
    assert "head_label" not in net.collect_params()
    close(net(x), ref)
    if head == "SoftmaxOutput":
        assert np.allclose(ref.asnumpy().sum(axis=1), 1, atol=1e-6)


@pytest.mark.filterwarnings("ignore:Data provided by label_shapes")
@pytest.mark.parametrize(
    "flags",
    [{}, {"multi_output": True}, {"preserve_shape": True}],
    ids=["flatten", "multi_output", "preserve_shape"],
)
def test_softmax_output_on_feature_maps(flags):
    # N-d SoftmaxOutput: what it normalises over depends on the flags (and on MKLDNN).
    x = data((2, 3, 4, 4))
    conv = mx.sym.Convolution(mx.sym.var("data"), num_filter=3, kernel=(1, 1), name="c")
    mod = mx.mod.Module(mx.sym.SoftmaxOutput(conv, name="sm", **flags), label_names=["sm_label"])
    mod.bind(data_shapes=[("data", x.shape)], for_training=False)
    mx.random.seed(6)
    mod.init_params(mx.init.Xavier())
    close(mod.to_gluon()(x), predict(mod, x))


@pytest.mark.filterwarnings("ignore:Data provided by label_shapes")
def test_multi_output_symbol_with_two_heads():
    x = data((3, 5))
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc")
    group = mx.sym.Group(
        [mx.sym.SoftmaxOutput(fc, name="cls"), mx.sym.LinearRegressionOutput(fc, name="reg")]
    )
    mod = mx.mod.Module(group, label_names=["cls_label", "reg_label"])
    mod.bind(data_shapes=[("data", x.shape)], for_training=False)
    mod.init_params(mx.init.Xavier())
    ref = predict(mod, x)
    out = mod.to_gluon()(x)
    assert len(out) == 2
    close(out[0], ref[0])
    close(out[1], ref[1])


def test_fixed_params_become_grad_req_null_and_back():
    x = data()
    d = mx.sym.var("data")
    fc = mx.sym.FullyConnected(mx.sym.flatten(d), num_hidden=3, name="fc")
    mod = mx.mod.Module(mx.sym.SoftmaxOutput(fc, name="softmax"), fixed_param_names=["fc_weight"])
    mod.bind(
        data_shapes=[("data", x.shape)], label_shapes=[("softmax_label", (4,))], for_training=False
    )
    mod.init_params(mx.init.Xavier())
    net = mod.to_gluon()
    params = net.collect_params()
    assert params["fc_weight"].grad_req == "null"
    assert params["fc_bias"].grad_req == "write"
    back = net.to_module()
    assert back._fixed_param_names == ["fc_weight"]


# --- training after conversion, copy vs share -----------------------------------------------


def test_converted_symbol_block_trains_with_gluon_trainer():
    x = data()
    mod = symbol_module(x)
    net = mod.to_gluon()
    before = params_of(net)
    module_before = {k: v.asnumpy().copy() for k, v in mod.get_params()[0].items()}
    y = mx.nd.array([1, 2, 3, 4])
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
    losses = []
    for _ in range(4):
        with autograd.record():
            # The net ends in softmax: train on its log.
            loss = -mx.nd.pick(mx.nd.log(net(x) + 1e-8), y)
        loss.backward()
        trainer.step(x.shape[0])
        losses.append(float(loss.mean().asscalar()))
    assert losses[-1] < losses[0]
    after = params_of(net)
    assert any(not np.array_equal(before[k], after[k]) for k in before if "weight" in k)
    # copy=True (default): the module did not move.
    for name, value in mod.get_params()[0].items():
        assert np.array_equal(value.asnumpy(), module_before[name])


def test_block_loaded_by_structure_trains():
    x = data()
    mod = symbol_module(x)
    matching = nn.HybridSequential()  # the Gluon twin of symbol_module's network
    with matching.name_scope():
        matching.add(
            nn.Conv2D(6, 3, padding=1),
            nn.BatchNorm(),
            nn.Activation("relu"),
            nn.MaxPool2D(2),
            nn.Dropout(0.3),
            nn.Flatten(),
            nn.Dense(10),
        )
    mod.to_gluon(matching)
    close(mx.nd.softmax(matching(x)), predict(mod, x))
    trainer = gluon.Trainer(matching.collect_params(), "sgd", {"learning_rate": 0.05})
    y = mx.nd.array([1, 2, 3, 4])
    losses = []
    for _ in range(5):
        with autograd.record():
            loss = gluon.loss.SoftmaxCrossEntropyLoss()(matching(x), y)
        loss.backward()
        trainer.step(x.shape[0])
        losses.append(float(loss.mean().asscalar()))
    assert losses[-1] < losses[0]


def test_copy_default_independent_both_ways():
    x = data()
    net = trained_cnn(x)
    mod = net.to_module(data_shapes=[("data", x.shape)])
    ref = predict(mod, x).asnumpy()
    sgd_step(net, x)  # Gluon trains: the module keeps its
    close(predict(mod, x), ref)
    assert not np.allclose(net(x).asnumpy(), ref, atol=1e-4)

    back = mod.to_gluon()
    gluon_ref = back(x).asnumpy()
    mod2 = net.to_module(
        data_shapes=[("data", x.shape)],
        loss="softmax",
        label_shapes=[("softmax_label", (x.shape[0],))],
    )
    g2 = mod2.to_gluon()
    g2_ref = g2(x).asnumpy()
    mod2.init_optimizer(optimizer_params={"learning_rate": 0.5})
    batch = mx.io.DataBatch([x], [mx.nd.array([1, 2, 3, 4])])
    mod2.forward_backward(batch)
    mod2.update()  # the module trains: Gluon keeps its
    close(g2(x), g2_ref)
    close(back(x), gluon_ref)


def test_share_unbound_to_module_then_quantization_style_read():
    x = data()
    net = trained_cnn(x)
    mod = net.to_module(copy=False)
    arg_params, aux_params = unbound_params(mod)
    for name, param in net.collect_params().items():
        held = arg_params.get(name, aux_params.get(name))
        assert held is param.data()  # the very arrays, nothing copied
    w = net.collect_params()[sorted(arg_params)[0]]
    w.set_data(w.data() * 0 + 0.25)  # an in-place write on the Gluon side
    assert np.all(unbound_params(mod)[0][w.name].asnumpy() == 0.25)


def test_share_bound_to_module_both_sides_train():
    x = data()
    net = trained_cnn(x)
    mod = net.to_module(
        data_shapes=[("data", x.shape)],
        copy=False,
        loss="softmax",
        label_shapes=[("softmax_label", (x.shape[0],))],
    )
    close(predict(mod, x), mx.nd.softmax(net(x)))
    # Gluon trains: the module predicts with the new weights, and get_params has them.
    sgd_step(net, x)
    close(predict(mod, x), mx.nd.softmax(net(x)))
    name = net[0].weight.name
    assert np.array_equal(mod.get_params()[0][name].asnumpy(), net[0].weight.data().asnumpy())
    # The module trains: Gluon sees it.
    mod.init_optimizer(optimizer_params={"learning_rate": 0.5})
    before = net(x).asnumpy()
    mod.forward_backward(mx.io.DataBatch([x], [mx.nd.array([1, 2, 3, 4])]))
    mod.update()
    after = net(x)
    assert not np.allclose(after.asnumpy(), before, atol=1e-4)
    close(predict(mod, x), mx.nd.softmax(after))


def test_share_to_gluon_from_bound_module():
    x = data()
    mod = symbol_module(x)
    net = mod.to_gluon(copy=False)
    close(net(x), predict(mod, x))
    mod.init_optimizer(optimizer_params={"learning_rate": 0.5}, force_init=True)
    mod.forward_backward(mx.io.DataBatch([x], [mx.nd.array([1, 2, 3, 4])]))
    mod.update()
    close(net(x), predict(mod, x))  # the module trained: Gluon follows
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
    with autograd.record():
        loss = -mx.nd.pick(mx.nd.log(net(x) + 1e-8), mx.nd.array([1, 2, 3, 4]))
    loss.backward()
    trainer.step(x.shape[0])
    close(predict(mod, x), net(x))  # Gluon trained: the module follows
    arg_params = mod.get_params()[0]
    assert np.array_equal(
        arg_params["fc1_weight"].asnumpy(), net.collect_params()["fc1_weight"].data().asnumpy()
    )


def test_share_into_user_block():
    x = data()
    net = trained_cnn(x)
    mod = net.to_module(data_shapes=[("data", x.shape)])
    net2 = cnn()
    mod.to_gluon(net2, copy=False)
    exec_arrays = mod._exec_group.param_arrays
    assert any(
        p.data() is arrays[0] for p in net2.collect_params().values() for arrays in exec_arrays
    )
    close(net2(x), predict(mod, x))


# --- several inputs and outputs, nested blocks ----------------------------------------------


class TwoTower(gluon.HybridBlock):
    """Two inputs, two outputs, nested children (a Sequential inside)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.left = nn.HybridSequential()
            self.left.add(nn.Dense(6, activation="relu"), nn.BatchNorm(), nn.Dropout(0.2))
            self.right = nn.Dense(6)
            self.head_a = nn.Dense(3)
            self.head_b = nn.Dense(2)

    def hybrid_forward(self, F, a, b):
        h = self.left(a) + self.right(b)
        return self.head_a(h), self.head_b(F.relu(h))


def two_inputs():
    rng = np.random.RandomState(7)
    return (
        mx.nd.array(rng.uniform(size=(4, 5)).astype("float32")),
        mx.nd.array(rng.uniform(size=(4, 7)).astype("float32")),
    )


@pytest.mark.parametrize("hybridize", [True, False], ids=["cached-graph", "symbol-call"])
def test_several_inputs_and_outputs(hybridize):
    a, b = two_inputs()
    net = TwoTower()
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    with autograd.record():
        net(a, b)
    ref = net(a, b)
    mod = net.to_module(data_shapes=[("left", a.shape), ("right", b.shape)])
    assert mod.data_names == ["left", "right"]
    outs = predict(mod, a, b)
    assert len(outs) == 2
    close(outs[0], ref[0])
    close(outs[1], ref[1])

    back = mod.to_gluon()
    out_back = back(a, b)
    close(out_back[0], ref[0])
    close(out_back[1], ref[1])

    fresh = TwoTower()
    mod.to_gluon(fresh)
    out_fresh = fresh(a, b)
    close(out_fresh[0], ref[0])
    close(out_fresh[1], ref[1])


def test_cached_graph_keeps_export_input_names():
    a, b = two_inputs()
    net = TwoTower()
    net.initialize()
    net.hybridize()
    net(a, b)
    mod = net.to_module()
    assert mod.data_names == ["data0", "data1"]  # as HybridBlock.export names them


def test_cached_graph_inputs_renamed():
    x = data()
    net = trained_cnn(x)  # hybridized and run: its graph's input is 'data'
    mod = net.to_module(data_names=["image"], data_shapes=[("image", x.shape)])
    assert mod.data_names == ["image"]
    assert "image" in mod.symbol.list_arguments() and "data" not in mod.symbol.list_arguments()
    close(predict(mod, x), net(x))
    net_back = mod.to_gluon()
    close(net_back(x), net(x))


def test_data_parallel_contexts():
    # Two CPU contexts stand in for two devices: one parameter copy per context each way.
    x = data()
    net = trained_cnn(x)
    two = [mx.cpu(0), mx.cpu(1)]
    mod = net.to_module(data_shapes=[("data", x.shape)], context=two)
    assert len(mod._exec_group.execs) == 2
    close(predict(mod, x), net(x))
    back = mod.to_gluon()
    weight = back.collect_params()[net[0].weight.name]
    assert weight.list_ctx() == two
    close(back(x), net(x))
    close(back(x.as_in_context(mx.cpu(1))), net(x))

    shared = cnn()
    shared.initialize(ctx=two)
    shared(x)
    mod.to_gluon(shared, copy=False)
    close(shared(x), net(x))

    net2 = trained_cnn(x)
    net2.collect_params().reset_ctx(two)
    mod2 = net2.to_module(data_shapes=[("data", x.shape)], copy=False)
    trainer = gluon.Trainer(net2.collect_params(), "sgd", {"learning_rate": 0.5})
    xs = gluon.utils.split_and_load(x, two)
    ys = gluon.utils.split_and_load(mx.nd.array([1, 2, 3, 4]), two)
    with autograd.record():
        losses = [gluon.loss.SoftmaxCrossEntropyLoss()(net2(a), b) for a, b in zip(xs, ys)]
    autograd.backward(losses)
    trainer.step(x.shape[0])  # updates both contexts' copies
    close(predict(mod2, x), net2(x))


@pytest.mark.filterwarnings("ignore:Parameters already initialized")
def test_to_module_with_loss_fits():
    x = data((8, 3, 8, 8))
    y = mx.nd.array(np.arange(8) % 10)
    net = trained_cnn(x, steps=1)
    mod = net.to_module(loss="softmax", data_shapes=[("data", x.shape)])
    assert mod.label_names == ["softmax_label"]
    it = mx.io.NDArrayIter(x, y, batch_size=8)
    score_before = mod.score(it, "ce")[0][1]
    it.reset()
    mod.fit(it, num_epoch=5, optimizer_params={"learning_rate": 0.1})
    assert mod.score(it, "ce")[0][1] < score_before


def test_to_module_with_a_callable_loss():
    x = data()
    net = trained_cnn(x)

    def l2(out, label):
        return mx.sym.LinearRegressionOutput(out, label, name="l2")

    mod = net.to_module(loss=l2, label_names=["target"], data_shapes=[("data", x.shape)])
    assert mod.label_names == ["target"]
    assert mod._label_shapes[0].shape == (4, 10)  # inferred from the output
    close(predict(mod, x), net(x))  # regression head: identity
    mod.init_optimizer(optimizer_params={"learning_rate": 0.01})
    mod.forward_backward(mx.io.DataBatch([x], [mx.nd.zeros((4, 10))]))
    mod.update()


def test_bad_losses():
    net = trained_cnn(data())
    with pytest.raises(ValueError, match="'softmax'"):
        net.to_module(loss="hinge")
    with pytest.raises(ValueError, match="'scale'"):
        net.to_module(
            loss=lambda out, label: mx.sym.broadcast_mul(
                mx.sym.SoftmaxOutput(out, label), mx.sym.var("scale")
            )
        )


# --- errors ---------------------------------------------------------------------------------


def test_mismatched_block_raises_and_loads_nothing():
    x = data()
    net = trained_cnn(x)
    mod = net.to_module()
    wrong = cnn(classes=7)  # not 10
    wrong.initialize()
    wrong(x)
    before = params_of(wrong)
    with pytest.raises(ValueError) as err:
        mod.to_gluon(wrong)
    message = str(err.value)
    assert "nothing was loaded" in message
    assert "dense3_weight" in message or "dense1_weight" in message
    assert "(7, 16)" in message and "(10, 16)" in message
    after = params_of(wrong)
    for name in before:  # the matching conv too: untouched
        assert np.array_equal(before[name], after[name]), name


def test_block_with_fewer_layers_lists_the_unmatched():
    x = data()
    mod = trained_cnn(x).to_module()
    short = nn.HybridSequential()
    with short.name_scope():
        short.add(nn.Conv2D(8, 3, padding=1), nn.BatchNorm(), nn.Flatten(), nn.Dense(10))
    with pytest.raises(ValueError) as err:
        mod.to_gluon(short)
    message = str(err.value)
    assert "8 argument parameters in the module, 6 in the block" in message
    assert "has no counterpart in the block" in message


def test_uninitialised_block_names_its_parameters():
    net = cnn()
    with pytest.raises(ValueError) as err:
        net.to_module()
    message = str(err.value)
    assert "not initialised" in message
    assert net[0].weight.name in message


def test_deferred_block_names_its_parameters():
    net = cnn()
    net.initialize()  # shapes unknown until a forward pass
    with pytest.raises(ValueError) as err:
        net.to_module(data_shapes=[("data", (2, 3, 8, 8))])
    assert net[0].weight.name in str(err.value)
    assert "forward pass" in str(err.value)


def test_module_without_params():
    mod = mx.mod.Module(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2), label_names=None)
    with pytest.raises(ValueError, match="no parameters yet"):
        mod.to_gluon()


def test_wrong_types():
    with pytest.raises(TypeError, match="expected an mxnet Module"):
        mxcompat.to_gluon(object())
    with pytest.raises(TypeError, match="HybridBlock"):
        mxcompat.to_module(nn.Sequential())
    mod = trained_cnn(data()).to_module()
    with pytest.raises(TypeError, match="HybridBlock"):
        mod.to_gluon(nn.Sequential())


def test_loss_that_cannot_be_replaced_is_named():
    d, label = mx.sym.var("data"), mx.sym.var("target")
    fc = mx.sym.FullyConnected(d, num_hidden=2, name="fc")
    loss = mx.sym.MakeLoss(mx.sym.mean(mx.sym.square(fc - label)), name="l2")
    mod = mx.mod.Module(loss, label_names=["target"])
    mod.bind(data_shapes=[("data", (2, 3))], label_shapes=[("target", (2, 2))])
    mod.init_params()
    with pytest.raises(ValueError, match="'target'"):
        mod.to_gluon()


def test_block_graph_that_cannot_be_built():
    net = TwoTower()
    net.initialize()
    with pytest.raises(ValueError, match="one name per input"):
        net.to_module()  # two inputs, one default name


# --- the patch lifecycle --------------------------------------------------------------------


def test_unpatch_removes_the_methods_and_functions_still_work():
    x = data()
    net = trained_cnn(x)
    mxcompat.unpatch("convert")
    try:
        assert not hasattr(mx.mod.Module, "to_gluon")
        assert not hasattr(gluon.HybridBlock, "to_module")
        mod = mxcompat.to_module(net, data_shapes=[("data", x.shape)])
        close(mxcompat.to_gluon(mod)(x), net(x))
    finally:
        mxcompat.patch("convert")
    assert mx.mod.Module.to_gluon is mxcompat.to_gluon
    assert gluon.HybridBlock.to_module is mxcompat.to_module


def test_batchnorm_statistics_of_the_last_step_are_converted():
    # MXNet <= 1.7 does not order a read of BatchNorm's running statistics after the write of
    # the training step just pushed (facts.GLUON_AUX_WRITES_ORDERED); to_module waits.
    # Without the wait about 1 run in 8 (1.3-1.6) or 3 in 4 (1.7) copies stale statistics: 60
    # runs miss a regression with probability 0.875**60 < 1e-3.
    x = data()
    y = mx.nd.array([1, 2, 3, 4])
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for _ in range(60):
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Conv2D(4, 3), nn.BatchNorm(), nn.Flatten(), nn.Dense(3))
        net.initialize(mx.init.Xavier())
        net.hybridize()
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
        for _ in range(2):
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(x.shape[0])
        mod = net.to_module()
        mx.nd.waitall()
        for name, value in unbound_params(mod)[1].items():
            assert np.array_equal(value.asnumpy(), net.collect_params()[name].data().asnumpy())


def test_threads_converting_at_once_leave_symbol_iteration_as_mxnet_has_it():
    # 1.3/1.4: to_gluon swaps Symbol.__iter__ while it builds a SymbolBlock; eight threads
    # converting at once must leave MXNet's own __iter__ behind, and each get a working net.
    import threading

    own = vars(mx.sym.Symbol)["__iter__"]
    x = data()
    net = trained_cnn(x)
    mod = net.to_module()
    want = net(x).asnumpy()
    errors, outs = [], []
    barrier = threading.Barrier(8)

    def convert():
        try:
            barrier.wait()
            for _ in range(5):
                block = mod.to_gluon()
                outs.append(block(x).asnumpy())
        except Exception as exc:
            errors.append(exc)

    assert run_threads(convert, 8, 120) == [], "a thread hung"
    assert not errors, errors
    assert len(outs) == 40
    for out in outs:
        np.testing.assert_allclose(out, want, rtol=RTOL, atol=ATOL)
    assert vars(mx.sym.Symbol)["__iter__"] is own


@pytest.mark.parametrize("copy", [True, False])
def test_to_gluon_parameters_take_their_arrays_dtypes(copy):
    # to_gluon's SymbolBlock skips MXNet's dtype inference: each parameter's dtype is its
    # array's, float64 here, and the block computes what the module's source does.
    x = data().astype("float64")
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(4, 3), nn.BatchNorm(), nn.Flatten(), nn.Dense(3))
    net.initialize(mx.init.Xavier())
    net.cast("float64")
    net.hybridize()
    want = net(x)
    block = net.to_module().to_gluon(copy=copy)
    for name, param in block.params.items():
        assert np.dtype(param.dtype) == np.float64, name
        assert param.data().dtype == np.float64, name
    out = block(x)
    assert out.dtype == np.float64
    close(out, want)


def test_dtype_inference_is_skipped_in_the_converting_thread_only():
    # While to_gluon builds its SymbolBlock, another thread's SymbolBlock still infers its
    # parameters' dtypes from its typed inputs; afterwards MXNet's own function is back.
    import threading

    from mxcompat.convert import symbol_block

    own = vars(mx.gluon.block)["_infer_param_types"]
    sym = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")

    def weight_dtype():
        block = gluon.SymbolBlock(sym, [mx.sym.var("data", dtype="float64")])
        return np.dtype(block.params["fc_weight"].dtype)

    seen = []
    with symbol_block._param_dtypes_given():
        assert weight_dtype() == np.float32  # MXNet's default: the caller sets each dtype
        other = threading.Thread(target=lambda: seen.append(weight_dtype()))
        other.start()
        other.join(60)
    assert seen == [np.float64]
    assert weight_dtype() == np.float64
    assert vars(mx.gluon.block)["_infer_param_types"] is own


def test_symbol_iteration_swaps_overlapping_out_of_order_restore_mxnets_own():
    # Two conversions in two threads, the first to start ends first (what the threaded test
    # above provokes at random): MXNet's own __iter__ must come back, not the other's copy.
    from mxcompat.convert import symbol_block

    own = vars(mx.sym.Symbol)["__iter__"]
    own_prefix = vars(mx.gluon.block)["_common_prefix"]
    sym = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    first = symbol_block._storage_walk_skipped(sym, "test")
    second = symbol_block._storage_walk_skipped(sym, "test")
    first.__enter__()
    second.__enter__()
    assert vars(mx.sym.Symbol)["__iter__"] is not own
    assert vars(mx.gluon.block)["_common_prefix"] is os.path.commonprefix
    first.__exit__(None, None, None)
    assert vars(mx.sym.Symbol)["__iter__"] is not own  # the second is still building
    assert vars(mx.gluon.block)["_common_prefix"] is os.path.commonprefix
    second.__exit__(None, None, None)
    assert vars(mx.sym.Symbol)["__iter__"] is own
    assert vars(mx.gluon.block)["_common_prefix"] is own_prefix


@pytest.mark.parametrize(
    "names",
    [
        [],
        ["conv0_weight"],
        ["resnetv10_conv0_weight", "resnetv10_dense0_bias", "resnetv10_batchnorm0_gamma"],
        ["a_w", "b_w"],
        ["net_w", "net_", "net_w2"],  # one name a prefix of the others
        ["x", ""],
        ["caf\u00e9_w", "caf\u00e9_b"],
    ],
)
def test_symbolblock_common_prefix_stand_in_gives_mxnets_answer(names):
    # SymbolBlock keys its _reg_params by what _common_prefix strips: built by to_gluon,
    # os.path.commonprefix stands in for it.
    assert os.path.commonprefix(names) == vars(mx.gluon.block)["_common_prefix"](names)


def _row_sparse_module():
    data = mx.sym.var("data", stype="csr")
    weight = mx.sym.var("fc_weight", stype="row_sparse", shape=(4, 2))
    mod = mx.mod.Module(mx.sym.sparse.dot(data, weight), label_names=None)
    mod.bind(data_shapes=[("data", (3, 4))])
    mod.init_params(mx.init.One())
    return mod


def test_to_gluon_refuses_row_sparse_parameters_as_symbolblock_does():
    # to_gluon checks the storage types itself (one C call) and skips SymbolBlock's own walk
    # of every node: the same graphs are refused, in mxcompat's words.
    from mxcompat.convert.symbol_block import _row_sparse_nodes

    mod = _row_sparse_module()
    with pytest.raises(AssertionError, match="fc_weight.*row_sparse"):
        gluon.SymbolBlock(mod.symbol, [mx.sym.var("data")])
    for copy in (True, False):
        with pytest.raises(ValueError) as err:
            mod.to_gluon(copy=copy)
        assert str(err.value) == (
            "mxcompat.to_gluon: a Gluon SymbolBlock cannot hold row_sparse parameters, "
            "and the module's graph has 'fc_weight'"
        )
    assert _row_sparse_nodes(mx.sym.var("w", stype="csr") + 1) == []
    # Two row_sparse nodes of one name (a graph MXNet would refuse at the first): both named.
    a = mx.sym.var("w", stype="row_sparse")
    assert _row_sparse_nodes(mx.sym.Group([a * 2, mx.sym.var("w", stype="row_sparse")])) == [
        "w",
        "w",
    ]


def test_symbolblock_walk_is_skipped_in_the_converting_thread_only():
    # While to_gluon builds its SymbolBlock, another thread's SymbolBlock still walks its
    # nodes (and refuses a row_sparse one); afterwards MXNet's own __iter__ is back.
    import threading

    from mxcompat.convert import symbol_block

    own = vars(mx.sym.Symbol)["__iter__"]
    sparse = _row_sparse_module().symbol
    dense = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    seen = []

    def build_sparse():
        try:
            gluon.SymbolBlock(sparse, [mx.sym.var("data")])
        except AssertionError as e:
            seen.append(str(e))

    with symbol_block._storage_walk_skipped(dense, "test"):
        assert list(dense.get_internals()) == []  # this thread: the walk is skipped
        other = threading.Thread(target=build_sparse)
        other.start()
        other.join(60)
        internals = []
        reader = threading.Thread(target=lambda: internals.extend(dense.get_internals()))
        reader.start()
        reader.join(60)
    assert seen == [
        "SymbolBlock doesn't support Parameter 'fc_weight' because its storage type is "
        "'row_sparse'."
    ]
    assert [s.name for s in internals] == ["data", "fc_weight", "fc_bias", "fc"]
    assert [s.name for s in dense.get_internals()] == ["data", "fc_weight", "fc_bias", "fc"]
    assert vars(mx.sym.Symbol)["__iter__"] is own


# --- NDArrays read through MXNet's C API: the same answers as MXNet's properties ------------------


def _fact_arrays():
    dtypes = ["float32", "float64", "float16", "uint8", "int32", "int8", "int64"]
    shapes = [(3,), (2, 3, 4), (1, 1, 1, 1), (5, 1)]
    contexts = [mx.cpu(0), mx.cpu(3)]
    return [mx.nd.ones(s, ctx=c, dtype=d) for d in dtypes for s in shapes for c in contexts]


def test_ndarray_c_api_matches_mxnets_own_properties():
    from mxcompat._core import facts
    from mxcompat.convert import ndarray_c_api

    # The pip wheels of every release are built with 32-bit shapes: the direct reader runs.
    assert facts.int64_tensor_size() is False
    direct, own = ndarray_c_api.reader(), ndarray_c_api._Properties()
    assert type(direct) is ndarray_c_api._Direct
    arrays = _fact_arrays()
    for a in arrays:
        seen = direct.read(a)
        assert seen == own.read(a) == (a.shape, a.dtype, a.context)
        assert type(seen[1]) is type(a.dtype) and isinstance(seen[2], mx.Context)
    assert direct.contexts(arrays) == own.contexts(arrays)
    # One Context object per device, as a bound module's contexts are one list.
    assert direct.read(arrays[0])[2] is direct.read(arrays[2])[2]


@pytest.mark.parametrize("reader", ["_Direct", "_Properties"])
def test_unallocated_gradients_take_the_shape_dtype_and_context_asked(reader):
    from mxcompat.convert import ndarray_c_api

    made = getattr(ndarray_c_api, reader)()
    for a in _fact_arrays():
        shape, dtype, ctx = made.read(a)
        grad = made.unallocated(shape, dtype, ctx)
        assert type(grad) is mx.nd.NDArray
        assert (grad.shape, grad.dtype, grad.context) == (a.shape, a.dtype, a.context)
        grad[:] = 2
        assert np.array_equal(grad.asnumpy(), np.full(a.shape, 2, dtype=a.dtype))
    # A dtype given as a name, as MXNet's own allocation takes it.
    grad = made.unallocated((2, 2), "float16", mx.cpu())
    assert grad.dtype == np.float16
