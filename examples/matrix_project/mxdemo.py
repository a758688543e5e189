"""Legacy MXNet code, as found: a Gluon net served through the Module API, and a helper
written against mx.np (MXNet 1.6+)."""

import os
import tempfile

import mxnet as mx
from mxnet import gluon


def serve_as_module(net, x):
    """Export a hybridized Gluon net and predict ``x`` with ``Module.load`` -- the classic
    trap: bind with the iterator's labels (KeyError: 'softmax_label' on plain MXNet)."""
    prefix = os.path.join(tempfile.mkdtemp(), "net")
    net.export(prefix)
    it = mx.io.NDArrayIter(x, mx.nd.zeros(x.shape[0]), batch_size=x.shape[0])
    mod = mx.mod.Module.load(prefix, 0)
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    return mod.predict(it)


def tiny_net():
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(4, activation="relu"), gluon.nn.Dense(2))
    net.initialize(mx.init.Constant(0.1))
    net.hybridize()
    return net


def mean_of_squares(values):
    """Uses mx.np, which MXNet added in 1.6."""
    return float(mx.np.mean(mx.np.array(values) ** 2))
