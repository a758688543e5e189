"""``module._fixed_param_names`` agrees with what is frozen (patch ``fixed_param_names``):
legacy code that reads it (e.g. to log "Fixed model parameters") sees the registry's names."""

import mxnet as mx
import pytest

import mxcompat
from tests.support.models import mlp_symbol, regression_module
from tests.support.stack import ONEDNN_FC_RUNS

BATCH = 2


# data (BATCH, 4) -> fc1 (3) -> relu -> fc2 (2) -> lro
MODEL = {"hidden": 3, "outputs": 2, "activation": "relu"}


def _bind(mod):
    mod.bind(data_shapes=[("data", (BATCH, 4))], label_shapes=[("lro_label", (BATCH, 2))])
    mod.init_params()
    return mod


def test_module_lists_its_own_and_the_registrys_names_in_parameter_order():
    mod = regression_module(mlp_symbol(**MODEL), fixed_param_names=["fc2_bias"])
    assert mod._fixed_param_names == ["fc2_bias"]
    mxcompat.freeze("fc1_*")
    assert mod._fixed_param_names == ["fc2_bias", "fc1_weight", "fc1_bias"]
    assert mod._fixed_param_names.own == ["fc2_bias"]
    # What a legacy training loop logs:
    assert (
        "Fixed model parameters: %s" % ", ".join(mod._fixed_param_names)
        == "Fixed model parameters: fc2_bias, fc1_weight, fc1_bias"
    )
    mxcompat.unfreeze("fc1_*")
    assert mod._fixed_param_names == ["fc2_bias"]


def test_assignment_sets_the_modules_own_names_only():
    mod = regression_module(mlp_symbol(**MODEL))
    mxcompat.freeze("fc1_weight")
    mod._fixed_param_names = mod._fixed_param_names + ["fc2_weight"]
    assert mod._fixed_param_names == ["fc2_weight", "fc1_weight"]  # own names first
    mxcompat.unfreeze()
    assert mod._fixed_param_names == ["fc2_weight"]
    # The list read back and assigned as it is keeps no registry name either.
    mxcompat.freeze("fc1_bias")
    mod._fixed_param_names = mod._fixed_param_names
    mxcompat.unfreeze()
    assert mod._fixed_param_names == ["fc2_weight"]


def test_bind_sees_the_modules_own_names():
    # The freeze patch decides what the registry adds to a bind; a rebind after unfreeze
    # gives the unfrozen bias a gradient again.
    mxcompat.freeze("fc2_bias")
    mod = _bind(regression_module(mlp_symbol(**MODEL), fixed_param_names=["fc1_bias"]))
    assert mod._exec_group.grad_req["fc2_bias"] == "null"
    assert mod._exec_group.grad_req["fc1_bias"] == "null"
    assert mod._fixed_param_names == ["fc1_bias", "fc2_bias"]
    mxcompat.unfreeze()
    mod.bind(data_shapes=mod.data_shapes, label_shapes=mod.label_shapes, force_rebind=True)
    assert mod._exec_group.grad_req["fc2_bias"] == "write"
    assert mod._fixed_param_names == ["fc1_bias"]


def test_changed_in_place_changes_the_modules_own_list():
    mod = regression_module(mlp_symbol(**MODEL), fixed_param_names=["fc2_bias"])
    mxcompat.freeze("fc1_weight")
    mod._fixed_param_names.append("fc2_weight")
    mod._fixed_param_names += ["fc1_bias"]
    assert mod._fixed_param_names == ["fc2_bias", "fc2_weight", "fc1_bias", "fc1_weight"]
    mod._fixed_param_names.remove("fc2_bias")
    with pytest.raises(ValueError) as info:
        mod._fixed_param_names.remove("fc1_weight")
    assert str(info.value) == (
        "mxcompat: 'fc1_weight' is frozen by the mxcompat.freeze "
        "registry, not fixed by this module: mxcompat.unfreeze(...) "
        "thaws it"
    )
    mxcompat.unfreeze()
    assert mod._fixed_param_names == ["fc2_weight", "fc1_bias"]


@pytest.mark.skipif(
    not ONEDNN_FC_RUNS,
    reason="oneDNN FullyConnected kernels run on MXNet >= 1.7 CPU builds with MKLDNN enabled only",
)
def test_bind_keeps_a_frozen_fc_weight_off_null_where_it_would_stop_its_bias():
    # Were the registry's names read inside bind, MXNet would give fc1_weight 'null' and
    # oneDNN would stop fc1_bias (freeze keeps it off 'null' and skips its update instead).
    mxcompat.freeze("fc1_weight")
    mod = _bind(regression_module(mlp_symbol(**MODEL)))
    assert mod._exec_group.grad_req["fc1_weight"] == "write"
    assert mod._fixed_param_names == ["fc1_weight"]


def _sym_gen(key):
    return mlp_symbol(**MODEL), ("data",), ("lro_label",)


def test_bucketing_module_lists_the_registrys_names_once_bound():
    bucketing = mx.mod.BucketingModule(
        _sym_gen, default_bucket_key=4, fixed_param_names=["fc2_bias"]
    )
    mxcompat.freeze("fc1_weight")
    # Before bind no bucket exists: its parameters are unknown.
    assert bucketing._fixed_param_names == ["fc2_bias"]
    bucketing.bind(data_shapes=[("data", (BATCH, 4))], label_shapes=[("lro_label", (BATCH, 2))])
    assert bucketing._fixed_param_names == ["fc2_bias", "fc1_weight"]
    assert bucketing._curr_module._fixed_param_names == ["fc2_bias", "fc1_weight"]
    bucketing.init_params()
    # A bucket built while the registry freezes fc1_weight keeps its own names only.
    bucketing.switch_bucket(
        5, data_shapes=[("data", (BATCH, 4))], label_shapes=[("lro_label", (BATCH, 2))]
    )
    assert bucketing._buckets[5]._fixed_param_names.own == ["fc2_bias"]
    mxcompat.unfreeze()
    assert bucketing._fixed_param_names == ["fc2_bias"]
    assert [m._fixed_param_names for m in bucketing._buckets.values()] == [["fc2_bias"]] * 2


def test_report_and_to_gluon_are_unchanged():
    mxcompat.freeze("fc1_*")
    mod = _bind(regression_module(mlp_symbol(**MODEL), fixed_param_names=["fc2_bias"]))
    assert mxcompat.frozen_report(mod).frozen == ("fc1_weight", "fc1_bias", "fc2_bias")
    # to_gluon gives grad_req 'null' to the module's own fixed names only: the registry
    # freezes Gluon parameters by their own names.
    net = mod.to_gluon()
    reqs = {n: p.grad_req for n, p in net.collect_params().items()}
    assert [n for n, r in reqs.items() if r == "null"] == ["fc2_bias"], reqs


def test_without_the_patch_the_attribute_is_mxnets(unpatched):
    mod = regression_module(mlp_symbol(**MODEL), fixed_param_names=["fc2_bias"])
    mxcompat.freeze("fc1_*")
    assert type(mod._fixed_param_names) is list
    assert mod._fixed_param_names == ["fc2_bias"]


def test_modules_built_before_the_patch_are_read_through_it():
    mxcompat.unpatch("fixed_param_names")
    mod = regression_module(mlp_symbol(**MODEL), fixed_param_names=["fc2_bias"])
    mxcompat.patch("fixed_param_names")
    mxcompat.freeze("fc1_bias")
    assert mod._fixed_param_names == ["fc2_bias", "fc1_bias"]
    mxcompat.unpatch("fixed_param_names")
    assert mod._fixed_param_names == ["fc2_bias"] and type(mod._fixed_param_names) is list


def test_needs_the_freeze_patch():
    # With freeze off nothing is frozen, so nothing is listed.
    mod = regression_module(mlp_symbol(**MODEL))
    mxcompat.freeze("fc1_*")
    mxcompat.unpatch("freeze")
    assert mod._fixed_param_names == []
