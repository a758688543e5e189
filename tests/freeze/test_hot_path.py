"""A training step with nothing frozen runs MXNet's own functions: the freeze wrappers on the
step's path (``hot`` targets) are applied only while the registry holds a pattern, a bound
Module waits for its rebind, or a Gluon parameter given its gradient back waits for its step
(``mxcompat/freeze/hot_path.py``).
"""

import functools
import gc
import importlib
import os
import sys

import mxnet as mx
import numpy as np
import pytest
import wrapt
from mxnet import autograd, gluon

import mxcompat
from tests.support.models import bind_regression, dense_net, regression_batches, regression_module

patches = importlib.import_module("mxcompat._core.registry")
stacking = importlib.import_module("mxcompat._core.stacking")
# The freeze feature's code (other patches may be on a step's path: numpy2 on NumPy 2).
FREEZE_DIR = os.path.join(os.path.dirname(mxcompat.__file__), "freeze") + os.sep


def _hot_targets():
    """(owner, attribute) of every hot target of the two patches, on this release."""
    found = []
    for name in ("freeze", "frozen_statistics"):
        for target in patches.get(name).targets:
            if not target.hot:
                continue
            owner = sys.modules[target.module]
            parts = target.path.split(".")
            for part in parts[:-1]:
                owner = getattr(owner, part)
            if parts[-1] in vars(owner):
                found.append((owner, parts[-1]))
    return found


def _settled():
    """Let the registry compare every live Module again (a change of the registry does),
    after the garbage of earlier tests is gone."""
    gc.collect()
    mxcompat.freeze("nothing_by_this_name")
    mxcompat.unfreeze()


def _module():
    mod = regression_module()
    bind_regression(mod)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    return mod


def _module_step(mod, batch):
    mod.forward_backward(batch)
    mod.update()
    mx.nd.waitall()


def _gluon():
    """A Gluon net and its training step; ``step(unfreeze_after_backward=True)`` unfreezes
    everything between the backward and ``Trainer.step``."""
    net = dense_net((4, 5, 3), "tanh", prefix="hot_", init=mx.init.Uniform(0.5), seed=1)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    rng = np.random.RandomState(0)
    x = mx.nd.array(rng.uniform(-1, 1, (4, 4)))
    y = mx.nd.array(rng.uniform(-1, 1, (4, 3)))

    def step(unfreeze_after_backward=False):
        with autograd.record():
            loss = ((net(x) - y) ** 2).sum()
        loss.backward()
        if unfreeze_after_backward:
            mxcompat.unfreeze()
        trainer.step(4)
        mx.nd.waitall()

    return net, step


def _mxcompat_frames(run):
    """The functions of mxcompat's freeze feature that ``run()`` entered."""
    entered = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(FREEZE_DIR):
            entered.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return entered


def test_a_step_with_nothing_frozen_runs_mxnets_own_functions():
    mod = _module()
    batch = regression_batches(1)[0]
    _, gluon_step = _gluon()
    _module_step(mod, batch)
    gluon_step()
    _settled()
    assert not patches.is_armed("freeze") and not patches.is_armed("frozen_statistics")
    targets = _hot_targets()
    assert len(targets) >= 10
    ours = [vars(owner)[attr] for owner, attr in targets]
    mxcompat.unpatch()
    try:
        mxnets = [vars(owner)[attr] for owner, attr in targets]
    finally:
        mxcompat.patch()
    # (wrapt proxies compare equal to what they wrap: compare identities)
    assert all(a is b for a, b in zip(ours, mxnets))
    assert _mxcompat_frames(lambda: _module_step(mod, batch)) == []
    assert _mxcompat_frames(gluon_step) == []
    # Something frozen: the step's path goes through mxcompat again.
    mxcompat.freeze("fc2_bias")
    assert patches.is_armed("freeze") and patches.is_armed("frozen_statistics")
    entered = _mxcompat_frames(lambda: _module_step(mod, batch))
    assert {"wrap_module_forward", "wrap_executor_backward", "wrap_update_fn"} <= set(entered)


def test_unfreeze_keeps_the_forward_wrapped_until_the_module_has_its_gradients_back():
    mod = _module()
    batches = regression_batches(3)
    _settled()
    mxcompat.freeze("fc1_*")
    for batch in batches:
        _module_step(mod, batch)
    grads = dict(zip(mod._exec_group.param_names, mod._exec_group.grad_arrays))
    assert grads["fc1_weight"][0] is None  # rebound without it
    frozen = mod.get_params()[0]["fc1_weight"].asnumpy()
    mxcompat.unfreeze()
    # Nothing frozen, but the Module waits for the rebind that gives fc1 its gradient back.
    assert patches.is_armed("freeze")
    assert not patches.is_armed("frozen_statistics")
    _module_step(mod, batches[0])
    grads = dict(zip(mod._exec_group.param_names, mod._exec_group.grad_arrays))
    assert grads["fc1_weight"][0] is not None
    assert not patches.is_armed("freeze")
    # It trains again.
    assert not np.array_equal(mod.get_params()[0]["fc1_weight"].asnumpy(), frozen)


def test_a_parameter_given_its_gradient_back_keeps_the_trainer_wrapped_for_one_step():
    net, step = _gluon()
    _settled()
    mxcompat.freeze("hot_dense0_*", gradients=False)  # weight and bias: no oneDNN hold
    step()
    weight = net[0].weight
    frozen = weight.data().asnumpy()
    # Given back after the backward: its buffer holds no gradient of this step, so the step
    # must still treat it as frozen, with nothing frozen in the registry.
    step(unfreeze_after_backward=True)
    assert not patches.is_armed("freeze")
    assert np.array_equal(weight.data().asnumpy(), frozen)
    step()
    assert not np.array_equal(weight.data().asnumpy(), frozen)


def test_the_step_after_a_gradient_given_back_is_wrapped():
    net, step = _gluon()
    _settled()
    mxcompat.freeze("hot_dense0_*", gradients=False)
    step()
    mxcompat.unfreeze()
    assert patches.is_armed("freeze")  # until that step
    step()
    assert not patches.is_armed("freeze")


def test_patching_with_something_frozen_arms_and_unpatching_disarms():
    mxcompat.unpatch("freeze", "frozen_statistics")
    try:
        mxcompat.freeze("fc1_*")
        assert not patches.is_armed("freeze")
        mxcompat.patch("freeze", "frozen_statistics")
        assert patches.is_armed("freeze") and patches.is_armed("frozen_statistics")
        backward = vars(mx.executor.Executor)["backward"]
        assert backward._self_mxcompat_patch == "frozen_statistics"
        mxcompat.unpatch("frozen_statistics")
        assert not patches.is_armed("frozen_statistics")
        assert not hasattr(vars(mx.executor.Executor)["backward"], "_self_mxcompat_patch")
    finally:
        mxcompat.patch()


def _theirs(wrapped, instance, args, kwargs):
    _theirs.calls += 1
    return wrapped(*args, **kwargs)


def test_a_wrapper_installed_over_an_armed_forward_survives_the_disarm():
    # ddtrace, OpenTelemetry: a wrapt proxy over ours; disarmed, ours leaves from beneath it.
    Module = mx.mod.Module
    _settled()
    original = vars(Module)["forward"]
    mod = _module()
    batch = regression_batches(1)[0]
    mxcompat.freeze("nothing_by_this_name")
    ours = vars(Module)["forward"]
    assert ours._self_mxcompat_patch == "freeze"
    wrapt.wrap_function_wrapper(Module, "forward", _theirs)
    theirs = vars(Module)["forward"]
    try:
        mxcompat.unfreeze()
        assert not patches.is_armed("freeze")
        assert vars(Module)["forward"] is theirs and theirs.__wrapped__ is original
        _theirs.calls = 0
        _module_step(mod, batch)
        assert _theirs.calls == 1
    finally:
        Module.forward = original


def test_a_plain_wrapper_over_an_armed_forward_keeps_it_armed():
    # A wrapper that cannot be unwrapped from beneath: ours stays under it (it only checks).
    Module = mx.mod.Module
    _settled()
    original = vars(Module)["forward"]
    mod = _module()
    batches = regression_batches(2)
    mxcompat.freeze("fc2_bias")
    ours = vars(Module)["forward"]
    calls = []

    @functools.wraps(ours)
    def theirs(self, *args, **kwargs):
        calls.append(1)
        return ours.__get__(self, Module)(*args, **kwargs)

    Module.forward = theirs
    try:
        _module_step(mod, batches[0])
        bias = mod.get_params()[0]["fc2_bias"].asnumpy()
        mxcompat.unfreeze()
        _module_step(mod, batches[1])
        assert patches.is_armed("freeze")
        assert vars(Module)["forward"] is theirs and len(calls) == 2
        # The rebind still happened under it: the bias trains again.
        assert not np.array_equal(mod.get_params()[0]["fc2_bias"].asnumpy(), bias)
    finally:
        Module.forward = ours  # theirs gone, ours leaves at the next rearm
        mxcompat.unfreeze()
        patches.rearm("freeze")
    assert vars(Module)["forward"] is original


def test_a_hot_target_shared_with_another_patch_is_refused():
    def passthrough(wrapped, instance, args, kwargs):
        return wrapped(*args, **kwargs)

    other = patches.Patch(
        "labels", "", targets=[patches.Target("mxnet.executor", "Executor.backward", passthrough)]
    )
    with pytest.raises(ValueError) as info:
        stacking.check_hot(other, [patches.get("frozen_statistics")])
    assert str(info.value) == (
        "mxcompat: patches 'labels' and 'frozen_statistics' both target "
        "mxnet.executor.Executor.backward, a hot target of one of them"
    )
