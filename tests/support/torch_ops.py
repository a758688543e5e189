"""For tests/to_torch/test_indexing_ops.py and test_resize_ops.py: one MXNet graph run by
MXNet's executor and by its ``to_torch`` module on the same inputs, outputs and gradients
compared."""

import mxnet as mx
import numpy as np

import mxcompat


def run_both(sym, feed, grad=True, exact=False, rtol=1e-5, verify=True, seed=7):
    """MXNet's outputs (and, with ``grad``, the inputs' gradients for seeded random output
    gradients) against the converted module's on ``feed`` ({input: float32 array}); the
    module also verified node by node by to_torch itself on its own random input where
    ``verify``.  Integer outputs, and all where ``exact``, must be equal; the output types
    the same.  Returns the module."""
    import torch

    names = sym.list_arguments()
    shapes = {n: feed[n].shape for n in names}
    ex = sym.simple_bind(mx.cpu(), grad_req="write" if grad else "null", **shapes)
    for n in names:
        ex.arg_dict[n][:] = feed[n]
    want = [o.asnumpy() for o in ex.forward(is_train=grad)]
    module = mxcompat.to_torch((sym, {}, {}), shapes, verify=verify)
    inputs = [torch.tensor(feed[n], requires_grad=grad) for n in module.mxnet_inputs]
    got = module(*inputs)
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g_np = g.detach().numpy()
        assert g_np.dtype == w.dtype, (g_np.dtype, w.dtype)
        assert g_np.shape == w.shape, (g_np.shape, w.shape)
        if exact or not np.issubdtype(w.dtype, np.floating):
            assert np.array_equal(g_np, w, equal_nan=True), (g_np, w)
        else:
            np.testing.assert_allclose(g_np, w, rtol=rtol, atol=rtol)
    if grad:
        rng = np.random.RandomState(seed)
        heads = [rng.uniform(-1, 1, w.shape).astype(w.dtype) for w in want]
        ex.backward([mx.nd.array(h, dtype=h.dtype) for h in heads])
        pairs = [(g, torch.from_numpy(h)) for g, h in zip(got, heads) if g.requires_grad]
        if pairs:
            torch.autograd.backward([p[0] for p in pairs], [p[1] for p in pairs])
        for n, x in zip(module.mxnet_inputs, inputs):
            mine = x.grad.numpy() if x.grad is not None else np.zeros_like(feed[n])
            np.testing.assert_allclose(mine, ex.grad_dict[n].asnumpy(), rtol=rtol, atol=rtol)
    return module


def data(*shape, seed=3, low=-1.0, high=1.0):
    return np.random.RandomState(seed).uniform(low, high, shape).astype(np.float32)
