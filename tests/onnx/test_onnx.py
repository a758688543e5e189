"""onnx: MXNet's own ONNX exporter on today's onnx, and ``mxcompat.to_onnx`` verified in
onnxruntime.

onnx and onnxruntime are in the tox envs where they install beside MXNet (tox.ini); elsewhere
these tests skip, except the ones that need neither.  Model-zoo nets without pretrained
weights, at the smallest input each architecture takes, on a few releases each (CI time):
``ARCHS`` says from which release MXNet's exporter handles each, and what the releases
before give.
"""

import json
import os
import sys

import mxnet as mx
import numpy as np
import pytest

import mxcompat
from mxcompat._core import facts
from mxcompat.onnx import mxnet_exporter, verify
from tests.support.processes import run_python
from tests.support.stack import MX_VERSION

try:
    import onnx
    import onnxruntime
except ImportError:
    onnx = onnxruntime = None

needs_onnx = pytest.mark.skipif(
    onnxruntime is None,
    reason="needs onnx and onnxruntime (the onnx extra; tox.ini installs "
    "them in mx151, mx180, mx191, py313/py314-mxnet191-numpylatest, "
    "py313-mxnet131-numpy21; onnxruntime has no wheel for Python 3.15)",
)
# onnx.mapping went away in onnx 1.19: there MXNet's exporter fails without mxcompat.
ONNX_HAS_MAPPING = onnx is not None and hasattr(onnx, "mapping")

# name: (input side, first release whose exporter handles it (measured: 1.3.1, 1.5.1, 1.7.0,
#        1.8.0, 1.9.1 with onnx 1.23.2, onnxruntime 1.32), what an older release gives,
#        releases this suite runs it on: the oldest that handles it, one before, 1.9)
ARCHS = {
    # 1.3: a Gemm on the 4-d output of the global pooling (no Flatten), refused by onnxruntime.
    "resnet18_v1": (
        32,
        (1, 5),
        (AssertionError, "cannot run the model MXNet %s's exporter wrote (opset 8)"),
        {(1, 3), (1, 5), (1, 9)},
    ),
    # <= 1.7: BatchNormalization with spatial=0 (opset 8), which onnxruntime runs only fused
    # into a convolution.
    "resnet18_v2": (
        32,
        (1, 8),
        (AssertionError, "cannot run the model MXNet %s's exporter wrote (opset 8)"),
        {(1, 5), (1, 8), (1, 9)},
    ),
    "mobilenet0.25": (32, (1, 3), None, {(1, 3), (1, 9)}),
    # 1.3 has no converter for clip (ReLU6); 1.4 has one (read in its source, not run here).
    "mobilenetv2_0.25": (
        32,
        (1, 4),
        (
            NotImplementedError,
            "cannot convert operator 'clip' (36 "
            "nodes, the first 'mobilenetv20_features_relu60_relu6')",
        ),
        {(1, 3), (1, 5), (1, 9)},
    ),
    "densenet121": (224, (1, 8), None, {(1, 8), (1, 9)}),
    "squeezenet1.1": (224, (1, 3), None, {(1, 3), (1, 5), (1, 9)}),
    "vgg11_bn": (32, (1, 5), None, {(1, 5), (1, 9)}),
    # <= 1.8: average pooling is exported without count_include_pad.
    "inceptionv3": (
        299,
        (1, 9),
        (AssertionError, "the first node that differs is 'inception30_A1_pool0_fwd' (Pooling)"),
        {(1, 8), (1, 9)},
    ),
}


def _zoo_net(name):
    side = ARCHS[name][0]
    mx.random.seed(7)
    net = mx.gluon.model_zoo.vision.get_model(name, classes=10)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = mx.nd.random.uniform(shape=(1, 3, side, side))
    return net, x, net(x).asnumpy()


def _run(model, inputs):
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    return session.run(None, inputs)


@needs_onnx
@pytest.mark.parametrize("name", sorted(ARCHS))
def test_model_zoo(name):
    side, since, before, run_on = ARCHS[name]
    if MX_VERSION[:2] not in run_on:
        pytest.skip(
            "run on MXNet %s only (CI time)" % ", ".join("%d.%d" % v for v in sorted(run_on))
        )
    net, x, expected = _zoo_net(name)
    if not facts.since(since):
        error, message = before
        with pytest.raises(error) as info:
            mxcompat.to_onnx(net, [x.shape])
        assert (message % mx.__version__ if "%s" in message else message) in str(info.value)
        return
    model = mxcompat.to_onnx(net, [x.shape])  # verify=True: onnxruntime agrees with MXNet
    assert [i.name for i in model.graph.input] == ["data"]
    params = net.collect_params()
    # Every parameter is an initializer (beside the exporter's constants), none an input.
    assert set(params.keys()) <= {t.name for t in model.graph.initializer}
    assert model.opset_import[0].version == mxnet_exporter._opsets()[1]
    (out,) = _run(model, {"data": x.asnumpy()})
    assert out.shape == (1, 10)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())


def _softmax_module(tmpdir=None):
    data = mx.sym.var("data")
    net = mx.sym.Convolution(data, num_filter=4, kernel=(3, 3), pad=(1, 1), name="conv")
    net = mx.sym.BatchNorm(net, fix_gamma=False, name="bn")
    net = mx.sym.Activation(net, act_type="relu", name="relu")
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")
    net = mx.sym.FullyConnected(mx.sym.flatten(net), num_hidden=5, name="fc")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.bind(data_shapes=[("data", (2, 3, 8, 8))], label_shapes=[("softmax_label", (2,))])
    mx.random.seed(3)
    mod.init_params(mx.init.Xavier())
    arg, aux = mod.get_params()
    aux["bn_moving_mean"][:] = mx.nd.array(np.linspace(-0.5, 0.5, 4))
    aux["bn_moving_var"][:] = mx.nd.array(np.linspace(0.5, 2.0, 4))
    arg["bn_gamma"][:] = mx.nd.array(np.linspace(0.5, 1.5, 4))
    mod.set_params(arg, aux)
    return mod


@needs_onnx
def test_module_with_softmax_output_bound_and_loaded(tmpdir):
    mod = _softmax_module()
    x = np.random.RandomState(1).uniform(-1, 1, (2, 3, 8, 8)).astype("float32")
    expected = mod.predict(mx.io.NDArrayIter(x, batch_size=2)).asnumpy()
    model = mod.to_onnx()  # the bound module's own shapes; SoftmaxOutput -> softmax
    assert [i.name for i in model.graph.input] == ["data"]
    assert [o.name for o in model.graph.output] == ["softmax"]
    (out,) = _run(model, {"data": x})
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.sum(axis=1), [1, 1], rtol=1e-5)

    prefix = str(tmpdir.join("m"))
    mod.save_checkpoint(prefix, 0)
    loaded = mx.mod.Module.load(prefix, 0)  # unbound: input shapes are needed
    with pytest.raises(ValueError, match=r"input_shapes is needed for 'data'"):
        mxcompat.to_onnx(loaded)
    (out,) = _run(mxcompat.to_onnx(loaded, {"data": (2, 3, 8, 8)}), {"data": x})
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)

    sym, arg, aux = mx.model.load_checkpoint(prefix, 0)
    (out,) = _run(mxcompat.to_onnx((sym, arg, aux), (2, 3, 8, 8)), {"data": x})
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


@needs_onnx
def test_in_memory_unless_path(tmpdir):
    net, x, expected = _zoo_net("mobilenet0.25")
    before = set(os.listdir(str(tmpdir)))
    cwd = os.getcwd()
    os.chdir(str(tmpdir))
    try:
        model = net.to_onnx([x.shape], verify=False)
        assert set(os.listdir(str(tmpdir))) == before
        path = str(tmpdir.join("m.onnx"))
        mxcompat.to_onnx(net, [x.shape], path=path, verify=False)
    finally:
        os.chdir(cwd)
    assert isinstance(model, onnx.ModelProto)
    assert onnx.load(path) == model


@needs_onnx
def test_onnx_is_unchanged_outside_an_export():
    had_mapping = hasattr(onnx, "mapping")
    opset_version, check_graph = onnx.defs.onnx_opset_version, onnx.checker.check_graph
    make_tensor = onnx.helper.make_tensor
    net, x, _ = _zoo_net("mobilenet0.25")
    seen = {}

    def during(wrapped, instance, args, kwargs):
        seen["mapping"] = hasattr(onnx, "mapping")
        seen["opset"] = onnx.defs.onnx_opset_version()
        return wrapped(*args, **kwargs)

    import wrapt

    graph_class = mxnet_exporter._graph_class()
    original = graph_class.__dict__[
        "get_outputs" if "get_outputs" in graph_class.__dict__ else "infer_output_shape"
    ]
    name = "get_outputs" if "get_outputs" in graph_class.__dict__ else "infer_output_shape"
    setattr(graph_class, name, staticmethod(wrapt.FunctionWrapper(original.__func__, during)))
    try:
        mxcompat.to_onnx(net, [x.shape], verify=False)
    finally:
        setattr(graph_class, name, original)
    assert seen == {"mapping": True, "opset": mxnet_exporter._opsets()[1]}
    assert hasattr(onnx, "mapping") == had_mapping
    assert ("onnx.mapping" in sys.modules) == had_mapping
    assert onnx.defs.onnx_opset_version is opset_version
    assert onnx.checker.check_graph is check_graph
    assert onnx.helper.make_tensor is make_tensor
    assert onnx.defs.onnx_opset_version() > 13
    big = onnx.helper.make_tensor("w", onnx.TensorProto.FLOAT, (2048,), [0.5] * 2048)
    assert (len(big.float_data), big.raw_data) == (2048, b"")


def _mxnet_export(sym, params, shape, path):
    if facts.since(facts.MX_ONNX_PACKAGE):
        return mx.onnx.export_model(sym, params, [shape], np.float32, path)
    return mx.contrib.onnx.export_model(sym, params, [shape], np.float32, path)


@needs_onnx
def test_mxnet_export_model_works_and_is_right(tmpdir):
    net, arg = _mlp()
    x = np.random.RandomState(2).uniform(-1, 1, (2, 4)).astype("float32")
    expected = verify._mxnet_outputs(net, arg, {"data": x})[0]
    path = _mxnet_export(net, arg, (2, 4), str(tmpdir.join("m.onnx")))
    model = onnx.load(path)
    assert model.opset_import[0].version == mxnet_exporter._opsets()[1]
    onnx.checker.check_model(model)
    (out,) = _run(model, {"data": x})
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    assert hasattr(onnx, "mapping") == ONNX_HAS_MAPPING


@needs_onnx
@pytest.mark.skipif(ONNX_HAS_MAPPING, reason="needs onnx >= 1.19 (no onnx.mapping)")
def test_mxnet_export_model_without_the_patch_fails(tmpdir, unpatched):
    net, arg = _mlp()
    with pytest.raises(ImportError, match="Onnx and protobuf need to be installed"):
        _mxnet_export(net, arg, (2, 4), str(tmpdir.join("m.onnx")))
    assert not hasattr(mx.mod.Module, "to_onnx")


@needs_onnx
def test_large_weights_are_raw_bytes_of_the_same_values_as_mxnets_export(tmpdir):
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(data, num_hidden=64, name="big")  # 64 x 32: 2048 values
    net = mx.sym.FullyConnected(net, num_hidden=3, name="small")  # 3 x 64: 192
    rng = np.random.RandomState(3)
    shapes = {"big_weight": (64, 32), "big_bias": (64,), "small_weight": (3, 64)}
    arg = {n: mx.nd.array(rng.randn(*s)) for n, s in dict(shapes, small_bias=(3,)).items()}
    model = mxcompat.to_onnx((net, arg, {}), [(2, 32)])
    theirs = onnx.load(_mxnet_export(net, arg, (2, 32), str(tmpdir.join("m.onnx"))))
    ours = {t.name: t for t in model.graph.initializer}
    assert sorted(ours) == sorted(t.name for t in theirs.graph.initializer)
    assert [n for n in sorted(ours) if ours[n].raw_data] == ["big_weight"]
    for tensor in theirs.graph.initializer:  # MXNet's own export: as it always wrote them
        assert not tensor.raw_data
        mine, expected = (onnx.numpy_helper.to_array(t) for t in (ours[tensor.name], tensor))
        assert (mine.dtype, mine.shape) == (expected.dtype, expected.shape)
        assert mine.tobytes() == expected.tobytes()
    for name, value in arg.items():
        assert onnx.numpy_helper.to_array(ours[name]).tobytes() == value.asnumpy().tobytes()


@needs_onnx
def test_unconvertible_operator_is_named():
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    net = mx.sym.gamma(mx.sym.tanh(net, name="t"), name="g")
    arg = {"fc_weight": mx.nd.ones((3, 4)), "fc_bias": mx.nd.zeros((3,))}
    with pytest.raises(NotImplementedError) as info:
        mxcompat.to_onnx((net, arg, {}), [(1, 4)])
    assert str(info.value) == (
        "mxcompat.to_onnx: MXNet %s's ONNX exporter (opset %d) cannot convert operator "
        "'gamma' (node 'g')" % (mx.__version__, mxnet_exporter._opsets()[1])
    )


def _mlp():
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(data, num_hidden=6, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    rng = np.random.RandomState(0)
    arg = {
        "fc1_weight": mx.nd.array(rng.randn(6, 4)),
        "fc1_bias": mx.nd.array(rng.randn(6)),
        "fc2_weight": mx.nd.array(rng.randn(3, 6)),
        "fc2_bias": mx.nd.array(rng.randn(3)),
    }
    return net, arg


@needs_onnx
def test_verify_names_the_first_node_that_differs():
    net, arg = _mlp()
    model = mxcompat.to_onnx((net, arg, {}), [(2, 4)])
    broken = type(model)()
    broken.CopyFrom(model)
    for tensor in broken.graph.initializer:
        if tensor.name == "fc2_bias":
            tensor.CopyFrom(
                onnx.numpy_helper.from_array(
                    arg["fc2_bias"].asnumpy() + np.float32(0.5), "fc2_bias"
                )
            )
    with pytest.raises(AssertionError) as info:
        verify._verify(broken, net, arg, ["data"], [(2, 4)], 1e-4, 1e-5)
    assert str(info.value) == (
        "mxcompat.to_onnx: onnxruntime's output differs from MXNet's beyond atol=1e-05, "
        "rtol=0.0001: fc2_output: largest difference 0.5; the first node that differs is "
        "'fc2' (FullyConnected), largest difference 0.5"
    )


@needs_onnx
def test_bad_arguments():
    net, arg = _mlp()
    low, high = mxnet_exporter._opsets()
    with pytest.raises(
        ValueError,
        match=r"opset=99: MXNet %s's exporter writes opset %s$"
        % (mx.__version__, low if low == high else "%d to %d" % (low, high)),
    ):
        mxcompat.to_onnx((net, arg, {}), [(2, 4)], opset=99)
    with pytest.raises(ValueError, match=r"2 input shape\(s\) given, the model has 1 input"):
        mxcompat.to_onnx((net, arg, {}), [(2, 4), (2, 4)])
    with pytest.raises(TypeError, match="expected a Module, a HybridBlock or a"):
        mxcompat.to_onnx(net)


def test_without_onnx_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` raises ImportError
    net, arg = _mlp()
    with pytest.raises(ImportError) as info:
        mxcompat.to_onnx((net, arg, {}), [(2, 4)])
    assert str(info.value).startswith("mxcompat: mxcompat.to_onnx needs the onnx package")
    assert str(info.value).endswith(
        "install it: pip install 'mxcompat[onnx]'  (or: pip install onnx onnxruntime)"
    )


def test_patch_imports_no_more_of_onnx_than_mxnet_does():
    code = """
        import sys, json, mxcompat, mxnet
        print(json.dumps(sorted(m for m in sys.modules if m == "onnx" or m.startswith("onnx."))))
    """
    # Without the patch: what MXNet itself imports (1.9's mxnet.onnx imports onnx where it is
    # installed).  The patch adds nothing, onnx.mapping least of all.
    plain = run_python(code, env={"MXCOMPAT_DISABLE_PATCHES": "onnx"})
    patched = run_python(code)
    assert (plain.returncode, patched.returncode) == (0, 0), plain.stderr + patched.stderr
    assert json.loads(patched.stdout) == json.loads(plain.stdout)
    assert ("onnx.mapping" in json.loads(patched.stdout)) == ONNX_HAS_MAPPING


def _mxcompat(*args):
    import subprocess

    from tests.support.processes import subprocess_env

    return subprocess.run(
        [sys.executable, "-m", "mxcompat"] + list(args),
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=300,
    )


@needs_onnx
def test_cli_converts_a_checkpoint(tmpdir):
    mod = _softmax_module()
    prefix = str(tmpdir.join("m"))
    mod.save_checkpoint(prefix, 3)
    proc = _mxcompat("onnx", prefix, "3", "--input-shape", "2,3,8,8")
    assert proc.returncode == 0, proc.stderr
    opset = mxnet_exporter._opsets()[1]
    model = onnx.load(prefix + ".onnx")
    assert (
        proc.stdout == "wrote %s.onnx: opset %d, %d nodes, inputs data; onnxruntime %s "
        "agrees with MXNet %s\n"
        % (prefix, opset, len(model.graph.node), onnxruntime.__version__, mx.__version__)
    )
    x = np.random.RandomState(1).uniform(-1, 1, (2, 3, 8, 8)).astype("float32")
    expected = mod.predict(mx.io.NDArrayIter(x, batch_size=2)).asnumpy()
    np.testing.assert_allclose(_run(model, {"data": x})[0], expected, rtol=1e-5, atol=1e-6)

    out = str(tmpdir.join("other.onnx"))
    proc = _mxcompat(
        "onnx",
        prefix,
        "3",
        "--input-shape",
        "1,3,8,8",
        "-o",
        out,
        "--opset",
        str(opset),
        "--no-verify",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("wrote %s: opset %d," % (out, opset))
    assert onnx.load(out).graph.input[0].type.tensor_type.shape.dim[0].dim_value == 1


def test_cli_errors_are_one_line(tmpdir):
    proc = _mxcompat("onnx", str(tmpdir.join("none")), "0", "--input-shape", "1,3,8,8")
    assert (proc.returncode, proc.stderr) == (
        1,
        "mxcompat onnx: no checkpoint %s, epoch 0: "
        "%s-symbol.json and %s-0000.params not found\n" % ((str(tmpdir.join("none")),) * 3),
    )
    proc = _mxcompat("onnx", "m", "0", "--input-shape", "1,x")
    assert proc.returncode == 2
    assert "'1,x' is not a shape like 1,3,224,224" in proc.stderr


@needs_onnx
def test_check_line(tmpdir):
    from mxcompat.cli.check.model_scenarios import _check_onnx

    opset = mxnet_exporter._opsets()[1]
    assert _check_onnx(mx, str(tmpdir)) == (
        "export_model wrote opset %d; to_onnx: onnxruntime %s agrees (opset %d)"
        % (opset, onnxruntime.__version__, opset)
    )


@needs_onnx
@pytest.mark.skipif(ONNX_HAS_MAPPING, reason="needs onnx >= 1.19 (no onnx.mapping)")
def test_check_line_fails_without_the_patch(tmpdir, unpatched):
    from mxcompat.cli.check.model_scenarios import _check_onnx

    with pytest.raises(ImportError, match="Onnx and protobuf need to be installed"):
        _check_onnx(mx, str(tmpdir))


def test_check_line_skips_without_onnx(tmpdir, monkeypatch):
    from mxcompat.cli.check.model_scenarios import _check_onnx
    from mxcompat.cli.check.runner import Skip

    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(Skip, match=r"^needs onnx and onnxruntime: pip install "):
        _check_onnx(mx, str(tmpdir))
