"""Label names of a symbol that takes no label are dropped at construction, bind and reshape;
a label name a label-taking symbol does not have is an error."""

import os
import warnings

import mxnet as mx
import numpy as np
import pytest
from mxnet import gluon

import mxcompat
import mxcompat.patches.labels


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


def _not_deprecation(record):
    # MXNet 1.6+ on NumPy 1.2x emits DeprecationWarnings from its own code on first use.
    return [w for w in record if not issubclass(w.category, DeprecationWarning)]


SEED_WARNING = (
    "label name(s) 'softmax_label' are not arguments of the symbol, and the symbol takes no "
    "label (none of its arguments feeds the label of a loss operator such as SoftmaxOutput, "
    "or is named *label); mxcompat drops them from label_names and label_shapes"
)


def test_seed_snippet_predicts_like_gluon(tmpdir):
    prefix, x, expected = _exported_net(tmpdir)
    it = mx.io.NDArrayIter(x, mx.nd.zeros(8), batch_size=4)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mod = mx.mod.Module.load(prefix, 0)
        mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
        out = mod.predict(it)
    ours = _mxcompat_warnings(record)
    assert [str(w.message) for w in ours] == [SEED_WARNING]
    # The warning points at the user's line, not into mxnet or mxcompat.
    assert ours[0].filename == __file__
    # MXNet's own "not found in symbol.list_arguments()" and label-mismatch warnings are gone.
    assert not [
        w
        for w in record
        if "list_arguments" in str(w.message) or "label_shapes don't match" in str(w.message)
    ]
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
    # No warning at all: neither mxcompat's nor MXNet's.
    assert _not_deprecation(record) == []
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


def test_extra_label_shape_beside_a_real_label_is_an_error():
    # Not dropped: the symbol takes a label, so a label it lacks is the caller's mistake
    # (MXNet: KeyError: 'weight_label' from inside the executor group).
    mod = mx.mod.Module(_softmax_symbol())
    with pytest.raises(ValueError) as err:
        mod.bind(
            data_shapes=[("data", (4, 5))],
            label_shapes=[("softmax_label", (4,)), ("weight_label", (4,))],
        )
    assert str(err.value) == (
        "mxcompat: Module.bind(label_shapes=...): 'weight_label' is not an input of the "
        "symbol, whose label input is 'softmax_label'. Pass label_names=['softmax_label'] and "
        "give the data iterator's label the same name (e.g. NDArrayIter(..., "
        "label_name='softmax_label'))."
    )
    assert not mod.binded


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
        batch = mx.io.DataBatch(
            [mx.nd.ones((2, 5))],
            [mx.nd.zeros(2)],
            bucket_key=5,
            provide_data=[("data", (2, 5))],
            provide_label=[("softmax_label", (2,))],
        )
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


# --- A symbol that takes a label: a label name it does not have is an error ----------------

SOFTMAX_ERROR = (
    "'label' is not an input of the symbol, whose label input is 'softmax_label'. Pass "
    "label_names=['softmax_label'] and give the data iterator's label the same name (e.g. "
    "NDArrayIter(..., label_name='softmax_label'))."
)


def _xy(n=12):
    x = mx.nd.array(np.random.RandomState(0).rand(n, 5))
    y = mx.nd.array(np.arange(n) % 3)
    return x, y


def _checkpoint(tmpdir, symbol, name="m"):
    """``symbol`` (FullyConnected 'fc' of 5 -> 3 under a head) saved with fixed weights."""
    prefix = os.path.join(str(tmpdir), name)
    weight = mx.nd.array(np.random.RandomState(3).rand(3, 5))
    mx.model.save_checkpoint(
        prefix, 0, symbol, {"fc_weight": weight, "fc_bias": mx.nd.zeros(3)}, {}
    )
    return prefix


def _fc_weight_grad(mod, x, labels):
    mod.forward_backward(mx.io.DataBatch([x], [mx.nd.array(labels)]))
    return mod._exec_group.execs[0].grad_dict["fc_weight"].asnumpy()


def test_wrong_label_name_on_a_softmax_symbol_is_an_error_at_construction():
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with pytest.raises(ValueError) as err:
            mx.mod.Module(_softmax_symbol(), label_names=("label",))
    assert str(err.value) == "mxcompat: Module(..., label_names=('label',)): " + SOFTMAX_ERROR
    # Raised before MXNet's own "not found in symbol.list_arguments()" warning, and nothing
    # was dropped with a warning.
    assert _not_deprecation(record) == []


def test_wrong_label_name_on_load_of_a_softmax_checkpoint(tmpdir):
    prefix = _checkpoint(tmpdir, _softmax_symbol())
    with pytest.raises(ValueError) as err:
        mx.mod.Module.load(prefix, 0, label_names=["label"])
    assert str(err.value) == "mxcompat: Module(..., label_names=['label']): " + SOFTMAX_ERROR


def test_wrong_label_name_from_the_iterator_is_an_error_at_bind():
    x, y = _xy()
    it = mx.io.NDArrayIter(x, y, batch_size=4, label_name="label")
    mod = mx.mod.Module(_softmax_symbol())
    with pytest.raises(ValueError) as err:
        mod.fit(it, num_epoch=1)  # fit binds with it.provide_label
    assert str(err.value) == "mxcompat: Module.bind(label_shapes=...): " + SOFTMAX_ERROR
    assert not mod.binded


def test_wrong_label_name_in_a_batch_of_another_size_is_an_error_at_reshape():
    # Module.forward reshapes with the batch's provide_label when the batch shape changes.
    x, y = _xy()
    mod = mx.mod.Module(_softmax_symbol())
    mod.bind(data_shapes=[("data", (4, 5))], label_shapes=[("softmax_label", (4,))])
    mod.init_params(mx.init.Xavier())
    batch = mx.io.DataBatch(
        [x[:2]], [y[:2]], provide_data=[("data", (2, 5))], provide_label=[("label", (2,))]
    )
    with pytest.raises(ValueError) as err:
        mod.forward(batch)
    assert str(err.value) == "mxcompat: Module.reshape(label_shapes=...): " + SOFTMAX_ERROR


def test_bare_string_label_name_on_a_softmax_symbol():
    with pytest.raises(ValueError) as err:
        mx.mod.Module(_softmax_symbol(), label_names="label")
    assert str(err.value) == "mxcompat: Module(..., label_names='label'): " + SOFTMAX_ERROR
    # Without bare_names MXNet reads the string as its characters; mxcompat leaves that alone.
    mxcompat.unpatch("bare_names")
    with pytest.warns(UserWarning, match=r"label_names=\['l', 'a', 'b', 'e', 'l'\]"):
        mod = mx.mod.Module(_softmax_symbol(), label_names="label")
    assert mod.label_names == ["l", "a", "b", "e", "l"]


def test_unpatched_mxnet_wrong_label_warns_then_fails_late_or_trains_on_a_constant(
    tmpdir, unpatched
):
    """The premise of the error: MXNet only warns, and the label input it was not told
    about becomes a parameter."""
    sym = _softmax_symbol()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mod = mx.mod.Module(sym, label_names=("label",))
    assert [str(w.message) for w in _not_deprecation(record)] == [
        "\033[91mYou created Module with Module(..., label_names=['label']) but input with "
        "name 'label' is not found in symbol.list_arguments(). Did you mean one of:\n\tdata\n"
        "\tsoftmax_label\033[0m"
    ]
    assert mod._param_names == ["fc_weight", "fc_bias", "softmax_label"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(KeyError) as err:
            mod.bind(data_shapes=[("data", (4, 5))], label_shapes=[("label", (4,))])
        assert err.value.args == ("label",)
        # Bound without labels, init_params fails on the label ...
        mod = mx.mod.Module(sym, label_names=("label",))
        mod.bind(data_shapes=[("data", (4, 5))])
    with pytest.raises(ValueError) as err:
        mod.init_params()
    assert str(err.value).startswith("Unknown initialization pattern for softmax_label.")
    # ... and with loaded parameters it trains against a constant: the batch's labels do not
    # change the gradient.  (Control: with the right name they do.)
    prefix = _checkpoint(tmpdir, sym)
    x, _ = _xy(4)
    grads = {}
    for names, label_shapes in (
        (("label",), None),
        (("softmax_label",), [("softmax_label", (4,))]),
    ):
        for labels in ([1, 2, 0, 1], [0, 0, 0, 0]):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mod = mx.mod.Module.load(prefix, 0, label_names=names)
                mod.bind(data_shapes=[("data", (4, 5))], label_shapes=label_shapes)
            grads[names[0], labels[0]] = _fc_weight_grad(mod, x, labels)
    np.testing.assert_array_equal(grads["label", 1], grads["label", 0])
    assert not np.array_equal(grads["softmax_label", 1], grads["softmax_label", 0])


def test_load_of_a_softmax_checkpoint_keeps_its_label(tmpdir):
    prefix = _checkpoint(tmpdir, _softmax_symbol())
    x, y = _xy()
    it = mx.io.NDArrayIter(x, y, batch_size=4)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mod = mx.mod.Module.load(prefix, 0)
        mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    assert _not_deprecation(record) == []
    assert mod.label_names == ["softmax_label"]
    assert [d.name for d in mod.label_shapes] == ["softmax_label"]
    # The batch's labels reach the loss.
    assert not np.array_equal(
        _fc_weight_grad(mod, x[:4], [1, 2, 0, 1]), _fc_weight_grad(mod, x[:4], [0, 0, 0, 0])
    )


def test_default_label_on_a_regression_checkpoint_is_left_to_mxnet(tmpdir):
    # MXNet's default label name on a symbol whose label is called otherwise: MXNet warns and
    # binding for inference works, so mxcompat changes nothing there ...
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    prefix = _checkpoint(tmpdir, mx.sym.LinearRegressionOutput(fc, name="lro"))
    x, _ = _xy(4)
    outputs = []
    for labels_patched in (False, True):
        (mxcompat.patch if labels_patched else mxcompat.unpatch)("labels")
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            mod = mx.mod.Module.load(prefix, 0)
        assert [str(w.message) for w in _not_deprecation(record)] == [
            "\033[91mYou created Module with Module(..., label_names=['softmax_label']) but "
            "input with name 'softmax_label' is not found in symbol.list_arguments(). Did you "
            "mean one of:\n\tdata\n\tlro_label\033[0m"
        ]
        assert mod.label_names == ["softmax_label"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mod.bind(data_shapes=[("data", (4, 5))], for_training=False)
        outputs.append(mod.predict(mx.io.NDArrayIter(x, batch_size=4)).asnumpy())
    np.testing.assert_array_equal(outputs[1], outputs[0])
    # ... but binding it with a label of the default name is an error naming the real one
    # (MXNet: KeyError: 'softmax_label').
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod = mx.mod.Module.load(prefix, 0)
    with pytest.raises(ValueError) as err:
        mod.bind(data_shapes=[("data", (4, 5))], label_shapes=[("softmax_label", (4, 3))])
    assert str(err.value) == (
        "mxcompat: Module.bind(label_shapes=...): 'softmax_label' is not an input of the "
        "symbol, whose label input is 'lro_label'. Pass label_names=['lro_label'] and give "
        "the data iterator's label the same name (e.g. NDArrayIter(..., "
        "label_name='lro_label'))."
    )


def _two_head_symbol():
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    return mx.sym.Group(
        [mx.sym.SoftmaxOutput(fc, name="cls"), mx.sym.LinearRegressionOutput(fc, name="reg")]
    )


TWO_HEADS = (
    "whose label inputs are 'cls_label', 'reg_label'. Pass label_names=['cls_label', "
    "'reg_label'] and give the data iterator's labels the same names (e.g. "
    "NDArrayIter(data, label={'cls_label': ..., 'reg_label': ...}))."
)


def test_symbol_with_two_label_inputs():
    sym = _two_head_symbol()
    with pytest.raises(ValueError) as err:
        mx.mod.Module(sym, label_names=("softmax_label", "reg_label"))
    assert str(err.value) == (
        "mxcompat: Module(..., label_names=('softmax_label', 'reg_label')): 'softmax_label' is "
        "not an input of the symbol, " + TWO_HEADS
    )
    with pytest.raises(ValueError) as err:
        mx.mod.Module(sym, label_names=("cls_label", "reg_label")).bind(
            data_shapes=[("data", (4, 5))], label_shapes=[("cls", (4,)), ("reg", (4, 3))]
        )
    assert str(err.value) == (
        "mxcompat: Module.bind(label_shapes=...): 'cls', 'reg' are not inputs of the symbol, "
        + TWO_HEADS
    )
    # Both labels named right: no warning, and both reach their loss.
    x, y = _xy()
    it = mx.io.NDArrayIter(x, {"cls_label": y, "reg_label": mx.nd.zeros((12, 3))}, batch_size=4)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mod = mx.mod.Module(sym, label_names=("cls_label", "reg_label"))
        mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    assert _not_deprecation(record) == []
    assert sorted(d.name for d in mod.label_shapes) == ["cls_label", "reg_label"]
    mod.init_params(mx.init.Xavier())
    mod.forward(next(iter(it)), is_train=False)
    assert [o.shape for o in mod.get_outputs()] == [(4, 3), (4, 3)]


def test_bucketing_module_wrong_label_is_an_error_at_construction():
    def sym_gen(label_names):
        return lambda key: (_softmax_symbol(), ("data",), label_names)

    with pytest.raises(ValueError) as err:
        mx.mod.BucketingModule(sym_gen(("label",)), default_bucket_key=5)
    assert str(err.value) == (
        "mxcompat: sym_gen returned label_names=('label',): 'label' is not an input of the "
        "symbol, whose label input is 'softmax_label'. Return label_names=['softmax_label'] "
        "and give the data iterator's label the same name (e.g. NDArrayIter(..., "
        "label_name='softmax_label'))."
    )
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mod = mx.mod.BucketingModule(sym_gen(("softmax_label",)), default_bucket_key=5)
        mod.bind(data_shapes=[("data", (4, 5))], label_shapes=[("softmax_label", (4,))])
    assert _not_deprecation(record) == []
    assert mod.label_shapes[0].name == "softmax_label"


def test_sequential_module_wrong_label_is_an_error_at_bind():
    body = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    head = mx.sym.SoftmaxOutput(mx.sym.Variable("data"), name="softmax")
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(body, label_names=None))
    seq.add(mx.mod.Module(head), take_labels=True, auto_wiring=True)
    with pytest.raises(ValueError) as err:
        seq.bind(data_shapes=[("data", (4, 5))], label_shapes=[("label", (4,))])
    assert str(err.value) == "mxcompat: Module.bind(label_shapes=...): " + SOFTMAX_ERROR


# --- What "takes a label" means -------------------------------------------------------------


def test_label_inputs_are_read_from_the_graph():
    label_inputs = mxcompat.patches.labels.label_inputs
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    # A loss operator's label, whatever its name ...
    assert label_inputs(mx.sym.SoftmaxOutput(fc, name="softmax"), ("data",)) == ["softmax_label"]
    assert label_inputs(mx.sym.SoftmaxOutput(fc, label=mx.sym.Variable("y")), ("data",)) == ["y"]
    assert label_inputs(mx.sym.SVMOutput(fc, label=mx.sym.Variable("y")), ("data",)) == ["y"]
    assert label_inputs(
        mx.sym.contrib.ctc_loss(
            data, mx.sym.Variable("y"), label_lengths=mx.sym.Variable("n"), use_label_lengths=True
        ),
        ("data",),
    ) == ["y", "n"]
    # ... or an argument named *label: reshaped before the loss, or read by plain operators.
    reshaped = mx.sym.reshape(mx.sym.Variable("softmax_label"), shape=(-1,))
    assert label_inputs(mx.sym.SoftmaxOutput(fc, label=reshaped), ("data",)) == ["softmax_label"]
    assert label_inputs(
        mx.sym.MakeLoss(mx.sym.square(fc - mx.sym.Variable("label"))), ("data",)
    ) == ["label"]
    # No label: an inference graph, and an autoencoder whose label is its data.
    assert label_inputs(fc, ("data",)) == []
    assert label_inputs(mx.sym.LinearRegressionOutput(fc, label=data), ("data",)) == []


def _registered_label_inputs():
    """{operator: positions of its inputs named *label*} from MXNet's operator registry (what
    the mx.sym functions are generated from), for every operator this release registers."""
    import ctypes

    from mxnet.base import _LIB, c_str, check_call, py_str

    size, names = ctypes.c_uint(), ctypes.POINTER(ctypes.c_char_p)()
    check_call(_LIB.MXListAllOpNames(ctypes.byref(size), ctypes.byref(names)))
    found = {}
    for op in [py_str(names[i]) for i in range(size.value)]:
        handle = ctypes.c_void_p()
        check_call(_LIB.NNGetOpHandle(c_str(op), ctypes.byref(handle)))
        real, desc, key_var, ret = (ctypes.c_char_p() for _ in range(4))
        count = ctypes.c_uint()
        arg_names, arg_types, arg_descs = (ctypes.POINTER(ctypes.c_char_p)() for _ in range(3))
        check_call(
            _LIB.MXSymbolGetAtomicSymbolInfo(
                handle,
                ctypes.byref(real),
                ctypes.byref(desc),
                ctypes.byref(count),
                ctypes.byref(arg_names),
                ctypes.byref(arg_types),
                ctypes.byref(arg_descs),
                ctypes.byref(key_var),
                ctypes.byref(ret),
            )
        )
        inputs = [
            py_str(arg_names[i])
            for i in range(count.value)
            if py_str(arg_types[i]).startswith("NDArray-or-Symbol")
        ]
        positions = tuple(i for i, name in enumerate(inputs) if "label" in name)
        if positions:
            found[op] = positions
    return found


def test_label_operators_match_the_registry():
    found = _registered_label_inputs()
    assert "SoftmaxOutput" in found
    # Every operator this MXNet registers with a label input is known, at the right
    # positions (CTC loss with both optional length inputs present) ...
    every_input = {"use_data_lengths": "True", "use_label_lengths": "True"}
    assert {op: mxcompat.patches.labels.label_positions(op, every_input) for op in found} == found
    # ... and the list names no operator that takes no label.  1.3.1's deprecated "Softmax"
    # declares no label input, yet creates one (checked on a symbol instead).
    declared_without = [
        op
        for op in mxcompat.patches.labels._LABEL_OPS
        if op not in found and op in _registered_ops()
    ]
    assert declared_without in ([], ["Softmax"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = mx.sym.Softmax(mx.sym.Variable("data"), label=mx.sym.Variable("y"))
    assert mxcompat.patches.labels.label_inputs(old, ("data",)) == ["y"]


def _registered_ops():
    import ctypes

    from mxnet.base import _LIB, check_call, py_str

    size, names = ctypes.c_uint(), ctypes.POINTER(ctypes.c_char_p)()
    check_call(_LIB.MXListAllOpNames(ctypes.byref(size), ctypes.byref(names)))
    return set(py_str(names[i]) for i in range(size.value))
