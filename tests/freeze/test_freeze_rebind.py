"""Frozen (or unfrozen) after bind: the Module is rebound once, at its next forward, so what
is frozen has no gradient buffer and no backward, as with ``fixed_param_names``.

Each case trains the same module from the same parameters and batches twice in one process:
with the rebind, and with it turned off (``binding.REBIND = False``: the update skip alone, the
behaviour before the rebind existed).  Frozen gradients are never used, so every trained
parameter and every optimizer state must be equal bit for bit (``np.array_equal``, each
device's own array); and after the rebind the frozen parameters have no gradient array.
"""

import importlib
import os
import warnings

import mxnet as mx
import numpy as np
import pytest

import mxcompat
from mxcompat._core import facts
from tests.support.models import (
    bind_regression,
    bucket_batch,
    bucket_sym_gen,
    flat_state,
    mlp_symbol,
    regression_batches,
    regression_module,
    sequential_regression_module,
)
from tests.support.ps_cluster import run_cluster

freeze_binding = importlib.import_module("mxcompat.freeze.binding")

BATCH = 4
# fc1's weight and bias together (a 'null' weight stops nothing that trains, on oneDNN too)
# and fc2's bias: three parameters bound 'null' on every build.
FROZEN = ("fc1_*", "fc2_bias")
FROZEN_NAMES = {"fc1_weight", "fc1_bias", "fc2_bias"}
ADAM = ("adam", {"learning_rate": 0.01, "wd": 0.01})
TWO = [mx.cpu(0), mx.cpu(1)]


def _ours(record):
    return [str(w.message) for w in record if issubclass(w.category, mxcompat.MXCompatWarning)]


def _carry_symbol():
    """``mlp_symbol`` with a state input (``set_states``) added to ``data``."""
    data = mx.sym.Variable("data") + mx.sym.Variable("carry")
    hidden = mx.sym.Activation(
        mx.sym.FullyConnected(data, num_hidden=5, name="fc1"), act_type="tanh"
    )
    return mx.sym.LinearRegressionOutput(
        mx.sym.FullyConnected(hidden, num_hidden=3, name="fc2"), name="lro"
    )


def _module(contexts=None, symbol=None, **kwargs):
    return regression_module(symbol, context=contexts or mx.cpu(), **kwargs)


def _step(mod, batch):
    mod.forward(batch, is_train=True)
    mod.backward()
    mod.update()


def _values(mod):
    """Every device's own parameters and auxiliary states, after the engine is done."""
    mx.nd.waitall()
    group = mod._exec_group
    names = list(group.param_names) + list(group.aux_names)
    arrays = list(group.param_arrays) + list(group.aux_arrays)
    return {n: [a.asnumpy().copy() for a in arrs] for n, arrs in zip(names, arrays)}


def _optimizer_states(mod):
    if mod._update_on_kvstore:
        updater = getattr(mod._kvstore, "_updater", None)
        if updater is None:  # dist: the states live on the server
            return {}
    else:
        updater = mod._updater
    return {key: flat_state(state) for key, state in updater.states.items()}


def _grad_of(mod):
    group = mod._exec_group
    return {n: g for n, g in zip(group.param_names, group.grad_arrays)}


def _assert_equal(a, b):
    assert set(a) == set(b)
    for key in a:
        assert len(a[key]) == len(b[key])
        for x, y in zip(a[key], b[key]):
            assert np.array_equal(x, y), key


def _both(run, monkeypatch):
    """``run()`` with the rebind, then with it off, from a clean registry each time."""
    results = []
    for rebind in (True, False):
        monkeypatch.setattr(freeze_binding, "REBIND", rebind)
        mxcompat.unfreeze()
        results.append(run(rebind))
    mxcompat.unfreeze()
    return results


def _train_freeze_thaw(mod, batches, rebind, frozen=FROZEN, before=3, frozen_steps=5, after=3):
    """Train, freeze, train, unfreeze, train; check the gradient layout at each stage."""
    for i in range(before):
        _step(mod, batches[i % len(batches)])
    mxcompat.freeze(*frozen)
    for i in range(frozen_steps):
        _step(mod, batches[i % len(batches)])
    grads = _grad_of(mod)
    for name in FROZEN_NAMES:
        # Rebound without a gradient; or, off, the buffers of the first bind.
        assert (grads[name][0] is None) == rebind, name
    frozen_values = _values(mod)
    states = _optimizer_states(mod)
    mxcompat.unfreeze()
    for i in range(after):
        _step(mod, batches[i % len(batches)])
    assert all(g[0] is not None for g in _grad_of(mod).values())
    return frozen_values, states, _values(mod), _optimizer_states(mod)


def _compare(on, off):
    for a, b in zip(on, off):
        _assert_equal(a, b)


# --- a plain Module: contexts, kvstores, update_on_kvstore -----------------------------------


@pytest.mark.parametrize(
    "contexts, kvstore",
    [(None, None), (None, "local"), (TWO, None), (TWO, "local"), (TWO, "device")],
    ids=["1ctx", "1ctx-local", "2ctx", "2ctx-local", "2ctx-device"],
)
def test_module_rebind_bit_for_bit(contexts, kvstore, monkeypatch):
    def run(rebind):
        mod = _module(contexts)
        bind_regression(mod)
        # One context: MXNet makes no kvstore of a name, so it is given one.
        kv = mx.kv.create(kvstore) if kvstore and not contexts else kvstore
        mod.init_optimizer(kvstore=kv, optimizer=ADAM[0], optimizer_params=ADAM[1])
        assert mod._update_on_kvstore == (kvstore is not None)
        return _train_freeze_thaw(mod, regression_batches(), rebind)

    _compare(*_both(run, monkeypatch))


@pytest.mark.mxnet(">=1.5", reason="MXNET_UPDATE_ON_KVSTORE is read from MXNet 1.5")
@pytest.mark.parametrize("kvstore", ["local", "device"])
def test_module_rebind_update_on_kvstore_off(kvstore, monkeypatch):
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "0")

    def run(rebind):
        mod = _module(TWO)
        bind_regression(mod)
        mod.init_optimizer(kvstore=kvstore, optimizer=ADAM[0], optimizer_params=ADAM[1])
        assert mod._kvstore is not None and not mod._update_on_kvstore
        return _train_freeze_thaw(mod, regression_batches(), rebind)

    _compare(*_both(run, monkeypatch))


def test_module_rebind_equals_fixed_param_names():
    """Frozen after bind trains as the native way does from the start (sgd, no state)."""
    sgd = {"learning_rate": 0.1, "wd": 0.01}
    batches = regression_batches()
    native = _module(fixed_param_names=sorted(FROZEN_NAMES))
    bind_regression(native)
    native.init_optimizer(optimizer_params=sgd)
    ours = _module()
    bind_regression(ours)
    ours.init_optimizer(optimizer_params=sgd)
    mxcompat.freeze(*FROZEN)
    for i in range(6):
        _step(native, batches[i % 3])
        _step(ours, batches[i % 3])
    _assert_equal(_values(native), _values(ours))
    grads = _grad_of(ours)
    assert set(n for n, g in grads.items() if g[0] is None) == FROZEN_NAMES


def test_rebind_happens_at_forward_not_at_update(monkeypatch):
    """Frozen between backward and update: the update skip holds that step (its gradients
    live in the old executors); the next forward rebinds."""
    mod = _module()
    bind_regression(mod)
    mod.init_optimizer(optimizer=ADAM[0], optimizer_params=ADAM[1])
    batches = regression_batches()
    _step(mod, batches[0])
    mod.forward(batches[1], is_train=True)
    mod.backward()
    before = _values(mod)
    group = mod._exec_group
    mxcompat.freeze(*FROZEN)
    mod.update()
    assert mod._exec_group is group
    after = _values(mod)
    for name in FROZEN_NAMES:
        assert np.array_equal(before[name][0], after[name][0]), name
    mod.forward(batches[2], is_train=True)
    assert mod._exec_group is not group
    assert all(_grad_of(mod)[n][0] is None for n in FROZEN_NAMES)


def test_registry_change_that_changes_no_binding_does_not_rebind():
    mod = _module()
    bind_regression(mod)
    mod.init_optimizer()
    _step(mod, regression_batches()[0])
    group = mod._exec_group
    mxcompat.freeze("othernet_*")  # matches nothing here
    _step(mod, regression_batches()[0])
    assert mod._exec_group is group
    mxcompat.unfreeze()
    mxcompat.freeze(*FROZEN)
    _step(mod, regression_batches()[0])
    rebound = mod._exec_group
    assert rebound is not group
    mxcompat.freeze("othernet_*")
    _step(mod, regression_batches()[0])
    assert mod._exec_group is rebound


def test_grad_req_list_is_never_rebound():
    # MXNet ignores fixed names with a grad_req list: a rebind would change nothing.
    req = ["null" if n in ("data", "lro_label") else "write" for n in mlp_symbol().list_arguments()]
    mod = _module()
    bind_regression(mod, grad_req=req)
    mod.init_optimizer()
    group = mod._exec_group
    mxcompat.freeze(*FROZEN)
    _step(mod, regression_batches()[0])
    assert mod._exec_group is group


def test_grad_req_add_keeps_accumulated_gradients(monkeypatch):
    def run(rebind):
        mod = _module()
        bind_regression(mod, grad_req="add")
        mod.init_optimizer(optimizer_params={"learning_rate": 0.1})
        batches = regression_batches()
        for batch in batches[:2]:
            mod.forward(batch, is_train=True)
            mod.backward()
        mxcompat.freeze(*FROZEN)
        # Rebound here (rebind on): the gradients accumulated so far come along.
        mod.forward(batches[2], is_train=True)
        mod.backward()
        mod.update()
        mx.nd.waitall()
        grads = {
            n: g[0].asnumpy().copy()
            for n, g in _grad_of(mod).items()
            if n not in FROZEN_NAMES and g[0] is not None
        }
        return _values(mod), {n: [g] for n, g in grads.items()}

    _compare(*_both(run, monkeypatch))


def test_inputs_need_grad_survives(monkeypatch):
    def run(rebind):
        mod = _module()
        bind_regression(mod, inputs_need_grad=True)
        mod.init_optimizer(optimizer=ADAM[0], optimizer_params=ADAM[1])
        batches = regression_batches()
        _step(mod, batches[0])
        mxcompat.freeze(*FROZEN)
        grads = []
        for batch in batches:
            _step(mod, batch)
            grads.append(mod.get_input_grads()[0].asnumpy().copy())
        assert mod.inputs_need_grad
        assert (_grad_of(mod)["fc1_weight"][0] is None) == rebind
        return _values(mod), {"data_grad": grads}

    _compare(*_both(run, monkeypatch))


def test_states_survive(monkeypatch):
    def run(rebind):
        mod = _module(symbol=_carry_symbol(), state_names=["carry"])
        bind_regression(mod)
        mod.init_optimizer(optimizer=ADAM[0], optimizer_params=ADAM[1])
        mod.set_states(value=0.25)
        batches = regression_batches()
        _step(mod, batches[0])
        mxcompat.freeze(*FROZEN)
        _step(mod, batches[1])
        states = mod.get_states(merge_multi_context=False)
        assert all(np.all(s.asnumpy() == 0.25) for arrs in states for s in arrs)
        return (_values(mod),)

    _compare(*_both(run, monkeypatch))


def test_monitor_installed_follows_the_new_executors():
    mod = _module()
    bind_regression(mod)
    mod.init_optimizer()
    mon = mx.mon.Monitor(1, pattern="fc2_.*")
    mod.install_monitor(mon)
    mxcompat.freeze(*FROZEN)
    mon.tic()
    _step(mod, regression_batches()[0])
    assert mon.exes == mod._exec_group.execs  # the old executors are gone from it
    assert mon.toc()  # and the new ones report


def test_monitor_callback_set_by_hand_keeps_the_executors(recwarn):
    mod = _module()
    bind_regression(mod)
    mod.init_optimizer(optimizer=ADAM[0], optimizer_params=ADAM[1])
    seen = []
    mod._exec_group.execs[0].set_monitor_callback(lambda *a: seen.append(a[0]))
    group = mod._exec_group
    start = _values(mod)
    mxcompat.freeze(*FROZEN)
    for batch in regression_batches():
        _step(mod, batch)
    assert mod._exec_group is group and seen
    end = _values(mod)
    for name in start:
        assert np.array_equal(start[name][0], end[name][0]) == (name in FROZEN_NAMES), name
    warned = _ours(recwarn)
    assert len(warned) == 1 and "monitor callback set by hand" in warned[0]


# --- modules sharing arrays: shared_module, BucketingModule, SequentialModule, SVRGModule -----


def test_shared_modules_rebind_together(monkeypatch):
    def run(rebind):
        first = _module()
        bind_regression(first)
        first.init_optimizer(optimizer=ADAM[0], optimizer_params=ADAM[1])
        second = _module()
        second.bind(
            data_shapes=[("data", (2, 4))],
            label_shapes=[("lro_label", (2, 3))],
            shared_module=first,
        )
        batches = regression_batches()
        small = [
            mx.io.DataBatch([b.data[0][:2]], [b.label[0][:2]]) for b in regression_batches(seed=1)
        ]
        _step(first, batches[0])
        mxcompat.freeze(*FROZEN)
        for i in range(4):
            _step(second if i % 2 else first, (small if i % 2 else batches)[i % 3])
        for mod in (first, second):
            assert (_grad_of(mod)["fc1_weight"][0] is None) == rebind
        # Still one set of parameters: each module's updates are seen by the other.
        _assert_equal(_values(first), _values(second))
        return _values(first), _values(second), _optimizer_states(first)

    _compare(*_both(run, monkeypatch))


def test_bucketing_module_rebinds_every_bucket(monkeypatch):
    def run(rebind):
        mod = mx.mod.BucketingModule(bucket_sym_gen, default_bucket_key=3, context=mx.cpu())
        mod.bind(data_shapes=[("data", (BATCH, 3, 4))], label_shapes=[("lro_label", (BATCH, 3))])
        mx.random.seed(1)
        mod.init_params(mx.init.Uniform(0.5))
        mod.init_optimizer(optimizer=ADAM[0], optimizer_params=ADAM[1])
        rng = np.random.RandomState(0)
        batches = [bucket_batch(rng, key) for key in (2, 3, 2, 3, 4, 3, 2)]
        for batch in batches[:2]:
            _step(mod, batch)
        buckets = dict(mod._buckets)
        mxcompat.freeze(*FROZEN)
        for batch in batches[2:]:  # bucket 4 is new: bound after the rebind
            _step(mod, batch)
        assert sorted(mod._buckets) == [2, 3, 4]
        assert all(mod._buckets[k] is m for k, m in buckets.items())
        assert mod._curr_module is mod._buckets[2] and mod._curr_bucket_key == 2
        for key, bucket in mod._buckets.items():
            # Bucket 4 is bound after the freeze: without a gradient either way.
            assert (_grad_of(bucket)["fc1_weight"][0] is None) == (rebind or key == 4)
            # One set of parameters, shared by every bucket (each updated some of them).
            _assert_equal(_values(bucket), _values(mod._buckets[3]))
        mxcompat.unfreeze()
        for batch in batches[:3]:
            _step(mod, batch)
        assert all(g[0] is not None for g in _grad_of(mod._buckets[3]).values())
        return _values(mod._buckets[3]), _optimizer_states(mod._buckets[3])

    _compare(*_both(run, monkeypatch))


def _sequential():
    seq = sequential_regression_module()
    bind_regression(seq)
    seq.init_optimizer(optimizer=ADAM[0], optimizer_params=ADAM[1])
    return seq


def _fusing_builds():
    """Whether this build binds an executor that needs no gradient through oneDNN's fusions."""
    return facts.since(facts.ONEDNN_NO_GRAD_EXECUTOR_FUSED) and facts.has_mkldnn()


def test_sequential_module_rebinds_each_module(monkeypatch):
    # The first module, all frozen, needs no gradient once rebound: oneDNN builds then fuse its
    # fc1 and tanh into one kernel, which may round otherwise than the two the run without
    # the rebind keeps (facts.ONEDNN_NO_GRAD_EXECUTOR_FUSED).  Fusion off in both runs: the
    # same kernels, so bit for bit; the test below binds it fused.
    if _fusing_builds():
        monkeypatch.setenv("MXNET_SUBGRAPH_BACKEND", "NONE")

    def run(rebind):
        seq = _sequential()
        batches = regression_batches()
        _step(seq, batches[0])
        mxcompat.freeze(*FROZEN)
        for batch in batches:
            _step(seq, batch)
        assert (_grad_of(seq._modules[0])["fc1_weight"][0] is None) == rebind
        return tuple(_values(m) for m in seq._modules)

    _compare(*_both(run, monkeypatch))


def test_sequential_module_all_frozen_module_rebinds_fused():
    """MXNet's default subgraph backend: the all-frozen first module is rebound fused (oneDNN
    builds), trains nothing, and the second still trains through its output."""
    seq = _sequential()
    batches = regression_batches()
    _step(seq, batches[0])
    start = [_values(m) for m in seq._modules]
    mxcompat.freeze(*FROZEN)
    for batch in batches:
        _step(seq, batch)
    first = seq._modules[0]._exec_group
    assert all(g[0] is None for g in first.grad_arrays)
    fused = "_sg_mkldnn_fully_connected" in first.execs[0].debug_str()
    assert fused == (_fusing_builds() and facts.onednn_enabled())
    for mod, before in zip(seq._modules, start):
        after = _values(mod)
        for name in before:
            assert np.array_equal(before[name][0], after[name][0]) == (name in FROZEN_NAMES), name


@pytest.mark.mxnet(">=1.4", reason="contrib.svrg_optimization is in MXNet from 1.4")
@pytest.mark.parametrize("when", ["before_bind", "after_bind"])
def test_svrg_module_keeps_every_gradient(when, monkeypatch):
    """SVRGModule reads every gradient (facts.SVRG_READS_EVERY_GRADIENT): it is never bound
    'null' for the registry, and the update skip holds what is frozen."""
    from mxnet.contrib.svrg_optimization.svrg_module import SVRGModule

    def run(rebind):
        rng = np.random.RandomState(3)
        it = mx.io.NDArrayIter(
            rng.uniform(-1, 1, (16, 4)),
            rng.uniform(-1, 1, (16, 3)),
            batch_size=BATCH,
            label_name="lro_label",
        )
        mod = SVRGModule(
            mlp_symbol(), data_names=("data",), label_names=("lro_label",), update_freq=2
        )
        if when == "before_bind":
            mxcompat.freeze(*FROZEN)
        mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
        mx.random.seed(1)
        mod.init_params(mx.init.Uniform(0.5))
        start = _values(mod)
        mxcompat.freeze(*FROZEN)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mod.fit(it, num_epoch=2, optimizer="sgd", optimizer_params={"learning_rate": 0.1})
        end = _values(mod)
        for name in start:
            assert np.array_equal(start[name][0], end[name][0]) == (name in FROZEN_NAMES)
        assert all(g[0] is not None for g in _grad_of(mod).values())
        assert all(g[0] is not None for g in _grad_of(mod._mod_aux).values())
        return (end,)

    _compare(*_both(run, monkeypatch))


# --- BatchNorm statistics: as plain MXNet leaves them with the same parameters fixed ------------


def _bn_symbol():
    data = mx.sym.Variable("data")
    x = mx.sym.Convolution(data, num_filter=4, kernel=(3, 3), pad=(1, 1), name="conv1")
    x = mx.sym.Activation(mx.sym.BatchNorm(x, fix_gamma=False, name="bn1"), act_type="relu")
    x = mx.sym.Convolution(x, num_filter=2, kernel=(3, 3), pad=(1, 1), name="conv2")
    return mx.sym.LinearRegressionOutput(mx.sym.Flatten(x), name="lro")


BACKBONE = ["conv1_weight", "conv1_bias", "bn1_gamma", "bn1_beta"]


def _bn_batches():
    rng = np.random.RandomState(0)
    return [
        mx.io.DataBatch(
            [mx.nd.array(rng.uniform(-1, 1, (2, 3, 4, 4)))],
            [mx.nd.array(rng.uniform(-1, 1, (2, 32)))],
        )
        for _ in range(3)
    ]


def _bn_module(params=None, **kwargs):
    mod = mx.mod.Module(_bn_symbol(), data_names=("data",), label_names=("lro_label",), **kwargs)
    mod.bind(data_shapes=[("data", (2, 3, 4, 4))], label_shapes=[("lro_label", (2, 32))])
    mx.random.seed(1)
    mod.init_params(mx.init.Uniform(0.5))
    if params is not None:
        mod.set_params(*params)
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1})  # sgd: no state
    return mod


def test_batchnorm_statistics_as_plain_mxnet_with_the_same_fixed_parameters(monkeypatch):
    """The backbone (conv1 and bn1's gamma and beta) frozen after 3 steps: the next 3 leave
    every value -- bn1's moving mean and variance too, which need no backward any more
    (facts.BATCHNORM_STATS_WRITE_UNORDERED) -- as plain MXNet does when the module is bound
    again with those names fixed by hand."""
    batches = _bn_batches()

    def warm_up():
        mod = _bn_module()
        for i in range(3):
            _step(mod, batches[i])
        return mod

    reference = warm_up()
    mx.nd.waitall()
    plain = _bn_module(reference.get_params(), fixed_param_names=BACKBONE)
    for i in range(3):
        _step(plain, batches[i])

    def run(rebind):
        mod = warm_up()
        mxcompat.freeze(*BACKBONE)
        for i in range(3):
            _step(mod, batches[i])
        return _values(mod)

    on, off = _both(run, monkeypatch)
    _assert_equal(on, _values(plain))
    # The arguments as the update skip alone trains them; the statistics are what changed:
    # that path still ran bn1's backward, which moved them.
    args = set(_bn_symbol().list_arguments())
    _assert_equal(
        {k: v for k, v in on.items() if k in args}, {k: v for k, v in off.items() if k in args}
    )
    assert not np.array_equal(on["bn1_moving_mean"][0], off["bn1_moving_mean"][0])


def test_frozen_statistics_stay_through_the_rebind(monkeypatch):
    """Statistics the registry matches stay bit for bit (frozen_statistics), rebind or not."""
    batches = _bn_batches()

    def run(rebind):
        mod = _bn_module()
        _step(mod, batches[0])
        start = _values(mod)
        mxcompat.freeze("conv1_*", "bn1_*")
        for i in range(3):
            _step(mod, batches[i])
        end = _values(mod)
        for name in ("bn1_moving_mean", "bn1_moving_var"):
            assert np.array_equal(start[name][0], end[name][0])
        return (end,)

    _compare(*_both(run, monkeypatch))


# --- dist_sync -----------------------------------------------------------------------------

WORKER = r"""
import importlib, os, sys
import numpy as np
import mxcompat
import mxnet as mx      # a scheduler or server serves inside this import, then exits

rebind, outdir = sys.argv[1] == "on", sys.argv[2]
importlib.import_module("mxcompat.freeze.binding").REBIND = rebind
kv = mx.kv.create("dist_sync")
rng = np.random.RandomState(10 + kv.rank)
data = mx.sym.Variable("data")
hidden = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=5, name="fc1"), act_type="tanh")
out = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(hidden, num_hidden=3, name="fc2"),
                                    name="lro")
mod = mx.mod.Module(out, data_names=("data",), label_names=("lro_label",))
mod.bind(data_shapes=[("data", (4, 4))], label_shapes=[("lro_label", (4, 3))])
mx.random.seed(1)
mod.init_params(mx.init.Uniform(0.5))
mod.init_optimizer(kvstore=kv, optimizer="adam", optimizer_params={"learning_rate": 0.01})


def step():
    x, y = rng.uniform(-1, 1, (4, 4)), rng.uniform(-1, 1, (4, 3))
    mod.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]), is_train=True)
    mod.backward()
    mod.update()


for _ in range(2):
    step()
mxcompat.freeze("fc1_*", "fc2_bias")
for _ in range(4):
    step()
nulls = sorted(n for n, g in zip(mod._exec_group.param_names, mod._exec_group.grad_arrays)
               if g[0] is None)
mxcompat.unfreeze()
for _ in range(2):
    step()
mx.nd.waitall()
group = mod._exec_group
np.savez(os.path.join(outdir, "worker%d.npz" % kv.rank), nulls=np.array(",".join(nulls)),
         on_kvstore=bool(mod._update_on_kvstore),
         **{n: a[0].asnumpy() for n, a in zip(group.param_names, group.param_arrays)})
"""


@pytest.mark.parametrize(
    "update_on_kvstore",
    [
        True,
        pytest.param(
            False,
            marks=pytest.mark.mxnet(">=1.5", reason="MXNET_UPDATE_ON_KVSTORE is read from 1.5"),
        ),
    ],
    ids=["on-kvstore", "local-update"],
)
def test_dist_sync_rebind_bit_for_bit(tmpdir, update_on_kvstore):
    env = None if update_on_kvstore else {"MXNET_UPDATE_ON_KVSTORE": "0"}
    runs = {}
    for rebind in ("on", "off"):
        outdir = run_cluster(tmpdir.mkdir(rebind), WORKER, [rebind], env)
        runs[rebind] = [np.load(os.path.join(outdir, "worker%d.npz" % r)) for r in (0, 1)]
    for rebind, workers in runs.items():
        for w in workers:
            assert bool(w["on_kvstore"]) == update_on_kvstore
            nulls = str(w["nulls"])
            assert nulls == (",".join(sorted(FROZEN_NAMES)) if rebind == "on" else "")
    for on, off in zip(runs["on"], runs["off"]):
        for name in ("fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"):
            assert np.array_equal(on[name], off[name]), name
