"""The fused ``RNN`` operator runs through PyTorch's fused kernels (``torch.lstm``, ``gru``,
``rnn_tanh``, ``rnn_relu``) with MXNet's semantics: for every mode, one and two directions, with
and without states out, two layers, the outputs, the last states and the gradients (of the
input, the begin states and MXNet's one flat parameter vector) match MXNet's own in float64;
a Gluon layer's parameters (which MXNet concatenates into that vector) go to the kernel as
they are and their gradients match too.  One kernel call, no Python loop over time steps.

Within 1e-10 of MXNet, relative to each array's largest value, except ``rnn_relu``: MXNet's own
float64 ``rnn_relu`` is 1e-7 (relative) away from the same formula in exact float64 (NumPy, and
this kernel), float32's rounding somewhere in its path (measured on 1.9.1; its ``rnn_tanh``,
LSTM and GRU are not), so that mode is held to 1e-6."""

import importlib.util

import mxnet as mx
import numpy as np
import pytest

import mxcompat
from tests.support.torch_names import params_by_mxnet_name

_SPEC = importlib.util.find_spec("torch")
pytestmark = pytest.mark.skipif(
    _SPEC is None or _SPEC.origin is None, reason="needs torch (the torch extra)"
)

MODES = ["lstm", "gru", "rnn_tanh", "rnn_relu"]
STEPS, BATCH, INPUT, HIDDEN, LAYERS = 4, 3, 5, 6, 2
KERNEL = {"lstm": "lstm", "gru": "gru", "rnn_tanh": "rnn_tanh", "rnn_relu": "rnn_relu"}
RTOL = {"lstm": 1e-10, "gru": 1e-10, "rnn_tanh": 1e-10, "rnn_relu": 1e-6}


def _close(actual, expected, what, rtol=1e-10):
    actual = np.asarray(actual, np.float64)
    assert actual.shape == expected.shape, what
    worst = np.abs(actual - expected).max()
    assert worst <= rtol * max(np.abs(expected).max(), 1e-300), (what, worst)


def _symbol(mode, bidirectional, state_outputs):
    args = {
        "data": mx.sym.var("data"),
        "parameters": mx.sym.var("rnn_parameters"),
        "state": mx.sym.var("rnn_state"),
    }
    if mode == "lstm":
        args["state_cell"] = mx.sym.var("rnn_state_cell")
    return mx.sym.RNN(
        mode=mode,
        state_size=HIDDEN,
        num_layers=LAYERS,
        bidirectional=bidirectional,
        state_outputs=state_outputs,
        name="rnn",
        **args,
    )


def _mxnet_run(sym, values, head_grads):
    """MXNet's outputs and the gradients of every argument, float64, given the heads'
    gradients."""
    shapes = {n: v.shape for n, v in values.items()}
    ex = sym.simple_bind(
        mx.cpu(), grad_req="write", type_dict={n: np.float64 for n in values}, **shapes
    )
    for name, value in values.items():
        ex.arg_dict[name][:] = value
    outs = [o.asnumpy() for o in ex.forward(is_train=True)]
    ex.backward([mx.nd.array(g, dtype=np.float64) for g in head_grads])
    return outs, {n: ex.grad_dict[n].asnumpy() for n in values}


@pytest.mark.parametrize("state_outputs", [False, True], ids=["output", "states_out"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["one_way", "bidirectional"])
@pytest.mark.parametrize("mode", MODES)
def test_flat_vector_forward_and_gradients_match_mxnet_in_float64(
    mode, bidirectional, state_outputs
):
    import torch

    sym = _symbol(mode, bidirectional, state_outputs)
    dirs = 2 if bidirectional else 1
    rng = np.random.RandomState(0)
    shapes = {
        "data": (STEPS, BATCH, INPUT),
        "rnn_state": (LAYERS * dirs, BATCH, HIDDEN),
    }
    if mode == "lstm":
        shapes["rnn_state_cell"] = (LAYERS * dirs, BATCH, HIDDEN)
    arg_shapes, out_shapes, _ = sym.infer_shape(**shapes)
    shapes = dict(zip(sym.list_arguments(), arg_shapes))
    values = {n: rng.uniform(-0.5, 0.5, s) for n, s in shapes.items()}
    head_grads = [rng.uniform(-1, 1, s) for s in out_shapes]
    expected, expected_grads = _mxnet_run(sym, values, head_grads)

    # Converted in float32, then run in float64.
    params = {"rnn_parameters": mx.nd.array(values["rnn_parameters"])}
    inputs = [n for n in sym.list_arguments() if n != "rnn_parameters"]
    module = mxcompat.to_torch((sym, params, {}), [shapes[n] for n in inputs], verify=False)
    module.double().train()
    assert "mxops.rnn(" in module.code
    assert list(module.state_dict()) == ["rnn_parameters"]
    with torch.no_grad():
        module.rnn_parameters.copy_(torch.from_numpy(values["rnn_parameters"]))
    feed = [torch.tensor(values[n], requires_grad=True) for n in inputs]
    got = module(*feed)
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    assert len(got) == len(expected)
    for k, (g, e) in enumerate(zip(got, expected)):
        _close(g.detach().numpy(), e, "output %d" % k, RTOL[mode])
    torch.autograd.backward(got, [torch.from_numpy(g) for g in head_grads])
    grad = module.rnn_parameters.grad.numpy()
    _close(grad, expected_grads["rnn_parameters"], "parameters", RTOL[mode])
    for name, tensor in zip(inputs, feed):
        _close(tensor.grad.numpy(), expected_grads[name], name, RTOL[mode])


class _Stack(mx.gluon.HybridBlock):
    def __init__(self, mode, **kwargs):
        super().__init__(**kwargs)
        layer = {
            "lstm": mx.gluon.rnn.LSTM,
            "gru": mx.gluon.rnn.GRU,
            "rnn_tanh": mx.gluon.rnn.RNN,
            "rnn_relu": mx.gluon.rnn.RNN,
        }[mode]
        extra = {"activation": mode[4:]} if mode.startswith("rnn_") else {}
        with self.name_scope():
            self.rnn = layer(
                HIDDEN, num_layers=LAYERS, bidirectional=True, input_size=INPUT, **extra
            )

    def hybrid_forward(self, F, x, *states):
        out, states = self.rnn(x, list(states))
        return [out] + list(states)


@pytest.mark.parametrize("mode", MODES)
def test_gluon_layer_parameters_go_to_the_kernel_as_they_are(mode):
    """A Gluon layer's parameters reach the kernel without being concatenated (its
    ``_rnn_param_concat`` and reshapes are not in the forward); outputs, states and every
    parameter's gradient match MXNet's autograd in float64."""
    import torch

    mx.random.seed(0)
    net = _Stack(mode)
    net.initialize(mx.init.Uniform(0.5))
    net.cast("float64")
    net.hybridize()
    rng = np.random.RandomState(1)
    count = 2 if mode == "lstm" else 1
    x = rng.uniform(-1, 1, (STEPS, BATCH, INPUT))
    states = [rng.uniform(-0.5, 0.5, (LAYERS * 2, BATCH, HIDDEN)) for _ in range(count)]
    arrays = [mx.nd.array(a, dtype=np.float64) for a in [x] + states]
    for a in arrays:
        a.attach_grad()
    with mx.autograd.record():
        outs = net(*arrays)
    head_grads = [rng.uniform(-1, 1, o.shape) for o in outs]
    mx.autograd.backward(outs, [mx.nd.array(g, dtype=np.float64) for g in head_grads])

    module = mxcompat.to_torch(net, [a.shape for a in arrays])
    assert "_rnn_param_concat" not in module.code.split("def forward")[1]
    assert "torch.cat" not in module.code.split("def forward")[1]
    module.double().train()
    feed = [torch.tensor(a.asnumpy(), requires_grad=True) for a in arrays]
    got = module(*feed)
    for k, (g, e) in enumerate(zip(got, outs)):
        _close(g.detach().numpy(), e.asnumpy(), "output %d" % k, RTOL[mode])
    torch.autograd.backward(list(got), [torch.from_numpy(g) for g in head_grads])
    torch_params = params_by_mxnet_name(module)
    for param in net.collect_params().values():
        got_grad = torch_params[param.name].grad.numpy()
        _close(got_grad, param.grad().asnumpy(), param.name, RTOL[mode])
    for k, (tensor, array) in enumerate(zip(feed, arrays)):
        _close(tensor.grad.numpy(), array.grad.asnumpy(), "input %d" % k, RTOL[mode])


def _torch_calls(module, args):
    """The torch functions the module's forward and backward call from Python, in order."""
    import torch
    from torch.overrides import TorchFunctionMode

    calls = []

    class Record(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            calls.append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    with Record():
        out = module(*args)
    out = out[0] if isinstance(out, (list, tuple)) else out
    torch.autograd.backward(out, torch.ones_like(out))
    return calls


@pytest.mark.parametrize("mode", MODES)
def test_one_kernel_call_and_no_loop_over_time_steps(mode):
    """The forward calls the mode's fused kernel once, and the same torch functions whatever
    the sequence's length: no step of the sequence runs in Python.  The profiler sees
    aten's op of that name."""
    import torch

    sym = _symbol(mode, True, True)
    lengths = {}
    for steps in (3, 9):
        shapes = {"data": (steps, BATCH, INPUT), "rnn_state": (LAYERS * 2, BATCH, HIDDEN)}
        if mode == "lstm":
            shapes["rnn_state_cell"] = shapes["rnn_state"]
        arg_shapes, _, _ = sym.infer_shape(**shapes)
        shapes = dict(zip(sym.list_arguments(), arg_shapes))
        params = {"rnn_parameters": mx.nd.ones(shapes["rnn_parameters"]) * 0.1}
        inputs = [n for n in sym.list_arguments() if n != "rnn_parameters"]
        module = mxcompat.to_torch((sym, params, {}), [shapes[n] for n in inputs], verify=False)
        module.train()
        feed = [torch.rand(shapes[n]) for n in inputs]
        lengths[steps] = _torch_calls(module, feed)
        with torch.profiler.profile() as prof:
            module(*feed)
        assert "aten::" + KERNEL[mode] in {e.name for e in prof.events()}
    assert lengths[3] == lengths[9]
    assert lengths[3].count(KERNEL[mode]) == 1, lengths[3]


def test_inference_views_follow_load_state_dict_and_training_steps():
    """In inference the flat vector's views are made once and reused; loading new weights
    or an optimizer step changes the result as it must, and gradients still reach the one
    flat parameter afterwards."""
    import torch

    sym = _symbol("lstm", False, False)
    shapes = {"data": (STEPS, BATCH, INPUT), "rnn_state": (LAYERS, BATCH, HIDDEN)}
    shapes["rnn_state_cell"] = shapes["rnn_state"]
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    shapes = dict(zip(sym.list_arguments(), arg_shapes))
    rng = np.random.RandomState(2)
    values = {n: rng.uniform(-0.5, 0.5, s) for n, s in shapes.items()}
    inputs = [n for n in sym.list_arguments() if n != "rnn_parameters"]

    def mxnet_forward(flat):
        ex = sym.simple_bind(
            mx.cpu(), grad_req="null", type_dict={n: np.float64 for n in shapes}, **shapes
        )
        for name, value in dict(values, rnn_parameters=flat).items():
            ex.arg_dict[name][:] = value
        return ex.forward(is_train=False)[0].asnumpy()

    params = {"rnn_parameters": mx.nd.array(values["rnn_parameters"])}
    module = mxcompat.to_torch((sym, params, {}), [shapes[n] for n in inputs], verify=False)
    module.double()
    feed = [torch.from_numpy(values[n]) for n in inputs]
    with torch.no_grad():
        module.rnn_parameters.copy_(torch.from_numpy(values["rnn_parameters"]))
        _close(module(*feed).numpy(), mxnet_forward(values["rnn_parameters"]), "first")
        _close(module(*feed).numpy(), mxnet_forward(values["rnn_parameters"]), "again")
    other = rng.uniform(-0.5, 0.5, shapes["rnn_parameters"])
    module.load_state_dict({"rnn_parameters": torch.from_numpy(other)})
    with torch.no_grad():
        _close(module(*feed).numpy(), mxnet_forward(other), "after load_state_dict")
    opt = torch.optim.SGD(module.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        module(*feed).sum().backward()
        assert module.rnn_parameters.grad.abs().sum() > 0
        opt.step()
        with torch.no_grad():
            now = module.rnn_parameters.detach().numpy().copy()
            _close(module(*feed).numpy(), mxnet_forward(now), "after a step")


def test_torch_compile_and_export():
    """``torch.compile`` (one graph) trains the converted model as eager does, and
    ``torch.export`` gives the same outputs: for a Gluon layer (the kernel) and for MXNet's
    flat vector in training (step by step there, see ``runtime._rnn_steps``)."""
    import torch

    from tests.support.models import BATCH as N
    from tests.support.models import STEPS as T
    from tests.support.models import language_model

    net, tokens = language_model("lstm")
    module = mxcompat.to_torch(net, [(T, N)]).train()
    x = torch.from_numpy(tokens.asnumpy()).long()
    eager = module(x)
    eager.sum().backward()
    grads = {n: p.grad.clone() for n, p in module.named_parameters()}
    # A Gluon layer is written as nn.LSTM, which Dynamo compiles as one graph only when told
    # (allow_rnn), as for any PyTorch model with nn.LSTM; without it, a graph break there.
    for fullgraph in (False, True):
        module.zero_grad()
        with torch._dynamo.config.patch(allow_rnn=fullgraph):
            torch._dynamo.reset()
            compiled = torch.compile(module, backend="aot_eager", fullgraph=fullgraph)(x)
        compiled.sum().backward()
        _close(compiled.detach().numpy(), eager.detach().numpy(), "compiled", 1e-6)
        for name, param in module.named_parameters():
            _close(param.grad.numpy(), grads[name].numpy(), name, 1e-5)
    module.eval()
    exported = torch.export.export(module, (x,))
    _close(exported.module()(x).detach().numpy(), module(x).detach().numpy(), "exported", 1e-6)

    sym = _symbol("lstm", True, False)
    shapes = {"data": (T, N, INPUT), "rnn_state": (LAYERS * 2, N, HIDDEN)}
    shapes["rnn_state_cell"] = shapes["rnn_state"]
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    shapes = dict(zip(sym.list_arguments(), arg_shapes))
    params = {
        "rnn_parameters": mx.nd.array(
            np.random.RandomState(3).uniform(-1, 1, shapes["rnn_parameters"])
        )
    }
    inputs = [n for n in sym.list_arguments() if n != "rnn_parameters"]
    flat = mxcompat.to_torch((sym, params, {}), [shapes[n] for n in inputs], verify=False)
    feed = [torch.rand(shapes[n]) for n in inputs]
    eager = flat(*feed)
    eager.sum().backward()
    grad = flat.rnn_parameters.grad.clone()
    flat.zero_grad()
    compiled = torch.compile(flat, backend="aot_eager", fullgraph=True)(*feed)
    compiled.sum().backward()
    _close(compiled.detach().numpy(), eager.detach().numpy(), "flat, compiled", 1e-5)
    _close(flat.rnn_parameters.grad.numpy(), grad.numpy(), "flat, compiled gradient", 1e-5)
    exported = torch.export.export(flat.eval(), tuple(feed))
    _close(exported.module()(*feed).detach().numpy(), flat(*feed).detach().numpy(), "flat", 1e-5)
