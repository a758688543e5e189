"""The scenarios of ``mxcompat check``: one tiny real use per feature, on the installed MXNet.
Each returns a short detail or raises ``Skip(reason)``; anything else it raises is a failure."""

import os
import subprocess
import sys
import warnings

from ..._core import facts as _compat
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

    if not _compat.since(_compat.ONEDNN_FC_NULL_WEIGHT_SKIPS_BIAS):
        raise Skip(
            "oneDNN FullyConnected kernels are only in the MKLDNN wheels from MXNet 1.7; "
            "a fixed FC weight does not stop its bias here"
        )
    if not _compat.has_mkldnn():
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
    if not _compat.has_mkldnn():
        raise Skip("quantized CPU graphs need an MKLDNN build (pip wheels from MXNet 1.7)")
    if not _compat.since(_compat.QUANTIZED_CPU):
        raise Skip("quantized CPU graphs need MXNet >= 1.8 (1.7's oneDNN fails on some CPUs)")
    # A subprocess: some MXNet releases' quantized paths crash the interpreter.
    proc = subprocess.run(
        [sys.executable, "-c", _QUANTIZE_PROBE], capture_output=True, text=True, timeout=120
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]
        raise AssertionError(last)
    return "top-1 agreement with float: %s" % proc.stdout.strip()


@check("numpy", "NumPy names MXNet reads are there (only those NumPy lacks are added)")
def _check_numpy(mx, tmp):
    import numpy as np

    from ...patches import numpy_names as numpy_compat

    lacking = numpy_compat.missing(np)
    if lacking:
        raise AssertionError("numpy.%s still missing" % ", numpy.".join(lacking))
    added = numpy_compat.added()
    # A NumPy-2 round trip through an operator parameter (NEP 51 reprs) and back.
    shape = tuple(np.array([2, 3]))
    got = mx.nd.zeros(shape).reshape(shape).shape
    if got != (2, 3):
        raise AssertionError("reshape with NumPy integers gave %r" % (got,))
    if not added:
        return "nothing to add on NumPy %s" % np.__version__
    return "added to NumPy %s: %s" % (np.__version__, ", ".join(added))


def _numpy_fix_scenarios(mx, np):
    """``(name, runs)`` of the NumPy behaviour fixes that apply on this NumPy, each with a tiny
    scenario that raises AssertionError when MXNet still meets the NumPy change."""
    from ...patches import numpy2

    scenarios = []

    def nep51():
        # The operator (not NDArray.reshape): its parameters reach MXNet's core as str().
        got = mx.nd.reshape(mx.nd.zeros((2, 3)), shape=(np.int64(3), np.int64(2))).shape
        if got != (3, 2):
            raise AssertionError("nd.reshape(shape=(np.int64(3), np.int64(2))) gave %r" % (got,))

    def nep50():
        m = mx.metric.MSE()
        m.update([mx.nd.array([1.0, 2.0])], [mx.nd.array([1.5, 2.0])])
        if type(m.sum_metric) is not np.float64:
            raise AssertionError("MSE sums in %s (NumPy 1: float64)" % type(m.sum_metric).__name__)

    def tostring():
        header = mx.recordio.IRHeader(0, np.array([1.0, 2.0], dtype=np.float32), 7, 0)
        got = mx.recordio.unpack(mx.recordio.pack(header, b"x"))[0].label
        if list(got) != [1.0, 2.0]:
            raise AssertionError("recordio.pack label round trip gave %r" % (got,))

    def one_element():
        _, (i,) = mx.nd.contrib.while_loop(
            lambda i: i < 10,
            lambda i: (i, [i + 1]),
            [mx.nd.array([0])],
            max_iterations=np.array([3]),
        )
        if i.asscalar() != 3:
            raise AssertionError(
                "while_loop(max_iterations=np.array([3])) ran to %r" % i.asscalar()
            )

    def to_numpy():
        a = mx.nd.array([1.5, 2.5])
        got = np.asarray(a)
        if got.dtype != np.float32 or list(got) != [1.5, 2.5]:
            raise AssertionError("np.asarray(NDArray) gave dtype %s" % got.dtype)

    def astype_other():
        got = mx.nd.array([1.5]).astype(mx.nd.zeros((1,), dtype="int32")).dtype
        if got != np.int32:
            raise AssertionError("astype(int32 NDArray) gave %r" % (got,))

    if numpy2._numpy2():
        scenarios += [
            ("NEP 51 scalar reprs in operator parameters", nep51),
            ("NEP 50 metric sums in float64", nep50),
        ]
    if _compat.numpy_since(_compat.NUMPY_NO_TOSTRING):
        scenarios.append(("ndarray.tostring in recordio.pack", tostring))
    if _compat.numpy_since(_compat.NUMPY_REFUSES_SCALAR_OF_1_ELEMENT_ARRAY):
        scenarios.append(("1-element max_iterations in while_loop", one_element))
    scenarios.append(("NDArray.__array__ (np.asarray gets the numbers)", to_numpy))
    if _compat.numpy_since(_compat.NUMPY_NO_TOSTRING):
        scenarios.append(("astype(other NDArray)", astype_other))
    return scenarios


@check("numpy_fixes", "NumPy's behaviour changes that reach MXNet are fixed (this NumPy's)")
def _check_numpy_fixes(mx, tmp):
    import numpy as np

    names = []
    for name, run in _numpy_fix_scenarios(mx, np):
        try:
            run()
        except Exception as exc:  # pylint: disable=broad-except
            raise AssertionError("%s: %s: %s" % (name, type(exc).__name__, exc)) from exc
        names.append(name)
    return "in use on NumPy %s: %s" % (np.__version__, "; ".join(names))


_INT_DIVISION_PROBE = """
import warnings; warnings.simplefilter("ignore")
import mxcompat, mxnet as mx
try:
    (mx.nd.array([1, 2], dtype="int32") / 0.5).wait_to_read()
except ZeroDivisionError as err:
    print(err)
"""


@check("int_division", "int32 NDArray / 0.5 raises ZeroDivisionError; the process lives")
def _check_int_division(mx, tmp):
    import signal

    # A subprocess: without the patch MXNet kills the process that divides (SIGFPE).
    proc = subprocess.run(
        [sys.executable, "-c", _INT_DIVISION_PROBE], capture_output=True, text=True, timeout=120
    )
    if proc.returncode == -signal.SIGFPE:
        raise AssertionError("int32 NDArray / 0.5 killed the process (SIGFPE)")
    if proc.returncode != 0:
        raise AssertionError(
            (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]
        )
    if not proc.stdout.startswith("mxcompat: int32 NDArray / 0.5 divides by zero"):
        raise AssertionError("no ZeroDivisionError: %r" % proc.stdout.strip())
    return "ZeroDivisionError (plain MXNet: SIGFPE kills the process)"


@check("unbound_get_params", "Module.load(...).get_params() before bind; clear error before init")
def _check_unbound_get_params(mx, tmp):
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")
    prefix = os.path.join(tmp, "m")
    mx.model.save_checkpoint(
        prefix, 0, fc, {"fc_weight": mx.nd.ones((2, 3)), "fc_bias": mx.nd.zeros((2,))}, {}
    )
    mod = mx.mod.Module.load(prefix, 0, label_names=None)
    try:
        arg_params, _ = mod.get_params()
    except AssertionError as err:
        raise AssertionError(
            "Module.load(...).get_params() before bind: AssertionError(%r)" % str(err)
        ) from err
    if sorted(arg_params) != ["fc_bias", "fc_weight"]:
        raise AssertionError("loaded parameters %r" % sorted(arg_params))
    try:
        mx.mod.Module(fc, label_names=None).get_params()
    except AssertionError as err:
        if not str(err).startswith(
            "mxcompat: Module.get_params(): the module has no parameters yet"
        ):
            raise AssertionError(
                "get_params() with no parameters: AssertionError(%r)" % str(err)
            ) from err
    else:
        raise AssertionError("get_params() with no parameters returned")
    return "the loaded parameters before bind; what to call first when there are none"


def _bn_module(mx):
    import numpy as np

    net = mx.sym.BatchNorm(
        mx.sym.Convolution(mx.sym.Variable("data"), num_filter=2, kernel=(3, 3), name="conv"),
        fix_gamma=False,
        name="bn",
    )
    mod = mx.mod.Module(mx.sym.MakeLoss(mx.sym.sum(net)), label_names=None)
    mod.bind(data_shapes=[("data", (2, 1, 5, 5))])
    mod.init_params()
    batch = mx.io.DataBatch([mx.nd.array(np.random.RandomState(0).uniform(size=(2, 1, 5, 5)))])
    return mod, batch


@check("frozen_statistics", "freeze('bn_moving_*') holds BatchNorm statistics through training")
def _check_frozen_statistics(mx, tmp):
    import numpy as np

    import mxcompat

    mod, batch = _bn_module(mx)
    # The same graph as a SymbolBlock (what SymbolBlock.imports gives), trained with autograd.
    net = mxcompat.to_gluon(mod)
    params = net.collect_params()
    for where, arrays, step in (
        (
            "Module",
            mod._exec_group.execs[0].aux_dict,
            lambda: (mod.forward(batch, is_train=True), mod.backward()),
        ),
        (
            "SymbolBlock",
            {n: params[n].data() for n in ("bn_moving_mean", "bn_moving_var")},
            lambda: _autograd_step(mx, net, batch.data[0]),
        ),
    ):
        mx.nd.waitall()
        start = {k: v.asnumpy().copy() for k, v in arrays.items()}
        with mxcompat.frozen("bn_moving_mean"):
            for _ in range(2):
                step()
            mx.nd.waitall()
        moved = {k: not np.array_equal(start[k], v.asnumpy()) for k, v in arrays.items()}
        if moved != {"bn_moving_mean": False, "bn_moving_var": True}:
            raise AssertionError("%s: moved %r, expected only bn_moving_var" % (where, moved))
    return (
        "bn_moving_mean bit for bit, bn_moving_var moved, Module and SymbolBlock "
        "(plain MXNet: both move)"
    )


def _autograd_step(mx, net, data):
    with mx.autograd.record():
        loss = net(data)
    loss.backward()


@check("fixed_param_names", "module._fixed_param_names lists what mxcompat.freeze froze")
def _check_fixed_param_names(mx, tmp):
    import mxcompat

    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")
    mod = mx.mod.Module(fc, label_names=None, fixed_param_names=["fc_bias"])
    with mxcompat.frozen("fc_weight"):
        names = list(mod._fixed_param_names)
    if names != ["fc_bias", "fc_weight"]:
        raise AssertionError("_fixed_param_names %r, expected ['fc_bias', 'fc_weight']" % names)
    return "the module's own names and the registry's"


@check("onnx", "MXNet's own ONNX exporter runs on this onnx; to_onnx agrees in onnxruntime")
def _check_onnx(mx, tmp):
    import numpy as np

    from ... import onnx as onnx_export

    try:
        import onnx
        import onnxruntime
    except ImportError:
        raise Skip("needs onnx and onnxruntime: %s" % onnx_export.INSTALL_HINT) from None
    # A net every release's exporter converts (1.3's cannot flatten before a Gemm).
    rng = np.random.RandomState(0)
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=6, name="fc1")
    net = mx.sym.FullyConnected(mx.sym.Activation(net, act_type="relu"), num_hidden=3, name="fc2")
    params = {
        "fc1_weight": mx.nd.array(rng.randn(6, 4)),
        "fc1_bias": mx.nd.zeros((6,)),
        "fc2_weight": mx.nd.array(rng.randn(3, 6)),
        "fc2_bias": mx.nd.zeros((3,)),
    }
    export = (
        mx.onnx.export_model
        if _compat.since(_compat.MX_ONNX_PACKAGE)
        else mx.contrib.onnx.export_model
    )
    path = export(net, params, [(2, 4)], np.float32, os.path.join(tmp, "m.onnx"))
    opset = onnx.load(path).opset_import[0].version
    model = onnx_export.to_onnx((net, params, {}), [(2, 4)])  # raises if they disagree
    return "export_model wrote opset %d; to_onnx: onnxruntime %s agrees (opset %d)" % (
        opset,
        onnxruntime.__version__,
        model.opset_import[0].version,
    )
