"""Frozen BatchNorm statistics (patch ``frozen_statistics``): a registry pattern that matches
a running mean/variance holds it bit for bit through training steps, Module and Gluon alike,
while the training forward's output and every gradient stay what plain MXNet computes.

Each test trains two identical copies side by side: one with the statistics frozen, one
without (the reference).  Outputs and gradients must be equal bit for bit; the frozen copy's
statistics must equal their start values, the reference's must have moved (so the test can
fail).  Values are read after ``mx.nd.waitall()``: up to 1.7 a plain read of a statistic can
come before the backward's write (facts.GLUON_AUX_WRITES_ORDERED).
"""

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon

import mxcompat

BATCH = 4


@pytest.fixture(autouse=True)
def _fresh_caches():
    """Each test starts with the patch's caches empty: none may pass on another's settling."""
    from mxcompat.freeze import frozen_statistics

    frozen_statistics._state.reset()


def _read(arrays):
    mx.nd.waitall()
    return [a.asnumpy().copy() for a in arrays]


def _data(seed, n=4):
    rng = np.random.RandomState(seed)
    return [
        (
            rng.uniform(-1, 1, (BATCH, 3, 6, 6)).astype("float32"),
            rng.uniform(-1, 1, (BATCH, 2)).astype("float32"),
        )
        for _ in range(n)
    ]


# --- Module -------------------------------------------------------------------------------------


def _conv_bn_symbol():
    data = mx.sym.var("data")
    net = mx.sym.Convolution(data, num_filter=4, kernel=(3, 3), name="conv0")
    net = mx.sym.BatchNorm(net, fix_gamma=False, name="bn0")
    net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.Convolution(net, num_filter=4, kernel=(3, 3), name="conv1")
    net = mx.sym.BatchNorm(net, fix_gamma=False, name="bn1")
    net = mx.sym.FullyConnected(mx.sym.flatten(net), num_hidden=2, name="fc")
    return mx.sym.LinearRegressionOutput(net, name="lro")


def _bound_module():
    mod = mx.mod.Module(_conv_bn_symbol(), label_names=("lro_label",))
    mod.bind(data_shapes=[("data", (BATCH, 3, 6, 6))], label_shapes=[("lro_label", (BATCH, 2))])
    mx.random.seed(3)
    mod.init_params(mx.init.Uniform(0.5))
    return mod


def _module_step(mod, data, label):
    batch = mx.io.DataBatch([mx.nd.array(data)], [mx.nd.array(label)])
    mod.forward(batch, is_train=True)
    out = _read(mod.get_outputs())
    mod.backward()
    group = mod._exec_group
    return out, _read(g[0] for g in group.grad_arrays if g[0] is not None)


def _module_aux(mod):
    group = mod._exec_group
    return dict(zip(group.aux_names, _read(a[0] for a in group.aux_arrays)))


def _assert_module_held(frozen_names):
    held, reference = _bound_module(), _bound_module()
    start = _module_aux(held)
    assert all(np.array_equal(v, start[n]) for n, v in _module_aux(reference).items())
    for data, label in _data(0):
        mxcompat.freeze("bn0_moving_*")
        out, grads = _module_step(held, data, label)
        mxcompat.unfreeze()
        ref_out, ref_grads = _module_step(reference, data, label)
        # The forward normalises with the batch's statistics either way: same math.
        assert all(np.array_equal(a, b) for a, b in zip(out, ref_out))
        assert all(np.array_equal(a, b) for a, b in zip(grads, ref_grads))
    end, ref_end = _module_aux(held), _module_aux(reference)
    for name in start:
        if name in frozen_names:
            assert np.array_equal(end[name], start[name]), name
        else:
            assert not np.array_equal(end[name], start[name]), name
        # Moved by the reference, so the held ones could have moved too.
        assert not np.array_equal(ref_end[name], start[name]), name


def test_module_statistics_held_bit_for_bit_and_forward_unchanged():
    _assert_module_held({"bn0_moving_mean", "bn0_moving_var"})


def test_training_forward_alone_moves_no_statistic_and_backward_does():
    # facts.BATCHNORM_STATS_MOVE_IN_BACKWARD: why the patch works around the backward.
    mod = _bound_module()
    start = _module_aux(mod)
    data, label = _data(1)[0]
    mod.forward(mx.io.DataBatch([mx.nd.array(data)], [mx.nd.array(label)]), is_train=True)
    after_forward = _module_aux(mod)
    assert all(np.array_equal(after_forward[n], start[n]) for n in start)
    mod.backward()
    after_backward = _module_aux(mod)
    assert all(not np.array_equal(after_backward[n], start[n]) for n in start)


def test_module_fit_holds_frozen_statistics_and_moves_the_others():
    mxcompat.freeze("bn1_*")  # bn1's gamma and beta (update skip) and its statistics
    mod = _bound_module()
    arg0, aux0 = [{k: v.asnumpy().copy() for k, v in d.items()} for d in mod.get_params()]
    data = _data(2)
    it = mx.io.NDArrayIter(
        np.concatenate([d for d, _ in data]),
        np.concatenate([lab for _, lab in data]),
        batch_size=BATCH,
        label_name="lro_label",
    )
    mod.fit(
        it, num_epoch=2, optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9}
    )
    mx.nd.waitall()
    arg1, aux1 = [{k: v.asnumpy() for k, v in d.items()} for d in mod.get_params()]
    for name in aux0:
        assert np.array_equal(aux1[name], aux0[name]) == name.startswith("bn1_"), name
    for name in arg0:
        assert np.array_equal(arg1[name], arg0[name]) == name.startswith("bn1_"), name


def test_module_unfrozen_statistics_move_again():
    mod = _bound_module()
    mxcompat.freeze("bn*_moving_*")
    start = _module_aux(mod)
    for data, label in _data(3, 2):
        _module_step(mod, data, label)
    assert all(np.array_equal(v, start[n]) for n, v in _module_aux(mod).items())
    mxcompat.unfreeze("bn*_moving_*")
    _module_step(mod, *_data(4, 1)[0])
    assert all(not np.array_equal(v, start[n]) for n, v in _module_aux(mod).items())


def test_module_statistics_move_when_the_patch_is_off():
    mxcompat.unpatch("frozen_statistics")
    mxcompat.freeze("bn*_moving_*")
    mod = _bound_module()
    start = _module_aux(mod)
    _module_step(mod, *_data(5, 1)[0])
    assert all(not np.array_equal(v, start[n]) for n, v in _module_aux(mod).items())


# --- Gluon --------------------------------------------------------------------------------------


def _gluon_net(hybridize):
    net = gluon.nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(
            gluon.nn.Conv2D(4, 3, in_channels=3),
            gluon.nn.BatchNorm(in_channels=4),
            gluon.nn.Activation("relu"),
            gluon.nn.Conv2D(4, 3, in_channels=4),
            gluon.nn.BatchNorm(in_channels=4),
            gluon.nn.Dense(2, in_units=16),
        )
    mx.random.seed(5)
    net.initialize(mx.init.Uniform(0.5))
    if hybridize:
        net.hybridize()
    return net


def _statistics(net):
    params = net.collect_params()
    names = [n for n in params.keys() if "running" in n]
    return dict(zip(names, _read(params[n].data() for n in names)))


def _gluon_step(net, data, label, how):
    x, y = mx.nd.array(data), mx.nd.array(label)
    weights = [p for p in net.collect_params().values() if p.grad_req != "null"]
    with autograd.record():
        out = net(x)
        loss = mx.nd.sum(mx.nd.square(out - y))
    if how == "ndarray":
        loss.backward()
        grads = [p.grad() for p in weights]
    elif how == "autograd.backward":
        autograd.backward([loss])
        grads = [p.grad() for p in weights]
    else:  # autograd.grad
        grads = autograd.grad([loss], [p.data() for p in weights])
    return _read([out]), _read(grads)


@pytest.mark.parametrize("hybridize", [False, True])
@pytest.mark.parametrize("how", ["ndarray", "autograd.backward", "autograd.grad"])
def test_gluon_statistics_held_bit_for_bit_and_forward_unchanged(hybridize, how):
    held, reference = _gluon_net(hybridize), _gluon_net(hybridize)
    start = _statistics(held)
    first = sorted(start)[:2]  # the first BatchNorm's running mean and variance
    assert all(n.startswith("net_batchnorm0_") for n in first)
    for data, label in _data(6):
        mxcompat.freeze("net_batchnorm0_running_*")
        out, grads = _gluon_step(held, data, label, how)
        mxcompat.unfreeze()
        ref_out, ref_grads = _gluon_step(reference, data, label, how)
        assert np.array_equal(out[0], ref_out[0])
        assert all(np.array_equal(a, b) for a, b in zip(grads, ref_grads))
    end, ref_end = _statistics(held), _statistics(reference)
    for name in start:
        assert np.array_equal(end[name], start[name]) == (name in first), name
        assert not np.array_equal(ref_end[name], start[name]), name


@pytest.mark.mxnet(">=1.6", reason="mx.np and npx arrays exist from 1.6")
def test_gluon_numpy_arrays_statistics_held():
    from mxnet import np as mnp
    from mxnet import npx

    npx.set_np()
    try:
        net = gluon.nn.HybridSequential(prefix="np_")
        with net.name_scope():
            net.add(gluon.nn.Conv2D(4, 3, in_channels=3), gluon.nn.BatchNorm(in_channels=4))
        net.initialize()
        net.hybridize()
        mxcompat.freeze("np_batchnorm0_running_mean")
        params = net.collect_params()
        mean, var = params["np_batchnorm0_running_mean"], params["np_batchnorm0_running_var"]
        mx.nd.waitall()
        mean0, var0 = mean.data().asnumpy().copy(), var.data().asnumpy().copy()
        x = mnp.array(_data(7, 1)[0][0])
        with autograd.record():
            loss = (net(x) ** 2).sum()
        loss.backward()
        mx.nd.waitall()
        assert np.array_equal(mean.data().asnumpy(), mean0)
        assert not np.array_equal(var.data().asnumpy(), var0)
    finally:
        npx.reset_np()


def _symbol_block(source, prefix):
    """A SymbolBlock of ``_gluon_net``'s export: imported, or ``to_gluon`` of it as a Module."""
    if source == "imports":
        return gluon.SymbolBlock.imports(prefix + "-symbol.json", ["data"], prefix + "-0000.params")
    module = mx.mod.Module.load(prefix, 0, label_names=None)
    return mxcompat.to_gluon(module, copy=(source == "to_gluon"))


@pytest.mark.parametrize("source", ["imports", "to_gluon", "to_gluon(copy=False)"])
def test_symbol_block_statistics_held(source, tmpdir):
    # SymbolBlock builds its auxiliary states grad_req='null' but differentiable, unlike
    # nn.BatchNorm's: they are statistics all the same.
    prefix = str(tmpdir.join("net"))
    exported = _gluon_net(True)
    exported(mx.nd.array(_data(10, 1)[0][0]))
    exported.export(prefix)
    held, reference = _symbol_block(source, prefix), _symbol_block(source, prefix)
    assert held.collect_params()["net_batchnorm0_running_mean"]._differentiable
    start = _statistics(held)
    first = ["net_batchnorm0_running_mean", "net_batchnorm0_running_var"]
    assert sorted(start)[:2] == first
    for data, label in _data(11):
        mxcompat.freeze("net_batchnorm0_running_*")
        out, grads = _gluon_step(held, data, label, "ndarray")
        mxcompat.unfreeze()
        ref_out, ref_grads = _gluon_step(reference, data, label, "ndarray")
        assert np.array_equal(out[0], ref_out[0])
        assert len(grads) == 10 and all(np.array_equal(a, b) for a, b in zip(grads, ref_grads))
    end, ref_end = _statistics(held), _statistics(reference)
    for name in start:
        assert np.array_equal(end[name], start[name]) == (name in first), name
        assert not np.array_equal(ref_end[name], start[name]), name


def test_gluon_trainer_step_holds_frozen_stage():
    net = _gluon_net(True)
    mxcompat.freeze("net_conv0_*", "net_batchnorm0_*")
    params = net.collect_params()
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    start = dict(zip(params.keys(), _read(p.data() for p in params.values())))
    for data, label in _data(8):
        _gluon_step(net, data, label, "ndarray")
        trainer.step(BATCH)
    end = dict(zip(params.keys(), _read(p.data() for p in params.values())))
    for name in start:
        frozen = name.startswith(("net_conv0_", "net_batchnorm0_"))
        assert np.array_equal(end[name], start[name]) == frozen, name


def test_gluon_statistics_move_when_the_patch_is_off():
    mxcompat.unpatch("frozen_statistics")
    mxcompat.freeze("net_batchnorm*_running_*")
    net = _gluon_net(False)
    start = _statistics(net)
    _gluon_step(net, *_data(9, 1)[0], how="ndarray")
    assert all(not np.array_equal(v, start[n]) for n, v in _statistics(net).items())


# --- the report, the patch ----------------------------------------------------------------------


def test_report_counts_statistics_apart():
    mxcompat.freeze("bn0_*")
    mod = _bound_module()
    report = mxcompat.frozen_report(mod)
    assert report.statistics == (
        "bn0_moving_mean",
        "bn0_moving_var",
        "bn1_moving_mean",
        "bn1_moving_var",
    )
    assert report.frozen_statistics == ("bn0_moving_mean", "bn0_moving_var")
    assert report.moving_statistics == ("bn1_moving_mean", "bn1_moving_var")
    assert report.frozen == ("bn0_gamma", "bn0_beta")
    assert str(report).splitlines()[-1] == (
        "Statistics (BatchNorm running mean/variance): 4 | moving: 2 | fixed: 2 "
        "['bn0_moving_mean', 'bn0_moving_var']"
    )
    assert repr(report).endswith(", statistics=2 moving/2 fixed)")
    net = _gluon_net(False)
    mxcompat.freeze("net_batchnorm1_running_var")
    report = mxcompat.frozen_report(net)
    assert report.frozen_statistics == ("net_batchnorm1_running_var",)
    assert len(report.moving_statistics) == 3
    # Statistics are not parameters: nothing here is a frozen parameter.
    assert report.frozen == ()
    mxcompat.unpatch("frozen_statistics")
    assert mxcompat.frozen_report(net).frozen_statistics == ()


def test_report_counts_symbol_block_statistics_apart(tmpdir):
    prefix = str(tmpdir.join("net"))
    net = _gluon_net(True)
    net(mx.nd.array(_data(12, 1)[0][0]))
    net.export(prefix)
    mxcompat.freeze("net_batchnorm1_running_var")
    imported = gluon.SymbolBlock.imports(prefix + "-symbol.json", ["data"], prefix + "-0000.params")
    nested = gluon.nn.HybridSequential()
    nested.add(imported)
    expected = (
        "net_batchnorm0_running_mean",
        "net_batchnorm0_running_var",
        "net_batchnorm1_running_mean",
        "net_batchnorm1_running_var",
    )
    for report in (mxcompat.frozen_report(imported), mxcompat.frozen_report(nested)):
        assert report.statistics == expected
        assert report.frozen_statistics == ("net_batchnorm1_running_var",)
        assert report.frozen == ()
        assert len(report.trainable) == 10
    # Built while the patch was off, found from the block it is given.
    mxcompat.unpatch("frozen_statistics")
    try:
        late = gluon.SymbolBlock.imports(prefix + "-symbol.json", ["data"], prefix + "-0000.params")
        assert mxcompat.frozen_report(late).statistics == expected
    finally:
        mxcompat.patch("frozen_statistics")


def test_patch_is_registered_and_reversible():
    import mxnet.executor as executor_py

    targets = [
        (executor_py.Executor, "backward"),
        (mx.nd.NDArray, "backward"),
        (mx.autograd, "backward"),
        (mx.autograd, "grad"),
        (gluon.Parameter, "__init__"),
        (gluon.SymbolBlock, "__init__"),
    ]
    assert "frozen_statistics" in mxcompat.patched()
    # The backwards are wrapped while something is frozen (test_hot_path).
    mxcompat.freeze("nothing_by_this_name")
    assert all(hasattr(vars(o)[a], "_self_mxcompat_patch") for o, a in targets)
    mxcompat.unpatch("frozen_statistics")
    try:
        assert all(not hasattr(vars(o)[a], "_self_mxcompat_patch") for o, a in targets)
    finally:
        mxcompat.patch("frozen_statistics")
    assert all(hasattr(vars(o)[a], "_self_mxcompat_patch") for o, a in targets)
