"""unbound_get_params: Module.get_params() answers the same on every release.

Plain MXNet (the ``unpatched`` fixture): 1.3-1.5 assert that the module is bound, so a
``Module.load`` module's parameters cannot be read before ``bind``; 1.6+ return them
(``facts.UNBOUND_GET_PARAMS``).  Every release raises a bare ``AssertionError`` for a module
without parameters.  Patched: the parameters on every release, and mxcompat's message.
"""

import subprocess
import sys

import mxnet as mx
import numpy as np
import pytest

from mxcompat._core import facts
from tests.support.processes import subprocess_env

UNBOUND_MESSAGE = (
    "mxcompat: Module.get_params(): the module has no parameters yet; bind it "
    "and call init_params() or set_params(arg_params, aux_params) first, or "
    "create it with Module.load(prefix, epoch)"
)
BOUND_MESSAGE = (
    "mxcompat: Module.get_params(): the module has no parameters yet; call "
    "init_params() or set_params(arg_params, aux_params) first"
)
BUCKETING_UNBOUND_MESSAGE = (
    "mxcompat: BucketingModule.get_params(): the module has no parameters yet; bind it and "
    "call init_params() or set_params(arg_params, aux_params) first"
)
BUCKETING_BOUND_MESSAGE = (
    "mxcompat: BucketingModule.get_params(): the module has no parameters yet; call "
    "init_params() or set_params(arg_params, aux_params) first"
)

WEIGHT = np.arange(6, dtype="float32").reshape((2, 3))
BIAS = np.array([0.5, -1.5], dtype="float32")


def symbol():
    return mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")


@pytest.fixture
def checkpoint(tmpdir):
    prefix = str(tmpdir.join("m"))
    mx.model.save_checkpoint(
        prefix, 3, symbol(), {"fc_weight": mx.nd.array(WEIGHT), "fc_bias": mx.nd.array(BIAS)}, {}
    )
    return prefix


def assert_checkpoint_params(params):
    arg_params, aux_params = params
    assert sorted(arg_params) == ["fc_bias", "fc_weight"] and aux_params == {}
    assert np.array_equal(arg_params["fc_weight"].asnumpy(), WEIGHT)
    assert np.array_equal(arg_params["fc_bias"].asnumpy(), BIAS)


def error_of(call):
    with pytest.raises(AssertionError) as info:
        call()
    return str(info.value)


# --- plain MXNet, pinned per release -----------------------------------------------------------


def test_plain_mxnet_loaded_module_before_bind(unpatched, checkpoint):
    mod = mx.mod.Module.load(checkpoint, 3, label_names=None)
    if facts.since(facts.UNBOUND_GET_PARAMS):
        assert_checkpoint_params(mod.get_params())
    else:
        assert error_of(mod.get_params) == ""


def test_plain_mxnet_asserts_without_a_message_when_there_are_no_parameters(unpatched):
    mod = mx.mod.Module(symbol(), label_names=None)
    assert error_of(mod.get_params) == ""
    mod.bind(data_shapes=[("data", (1, 3))])
    assert error_of(mod.get_params) == ""


# --- patched: the same on every release --------------------------------------------------------


def test_loaded_module_gives_its_parameters_before_bind(checkpoint):
    mod = mx.mod.Module.load(checkpoint, 3, label_names=None)
    assert not mod.binded
    params = mod.get_params()
    assert_checkpoint_params(params)
    # The very arrays Module.load read, as 1.6+ return them (no copy).
    assert params[0] is mod._arg_params and params[1] is mod._aux_params
    # Then bound: MXNet's own path, the same values.
    mod.bind(data_shapes=[("data", (1, 3))], for_training=False)
    assert_checkpoint_params(mod.get_params())


def test_save_checkpoint_of_a_loaded_module_before_bind(checkpoint, tmpdir):
    # save_checkpoint reads get_params(): 1.3-1.5 could not save a module they had loaded.
    mod = mx.mod.Module.load(checkpoint, 3, label_names=None)
    again = str(tmpdir.join("again"))
    mod.save_checkpoint(again, 4)
    _, arg_params, aux_params = mx.model.load_checkpoint(again, 4)
    assert_checkpoint_params((arg_params, aux_params))


def test_no_parameters_is_a_clear_assertion_error():
    mod = mx.mod.Module(symbol(), label_names=None)
    assert error_of(mod.get_params) == UNBOUND_MESSAGE
    mod.bind(data_shapes=[("data", (1, 3))])
    assert error_of(mod.get_params) == BOUND_MESSAGE
    mod.init_params()
    assert sorted(mod.get_params()[0]) == ["fc_bias", "fc_weight"]


def sym_gen(bucket_key):
    return symbol(), ("data",), None


def test_bucketing_module_says_the_same():
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=3)
    assert error_of(mod.get_params) == BUCKETING_UNBOUND_MESSAGE
    mod.bind(data_shapes=[("data", (1, 3))])
    assert error_of(mod.get_params) == BUCKETING_BOUND_MESSAGE
    mod.init_params()
    assert sorted(mod.get_params()[0]) == ["fc_bias", "fc_weight"]


@pytest.mark.mxnet(">=1.6", reason="BucketingModule.load arrives in MXNet 1.6")
def test_loaded_bucketing_module_before_bind(tmpdir):
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=3)
    mod.bind(data_shapes=[("data", (1, 3))])
    mod.set_params({"fc_weight": mx.nd.array(WEIGHT), "fc_bias": mx.nd.array(BIAS)}, {})
    prefix = str(tmpdir.join("b"))
    mod.save_checkpoint(prefix, 1)
    loaded = mx.mod.BucketingModule.load(prefix, 1, sym_gen=sym_gen, default_bucket_key=3)
    assert not loaded.binded
    assert_checkpoint_params(loaded.get_params())


O_PROBE = """
import warnings; warnings.simplefilter("ignore")
import mxcompat, mxnet as mx
mod = mx.mod.Module(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2),
                    label_names=None)
try:
    print(mod.get_params())
except AssertionError as err:
    print(err)
"""


@pytest.mark.parametrize(
    "env, expected",
    [({}, UNBOUND_MESSAGE), ({"MXCOMPAT_DISABLE_PATCHES": "unbound_get_params"}, "(None, None)")],
)
def test_the_message_holds_under_python_O(env, expected):
    # python -O strips MXNet's assert: plain MXNet then returns (None, None) for a module
    # without parameters.  mxcompat's error is raised, not asserted.
    proc = subprocess.run(
        [sys.executable, "-O", "-c", O_PROBE],
        capture_output=True,
        text=True,
        env=subprocess_env(env),
        timeout=180,
    )
    assert (proc.returncode, proc.stdout.strip()) == (0, expected), proc.stderr[-2000:]


def test_the_patch_applies_on_every_release():
    import mxcompat

    assert "unbound_get_params" in mxcompat.patched()
