"""One worker of the ``horovod`` benchmark section (benchmarks/horovod_step.py), started by
``horovodrun -np 2 --gloo``: ``python horovod_step_worker.py OUT.json MODEL SIDE BATCH REPS
REPOSITORY``.

Times a Horovod training step (forward, backward, allreduce of the gradients, update,
waitall) side by side, every side in this one process, interleaved: both workers run the same
sequence, so each allreduce pairs the same side on the two.  Rank 0 writes the times.

- ``module`` / ``module patched``: Module + ``hvd.DistributedOptimizer``, MXNet unpatched vs
  patched with an empty freeze registry (one module, the patches toggled between steps);
- ``module fixed_param_names`` / ``module registry``: the backbone (all but the classifier)
  fixed by MXNet's ``fixed_param_names`` (unpatched) vs frozen by ``mxcompat.freeze`` before
  bind (patched), two modules of the same network;
- ``gluon`` / ``gluon patched``: a hybridized Gluon net + ``hvd.DistributedTrainer``.
"""

import json
import sys
import warnings

warnings.simplefilter("ignore")  # MXNet's and Horovod's own (rescale_grad, deprecations)

import horovod.mxnet as hvd  # noqa: E402
import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from mxnet import autograd, gluon  # noqa: E402
from mxnet.gluon.model_zoo import vision  # noqa: E402

import mxcompat  # noqa: E402  (first: the patched sides need it; unpatch() gives plain MXNet)

sys.path.insert(0, sys.argv[6])  # the repository: the benchmarks' shared harness and models
from benchmarks._harness import interleave  # noqa: E402
from benchmarks.freezing import head_params  # noqa: E402
from benchmarks.models import resnet_symbol, warm_registry  # noqa: E402

out, model, size, batch, reps = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
hvd.init()
rank = hvd.rank()
SGD = {"learning_rate": 0.01, "momentum": 0.9, "wd": 1e-4}
rng = np.random.RandomState(rank)
x = mx.nd.array(rng.uniform(size=(batch, 3, size, size)))
y = mx.nd.array(rng.randint(0, 10, batch))


def module(symbol, fixed=None):
    # Horovod pairs a broadcast by its name, the same on every worker: the symbol's prefix.
    prefix = symbol.list_arguments()[1].split("_")[0]
    mod = mx.mod.Module(symbol, fixed_param_names=fixed)
    mod.bind(data_shapes=[("data", x.shape)], label_shapes=[("softmax_label", y.shape)])
    mx.random.seed(0)
    mod.init_params(mx.init.Xavier())
    arg, aux = mod.get_params()
    hvd.broadcast_parameters(arg, root_rank=0, prefix=prefix + "arg")
    hvd.broadcast_parameters(aux, root_rank=0, prefix=prefix + "aux")
    mod.set_params(arg, aux)
    opt = mx.optimizer.SGD(rescale_grad=1.0 / batch, **SGD)
    mod.init_optimizer(kvstore=None, optimizer=hvd.DistributedOptimizer(opt))
    return mod


def module_step(mod):
    data = mx.io.DataBatch([x], [y])

    def step():
        mod.forward_backward(data)
        mod.update()
        mx.nd.waitall()

    return step


plain = module(resnet_symbol(model))
# The frozen pair: two modules of one network (their own parameter names), the backbone fixed.
native_symbol, registry_symbol = resnet_symbol(model), resnet_symbol(model)


def backbone(symbol):
    skip = set(head_params(symbol)) | {"data", "softmax_label"}
    return [n for n in symbol.list_arguments() if n not in skip]


native = module(native_symbol, fixed=backbone(native_symbol))
frozen_names = backbone(registry_symbol)
mxcompat.freeze(*frozen_names)
registry = module(registry_symbol)
mxcompat.unfreeze()

net = getattr(vision, model)(classes=10)
net.initialize(mx.init.Xavier())
net.hybridize()
net(x)
hvd.broadcast_parameters(net.collect_params(), root_rank=0, prefix="gluon")
trainer = hvd.DistributedTrainer(net.collect_params(), "sgd", dict(SGD), prefix="gluon")
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()


def gluon_step():
    with autograd.record():
        loss = loss_fn(net(x), y)
    loss.backward()
    trainer.step(batch)
    mx.nd.waitall()


def setup(side):
    if side.endswith(("patched", "registry")):
        mxcompat.patch()
    else:
        mxcompat.unpatch()
    if side == "module registry":
        mxcompat.freeze(*frozen_names)
        warm_registry(frozen_names, module=registry)
    else:
        mxcompat.unfreeze()
        warm_registry([], module=plain, trainer=trainer)


sides = {
    "module": module_step(plain),
    "module patched": module_step(plain),
    "module fixed_param_names": module_step(native),
    "module registry": module_step(registry),
    "gluon": gluon_step,
    "gluon patched": gluon_step,
}
times = interleave(sides, reps, setup=setup)
mxcompat.patch()
if rank == 0:
    with open(out, "w") as f:
        json.dump({"size": hvd.size(), "times": times}, f)
hvd.shutdown()
