"""A bare string given as *_names is one name, not a list of characters."""

import mxnet as mx
import numpy as np
import pytest

import mxcompat

KERNEL = [[1, 2, 3], [1, 2, 3], [1, 2, 3]]


def _conv_loss():
    d = mx.sym.Variable("data")
    w = mx.sym.Variable("kw")
    conv = mx.sym.Convolution(data=d, weight=w, kernel=(3, 3), num_filter=1, no_bias=True)
    return mx.sym.MakeLoss(conv)


def _train_one_step(mod):
    kernel = mx.nd.array(KERNEL).reshape((1, 1, 3, 3))
    mod.bind(data_shapes=[("data", (1, 1, 3, 3))])
    mod.set_params({"kw": kernel}, {})
    mod.init_optimizer()
    # bucket_key and provide_data are what BucketingModule needs; Module ignores them.
    batch = mx.io.DataBatch([kernel], [], bucket_key=1, provide_data=[("data", (1, 1, 3, 3))])
    mod.forward(batch)
    mod.backward()
    mod.update()
    mod.forward(batch)
    return mod.get_outputs()[0].asnumpy()


def test_bare_fixed_param_name_is_one_name():
    with pytest.warns(mxcompat.MXCompatWarning) as record:
        mod = mx.mod.Module(
            _conv_loss(), data_names=("data",), label_names=None, fixed_param_names=("kw")
        )
    assert [str(w.message) for w in record] == [
        "Module(fixed_param_names='kw'): a bare string is one name, not a list of its "
        "characters; mxcompat reads it as ['kw'] (write ('kw',) to silence this)"
    ]
    assert mod._fixed_param_names == ["kw"]
    # Fixed for real: 42 stays 42 (41.58 if it trained).
    np.testing.assert_array_equal(_train_one_step(mod), np.full((1, 1, 1, 1), 42, np.float32))


def test_bare_data_name():
    with pytest.warns(mxcompat.MXCompatWarning, match="data_names='data'"):
        mod = mx.mod.Module(_conv_loss(), data_names="data", label_names=None)
    assert mod.data_names == ["data"]


def test_unpatched_mxnet_splits_the_string(unpatched):
    with pytest.raises(ValueError, match="fixed_param_names=\\['k', 'w'\\]"):
        mx.mod.Module(
            _conv_loss(), data_names=("data",), label_names=None, fixed_param_names=("kw")
        )


def test_list_of_names_is_untouched(recwarn):
    mod = mx.mod.Module(
        _conv_loss(), data_names=["data"], label_names=None, fixed_param_names=["kw"]
    )
    assert mod._fixed_param_names == ["kw"]
    assert not [w for w in recwarn if issubclass(w.category, mxcompat.MXCompatWarning)]


def test_bucketing_module_bare_names():
    def sym_gen(key):
        return _conv_loss(), "data", None

    with pytest.warns(mxcompat.MXCompatWarning) as record:
        mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=1, fixed_param_names="kw")
    messages = sorted(str(w.message) for w in record)
    assert any("BucketingModule(fixed_param_names='kw')" in m for m in messages)
    assert any("sym_gen returned data_names='data'" in m for m in messages)
    out = _train_one_step(mod)
    np.testing.assert_array_equal(out, np.full((1, 1, 1, 1), 42, np.float32))
