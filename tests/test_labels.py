"""Label names the symbol lacks are dropped at construction, bind and reshape."""
import os
import warnings

import numpy as np
import pytest

import mxcompat
import mxnet as mx
from mxnet import gluon


def _exported_net(tmpdir, batch=8):
    """A hybridized conv+BN+dense net, exported; returns (prefix, input, net output)."""
    mx.random.seed(7)
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Conv2D(4, 3), gluon.nn.BatchNorm(), gluon.nn.Dense(10))
    net.initialize()
    net.hybridize()
    x = mx.nd.random.uniform(shape=(batch, 3, 8, 8))
    y = net(x)
    prefix = os.path.join(str(tmpdir), "m")
    net.export(prefix)
    return prefix, x, y.asnumpy()


def _mxcompat_warnings(record):
    return [w for w in record if issubclass(w.category, mxcompat.MXCompatWarning)]


def test_seed_snippet_predicts_like_gluon(tmpdir):
    prefix, x, expected = _exported_net(tmpdir)
    it = mx.io.NDArrayIter(x, mx.nd.zeros(8), batch_size=4)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mod = mx.mod.Module.load(prefix, 0)
        mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
        out = mod.predict(it)
    ours = _mxcompat_warnings(record)
    assert [str(w.message) for w in ours] == [
        "label name(s) 'softmax_label' are not arguments of the symbol (it takes no such "
        "label); mxcompat drops them from label_names and label_shapes"]
    # The warning points at the user's line, not into mxnet or mxcompat.
    assert ours[0].filename == __file__
    # MXNet's own "not found in symbol.list_arguments()" and label-mismatch warnings are gone.
    assert not [w for w in record if "list_arguments" in str(w.message)
                or "label_shapes don't match" in str(w.message)]
    assert mod.label_names == []
    assert mod.label_shapes == []
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=0, atol=1e-6)


def test_forward_and_iter_predict(tmpdir):
    prefix, x, expected = _exported_net(tmpdir)
    it = mx.io.NDArrayIter(x, mx.nd.zeros(8), batch_size=4)
    mod = mx.mod.Module.load(prefix, 0)
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label, for_training=False)
    outs = [o[0].asnumpy() for o, _, _ in mod.iter_predict(it)]
    np.testing.assert_allclose(np.concatenate(outs), expected, atol=1e-6, rtol=0)
    it.reset()
    batch = next(iter(it))
    mod.forward(batch, is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), expected[:4], atol=1e-6, rtol=0)


def test_forward_with_new_batch_size_reshapes_without_labels(tmpdir):
    # Module.forward reshapes when the batch shape changes, passing the batch's labels.
    prefix, x, expected = _exported_net(tmpdir)
    it4 = mx.io.NDArrayIter(x, mx.nd.zeros(8), batch_size=4)
    it2 = mx.io.NDArrayIter(x[:2], mx.nd.zeros(2), batch_size=2)
    mod = mx.mod.Module.load(prefix, 0)
    mod.bind(data_shapes=it4.provide_data, label_shapes=it4.provide_label, for_training=False)
    mod.forward(next(iter(it2)), is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), expected[:2], atol=1e-6, rtol=0)


def test_unpatched_mxnet_raises_keyerror(tmpdir, unpatched):
    prefix, x, _ = _exported_net(tmpdir)
    it = mx.io.NDArrayIter(x, mx.nd.zeros(8), batch_size=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod = mx.mod.Module.load(prefix, 0)
        with pytest.raises(KeyError) as err:
            mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    assert err.value.args == ("softmax_label",)


def test_module_built_before_patching_is_fixed_at_bind(tmpdir):
    prefix, x, expected = _exported_net(tmpdir)
    it = mx.io.NDArrayIter(x, mx.nd.zeros(8), batch_size=4)
    mxcompat.unpatch("labels")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod = mx.mod.Module.load(prefix, 0)
    assert mod.label_names == ["softmax_label"]
    mxcompat.patch("labels")
    with pytest.warns(mxcompat.MXCompatWarning, match="'softmax_label'"):
        mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    assert mod.label_names == []
    np.testing.assert_allclose(mod.predict(it).asnumpy(), expected, atol=1e-6, rtol=0)


def _softmax_symbol():
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def test_label_the_symbol_has_is_kept_and_trains():
    mx.random.seed(0)
    x = mx.nd.array(np.random.RandomState(0).rand(12, 5))
    y = mx.nd.array(np.arange(12) % 3)
    it = mx.io.NDArrayIter(x, y, batch_size=4)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mod = mx.mod.Module(_softmax_symbol())
        mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    assert _mxcompat_warnings(record) == []
    assert mod.label_names == ["softmax_label"]
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer_params=(("learning_rate", 0.5),))
    before = mod.get_params()[0]["fc_weight"].asnumpy()
    batch = next(iter(it))
    mod.forward_backward(batch)
    mod.update()
    after = mod.get_params()[0]["fc_weight"].asnumpy()
    assert not np.array_equal(before, after)
    # The gradient came from the real labels: it equals what MXNet computes unpatched.
    mxcompat.unpatch()
    ref = mx.mod.Module(_softmax_symbol())
    ref.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    ref.set_params({"fc_weight": mx.nd.array(before), "fc_bias": mx.nd.zeros(3)}, {})
    ref.init_optimizer(optimizer_params=(("learning_rate", 0.5),))
    ref.forward_backward(batch)
    ref.update()
    np.testing.assert_array_equal(ref.get_params()[0]["fc_weight"].asnumpy(), after)


def test_extra_label_shape_beside_a_real_label_is_dropped():
    sym = _softmax_symbol()
    mod = mx.mod.Module(sym)
    with pytest.warns(mxcompat.MXCompatWarning, match="'weight_label'"):
        mod.bind(data_shapes=[("data", (4, 5))],
                 label_shapes=[("softmax_label", (4,)), ("weight_label", (4,))])
    assert mod.label_names == ["softmax_label"]
    assert [d.name for d in mod.label_shapes] == ["softmax_label"]


def test_missing_data_name_fails_exactly_as_mxnet(unpatched):
    sym = _softmax_symbol()
    with pytest.raises(ValueError) as vanilla:
        mx.mod.Module(sym, data_names=("image",))
    mxcompat.patch()
    with pytest.raises(ValueError) as ours:
        mx.mod.Module(sym, data_names=("image",))
    assert str(ours.value) == str(vanilla.value)
    assert "image" in str(ours.value)


def test_warning_is_issued_once_for_many_modules(tmpdir):
    prefix, x, _ = _exported_net(tmpdir)
    it = mx.io.NDArrayIter(x, mx.nd.zeros(8), batch_size=4)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(3):
            mod = mx.mod.Module.load(prefix, 0)
            mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    assert len(_mxcompat_warnings(record)) == 1
    assert not [w for w in record if "list_arguments" in str(w.message)]


def _bucket_sym_gen(key):
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    return mx.sym.MakeLoss(mx.sym.sum(fc * fc)), ("data",), ("softmax_label",)


def test_bucketing_module_binds_and_switches_buckets():
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mod = mx.mod.BucketingModule(_bucket_sym_gen, default_bucket_key=5)
        mod.bind(data_shapes=[("data", (2, 5))], label_shapes=[("softmax_label", (2,))])
        mod.init_params(mx.init.One())
        mod.init_optimizer()
        batch = mx.io.DataBatch([mx.nd.ones((2, 5))], [mx.nd.zeros(2)], bucket_key=5,
                                provide_data=[("data", (2, 5))],
                                provide_label=[("softmax_label", (2,))])
        mod.forward_backward(batch)
        mod.update()
    assert len(_mxcompat_warnings(record)) == 1
    assert not [w for w in record if "list_arguments" in str(w.message)]
    # 5 inputs of 1, 4 hidden of weight 1: output 5 each, loss sum(25*4*2)
    np.testing.assert_array_equal(mod.get_outputs()[0].asnumpy(), np.float32(200))


def test_bucketing_module_unpatched_raises_keyerror(unpatched):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod = mx.mod.BucketingModule(_bucket_sym_gen, default_bucket_key=5)
        with pytest.raises(KeyError):
            mod.bind(data_shapes=[("data", (2, 5))], label_shapes=[("softmax_label", (2,))])


def test_sequential_module(tmpdir):
    prefix, x, expected = _exported_net(tmpdir)
    sym, args, auxs = mx.model.load_checkpoint(prefix, 0)
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(sym), take_labels=True)
    it = mx.io.NDArrayIter(x, mx.nd.zeros(8), batch_size=4)
    seq.bind(data_shapes=it.provide_data, label_shapes=it.provide_label, for_training=False)
    seq.set_params(args, auxs)
    np.testing.assert_allclose(seq.predict(it).asnumpy(), expected, atol=1e-6, rtol=0)
