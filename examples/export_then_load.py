"""The classic trap, unmodified: a Gluon export loaded as a Module, bound with the iterator's
labels.  Plain MXNet 1.x dies in bind() with KeyError: 'softmax_label'; run it with
`mxcompat run examples/export_then_load.py` (or add `import mxcompat` at the top) and it works.
"""

import os
import tempfile

import mxnet as mx
from mxnet import gluon

net = gluon.nn.HybridSequential()
with net.name_scope():
    net.add(gluon.nn.Conv2D(8, 3, activation="relu"), gluon.nn.BatchNorm(), gluon.nn.Dense(10))
net.initialize()
net.hybridize()
x = mx.nd.random.uniform(shape=(8, 3, 16, 16))
expected = net(x)

prefix = os.path.join(tempfile.mkdtemp(), "net")
net.export(prefix)

# The batch Gluon ran: oneDNN picks kernels by shape, so another batch size can differ in the
# last bit on some CPUs (AVX2).
it = mx.io.NDArrayIter(x, mx.nd.zeros(8), batch_size=8)
mod = mx.mod.Module.load(prefix, 0)  # label_names defaults to ('softmax_label',)
mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
out = mod.predict(it)
print("max |Module - Gluon| =", float((out - expected).abs().max().asscalar()))
