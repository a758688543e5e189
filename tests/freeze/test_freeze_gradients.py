"""``mxcompat.freeze(..., gradients=False)`` on Gluon: the frozen parameters skip their
backward as with ``grad_req='null'`` set by hand, and what user code reads stays as it was.

Each case trains the same net from the same parameters and batches twice in one process:
frozen the default way (their gradients computed, the update skipping them: the behaviour
before the option existed) and with ``gradients=False``.  Frozen gradients are never used, so
every trained parameter and every optimizer state must be equal bit for bit
(``np.array_equal``, each device's own array), hybridized or not.
"""

import importlib

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon

import mxcompat
from tests.support.models import flat_state, gluon_regression_steps

freeze_trainer = importlib.import_module("mxcompat.freeze.trainer")

BATCH = 4
TWO = [mx.cpu(0), mx.cpu(1)]
OPTIMIZERS = {
    "sgd": {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01},
    "adam": {"learning_rate": 0.01, "wd": 0.01},
}
# The front layer (nothing before it trains: its backward is skipped whole) and a middle
# one (its parameters' gradients are skipped, the gradient to the layer before still flows).
FRONT = ("net_fc1_*",)
MIDDLE = ("net_fc2_*",)
# A FullyConnected weight whose bias trains: on the oneDNN builds 'null' would stop the bias
# too, so it keeps its backward there (trainer.py); skipped elsewhere.
WEIGHT_ONLY = ("net_fc2_weight",)


def _net(contexts, hybridize, batchnorm=False):
    net = gluon.nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(gluon.nn.Dense(6, in_units=4, activation="tanh", prefix="fc1_"))
        if batchnorm:
            net.add(gluon.nn.BatchNorm(in_channels=6, prefix="bn_"))
        net.add(
            gluon.nn.Dense(5, in_units=6, activation="tanh", prefix="fc2_"),
            gluon.nn.Dense(3, in_units=5, prefix="fc3_"),
        )
    mx.random.seed(1)
    net.initialize(mx.init.Uniform(0.5), ctx=contexts)
    if hybridize == "static":  # CachedOp's static backward, its memory planned once
        net.hybridize(static_alloc=True, static_shape=True)
    elif hybridize:
        net.hybridize()
    return net


def _trainer(net, optimizer="sgd", **kwargs):
    return gluon.Trainer(net.collect_params(), optimizer, dict(OPTIMIZERS[optimizer]), **kwargs)


def _params(net):
    return {
        p.name: [a.asnumpy().copy() for a in p.list_data()] for p in net.collect_params().values()
    }


def _states(trainer):
    updaters = [trainer._kvstore._updater] if trainer._update_on_kvstore else trainer._updaters
    return [
        (device, key, flat_state(state))
        for device, updater in enumerate(updaters)
        for key, state in sorted(updater.states.items())
    ]


def _assert_equal(expected, found, skip=()):
    assert set(expected) == set(found)
    for name in expected:
        if name in skip:
            continue
        for a, b in zip(expected[name], found[name]):
            assert np.array_equal(a, b), name


def _assert_equal_subset(expected, found):
    for name in expected:
        for a, b in zip(expected[name], found[name]):
            assert np.array_equal(a, b), name


def _assert_states_equal(expected, found):
    assert [k[:2] for k in expected] == [k[:2] for k in found]
    for (_, key, a), (_, _, b) in zip(expected, found):
        assert len(a) == len(b)
        assert all(np.array_equal(x, y) for x, y in zip(a, b)), key


def _run(frozen, gradients, contexts=None, hybridize=False, optimizer="sgd", **kw):
    """3 steps, freeze, 5 steps, unfreeze, 3 steps: (trained parameters, optimizer states,
    the parameters after the frozen steps)."""
    contexts = contexts or [mx.cpu()]
    clip = kw.pop("clip", None)
    net = _net(contexts, hybridize, kw.pop("batchnorm", False))
    trainer = _trainer(net, optimizer, **kw)
    gluon_regression_steps(net, trainer, contexts, 3, seed=0, clip=clip)
    mxcompat.freeze(*frozen, gradients=gradients)
    gluon_regression_steps(net, trainer, contexts, 5, seed=1, clip=clip)
    middle = _params(net)
    mxcompat.unfreeze()
    gluon_regression_steps(net, trainer, contexts, 3, seed=2, clip=clip)
    return _params(net), _states(trainer), middle


@pytest.mark.parametrize(
    "hybridize", [False, True, "static"], ids=["imperative", "hybridized", "static"]
)
@pytest.mark.parametrize(
    "frozen", [FRONT, MIDDLE, WEIGHT_ONLY], ids=["front", "middle", "weight-only"]
)
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_trained_bit_for_bit(hybridize, frozen, optimizer):
    expected = _run(frozen, True, hybridize=hybridize, optimizer=optimizer)
    found = _run(frozen, False, hybridize=hybridize, optimizer=optimizer)
    _assert_equal(expected[2], found[2])
    _assert_equal(expected[0], found[0])
    _assert_states_equal(expected[1], found[1])


@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
@pytest.mark.parametrize(
    "kvstore, update_on_kvstore",
    [(None, None), ("device", False), ("device", True)],
    ids=["nokv", "kv-off", "kv-on"],
)
def test_trained_bit_for_bit_two_devices(hybridize, kvstore, update_on_kvstore):
    kw = dict(kvstore=kvstore, update_on_kvstore=update_on_kvstore)
    expected = _run(FRONT + MIDDLE, True, TWO, hybridize, **kw)
    found = _run(FRONT + MIDDLE, False, TWO, hybridize, **kw)
    _assert_equal(expected[0], found[0])
    _assert_states_equal(expected[1], found[1])


@pytest.mark.parametrize(
    "hybridize", [False, True, "static"], ids=["imperative", "hybridized", "static"]
)
def test_skips_backward_as_grad_req_null(hybridize):
    # The frozen weight's gradient is no longer computed: it reads zeros after every step
    # (the first step after the freeze still computed it), as a hand-set 'null' computes none.
    net = _net([mx.cpu()], hybridize)
    trainer = _trainer(net)
    mxcompat.freeze(*MIDDLE, gradients=False)
    weight = net.collect_params()["net_fc2_weight"]
    gluon_regression_steps(net, trainer, [mx.cpu()], 1)
    assert weight in freeze_trainer._skipped
    data = weight.data()
    gluon_regression_steps(net, trainer, [mx.cpu()], 2)
    assert not weight.grad().asnumpy().any()
    assert weight.data() is data  # not detached: the arrays user code holds stay the param's
    assert net.collect_params()["net_fc3_weight"].grad().asnumpy().any()


@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
def test_what_user_code_reads(hybridize):
    net = _net([mx.cpu()], hybridize)
    trainer = _trainer(net)
    params = net.collect_params()
    mxcompat.freeze(*FRONT, gradients=False)
    gluon_regression_steps(net, trainer, [mx.cpu()], 3)
    frozen = [p for p in params.values() if p.name.startswith("net_fc1_")]
    assert set(p.grad_req for p in params.values()) == {"write"}
    for p in frozen:
        assert p.grad().shape == p.shape and not p.grad().asnumpy().any()
        assert len(p.list_grad()) == 1
    params.zero_grad()
    assert not any(p.grad().asnumpy().any() for p in params.values())
    gluon_regression_steps(net, trainer, [mx.cpu()], 1)
    # Clipping over every parameter still runs; the frozen ones add nothing to the norm.
    every = [p.grad() for p in params.values()]
    trainable = [p.grad() for p in params.values() if p not in frozen]
    norm = float(gluon.utils.clip_global_norm([g.copy() for g in trainable], 1e9))
    # (Equal up to the summation order, which differs between releases.)
    assert float(gluon.utils.clip_global_norm(every, 1e9)) == pytest.approx(norm, rel=1e-6)


@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
def test_clipping_over_every_parameter_differs(hybridize):
    # The one difference in trained weights: clipping by a norm over every parameter sees
    # zeros where the frozen gradients were (docs/guide/freeze.md).  Same without clipping.
    expected = _run(FRONT, True, hybridize=hybridize, clip=0.5)
    found = _run(FRONT, False, hybridize=hybridize, clip=0.5)
    assert not np.array_equal(expected[2]["net_fc3_weight"][0], found[2]["net_fc3_weight"][0])
    _assert_equal_subset(
        {k: v for k, v in expected[2].items() if k.startswith("net_fc1_")}, found[2]
    )


@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
def test_unfreeze_gives_gradients_back_at_once(hybridize):
    net = _net([mx.cpu()], hybridize)
    trainer = _trainer(net)
    mxcompat.freeze(*MIDDLE, gradients=False)
    gluon_regression_steps(net, trainer, [mx.cpu()], 2)
    assert freeze_trainer._skipped
    mxcompat.unfreeze()
    assert not freeze_trainer._skipped
    weight = net.collect_params()["net_fc2_weight"]
    before = weight.data().asnumpy().copy()
    gluon_regression_steps(net, trainer, [mx.cpu()], 1)  # its gradient computed again, and applied
    assert weight.grad().asnumpy().any()
    assert not np.array_equal(before, weight.data().asnumpy())


def test_unfreeze_between_backward_and_step():
    # The backward skipped it: that step has no gradient of it and leaves it as it is (no
    # stale-gradient error from the Trainer); the next one trains it.
    net = _net([mx.cpu()], False)
    trainer = _trainer(net)
    mxcompat.freeze(*MIDDLE, gradients=False)
    gluon_regression_steps(net, trainer, [mx.cpu()], 2)
    weight = net.collect_params()["net_fc2_weight"]
    before = weight.data().asnumpy().copy()
    x = mx.nd.ones((BATCH, 4))
    with autograd.record():
        loss = net(x).sum()
    loss.backward()
    mxcompat.unfreeze()
    trainer.step(BATCH)
    assert np.array_equal(before, weight.data().asnumpy())
    gluon_regression_steps(net, trainer, [mx.cpu()], 1)
    assert not np.array_equal(before, weight.data().asnumpy())


def test_flag_back_to_default_gives_gradients_back():
    net = _net([mx.cpu()], False)
    trainer = _trainer(net)
    mxcompat.freeze(*MIDDLE, gradients=False)
    gluon_regression_steps(net, trainer, [mx.cpu()], 2)
    mxcompat.freeze(*MIDDLE)  # the same pattern, its flag set back
    assert mxcompat.frozen_patterns() == MIDDLE
    gluon_regression_steps(net, trainer, [mx.cpu()], 1)
    assert net.collect_params()["net_fc2_weight"].grad().asnumpy().any()


def test_frozen_block_restores_flag():
    mxcompat.freeze("a_*")
    with mxcompat.frozen("a_*", "b_*", gradients=False):
        registry = importlib.import_module("mxcompat.freeze.registry")
        assert registry.skips_gradient(("a_x", "b_x", "c_x")) == (True, True, False)
    assert mxcompat.frozen_patterns() == ("a_*",)
    assert registry.skips_gradient(("a_x",)) is None


def test_grad_req_set_by_user_afterwards():
    # The setter re-marks with new buffers: the next step marks them again, as the user
    # set them ('add' accumulates into zeros for the trainable ones as before).
    net = _net([mx.cpu()], False)
    trainer = _trainer(net)
    mxcompat.freeze(*MIDDLE, gradients=False)
    gluon_regression_steps(net, trainer, [mx.cpu()], 1)
    weight = net.collect_params()["net_fc2_weight"]
    weight.grad_req = "add"
    assert weight.grad_req == "add"
    # Computed once (not marked yet), then marked.
    gluon_regression_steps(net, trainer, [mx.cpu()], 1)
    gluon_regression_steps(net, trainer, [mx.cpu()], 2)
    assert weight.grad_req == "add"
    assert not weight.grad().asnumpy().any()
    weight.grad_req = "null"  # the user's own 'null' wins, as without mxcompat
    gluon_regression_steps(net, trainer, [mx.cpu()], 1)
    with pytest.raises(RuntimeError):
        weight.grad()


@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
def test_batchnorm_statistics_as_grad_req_null(hybridize):
    # A BatchNorm after a frozen front, its gamma and beta frozen too, has no backward left,
    # as with a hand-set 'null': every parameter and running statistic is that net's.
    frozen = FRONT + ("net_bn_gamma", "net_bn_beta")

    def train(by_hand):
        net = _net([mx.cpu()], hybridize, batchnorm=True)
        trainer = _trainer(net)
        gluon_regression_steps(net, trainer, [mx.cpu()], 3)
        mxcompat.freeze(*frozen, gradients=by_hand)
        # The first step after a freeze computes every gradient (the marks come after it).
        gluon_regression_steps(net, trainer, [mx.cpu()], 1, seed=1)
        if by_hand:
            for name, p in net.collect_params().items():
                if name.startswith(("net_fc1_", "net_bn_gamma", "net_bn_beta")):
                    p.grad_req = "null"
        gluon_regression_steps(net, trainer, [mx.cpu()], 3, seed=2)
        mxcompat.unfreeze()
        return _params(net)

    _assert_equal(train(True), train(False))


def test_onednn_fc_weight_keeps_backward_while_its_bias_trains():
    from mxcompat.freeze import onednn_fc_bias

    net = _net([mx.cpu()], False)
    trainer = _trainer(net)
    mxcompat.freeze(*WEIGHT_ONLY, gradients=False)
    gluon_regression_steps(net, trainer, [mx.cpu()], 3)
    params = net.collect_params()
    held = onednn_fc_bias.affected_build()
    assert (params["net_fc2_weight"] in freeze_trainer._skipped) == (not held)
    assert params["net_fc2_weight"].grad().asnumpy().any() == held
    assert params["net_fc2_bias"].grad().asnumpy().any()
    mxcompat.freeze("net_fc2_bias", gradients=False)  # its bias frozen too: nothing to stop
    gluon_regression_steps(net, trainer, [mx.cpu()], 2)
    assert params["net_fc2_weight"] in freeze_trainer._skipped
    assert not params["net_fc2_weight"].grad().asnumpy().any()
