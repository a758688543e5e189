"""The last scenarios of ``mxcompat check``: a loaded Module's parameters, BatchNorm
statistics and ``_fixed_param_names`` under ``freeze``, ONNX export."""

import os

from ..._core import facts
from .runner import Skip, check


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

    from ...onnx.in_memory import to_onnx
    from ...onnx.mxnet_exporter import INSTALL_HINT

    try:
        import onnx
        import onnxruntime
    except ImportError:
        raise Skip("needs onnx and onnxruntime: %s" % INSTALL_HINT) from None
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
        mx.onnx.export_model if facts.since(facts.MX_ONNX_PACKAGE) else mx.contrib.onnx.export_model
    )
    path = export(net, params, [(2, 4)], np.float32, os.path.join(tmp, "m.onnx"))
    opset = onnx.load(path).opset_import[0].version
    model = to_onnx((net, params, {}), [(2, 4)])  # raises if they disagree
    return "export_model wrote opset %d; to_onnx: onnxruntime %s agrees (opset %d)" % (
        opset,
        onnxruntime.__version__,
        model.opset_import[0].version,
    )
