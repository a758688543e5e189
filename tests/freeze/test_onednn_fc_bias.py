"""onednn_fc_bias: ``fixed_param_names=['fc1_weight']`` keeps the weight fixed and trains
``fc1_bias``, where MXNet's oneDNN FullyConnected (1.7+ MKLDNN wheels) stops the bias too.

"Fixed" is ``np.array_equal`` on each device's own array after 5 updates (momentum and weight
decay on); every other parameter must have changed on each device.  ONEDNN_FC: the builds the
patch applies to; ONEDNN_FC_RUNS: oneDNN kernels really run (not MXNET_MKLDNN_ENABLED=0), which
is where plain MXNet stops the bias.
"""

import mxnet as mx
import numpy as np
import pytest

import mxcompat
from mxcompat.freeze import onednn_fc_bias
from tests.support.models import mlp_symbol, regression_module
from tests.support.stack import ONEDNN_FC, ONEDNN_FC_RUNS, applicable_patches

BATCH = 4
SGD = {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}
TWO = [mx.cpu(0), mx.cpu(1)]


def _batch(size=BATCH):
    rng = np.random.RandomState(size)
    return mx.io.DataBatch([mx.nd.array(rng.uniform(-1, 1, (size, 4)))], [])


def _params(mod):
    """{name: [numpy copy on each device]} straight from the executors."""
    group = mod._exec_group
    return {
        n: [a.asnumpy().copy() for a in arrays]
        for n, arrays in zip(group.param_names, group.param_arrays)
    }


def _train(
    fixed,
    grad_req="write",
    contexts=None,
    kvstore="local",
    optimizer="sgd",
    optimizer_params=None,
    sizes=(BATCH,) * 5,
    module=None,
):
    mod = module or mx.mod.Module(
        mlp_symbol(head="loss"),
        label_names=None,
        context=contexts or mx.cpu(),
        fixed_param_names=fixed,
    )
    mod.bind(data_shapes=[("data", (BATCH, 4))], grad_req=grad_req)
    mx.random.seed(1)
    mod.init_params(mx.init.Uniform(0.5))
    mod.init_optimizer(
        kvstore=kvstore, optimizer=optimizer, optimizer_params=optimizer_params or SGD
    )
    start = _params(mod)
    for size in sizes:
        mod.forward(_batch(size), is_train=True)
        mod.backward()
        mod.update()
    return mod, start, _params(mod)


def _moved(start, end):
    """{name: per device, whether it changed}; a name is reported only if all devices agree."""
    out = {}
    for name in start:
        changed = set(not np.array_equal(a, b) for a, b in zip(start[name], end[name]))
        assert len(changed) == 1, "%s moved on some devices only" % name
        out[name] = changed.pop()
    return out


ALL_TRAIN = {"fc1_weight": True, "fc1_bias": True, "fc2_weight": True, "fc2_bias": True}


def _only_fixed(*names):
    return dict(ALL_TRAIN, **{n: False for n in names})


# --- where it applies -----------------------------------------------------------------------


def test_listed_exactly_on_the_mkldnn_builds_from_1_7():
    # ONEDNN_FC comes from the build's feature list (tests/support/stack.py), not from the patch.
    assert ("onednn_fc_bias" in mxcompat.patched()) == ONEDNN_FC
    assert "onednn_fc_bias" in mxcompat.patch_names()
    assert ("onednn_fc_bias" in applicable_patches()) == ONEDNN_FC
    # Below freeze: freeze's Module.bind hands it the registry's names among the fixed ones.
    names = mxcompat.patch_names()
    assert names.index("onednn_fc_bias") + 1 == names.index("freeze")


@pytest.mark.mxnet(
    "<1.7",
    reason="checks the releases before the oneDNN wheels (1.7), where the patch does not apply",
)
def test_before_1_7_not_patched_and_native_behaviour_untouched():
    assert "onednn_fc_bias" not in mxcompat.patched()
    mod, start, end = _train(["fc1_weight"])
    assert _moved(start, end) == _only_fixed("fc1_weight")
    # MXNet's own 'null': no gradient buffer at all.
    assert mod._exec_group.grad_req["fc1_weight"] == "null"
    assert mod._exec_group.execs[0].grad_dict.get("fc1_weight") is None


# --- MXNet as shipped, and with the patch ---------------------------------------------------


@pytest.mark.parametrize("off", ["everything", "onednn_fc_bias"])
def test_unpatched_fixed_fc_weight_stops_its_bias_as_mxnet_ships(off):
    # The MXNet fact behind facts.ONEDNN_FC_NULL_WEIGHT_SKIPS_BIAS; freeze (still patched in
    # the second case) leaves the user's own fixed_param_names to MXNet.
    mxcompat.unpatch(*(["onednn_fc_bias"] if off == "onednn_fc_bias" else []))
    assert "onednn_fc_bias" not in mxcompat.patched()
    mod, start, end = _train(["fc1_weight"])
    expected = _only_fixed("fc1_weight", *(["fc1_bias"] if ONEDNN_FC_RUNS else []))
    assert _moved(start, end) == expected
    assert mod._exec_group.grad_req["fc1_weight"] == "null"


@pytest.mark.parametrize(
    "optimizer, params",
    [("sgd", SGD), ("adam", {"learning_rate": 0.01, "wd": 0.01})],
    ids=["sgd", "adam"],
)
@pytest.mark.parametrize(
    "contexts, kvstore",
    [(None, None), (None, "local"), (TWO, None), (TWO, "local"), (TWO, "device")],
    ids=["1ctx", "1ctx-kv", "2ctx", "2ctx-kv", "2ctx-device"],
)
def test_fixed_fc_weight_stays_bit_for_bit_and_its_bias_trains(
    contexts, kvstore, optimizer, params
):
    mod, start, end = _train(
        ["fc1_weight"],
        contexts=contexts,
        kvstore=kvstore,
        optimizer=optimizer,
        optimizer_params=params,
    )
    assert _moved(start, end) == _only_fixed("fc1_weight")
    group = mod._exec_group
    # Patched: a gradient buffer in every executor (the bias needs it), none in the group's
    # grad_arrays (MXNet's own mark of a fixed parameter, so its update loops skip it).
    assert group.grad_req["fc1_weight"] == ("write" if ONEDNN_FC else "null")
    assert [e.grad_dict.get("fc1_weight") is not None for e in group.execs] == [ONEDNN_FC] * len(
        group.execs
    )
    grads = dict(zip(group.param_names, group.grad_arrays))
    assert grads["fc1_weight"] == [None] * len(group.execs)
    assert mod._fixed_param_names == ["fc1_weight"]


def test_reshaped_module_keeps_the_weight_fixed():
    # forward with a new batch size reshapes the executors, which rebuilds grad_arrays.
    mod, start, end = _train(["fc1_weight"], sizes=(4, 2, 2, 3, 4))
    assert _moved(start, end) == _only_fixed("fc1_weight")
    assert mod._exec_group.batch_size == 4
    mod.reshape(data_shapes=[("data", (2, 4))])
    assert dict(zip(mod._exec_group.param_names, mod._exec_group.grad_arrays))["fc1_weight"] == [
        None
    ]


def test_fit_keeps_the_weight_fixed():
    rng = np.random.RandomState(2)
    it = mx.io.NDArrayIter(
        rng.uniform(-1, 1, (16, 4)),
        rng.uniform(-1, 1, (16, 3)),
        batch_size=BATCH,
        label_name="lro_label",
    )
    # The regression head: fit wants labels.
    mod = regression_module(fixed_param_names=["fc1_weight"])
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mx.random.seed(1)
    mod.init_params(mx.init.Uniform(0.5))
    start = _params(mod)
    mod.fit(it, num_epoch=2, eval_metric="mse", optimizer="sgd", optimizer_params=SGD)
    assert _moved(start, _params(mod)) == _only_fixed("fc1_weight")


def test_bucketing_module_keeps_the_weight_fixed():
    def sym_gen(key):
        return mlp_symbol(head="loss"), ("data",), None

    mod = mx.mod.BucketingModule(
        sym_gen, default_bucket_key=4, context=mx.cpu(), fixed_param_names=["fc1_weight"]
    )
    mod.bind(data_shapes=[("data", (4, 4))])
    mx.random.seed(1)
    mod.init_params(mx.init.Uniform(0.5))
    mod.init_optimizer(optimizer_params=SGD)
    start = {k: [v.asnumpy()] for k, v in mod.get_params()[0].items()}
    for size in (4, 2, 4, 2):
        batch = _batch(size)
        batch.bucket_key = size
        batch.provide_data = [mx.io.DataDesc("data", (size, 4))]
        mod.forward(batch, is_train=True)
        mod.backward()
        mod.update()
    end = {k: [v.asnumpy()] for k, v in mod.get_params()[0].items()}
    assert _moved(start, end) == _only_fixed("fc1_weight")
    assert sorted(mod._buckets) == [2, 4]


def test_weight_and_bias_fixed_together_stay_null():
    # 'null' on both stops nothing that trains: no gradient buffer, as in MXNet.
    mod, start, end = _train(["fc1_weight", "fc1_bias"])
    assert _moved(start, end) == _only_fixed("fc1_weight", "fc1_bias")
    assert mod._exec_group.grad_req["fc1_weight"] == mod._exec_group.grad_req["fc1_bias"] == "null"


def test_grad_req_list_and_explicit_dict_entries_stay_mxnets():
    # MXNet ignores fixed_param_names for a grad_req list, and an explicit dict entry wins:
    # the weight trains there in MXNet, and so it does here (nothing is held).
    names = mlp_symbol(head="loss").list_arguments()
    for grad_req in (["null" if n == "data" else "write" for n in names], {"fc1_weight": "write"}):
        mod, start, end = _train(["fc1_weight"], grad_req=grad_req)
        assert _moved(start, end) == ALL_TRAIN, grad_req
    # A dict that fixes the bias explicitly: 'null' on the weight stops nothing that trains.
    mod, start, end = _train(["fc1_weight"], grad_req={"fc1_bias": "null"})
    assert _moved(start, end) == _only_fixed("fc1_weight", "fc1_bias")
    assert mod._exec_group.grad_req["fc1_weight"] == "null"


def test_predict_binds_are_untouched():
    mod = mx.mod.Module(mlp_symbol(head="loss"), label_names=None, fixed_param_names=["fc1_weight"])
    mod.bind(data_shapes=[("data", (BATCH, 4))], for_training=False)
    assert mod._exec_group.grad_req["fc1_weight"] == "null"
    assert mod._exec_group.grad_arrays is None


def test_unpatching_later_keeps_a_bound_module_held():
    # Bound under the patch: the hold is MXNet's own None gradient entry, so a later unpatch
    # does not make MXNet start updating the fixed weight (until a reshape: rebind).
    mod, _, _ = _train(["fc1_weight"])
    mxcompat.unpatch("onednn_fc_bias")
    start = _params(mod)
    for _ in range(3):
        mod.forward(_batch(), is_train=True)
        mod.backward()
        mod.update()
    assert _moved(start, _params(mod)) == _only_fixed("fc1_weight")


# --- CPU contexts only ----------------------------------------------------------------------


def test_decision_is_cpu_contexts_only():
    sym, fixed = mlp_symbol(head="loss"), ["fc1_weight"]
    on_cpu = frozenset(["fc1_weight"]) if ONEDNN_FC else frozenset()
    for contexts, expected in (
        ([mx.cpu()], on_cpu),
        (TWO, on_cpu),
        ([mx.cpu_pinned(0)], on_cpu),
        ([mx.gpu(0), mx.cpu(0)], on_cpu),  # the CPU executor needs it
        ([mx.gpu(0)], frozenset()),
        ([mx.gpu(0), mx.gpu(1)], frozenset()),
    ):
        assert onednn_fc_bias.null_would_stop_bias(sym, fixed, contexts) == expected, contexts
    # Nothing fixed, a bias fixed too, an FC without bias: nothing to keep anywhere.
    assert onednn_fc_bias.null_would_stop_bias(sym, [], [mx.cpu()]) == frozenset()
    assert onednn_fc_bias.null_would_stop_bias(sym, fixed + ["fc1_bias"], [mx.cpu()]) == frozenset()
    no_bias = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, no_bias=True, name="fc1")
    assert onednn_fc_bias.null_would_stop_bias(no_bias, fixed, [mx.cpu()]) == frozenset()


def _group_grad_req(mod):
    """The grad_req MXNet's executor group got at bind.  This machine has no GPU (and the
    wheels no CUDA), so binding on mx.gpu(0) fails inside the group's executors: the group
    is then read from the failed call's frames, as MXNet built it."""
    try:
        mod.bind(data_shapes=[("data", (BATCH, 4))])
    except Exception as exc:
        tb = exc.__traceback__
        while tb is not None:
            group = tb.tb_frame.f_locals.get("self")
            if isinstance(group, mx.module.executor_group.DataParallelExecutorGroup):
                return dict(group.grad_req)
            tb = tb.tb_next
        raise
    return dict(mod._exec_group.grad_req)


def test_gpu_module_gets_mxnets_null_and_no_extra_gradient():
    gpu = mx.mod.Module(
        mlp_symbol(head="loss"),
        label_names=None,
        context=mx.gpu(0),
        fixed_param_names=["fc1_weight"],
    )
    assert _group_grad_req(gpu)["fc1_weight"] == "null"
    assert gpu._fixed_param_names == ["fc1_weight"]
    # The same module on the CPU, through the same path: kept off 'null' on ONEDNN_FC.
    cpu = mx.mod.Module(
        mlp_symbol(head="loss"),
        label_names=None,
        context=mx.cpu(),
        fixed_param_names=["fc1_weight"],
    )
    assert _group_grad_req(cpu)["fc1_weight"] == ("write" if ONEDNN_FC else "null")


def test_frozen_fc_weight_on_gpu_gets_null():
    # The registry follows the same rule: no extra gradient on GPU contexts.
    mxcompat.freeze("fc1_weight")
    gpu = mx.mod.Module(mlp_symbol(head="loss"), label_names=None, context=mx.gpu(0))
    assert _group_grad_req(gpu)["fc1_weight"] == "null"
    # The registry's names are read, never stored (patch fixed_param_names lists them).
    assert gpu._fixed_param_names.own == []


# --- turned off by the environment ----------------------------------------------------------

PROBE = """
import warnings; warnings.simplefilter("ignore")
import numpy as np, mxcompat, mxnet as mx
fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
mod = mx.mod.Module(mx.sym.MakeLoss(mx.sym.sum(fc * fc)), label_names=None,
                    fixed_param_names=["fc_weight"])
mod.bind(data_shapes=[("data", (2, 4))])
mod.init_params(mx.init.Uniform(0.5))
mod.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01})
before = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
for _ in range(3):
    mod.forward_backward(mx.io.DataBatch([mx.nd.ones((2, 4))], [])); mod.update()
after = mod.get_params()[0]
print("onednn_fc_bias" in mxcompat.patched(), mod._exec_group.grad_req["fc_weight"])
print(sorted(k for k in before if not np.array_equal(before[k], after[k].asnumpy())))
"""


def test_disabled_by_environment(python):
    out = python(PROBE, env={"MXCOMPAT_DISABLE_PATCHES": "onednn_fc_bias"}).stdout.splitlines()
    assert out == ["False null", "[]" if ONEDNN_FC_RUNS else "['fc_bias']"]
    out = python(PROBE).stdout.splitlines()
    assert out == ["%s %s" % (ONEDNN_FC, "write" if ONEDNN_FC else "null"), "['fc_bias']"]


# --- not covered: Gluon ---------------------------------------------------------------------


def test_gluon_null_weight_is_mxnets_own():
    # Gluon's param.grad_req = 'null' reaches the same oneDNN backward (1.7+): the patch is
    # about Module's fixed_param_names and leaves it as MXNet ships it (README: use
    # mxcompat.freeze, which never sets grad_req).
    net = mx.gluon.nn.Dense(3, in_units=4)
    net.initialize(mx.init.Uniform(0.5))
    net.weight.grad_req = "null"
    with mx.autograd.record():
        loss = (net(mx.nd.ones((2, 4))) ** 2).sum()
    loss.backward()
    assert (float(net.bias.grad().abs().sum().asscalar()) == 0.0) == ONEDNN_FC_RUNS
