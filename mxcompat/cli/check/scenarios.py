"""The scenarios of ``mxcompat check``: one tiny real use per feature, on the installed MXNet.
Each returns a short detail or raises ``Skip(reason)``; anything else it raises is a failure."""

import os
import subprocess
import sys
import warnings

from ..._core import facts
from .runner import Skip, check


def _tiny_gluon_net(mx):
    from mxnet import gluon

    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Conv2D(4, 3), gluon.nn.BatchNorm(), gluon.nn.Dense(5))
    net.initialize()
    net.hybridize()
    return net


@check("labels", "Gluon export binds with labels; a wrong label name is an error")
def _check_labels(mx, tmp):
    net = _tiny_gluon_net(mx)
    x = mx.nd.random.uniform(shape=(4, 3, 6, 6))
    expected = net(x).asnumpy()
    prefix = os.path.join(tmp, "net")
    net.export(prefix)
    it = mx.io.NDArrayIter(x, mx.nd.zeros(4), batch_size=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod = mx.mod.Module.load(prefix, 0)
        mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    diff = float(abs(mod.predict(it).asnumpy() - expected).max())
    if diff > 1e-6:
        raise AssertionError("Module and Gluon differ by %g" % diff)
    # The other direction: a symbol that takes a label keeps it, so a wrong name is an error
    # naming the right one, not silently dropped.
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mx.mod.Module(mx.sym.SoftmaxOutput(fc, name="softmax"), label_names=("label",))
    except ValueError as err:
        if "whose label input is 'softmax_label'" not in str(err):
            raise AssertionError("unexpected error for label_names=('label',): %s" % err) from err
    else:
        raise AssertionError("label_names=('label',) on a SoftmaxOutput was accepted")
    return "KeyError 'softmax_label' avoided, outputs equal; a wrong label name is an error"


@check("bare_names", "fixed_param_names='kw' (a bare string) fixes the one weight 'kw'")
def _check_bare_names(mx, tmp):
    kernel = mx.nd.array([[1, 2, 3]] * 3).reshape((1, 1, 3, 3))
    conv = mx.sym.Convolution(
        mx.sym.Variable("data"),
        weight=mx.sym.Variable("kw"),
        kernel=(3, 3),
        num_filter=1,
        no_bias=True,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod = mx.mod.Module(mx.sym.MakeLoss(conv), label_names=None, fixed_param_names="kw")
    mod.bind(data_shapes=[("data", (1, 1, 3, 3))])
    mod.set_params({"kw": kernel}, {})
    mod.init_optimizer()
    batch = mx.io.DataBatch([kernel], [])
    mod.forward(batch)
    mod.backward()
    mod.update()
    mod.forward(batch)
    value = float(mod.get_outputs()[0].asnumpy().ravel()[0])
    if value != 42.0:
        raise AssertionError("expected 42 after one step, got %r" % value)
    return "42 stays 42"


def _freeze_module_step(mx, kvstore, frozen_before_bind):
    """One SGD step (momentum, wd) of a conv+FC net with 'kw' frozen; returns what moved."""
    import numpy as np

    import mxcompat

    data = mx.sym.Variable("data")
    kw = mx.sym.Variable("kw", init=mx.init.Uniform(0.5))
    conv = mx.sym.Convolution(
        data, weight=kw, kernel=(3, 3), num_filter=2, no_bias=True, name="conv"
    )
    fc = mx.sym.FullyConnected(mx.sym.flatten(conv), num_hidden=2, name="fc")
    mod = mx.mod.Module(mx.sym.MakeLoss(mx.sym.sum(fc * fc)), label_names=None)
    with mxcompat.frozen(*(["kw"] if frozen_before_bind else [])):
        mod.bind(data_shapes=[("data", (2, 1, 4, 4))])
    mod.init_params(mx.init.Uniform(0.5))
    with mxcompat.frozen("kw"):
        mod.init_optimizer(
            kvstore=kvstore,
            optimizer="sgd",
            optimizer_params={"learning_rate": 0.01, "momentum": 0.9, "wd": 0.1},
        )
        before = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
        batch = mx.io.DataBatch([mx.nd.ones((2, 1, 4, 4))], [])
        for _ in range(3):
            mod.forward_backward(batch)
            mod.update()
    after = mod.get_params()[0]
    return {k: not np.array_equal(before[k], after[k].asnumpy()) for k in before}


@check("freeze", "mxcompat.freeze('kw') keeps kw bit for bit on each update path")
def _check_freeze(mx, tmp):
    import numpy as np
    from mxnet import autograd, gluon

    import mxcompat

    paths = []
    for label, kvstore, before_bind in (
        ("no kvstore, frozen before bind", None, True),
        ("no kvstore, frozen after bind", None, False),
        ("kvstore 'local' object", mx.kv.create("local"), False),
    ):
        moved = _freeze_module_step(mx, kvstore, before_bind)
        if moved != {"kw": False, "fc_weight": True, "fc_bias": True}:
            raise AssertionError("Module, %s: moved %r" % (label, moved))
        paths.append(label)
    net = gluon.nn.Dense(2, in_units=3, prefix="dense_")
    net.initialize(mx.init.Uniform(0.5))
    trainer = gluon.Trainer(
        net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.1}
    )
    with mxcompat.frozen("dense_weight"):
        before = {k: v.data().asnumpy() for k, v in net.collect_params().items()}
        for _ in range(3):
            with autograd.record():
                loss = (net(mx.nd.ones((2, 3))) ** 2).sum()
            loss.backward()
            trainer.step(2)
    moved = {
        k: not np.array_equal(before[k], v.data().asnumpy())
        for k, v in net.collect_params().items()
    }
    if moved != {"dense_weight": False, "dense_bias": True}:
        raise AssertionError("Gluon Trainer: moved %r" % moved)
    paths.append("Gluon Trainer")
    return "frozen on: " + "; ".join(paths)


@check("onednn_fc_bias", "fixed_param_names=['fc_weight']: the weight stays, fc_bias trains")
def _check_onednn_fc_bias(mx, tmp):
    import numpy as np

    if not facts.since(facts.ONEDNN_FC_NULL_WEIGHT_SKIPS_BIAS):
        raise Skip(
            "oneDNN FullyConnected kernels are only in the MKLDNN wheels from MXNet 1.7; "
            "a fixed FC weight does not stop its bias here"
        )
    if not facts.has_mkldnn():
        raise Skip(
            "this MXNet build has no MKLDNN (oneDNN); a fixed FC weight does not stop its bias here"
        )
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    mod = mx.mod.Module(
        mx.sym.MakeLoss(mx.sym.sum(fc * fc)), label_names=None, fixed_param_names=["fc_weight"]
    )
    mod.bind(data_shapes=[("data", (2, 4))])
    mod.init_params(mx.init.Uniform(0.5))
    mod.init_optimizer(optimizer_params={"learning_rate": 0.01, "momentum": 0.9, "wd": 0.1})
    before = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    batch = mx.io.DataBatch([mx.nd.ones((2, 4))], [])
    for _ in range(3):
        mod.forward_backward(batch)
        mod.update()
    after = mod.get_params()[0]
    moved = {k: not np.array_equal(before[k], after[k].asnumpy()) for k in before}
    if moved != {"fc_weight": False, "fc_bias": True}:
        raise AssertionError(
            "moved %r, expected only fc_bias (plain MXNet with oneDNN keeps "
            "fc_bias fixed too)" % moved
        )
    return "fc_weight bit for bit, fc_bias trained (plain MXNet with oneDNN: fc_bias stays fixed)"


@check("convert", "Gluon -> to_module() -> to_gluon() round trip, equal outputs")
def _check_convert(mx, tmp):
    import mxcompat

    net = _tiny_gluon_net(mx)
    x = mx.nd.random.uniform(shape=(2, 3, 6, 6))
    expected = net(x).asnumpy()
    mod = net.to_module(data_shapes=[("data", x.shape)])
    via_module = mod.predict(mx.io.NDArrayIter(x, batch_size=2)).asnumpy()
    back = mxcompat.to_gluon(mod)(x).asnumpy()
    diff = max(float(abs(via_module - expected).max()), float(abs(back - expected).max()))
    if diff > 1e-6:
        raise AssertionError("outputs differ by %g" % diff)
    return "max |diff| %g" % diff


_QUANTIZE_PROBE = """
import warnings; warnings.simplefilter("ignore")
import mxcompat, mxnet as mx
from mxnet import gluon
net = gluon.nn.HybridSequential()
net.add(gluon.nn.Conv2D(4, 3), gluon.nn.BatchNorm(), gluon.nn.Activation("relu"),
        gluon.nn.Dense(5))
net.initialize()
x = mx.nd.random.uniform(shape=(8, 3, 8, 8))
net(x)
q = mxcompat.quantize(net, calib_data=x, data_shapes=[("data", x.shape)])
out = q.predict(mx.io.NDArrayIter(x, batch_size=8))
agree = float((out.argmax(axis=1) == net(x).argmax(axis=1)).mean().asscalar())
print(agree)
"""


@check("quantize", "mxcompat.quantize(gluon_net) gives a uint8 module that predicts")
def _check_quantize(mx, tmp):
    if not facts.has_mkldnn():
        raise Skip("quantized CPU graphs need an MKLDNN build (pip wheels from MXNet 1.7)")
    if not facts.since(facts.QUANTIZED_CPU):
        raise Skip("quantized CPU graphs need MXNet >= 1.8 (1.7's oneDNN fails on some CPUs)")
    # A subprocess: some MXNet releases' quantized paths crash the interpreter.
    proc = subprocess.run(
        [sys.executable, "-c", _QUANTIZE_PROBE], capture_output=True, text=True, timeout=120
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]
        raise AssertionError(last)
    return "top-1 agreement with float: %s" % proc.stdout.strip()
