"""The frozen-parameter registry: frozen arrays stay bit for bit, every other one trains.

Every "frozen" assertion is ``np.array_equal`` on each device's own array after >= 5 updates;
every parameter not frozen must have changed on each device.  The network has an FC weight
frozen while its bias trains (the oneDNN case of facts.ONEDNN_FC_NULL_WEIGHT_SKIPS_BIAS)
and an FC bias frozen while its weight trains.
"""

import fnmatch
import re
import threading
import warnings

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon

import mxcompat
from tests.support.models import (
    bind_regression,
    bucket_batch,
    bucket_sym_gen,
    dense_net,
    flat_state,
    gluon_regression_steps,
    mlp_symbol,
    regression_batches,
    regression_module,
    sequential_regression_module,
)
from tests.support.stack import ONEDNN_FC

FROZEN = ("fc1_weight", "fc2_b*")  # an exact name and a glob
FROZEN_NAMES = {"fc1_weight", "fc2_bias"}
PARAMS = ("fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias")
BATCH = 4
OPTIMIZERS = [
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}),
    ("adam", {"learning_rate": 0.01, "wd": 0.01}),
    ("rmsprop", {"learning_rate": 0.01, "wd": 0.01}),
    ("adagrad", {"learning_rate": 0.1, "wd": 0.01}),
]


def _ours(record):
    return [str(w.message) for w in record if issubclass(w.category, mxcompat.MXCompatWarning)]


# --- helpers: a two-layer net, its batches, per-device parameter snapshots -------------------


def _symbol(big=False):
    """``mlp_symbol()``: data (BATCH, 4) -> fc1 (5) -> tanh -> fc2 (3) -> lro; ``big`` adds a
    weight of > 16M elements, for which MXNet turns update_on_kvstore off for a 'local'
    kvstore (all releases)."""
    out = mlp_symbol()
    if not big:
        return out
    big_w = mx.sym.Variable("big_weight", shape=(4097, 4096), dtype="float32")
    return mx.sym.Group([out, mx.sym.MakeLoss(mx.sym.sum(mx.sym.square(big_w)) * 1e-3)])


def _module(contexts=None, big=False, **kwargs):
    return regression_module(_symbol(big), context=contexts or mx.cpu(), **kwargs)


def _train(mod, steps, batches):
    for i in range(steps):
        mod.forward(batches[i % len(batches)], is_train=True)
        mod.backward()
        mod.update()


def _device_params(mod):
    """{name: [numpy copy on each device]} straight from the executors (no averaging)."""
    group = mod._exec_group
    return {
        name: [a.asnumpy().copy() for a in arrays]
        for name, arrays in zip(group.param_names, group.param_arrays)
    }


def _assert_frozen(start, end, frozen_names):
    assert set(start) == set(end)
    for name in start:
        for k, (a, b) in enumerate(zip(start[name], end[name])):
            if name in frozen_names:
                assert np.array_equal(a, b), "%s moved on device %d" % (name, k)
            else:
                assert not np.array_equal(a, b), "%s did not train on device %d" % (name, k)


def _run_module(
    when,
    optimizer="sgd",
    optimizer_params=None,
    contexts=None,
    kvstore="local",
    steps=5,
    grad_req="write",
    big=False,
    frozen=FROZEN,
):
    mod = _module(contexts, big=big)
    if when == "before_bind":
        mxcompat.freeze(*frozen)
    bind_regression(mod, grad_req=grad_req)
    mod.init_optimizer(
        kvstore=kvstore, optimizer=optimizer, optimizer_params=optimizer_params or OPTIMIZERS[0][1]
    )
    batches = regression_batches()
    if when == "after_steps":
        _train(mod, 3, batches)  # momentum and optimizer states are non-zero now
    if when in ("after_init_optimizer", "after_steps"):
        mxcompat.freeze(*frozen)
    start = _device_params(mod)
    _train(mod, steps, batches)
    return mod, start, _device_params(mod)


# --- the seed program --------------------------------------------------------------------------

SEED = """
import mxcompat, mxnet as mx
{unpatch}
mxcompat.freeze('kw')
kernel = mx.nd.array([[1,2,3],[1,2,3],[1,2,3]]).reshape((1,1,3,3))
d = mx.sym.Variable('data'); w = mx.sym.Variable('kw')
loss = mx.sym.MakeLoss(mx.sym.Convolution(data=d, weight=w, kernel=(3,3), num_filter=1,
                                          no_bias=True))
mod = mx.mod.Module(symbol=loss, data_names=('data',))
mod.bind(data_shapes=[('data', [1,1,3,3])]); mod.set_params({{'kw': kernel}}, {{}})
mod.init_params(); mod.init_optimizer()
mod.forward(mx.io.DataBatch([kernel], [])); mod.backward(); mod.update()
mod.forward(mx.io.DataBatch([kernel], [])); print(mod.get_outputs()[0])   # 42
print("B2=%.2f" % mod.get_outputs()[0].asnumpy().ravel()[0])
print("kw-grad=%s" % (mod._exec_group.execs[0].grad_dict.get('kw') is None))
"""


def test_seed_program_prints_42_and_41_58_after_unpatch(python):
    out = python(SEED.format(unpatch="")).stdout
    assert "[[[[42.]]]]" in out
    assert "B2=42.00" in out
    assert "kw-grad=True" in out  # frozen before bind: no gradient buffer
    out = python(SEED.format(unpatch="mxcompat.unpatch()")).stdout
    assert "B2=41.58" in out
    assert "kw-grad=False" in out


def test_mxcompat_freeze_environment_variable(python):
    env = {"MXCOMPAT_FREEZE": " kw, fc1_*,,fc[2 "}
    out = python(
        """
        import warnings
        warnings.simplefilter("always")
        with warnings.catch_warnings(record=True) as record:
            import mxcompat
        print(mxcompat.frozen_patterns())
        print([str(w.message) for w in record if w.category is mxcompat.MXCompatWarning])
    """,
        env=env,
    ).stdout.splitlines()
    assert out == [
        "('kw', 'fc1_*')",
        "[\"MXCOMPAT_FREEZE: mxcompat.freeze: invalid glob 'fc[2': the '[' at "
        'position 2 is never closed; that pattern is ignored"]',
    ]
    # What `mxcompat run --freeze kw` relies on: the seed program, without its freeze line.
    out = python(
        SEED.format(unpatch="").replace("mxcompat.freeze('kw')", ""), env={"MXCOMPAT_FREEZE": "kw"}
    ).stdout
    assert "B2=42.00" in out


# --- the registry API -----------------------------------------------------------------------


def test_exact_glob_and_regex_patterns():
    regex = re.compile(r"fc\d_bias")
    assert mxcompat.freeze("kw", "stage1_*", regex) == ("kw", "stage1_*", regex)
    assert mxcompat.freeze("kw") == ("kw", "stage1_*", regex)  # no duplicates
    assert mxcompat.frozen_patterns() == ("kw", "stage1_*", regex)
    assert mxcompat.is_frozen("kw") and not mxcompat.is_frozen("kw2")
    assert mxcompat.is_frozen("stage1_conv0_weight") and not mxcompat.is_frozen("Stage1_x")
    assert mxcompat.is_frozen("fc1_bias") and mxcompat.is_frozen("fc22_bias") is False
    # A regex matches the whole name: it never freezes more than it says.
    mxcompat.freeze(re.compile("conv"))
    assert not mxcompat.is_frozen("conv0_weight")
    mxcompat.freeze(re.compile(".*conv.*"))
    assert mxcompat.is_frozen("conv0_weight")
    assert mxcompat.unfreeze("stage1_*", re.compile(r"fc\d_bias")) == (
        "kw",
        re.compile("conv"),
        re.compile(".*conv.*"),
    )
    assert not mxcompat.is_frozen("stage1_fc0_weight")
    assert mxcompat.unfreeze() == () and mxcompat.frozen_patterns() == ()


@pytest.mark.parametrize(
    "bad, error, text",
    [
        ("", ValueError, "an empty pattern ('') names no parameter"),
        ("   ", ValueError, "an empty pattern ('   ') names no parameter"),
        (
            "fc1_[weight",
            ValueError,
            "invalid glob 'fc1_[weight': the '[' at position 4 is never closed",
        ),
        (3, TypeError, "not 3 of type int"),
        (None, TypeError, "not None of type NoneType"),
        (["a", "b"], TypeError, "to pass several, unpack them: freeze(*names)"),
        (re.compile(b"kw"), TypeError, "is a bytes regex"),
    ],
)
def test_bad_patterns_raise_clear_errors(bad, error, text):
    with pytest.raises(error) as info:
        mxcompat.freeze("ok_name", bad)
    assert text in str(info.value)
    assert str(info.value).startswith("mxcompat.freeze: ")
    assert mxcompat.frozen_patterns() == ()  # all or nothing
    with pytest.raises(error):
        mxcompat.unfreeze(bad)
    with pytest.raises(error):
        with mxcompat.frozen(bad):
            pass


@pytest.mark.parametrize(
    "glob, position",
    [
        ("fc[]", 2),
        ("fc[!]", 2),
        ("fc[!]x", 2),
        ("a[[]b[", 5),
        ("[", 0),
        ("x[!", 1),
    ],
)
def test_unclosed_bracket_positions_as_fnmatch_reads_them(glob, position):
    # A ']' right after '[' or '[!' is a member of the set, not its end (fnmatch's rule).
    with pytest.raises(ValueError) as info:
        mxcompat.freeze(glob)
    assert str(info.value) == (
        "mxcompat.freeze: invalid glob %r: the '[' at position %d is "
        "never closed" % (glob, position)
    )


@pytest.mark.parametrize(
    "glob, name",
    [
        ("fc[]]", "fc]"),
        ("fc[!]]", "fca"),
        ("a[[]b", "a[b"),
        ("w[!0-9]", "wx"),
        ("[[]", "["),
    ],
)
def test_closed_brackets_are_fnmatch_sets(glob, name):
    assert mxcompat.freeze(glob) == (glob,)
    assert mxcompat.is_frozen(name) and fnmatch.fnmatchcase(name, glob)
    mxcompat.unfreeze(glob)


def test_is_frozen_wants_a_name():
    with pytest.raises(TypeError) as info:
        mxcompat.is_frozen(None)
    assert (
        str(info.value) == "mxcompat.is_frozen: a parameter name is a str, not None of "
        "type NoneType"
    )


def test_unfreezing_a_name_a_glob_still_freezes_warns(recwarn):
    mxcompat.freeze("fc1_*")
    mxcompat.unfreeze("fc1_weight")
    assert _ours(recwarn) == [
        "mxcompat.unfreeze('fc1_weight'): 'fc1_weight' is still frozen "
        "by the registered pattern(s) 'fc1_*'; unfreeze those to thaw it"
    ]
    assert mxcompat.is_frozen("fc1_weight")


def test_frozen_context_manager_restores_previous_state():
    mxcompat.freeze("kw")
    with mxcompat.frozen("kw", "fc1_*") as patterns:
        assert patterns == ("kw", "fc1_*")
        assert mxcompat.is_frozen("fc1_weight")
        with pytest.raises(RuntimeError):
            with mxcompat.frozen("fc2_*"):
                assert mxcompat.is_frozen("fc2_bias")
                raise RuntimeError("boom")
        assert not mxcompat.is_frozen("fc2_bias")
    assert mxcompat.frozen_patterns() == ("kw",)  # "kw" was there before: it stays


def test_registry_is_thread_safe():
    errors = []

    def churn(k):
        try:
            for i in range(300):
                mxcompat.freeze("t%d_%d" % (k, i % 7), "keep%d" % k)
                mxcompat.unfreeze("t%d_%d" % (k, i % 7))
                mxcompat.is_frozen("keep%d" % k)
                with mxcompat.frozen("ctx%d" % k):
                    assert mxcompat.is_frozen("ctx%d" % k)
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=churn, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors
    assert sorted(mxcompat.frozen_patterns()) == sorted("keep%d" % k for k in range(8))


# --- Module: optimizers, when frozen, contexts, kvstores ----------------------------------------


@pytest.mark.parametrize("optimizer, params", OPTIMIZERS, ids=[o for o, _ in OPTIMIZERS])
@pytest.mark.parametrize("when", ["before_bind", "after_init_optimizer", "after_steps"])
def test_module_optimizers(optimizer, params, when):
    mod, start, end = _run_module(when, optimizer, params)
    assert mod._kvstore is None and not mod._update_on_kvstore
    _assert_frozen(start, end, FROZEN_NAMES)


def test_frozen_before_bind_allocates_no_gradient():
    mxcompat.freeze("fc2_*", "fc1_bias")
    mod = _module()
    bind_regression(mod)
    grads = dict(zip(mod._exec_group.param_names, mod._exec_group.grad_arrays))
    for name in ("fc2_weight", "fc2_bias", "fc1_bias"):
        assert grads[name] == [None]
        assert mod._exec_group.execs[0].grad_dict.get(name) is None
    assert grads["fc1_weight"][0] is not None
    # The registry is not copied into the module: it stays the source of truth (the
    # fixed_param_names patch lists its names at each read).
    assert mod._fixed_param_names.own == []
    assert mod._fixed_param_names == ["fc1_bias", "fc2_weight", "fc2_bias"]


@pytest.mark.parametrize("onednn_fc_bias", ["patched", "unpatched"])
def test_frozen_fc_weight_never_stops_its_bias(onednn_fc_bias):
    """oneDNN (1.7+) skips an FC's bias gradient when the weight's grad_req is 'null': a frozen
    FC weight whose bias trains keeps its gradient buffer and is skipped at update instead.
    The registry keeps that promise with the onednn_fc_bias patch off too (that patch gives
    back MXNet's behaviour of fixed_param_names; the registry has none to give back)."""
    if onednn_fc_bias == "unpatched":
        mxcompat.unpatch("onednn_fc_bias")
    mod, start, end = _run_module("before_bind", frozen=("fc1_weight",))
    _assert_frozen(start, end, {"fc1_weight"})
    group = mod._exec_group
    grads = dict(zip(group.param_names, group.grad_arrays))
    assert (grads["fc1_weight"][0] is not None) == ONEDNN_FC
    assert group.grad_req["fc1_weight"] == ("write" if ONEDNN_FC else "null")
    # Weight and bias frozen together: 'null' is harmless, no gradient buffer on any release.
    mod, start, end = _run_module("before_bind", frozen=("fc1_*",))
    _assert_frozen(start, end, {"fc1_weight", "fc1_bias"})
    grads = dict(zip(mod._exec_group.param_names, mod._exec_group.grad_arrays))
    assert grads["fc1_weight"] == [None] and grads["fc1_bias"] == [None]


def test_frozen_fc_weight_kept_off_null_trains_once_unfrozen():
    # Bound with a gradient (ONEDNN_FC) or without (rebound with one at the next forward):
    # unfrozen, it trains, silently.
    mod, start, end = _run_module("before_bind", frozen=("fc1_weight",))
    mxcompat.unfreeze()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _train(mod, 2, regression_batches())
    assert not np.array_equal(end["fc1_weight"][0], _device_params(mod)["fc1_weight"][0])
    assert _ours(record) == []


def test_fc_weight_fixed_natively_and_frozen_stays_fixed_when_unfrozen():
    # The user's own fixed name is MXNet's (and onednn_fc_bias's) to hold: unfreezing it in
    # the registry does not make it train, and its bias trains throughout.
    mod = _module(fixed_param_names=["fc1_weight"])
    mxcompat.freeze("fc1_weight")
    bind_regression(mod)
    mod.init_optimizer(optimizer_params=OPTIMIZERS[0][1])
    start = _device_params(mod)
    _train(mod, 3, regression_batches())
    mxcompat.unfreeze()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _train(mod, 3, regression_batches())
    _assert_frozen(start, _device_params(mod), {"fc1_weight"})
    assert _ours(record) == []


@pytest.mark.parametrize(
    "native, registry", [(["fc1_weight"], ("fc1_bias",)), (["fc1_bias"], ("fc1_weight",))]
)
def test_fc_weight_and_bias_fixed_by_native_and_registry_together_stay_null(native, registry):
    # The bias is fixed whichever way: 'null' on the weight stops nothing that trains, so
    # neither gets a gradient buffer (freeze and onednn_fc_bias both see the union).
    mod = _module(fixed_param_names=native)
    mxcompat.freeze(*registry)
    bind_regression(mod)
    mod.init_optimizer(optimizer_params=OPTIMIZERS[0][1])
    start = _device_params(mod)
    _train(mod, 5, regression_batches())
    _assert_frozen(start, _device_params(mod), {"fc1_weight", "fc1_bias"})
    assert mod._exec_group.grad_req["fc1_weight"] == mod._exec_group.grad_req["fc1_bias"] == "null"


def test_grad_req_dict_keeps_users_explicit_entries():
    # MXNet's rule: fixed -> 'null', then the user's dict wins.  The update skip still holds.
    mod, start, end = _run_module(
        "before_bind", frozen=("fc2_*",), grad_req={"fc2_weight": "write"}
    )
    grads = dict(zip(mod._exec_group.param_names, mod._exec_group.grad_arrays))
    assert grads["fc2_weight"][0] is not None
    assert grads["fc2_bias"] == [None]
    _assert_frozen(start, end, {"fc2_weight", "fc2_bias"})


def test_grad_req_dict_gives_a_frozen_bias_a_gradient_its_weight_must_not_stop():
    # fc2_bias gets a gradient from the dict: a 'null' fc2_weight would zero it on oneDNN,
    # so the weight keeps one too (ONEDNN_FC), and both train correctly once unfrozen (the
    # weight bound without a gradient is rebound with one).
    mod, start, end = _run_module("before_bind", frozen=("fc2_*",), grad_req={"fc2_bias": "write"})
    grads = dict(zip(mod._exec_group.param_names, mod._exec_group.grad_arrays))
    assert (grads["fc2_weight"][0] is not None) == ONEDNN_FC
    assert grads["fc2_bias"][0] is not None
    _assert_frozen(start, end, {"fc2_weight", "fc2_bias"})
    mxcompat.unfreeze()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _train(mod, 2, regression_batches())
    _assert_frozen(end, _device_params(mod), set())
    assert _ours(record) == []


def test_grad_req_list_decides_buffers_and_update_skip_holds():
    # MXNet ignores fixed_param_names for a list grad_req: every parameter gets a buffer.
    req = ["null" if n in ("data", "lro_label") else "write" for n in _symbol().list_arguments()]
    mod, start, end = _run_module("before_bind", frozen=("fc2_*",), grad_req=req)
    grads = dict(zip(mod._exec_group.param_names, mod._exec_group.grad_arrays))
    assert all(grads[n][0] is not None for n in PARAMS)
    _assert_frozen(start, end, {"fc2_weight", "fc2_bias"})


TWO = [mx.cpu(0), mx.cpu(1)]


@pytest.mark.parametrize("when", ["before_bind", "after_steps"])
@pytest.mark.parametrize("kvstore, on_kvstore", [(None, False), ("local", True), ("device", True)])
def test_module_two_contexts(kvstore, on_kvstore, when):
    mod, start, end = _run_module(when, contexts=TWO, kvstore=kvstore)
    assert (mod._kvstore is not None) == (kvstore is not None)
    assert mod._update_on_kvstore == on_kvstore
    _assert_frozen(start, end, FROZEN_NAMES)


@pytest.mark.parametrize("kvtype", ["local", "device"])
@pytest.mark.parametrize("optimizer, params", OPTIMIZERS[:2], ids=["sgd", "adam"])
def test_module_kvstore_object_one_context(kvtype, optimizer, params):
    mod, start, end = _run_module("after_steps", optimizer, params, kvstore=mx.kv.create(kvtype))
    assert mod._kvstore is not None and mod._update_on_kvstore
    _assert_frozen(start, end, FROZEN_NAMES)


@pytest.mark.mxnet(">=1.5", reason="MXNET_UPDATE_ON_KVSTORE is read from MXNet 1.5")
@pytest.mark.parametrize("kvstore", ["local", "device"])
@pytest.mark.parametrize("when", ["before_bind", "after_steps"])
def test_module_update_on_kvstore_off_by_env(monkeypatch, kvstore, when):
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "0")  # read at init_optimizer
    mod, start, end = _run_module(when, contexts=TWO, kvstore=kvstore)
    assert mod._kvstore is not None and not mod._update_on_kvstore
    _assert_frozen(start, end, FROZEN_NAMES)


@pytest.mark.mxnet(">=1.5", reason="MXNET_UPDATE_ON_KVSTORE is read from MXNet 1.5")
def test_module_update_on_kvstore_off_by_env_kvstore_object(monkeypatch):
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "0")
    mod, start, end = _run_module(
        "after_steps", "adam", OPTIMIZERS[1][1], kvstore=mx.kv.create("local")
    )
    assert mod._kvstore is not None and not mod._update_on_kvstore
    _assert_frozen(start, end, FROZEN_NAMES)


def test_module_update_on_kvstore_off_big_parameter():
    # Every release: a 'local' kvstore with a parameter > 16M elements updates off the kvstore.
    mod, start, end = _run_module(
        "after_steps", contexts=TWO, kvstore="local", big=True, frozen=FROZEN + ("big_*",)
    )
    assert mod._kvstore is not None and not mod._update_on_kvstore
    _assert_frozen(start, end, FROZEN_NAMES | {"big_weight"})


# --- optimizer states: frozen ones are never touched, the others keep their own index -------


def _states(updater, name_of):
    return {name_of(key): flat_state(state) for key, state in updater.states.items()}


def _assert_states(before, after, frozen_names):
    assert before and set(before) == set(after)
    for key in before:
        assert len(before[key]) == len(after[key]) > 0
        same = all(np.array_equal(a, b) for a, b in zip(before[key], after[key]))
        # A shifted index would move a frozen parameter's state, or leave a trained one's.
        assert same == (key[0] in frozen_names), key


@pytest.mark.parametrize("optimizer, params", OPTIMIZERS[:2], ids=["sgd", "adam"])
@pytest.mark.parametrize(
    "contexts, kvstore",
    [(None, None), (TWO, None), (TWO, "local")],
    ids=["1ctx", "2ctx-nokv", "2ctx-kv"],
)
def test_module_optimizer_states_untouched(contexts, kvstore, optimizer, params):
    mod = _module(contexts)
    bind_regression(mod)
    mod.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=params)
    batches = regression_batches()
    _train(mod, 3, batches)
    mxcompat.freeze(*FROZEN)
    if mod._update_on_kvstore:
        updater = mod._kvstore._updater  # keyed by parameter name

        def name_of(key):
            return (key, 0)
    else:
        updater, names, n = mod._updater, mod._exec_group.param_names, len(mod._context)

        def name_of(key):  # MXNet's index: position * num_device + device
            return (names[key // n], key % n)

    before = _states(updater, name_of)
    assert len(before) == len(PARAMS) * (1 if mod._update_on_kvstore else len(mod._context))
    _train(mod, 5, batches)
    _assert_states(before, _states(updater, name_of), FROZEN_NAMES)


@pytest.mark.parametrize(
    "contexts, kvstore, update_on_kvstore",
    [([mx.cpu()], None, None), (TWO, "device", False), (TWO, "device", True)],
    ids=["1ctx", "2ctx-kv-off", "2ctx-kv-on"],
)
def test_gluon_optimizer_states_untouched(contexts, kvstore, update_on_kvstore):
    net = _gluon_net(contexts)
    trainer = gluon.Trainer(
        net.collect_params(),
        "adam",
        {"learning_rate": 0.01, "wd": 0.01},
        kvstore=kvstore,
        update_on_kvstore=update_on_kvstore,
    )
    gluon_regression_steps(net, trainer, contexts, 3)
    mxcompat.freeze(*G_FROZEN)
    names = [p.name for p in trainer._params]
    if trainer._update_on_kvstore:
        updaters = [trainer._kvstore._updater]
    else:
        updaters = trainer._updaters

    def snapshot():
        found = {}
        for device, updater in enumerate(updaters):
            found.update(_states(updater, lambda key, d=device: (names[key], d)))
        return found

    before = snapshot()
    gluon_regression_steps(net, trainer, contexts, 5)
    _assert_states(before, snapshot(), G_FROZEN_NAMES)


# --- fit, BucketingModule, SequentialModule, FeedForward ----------------------------------------


def _iter():
    rng = np.random.RandomState(3)
    return mx.io.NDArrayIter(
        rng.uniform(-1, 1, (16, 4)),
        rng.uniform(-1, 1, (16, 3)),
        batch_size=BATCH,
        label_name="lro_label",
    )


@pytest.mark.parametrize("contexts", [None, TWO], ids=["one", "two"])
def test_module_fit_two_epochs(contexts, recwarn):
    mxcompat.freeze(*FROZEN)
    rng = np.random.RandomState(5)
    shapes = {"fc1_weight": (5, 4), "fc1_bias": (5,), "fc2_weight": (3, 5), "fc2_bias": (3,)}
    start = {n: mx.nd.array(rng.uniform(-0.5, 0.5, s)) for n, s in shapes.items()}
    start_np = {n: a.asnumpy().copy() for n, a in start.items()}
    mod = _module(contexts)
    mod.fit(
        _iter(),
        num_epoch=2,
        arg_params=start,
        aux_params={},
        optimizer="sgd",
        optimizer_params=OPTIMIZERS[0][1],
    )
    end = _device_params(mod)
    _assert_frozen({n: [a] * len(end[n]) for n, a in start_np.items()}, end, FROZEN_NAMES)
    assert _ours(recwarn) == []


@pytest.mark.parametrize("when", ["before_bind", "after_steps"])
def test_bucketing_module(when, recwarn):
    mod = mx.mod.BucketingModule(bucket_sym_gen, default_bucket_key=3, context=mx.cpu())
    if when == "before_bind":
        mxcompat.freeze(*FROZEN)
    mod.bind(data_shapes=[("data", (BATCH, 3, 4))], label_shapes=[("lro_label", (BATCH, 3))])
    mx.random.seed(1)
    mod.init_params(mx.init.Uniform(0.5))
    mod.init_optimizer(optimizer="sgd", optimizer_params=OPTIMIZERS[0][1])
    rng = np.random.RandomState(0)
    batches = [bucket_batch(rng, key) for key in (2, 3, 2, 3, 2, 3)]
    if when == "after_steps":
        for batch in batches[:2]:
            mod.forward(batch, is_train=True)
            mod.backward()
            mod.update()
        mxcompat.freeze(*FROZEN)
    start = _device_params(mod._buckets[3])
    for batch in batches:
        mod.forward(batch, is_train=True)
        mod.backward()
        mod.update()
    assert sorted(mod._buckets) == [2, 3]
    for bucket in mod._buckets.values():
        # The buckets share the default bucket's parameter arrays: each is checked.
        _assert_frozen(start, _device_params(bucket), FROZEN_NAMES)
    assert _ours(recwarn) == []


@pytest.mark.parametrize("when", ["before_bind", "after_steps"])
def test_sequential_module(when, recwarn):
    seq = sequential_regression_module()
    if when == "before_bind":
        mxcompat.freeze(*FROZEN)
    bind_regression(seq)
    seq.init_optimizer(optimizer="sgd", optimizer_params=OPTIMIZERS[0][1])
    batches = regression_batches()
    if when == "after_steps":
        _train(seq, 3, batches)
        mxcompat.freeze(*FROZEN)
    start = [_device_params(m) for m in seq._modules]
    _train(seq, 5, batches)
    end = [_device_params(m) for m in seq._modules]
    assert sorted(start[0]) == ["fc1_bias", "fc1_weight"]
    for s, e in zip(start, end):
        _assert_frozen(s, e, FROZEN_NAMES)
    # Each pattern matches in one of the two modules: no "matches nothing" warning.
    assert _ours(recwarn) == []


def test_feedforward_fit():
    """The legacy FeedForward loop calls mxnet.model's own _update_params."""
    mxcompat.freeze(*FROZEN)
    rng = np.random.RandomState(5)
    shapes = {"fc1_weight": (5, 4), "fc1_bias": (5,), "fc2_weight": (3, 5), "fc2_bias": (3,)}
    start = {n: mx.nd.array(rng.uniform(-0.5, 0.5, s)) for n, s in shapes.items()}
    start_np = {n: a.asnumpy().copy() for n, a in start.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        model = mx.model.FeedForward(
            _symbol(),
            ctx=mx.cpu(),
            num_epoch=2,
            optimizer="sgd",
            arg_params=start,
            aux_params={},
            learning_rate=0.1,
            momentum=0.9,
            wd=0.01,
        )
        model.fit(_iter())
    for name, value in start_np.items():
        same = np.array_equal(value, model.arg_params[name].asnumpy())
        assert same == (name in FROZEN_NAMES), name


# --- unfreezing, unmatched patterns, unpatch ------------------------------------------------


def test_unfreeze_after_frozen_bind_rebinds_with_gradients(recwarn):
    mxcompat.freeze("fc2_*")
    mod = _module()
    bind_regression(mod)
    mod.init_optimizer(optimizer="sgd", optimizer_params=OPTIMIZERS[0][1])
    batches = regression_batches()
    _train(mod, 2, batches)
    grads = dict(zip(mod._exec_group.param_names, mod._exec_group.grad_arrays))
    assert grads["fc2_weight"] == grads["fc2_bias"] == [None]
    mxcompat.unfreeze("fc2_*")
    start = _device_params(mod)
    # The next forward rebinds: the weights are the ones trained so far, and fc2 trains.
    _train(mod, 3, batches)
    grads = dict(zip(mod._exec_group.param_names, mod._exec_group.grad_arrays))
    assert all(grads[n][0] is not None for n in PARAMS)
    _assert_frozen(start, _device_params(mod), set())
    assert _ours(recwarn) == []
    # Rebinding by hand, as before, still keeps the weights.
    mod.get_params()
    mod.bind(data_shapes=mod.data_shapes, label_shapes=mod.label_shapes, force_rebind=True)
    rebound = _device_params(mod)
    _train(mod, 5, batches)
    _assert_frozen(rebound, _device_params(mod), set())
    assert _ours(recwarn) == []


def test_unfreeze_after_frozen_bind_rebinds_every_bucket(recwarn):
    mxcompat.freeze("fc2_*")
    mod = mx.mod.BucketingModule(bucket_sym_gen, default_bucket_key=3, context=mx.cpu())
    mod.bind(data_shapes=[("data", (BATCH, 3, 4))], label_shapes=[("lro_label", (BATCH, 3))])
    mod.init_params(mx.init.Uniform(0.5))
    mod.init_optimizer()
    rng = np.random.RandomState(0)
    batches = [bucket_batch(rng, key) for key in (2, 3, 2, 3)]
    for batch in batches[:2]:
        mod.forward(batch, is_train=True)
        mod.backward()
        mod.update()
    mxcompat.unfreeze()
    start = _device_params(mod._buckets[3])
    for batch in batches[2:]:
        mod.forward(batch, is_train=True)
        mod.backward()
        mod.update()
    assert sorted(mod._buckets) == [2, 3]
    for bucket in mod._buckets.values():
        grads = dict(zip(bucket._exec_group.param_names, bucket._exec_group.grad_arrays))
        assert all(grads[n][0] is not None for n in PARAMS)
        _assert_frozen(start, _device_params(bucket), set())
    # Still one set of parameters: bucket 2's updates are bucket 3's.
    ends = [_device_params(b) for b in mod._buckets.values()]
    assert all(np.array_equal(ends[0][n][0], ends[1][n][0]) for n in PARAMS)
    assert _ours(recwarn) == []


def test_unfreeze_after_update_time_freeze_trains_again(recwarn):
    mod, start, end = _run_module("after_steps")
    mxcompat.unfreeze(*FROZEN)
    _train(mod, 3, regression_batches())
    _assert_frozen(end, _device_params(mod), set())
    assert _ours(recwarn) == []


def test_pattern_matching_nothing_warns_once_with_closest_names(recwarn):
    mxcompat.freeze("fc1_weight", "fc3_weigth", re.compile("fc1_bia"))
    mod = _module()
    bind_regression(mod)
    mod.init_optimizer()
    _train(mod, 3, regression_batches())
    assert _ours(recwarn) == [
        "mxcompat.freeze pattern 'fc3_weigth' matches no parameter of this Module, so it "
        "freezes nothing here (closest parameter names: 'fc2_weight', 'fc1_weight', "
        "'fc2_bias')",
        "mxcompat.freeze pattern re.compile('fc1_bia') matches no parameter of this Module, so "
        "it freezes nothing here (closest parameter names: 'fc1_bias', 'fc2_bias', "
        "'fc1_weight')",
    ]


def test_pattern_matching_nothing_warns_once_per_model():
    # Once per pattern for each model, however many steps; remembered with the model (the
    # README: "one warning"), not by its names for the rest of the process.  "always": the
    # two Modules' warnings have the same text and line.
    mxcompat.freeze("fc3_weigth")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(2):
            mod = _module()
            bind_regression(mod)
            mod.init_optimizer()
            _train(mod, 3, regression_batches())
        net = _gluon_net([mx.cpu()])
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
        gluon_regression_steps(net, trainer, [mx.cpu()], 3)
    assert [m.split(" of this ")[1].split(",")[0] for m in _ours(record)] == [
        "Module",
        "Module",
        "gluon.Trainer",
    ]


def test_unpatched_mxnet_ignores_the_registry(unpatched):
    mxcompat.freeze(*FROZEN)
    mod = _module()
    bind_regression(mod)
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1})
    start = _device_params(mod)
    _train(mod, 5, regression_batches())
    _assert_frozen(start, _device_params(mod), set())


# --- Gluon Trainer ----------------------------------------------------------------------------


def _gluon_net(contexts):
    """The Module's network in Gluon: net_fc1_* (5, tanh) and net_fc2_* (3)."""
    return dense_net(
        (4, 5, 3),
        "tanh",
        prefix="net_",
        layer_names=True,
        init=mx.init.Uniform(0.5),
        seed=1,
        ctx=contexts,
    )


G_FROZEN = ("net_fc1_weight", "net_fc2_b*")
G_FROZEN_NAMES = {"net_fc1_weight", "net_fc2_bias"}


def _gluon_params(net):
    return {
        p.name: [a.asnumpy().copy() for a in p.list_data()] for p in net.collect_params().values()
    }


def _run_gluon(
    contexts, kvstore, update_on_kvstore, optimizer="sgd", params=None, when="before", split=False
):
    net = _gluon_net(contexts)
    trainer = gluon.Trainer(
        net.collect_params(),
        optimizer,
        dict(params or OPTIMIZERS[0][1]),
        kvstore=kvstore,
        update_on_kvstore=update_on_kvstore,
    )
    if when == "before":
        mxcompat.freeze(*G_FROZEN)
    else:
        # Optimizer states are non-zero now.
        gluon_regression_steps(net, trainer, contexts, 3, split=split)
        mxcompat.freeze(*G_FROZEN)
    start = _gluon_params(net)
    gluon_regression_steps(net, trainer, contexts, 5, split=split)
    return trainer, start, _gluon_params(net)


@pytest.mark.parametrize("optimizer, params", OPTIMIZERS[:3], ids=["sgd", "adam", "rmsprop"])
@pytest.mark.parametrize("when", ["before", "after_steps"])
def test_gluon_trainer_optimizers(optimizer, params, when, recwarn):
    trainer, start, end = _run_gluon([mx.cpu()], None, None, optimizer, params, when)
    assert trainer._kvstore is None
    _assert_frozen(start, end, G_FROZEN_NAMES)
    assert _ours(recwarn) == []


@pytest.mark.parametrize(
    "contexts, kvstore, update_on_kvstore, uses_kvstore",
    [
        ([mx.cpu()], "device", None, False),  # one device: MXNet drops the kvstore
        ([mx.cpu()], "local-object", True, True),
        ([mx.cpu()], "local-object", False, True),
        (TWO, None, None, False),
        (TWO, "local", None, True),
        (TWO, "device", True, True),
        (TWO, "device", False, True),
    ],
    ids=[
        "1ctx-device",
        "1ctx-kvobj-on",
        "1ctx-kvobj-off",
        "2ctx-nokv",
        "2ctx-local",
        "2ctx-device-on",
        "2ctx-device-off",
    ],
)
@pytest.mark.parametrize("optimizer, params", OPTIMIZERS[:2], ids=["sgd", "adam"])
def test_gluon_trainer_kvstores(
    contexts, kvstore, update_on_kvstore, uses_kvstore, optimizer, params
):
    if kvstore == "local-object":
        kvstore = mx.kv.create("local")
    trainer, start, end = _run_gluon(
        contexts, kvstore, update_on_kvstore, optimizer, params, when="after_steps"
    )
    assert (trainer._kvstore is not None) == uses_kvstore
    if uses_kvstore and update_on_kvstore is not None:
        assert bool(trainer._update_on_kvstore) == update_on_kvstore
    _assert_frozen(start, end, G_FROZEN_NAMES)


def test_gluon_allreduce_grads_then_update():
    trainer, start, end = _run_gluon(TWO, "device", False, when="after_steps", split=True)
    assert trainer._kvstore is not None and not trainer._update_on_kvstore
    _assert_frozen(start, end, G_FROZEN_NAMES)


def test_gluon_trainer_pattern_matching_nothing_warns(recwarn):
    net = _gluon_net([mx.cpu()])
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    mxcompat.freeze("net_fc1_weight", "fc1_weight")
    gluon_regression_steps(net, trainer, [mx.cpu()], 2)
    assert _ours(recwarn) == [
        "mxcompat.freeze pattern 'fc1_weight' matches no parameter of this gluon.Trainer, so "
        "it freezes nothing here (closest parameter names: 'net_fc1_weight', "
        "'net_fc2_weight', 'net_fc1_bias')"
    ]


def test_gluon_unfrozen_trains_again_and_grad_req_untouched():
    trainer, start, end = _run_gluon([mx.cpu()], None, None, when="after_steps")
    net_params = trainer._params
    assert all(p.grad_req == "write" for p in net_params)
    mxcompat.unfreeze()
    rng = np.random.RandomState(1)
    before = {p.name: p.data().asnumpy().copy() for p in net_params}
    for _ in range(2):
        with autograd.record():
            loss = sum(((p.data() * float(rng.uniform(0.5, 1))) ** 2).sum() for p in net_params)
        loss.backward()
        trainer.step(1)
    assert all(not np.array_equal(before[p.name], p.data().asnumpy()) for p in net_params)


# --- the report -------------------------------------------------------------------------------


def test_report_for_a_bound_module():
    mxcompat.freeze("fc2_*")
    mod = _module()
    bind_regression(mod)
    report = mxcompat.frozen_report(mod)
    assert report.frozen == ("fc2_weight", "fc2_bias")
    assert report.trainable == ("fc1_weight", "fc1_bias")
    assert (report.frozen_params, report.trainable_params) == (2, 2)
    assert (report.frozen_elements, report.trainable_elements) == (18, 25)
    assert str(report).splitlines() == [
        "# of parameters: 43 | trainable: 25 (58.14%) | fixed: 18 (41.86%)",
        "Trainable parameters:",
        "['fc1_weight [(5, 4), float32]', 'fc1_bias [(5,), float32]']",
        "Fixed parameters:",
        "['fc2_weight [(3, 5), float32]', 'fc2_bias [(3,), float32]']",
    ]
    assert repr(report) == (
        "FrozenReport(frozen=2 params/18 elements, trainable=2 params/25 elements)"
    )
    # Natively fixed parameters count as fixed too.
    mxcompat.unfreeze()
    mod = _module(fixed_param_names=["fc1_bias"])
    bind_regression(mod)
    assert mxcompat.frozen_report(mod).frozen == ("fc1_bias",)


def test_report_for_bucketing_and_sequential_modules():
    mxcompat.freeze(*FROZEN)
    seq = sequential_regression_module()
    bind_regression(seq)
    report = mxcompat.frozen_report(seq)
    assert set(report.frozen) == FROZEN_NAMES and len(report.trainable) == 2
    bucketing = mx.mod.BucketingModule(bucket_sym_gen, default_bucket_key=3)
    with pytest.raises(ValueError) as info:
        mxcompat.frozen_report(bucketing)
    assert "bind the BucketingModule first" in str(info.value)
    bucketing.bind(data_shapes=[("data", (BATCH, 3, 4))], label_shapes=[("lro_label", (BATCH, 3))])
    assert set(mxcompat.frozen_report(bucketing).frozen) == FROZEN_NAMES


def test_report_for_a_gluon_block_and_trainer():
    net = _gluon_net([mx.cpu()])
    mxcompat.freeze("net_fc1_*")
    net.collect_params()["net_fc2_bias"].grad_req = "null"
    report = mxcompat.frozen_report(net)
    assert report.frozen == ("net_fc1_weight", "net_fc1_bias", "net_fc2_bias")
    assert report.trainable == ("net_fc2_weight",)
    assert (report.frozen_elements, report.trainable_elements) == (28, 15)
    assert (
        str(report).splitlines()[0]
        == "# of parameters: 43 | trainable: 15 (34.88%) | fixed: 28 (65.12%)"
    )
    trainer = gluon.Trainer(net.collect_params(), "sgd")
    assert sorted(mxcompat.frozen_report(trainer).frozen) == sorted(report.frozen)


def test_report_errors():
    with pytest.raises(ValueError) as info:
        mxcompat.frozen_report(_module())
    assert str(info.value) == (
        "mxcompat.frozen_report: bind the Module or initialise its "
        "parameters first; their shapes are unknown before"
    )
    with pytest.raises(TypeError) as info:
        mxcompat.frozen_report("net")
    assert "expected a Module or a Gluon Block" in str(info.value)


def test_patch_is_registered_and_reversible():
    import mxnet.module.module as module_py

    targets = [
        (mx.model, "_update_params"),
        (mx.model, "_update_params_on_kvstore"),
        (module_py, "_update_params"),
        (module_py, "_update_params_on_kvstore"),
        (gluon.Trainer, "_update"),
        (gluon.Trainer, "_allreduce_grads"),
    ]
    assert "freeze" in mxcompat.patched()
    # The update paths are wrapped while something is frozen (test_hot_path).
    mxcompat.freeze("nothing_by_this_name")
    patched = [vars(owner)[attr] for owner, attr in targets]
    mxcompat.unpatch("freeze")
    try:
        originals = [vars(owner)[attr] for owner, attr in targets]
        assert all(not hasattr(o, "_self_mxcompat_patch") for o in originals)
        assert module_py._update_params is mx.model._update_params  # one original function
    finally:
        mxcompat.patch("freeze")
    # (wrapt proxies compare equal to what they wrap: compare identities)
    again = [vars(owner)[attr] for owner, attr in targets]
    assert all(a is not o for a, o in zip(again, originals))
    assert all(p._self_mxcompat_patch == "freeze" for p in patched + again)
    assert all(p.__wrapped__ is o for p, o in zip(again, originals))


def test_registry_caches_keep_no_trainer_or_module_alive():
    # A Parameter refers to its Trainer: a cache holding parameters would keep the Trainer
    # (and a dist kvstore, whose late teardown aborts a ps-lite worker) alive until exit.
    import gc
    import weakref

    mxcompat.freeze("net_fc1_weight", "net_batchnorm0_running_mean")
    net = _gluon_net([mx.cpu()])
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    gluon_regression_steps(net, trainer, [mx.cpu()], 2)
    mod = _module()
    bind_regression(mod)
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1})
    _train(mod, 2, regression_batches())
    refs = [weakref.ref(o) for o in (net, trainer, mod)]
    del net, trainer, mod
    gc.collect()
    assert [r() for r in refs] == [None, None, None]
