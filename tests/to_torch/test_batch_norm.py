"""BatchNorm in training, one statistics pass: the converted model's running statistics after
several training steps are MXNet's own (float64, fix_gamma either way, a channel axis other
than 1, use_global_stats, statistics frozen), and the training forward and backward are one
fused batch-norm kernel each, with no reductions of their own beside it."""

import importlib.util

import mxnet as mx
import numpy as np
import pytest

import mxcompat

_SPEC = importlib.util.find_spec("torch")
pytestmark = pytest.mark.skipif(
    _SPEC is None or _SPEC.origin is None, reason="needs torch (the torch extra)"
)

CASES = {
    "fix_gamma": dict(fix_gamma=True),
    "gamma": dict(fix_gamma=False, momentum=0.8),
    "axis_last": dict(fix_gamma=False, axis=-1),
    "global_stats": dict(fix_gamma=False, use_global_stats=True),
    "frozen": dict(fix_gamma=False),
}


def _close(a, b, rtol=1e-12):
    return np.abs(a - b).max() <= rtol * max(np.abs(b).max(), 1e-300)


def _steps(case, shape=(4, 3, 5, 5), steps=4):
    """MXNet's executor and the converted module, float64, the same batches: per step the
    output, the gradients of data, gamma and beta, and the running statistics after it."""
    import torch

    kw = CASES[case]
    sym = mx.sym.BatchNorm(mx.sym.var("data"), name="bn", eps=1e-3, **kw)
    rng = np.random.RandomState(7)
    channels = shape[kw.get("axis", 1)]
    args = {
        "bn_gamma": mx.nd.array(rng.uniform(0.5, 1.5, channels), dtype="float64"),
        "bn_beta": mx.nd.array(rng.uniform(-1, 1, channels), dtype="float64"),
    }
    aux = {
        "bn_moving_mean": mx.nd.array(rng.uniform(-1, 1, channels), dtype="float64"),
        "bn_moving_var": mx.nd.array(rng.uniform(0.5, 1.5, channels), dtype="float64"),
    }
    batches = [rng.uniform(-2, 3, shape) for _ in range(steps)]
    heads = [rng.uniform(-1, 1, shape) for _ in range(steps)]
    if case == "frozen":
        mxcompat.freeze("bn_moving_*")
    try:
        module = mxcompat.to_torch((sym, args, aux), {"data": shape}, verify=False)
        ex = sym.simple_bind(mx.cpu(), grad_req="write", type_dict={"data": "float64"}, data=shape)
        for name, value in list(args.items()) + list(aux.items()):
            (ex.arg_dict if name in args else ex.aux_dict)[name][:] = value
        want = []
        for x, head in zip(batches, heads):
            ex.arg_dict["data"][:] = x
            out = ex.forward(is_train=True)[0].asnumpy()
            ex.backward([mx.nd.array(head, dtype="float64")])
            mx.nd.waitall()  # the statistics are written in the backward
            want.append(
                [out]
                + [ex.grad_dict[n].asnumpy() for n in ("data", "bn_gamma", "bn_beta")]
                + [ex.aux_dict[n].asnumpy() for n in ("bn_moving_mean", "bn_moving_var")]
            )
    finally:
        if case == "frozen":
            mxcompat.unfreeze("bn_moving_*")
    if case == "frozen":
        assert "update_stats=False" in module.code
    module = module.double().train()
    got = []
    for x, head in zip(batches, heads):
        data = torch.tensor(x, requires_grad=True)
        out = module(data)
        module.zero_grad()
        out.backward(torch.tensor(head))
        params = dict(module.named_parameters())
        stats = module.state_dict()
        got.append(
            [out.detach().numpy(), data.grad.numpy()]
            + [params[n].grad.numpy().copy() for n in ("bn_gamma", "bn_beta")]
            + [stats[n].numpy().copy() for n in ("bn_moving_mean", "bn_moving_var")]
        )
    return want, got, aux


@pytest.mark.parametrize("case", sorted(CASES))
def test_training_steps_match_mxnets_statistics_in_float64(case):
    want, got, aux = _steps(case)
    names = ("output", "data grad", "gamma grad", "beta grad", "moving_mean", "moving_var")
    for step, (w, g) in enumerate(zip(want, got)):
        for name, a, b in zip(names, g, w):
            assert a.dtype == np.float64 and a.shape == b.shape, (step, name)
            assert _close(a, b), (case, step, name, np.abs(a - b).max())
    last = want[-1]
    start = [aux["bn_moving_mean"].asnumpy(), aux["bn_moving_var"].asnumpy()]
    if case in ("global_stats", "frozen"):
        # MXNet leaves them; so does the converted model, bit for bit.
        for a, b in zip(got[-1][4:], start):
            assert np.array_equal(a, b)
    else:
        # They moved, towards the biased variance with MXNet's momentum: PyTorch's own
        # rule (the unbiased variance) would be off by far more than the tolerance.
        assert not _close(last[5], start[1], rtol=1e-3)
        assert not np.array_equal(got[-1][5], start[1])
    if case == "fix_gamma":
        assert np.array_equal(got[-1][2], np.zeros_like(got[-1][2]))  # 0, not None


def test_pytorchs_own_statistics_would_not_pass():
    import torch

    want, _, aux = _steps("gamma", steps=1)
    mean = torch.tensor(aux["bn_moving_mean"].asnumpy())
    var = torch.tensor(aux["bn_moving_var"].asnumpy())
    rng = np.random.RandomState(7)
    rng.uniform(size=12)  # the draws _steps made for the parameters and statistics
    x = torch.tensor(rng.uniform(-2, 3, (4, 3, 5, 5)))
    torch.nn.functional.batch_norm(x, mean, var, training=True, momentum=1 - 0.8, eps=1e-3)
    assert _close(mean.numpy(), want[0][4], rtol=1e-6)  # the mean: the same rule
    assert not _close(var.numpy(), want[0][5], rtol=1e-3)  # the variance: unbiased


class _Ops:
    """The ATen operators a block of code runs (below autograd), in order."""

    def __enter__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        ops = self.ops = []

        class Record(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                ops.append(func.overloadpacket.__name__)
                return func(*args, **(kwargs or {}))

        self._mode = Record()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc):
        self._mode.__exit__(*exc)


REDUCTIONS = {"mean", "var", "var_mean", "sum", "std", "std_mean", "pow", "square", "sub"}


@pytest.mark.parametrize("fix_gamma", [True, False])
def test_training_forward_and_backward_are_one_fused_pass(fix_gamma):
    import torch

    from mxcompat.torch import runtime as mxops

    x = torch.randn(8, 4, 6, 6, requires_grad=True)
    gamma = torch.rand(4, requires_grad=True)
    beta = torch.rand(4, requires_grad=True)
    mean, var = torch.zeros(4), torch.ones(4)
    with _Ops() as forward:
        out = mxops.batch_norm(x, gamma, beta, mean, var, True, 1e-3, 0.9, fix_gamma, False)
    head = torch.randn(out.shape)
    with _Ops() as backward:
        out.backward(head)
    kernels = ("native_batch_norm", "cudnn_batch_norm", "_native_batch_norm_legit")
    assert sum(forward.ops.count(k) for k in kernels) == 1, forward.ops
    assert not REDUCTIONS & set(forward.ops), forward.ops
    assert sum(op.endswith("batch_norm_backward") for op in backward.ops) == 1, backward.ops
    assert not REDUCTIONS & set(backward.ops), backward.ops
    # ... and the statistics did move (the one pass is the one that moves them).
    assert not torch.equal(var, torch.ones(4)) and not torch.equal(mean, torch.zeros(4))


@pytest.mark.parametrize("given", [{}, {"eps": 1e-3}])
def test_the_default_eps_is_mxnets_float32_literal(given):
    """MXNet's BatchNorm without an eps takes 1e-3f, the float32 literal widened (1.000000047e-3);
    an eps given is a double.  Where the variance is near 0 only that value gives MXNet's
    output in float64, bit for bit."""
    import torch

    sym = mx.sym.BatchNorm(
        mx.sym.var("data"), name="bn", fix_gamma=False, use_global_stats=True, **given
    )
    params = {
        "bn_gamma": mx.nd.ones(2, dtype="float64"),
        "bn_beta": mx.nd.zeros(2, dtype="float64"),
    }
    aux = {
        "bn_moving_mean": mx.nd.zeros(2, dtype="float64"),
        "bn_moving_var": mx.nd.array([0.0, 1e-9], dtype="float64"),
    }
    module = mxcompat.to_torch((sym, params, aux), [(1, 2, 1, 1)])
    x = np.array([[[[1.0]], [[2.0]]]])
    args = dict(params, data=mx.nd.array(x, dtype="float64"))
    executor = sym.bind(mx.cpu(), args, aux_states=aux, grad_req="null")
    want = executor.forward(is_train=False)[0].asnumpy()
    with torch.no_grad():
        got = module(torch.from_numpy(x)).numpy()
    np.testing.assert_array_equal(got, want)
    eps = 1.0 / float(want[0, 0, 0, 0]) ** 2
    assert abs(eps - (1e-3 if given else float(np.float32(1e-3)))) < 1e-15, eps
