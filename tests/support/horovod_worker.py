"""One Horovod worker of tests/test_horovod.py, started by ``horovodrun -np 2 --gloo``.

``python horovod_worker.py MODE OUTDIR SCENARIO...``: every scenario trains the same small
conv + BatchNorm + dense net for a few steps under Horovod (each worker its own data, SGD with
momentum and weight decay) and writes ``OUTDIR/SCENARIO-RANK.npz`` with every parameter's
value at the start (after the broadcast) and at the end.  MODE ``plain`` runs without
mxcompat's update-path patches (without mxcompat at all where MXNet imports without it),
``mxcompat`` with all of them; ``OUTDIR/MODE-RANK.json`` records which were applied.
"""

import json
import os
import sys

import numpy as np

mode, outdir, scenarios = sys.argv[1], sys.argv[2], sys.argv[3:]
if mode == "mxcompat":
    import mxcompat  # noqa: F401  (already imported by the bootstrap of `mxcompat run`)

import horovod.mxnet as hvd  # noqa: E402
import mxnet as mx  # noqa: E402
from mxnet import autograd, gluon  # noqa: E402

hvd.init()
rank = hvd.rank()
BATCH = 4
DATA = (BATCH, 2, 8, 8)
OUT = 3
SGD = {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}
STEPS = 3
# What each mxcompat scenario freezes (Gluon names carry the block's "net_" prefix): a
# convolution weight and a BatchNorm's gamma, beta and running statistics.
FROZEN = ("conv0_weight", "bn0_*")
# The same parameters held by MXNet's own means, for the plain reference runs.
FIXED = ("conv0_weight", "bn0_gamma", "bn0_beta")


def batches():
    rng = np.random.RandomState(10 + rank)  # each worker its own data, the same in every run
    for _ in range(STEPS):
        yield (
            mx.nd.array(rng.uniform(-1, 1, DATA)),
            mx.nd.array(rng.uniform(-1, 1, (BATCH, OUT))),
        )


def gluon_net():
    net = gluon.nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(
            gluon.nn.Conv2D(4, 3, in_channels=2, prefix="conv0_"),
            gluon.nn.BatchNorm(in_channels=4, prefix="bn0_"),
            gluon.nn.Activation("relu"),
            gluon.nn.Flatten(),
            gluon.nn.Dense(OUT, in_units=4 * 6 * 6, prefix="fc0_"),
        )
    return net


def symbol():
    data = mx.sym.Variable("data")
    x = mx.sym.Convolution(data, num_filter=4, kernel=(3, 3), name="conv0")
    # Gluon's BatchNorm defaults, so both APIs compute the same network.
    x = mx.sym.BatchNorm(x, fix_gamma=False, eps=1e-5, momentum=0.9, name="bn0")
    x = mx.sym.Flatten(mx.sym.Activation(x, act_type="relu"))
    x = mx.sym.FullyConnected(x, num_hidden=OUT, name="fc0")
    return mx.sym.LinearRegressionOutput(x, name="lro")


def gluon_loss(out, label):
    # LinearRegressionOutput's gradient, (out - label) / outputs per sample, as a Gluon loss.
    return ((out - label) ** 2).sum() / (2 * OUT)


def block_params(net):
    return {
        name[len("net_") :] if name.startswith("net_") else name: p.data().asnumpy().copy()
        for name, p in net.collect_params().items()
    }


def train_gluon(net):
    trainer = hvd.DistributedTrainer(net.collect_params(), "sgd", dict(SGD))
    for x, y in batches():
        with autograd.record():
            loss = gluon_loss(net(x), y)
        loss.backward()
        trainer.step(BATCH)


def run_gluon(scenario):
    net = gluon_net()
    mx.random.seed(1 + rank)  # unlike each other until the broadcast
    net.initialize(mx.init.Uniform(0.5))
    if scenario == "gluon-null":
        for name in FIXED:
            net.collect_params()["net_" + name].grad_req = "null"
    if scenario == "gluon-frozen":
        mxcompat.freeze(*("net_" + p for p in FROZEN))
    hvd.broadcast_parameters(net.collect_params(), root_rank=0)
    start = block_params(net)
    train_gluon(net)
    return start, block_params(net)


def module_params(mod):
    arg, aux = mod.get_params()
    return {n: a.asnumpy().copy() for n, a in list(arg.items()) + list(aux.items())}


def new_optimizer():
    opt = mx.optimizer.SGD(rescale_grad=1.0 / BATCH, **SGD)
    return hvd.DistributedOptimizer(opt)


def broadcast_module(mod):
    # Horovod's way for a Module: broadcast copies of the parameters, then set them.
    arg, aux = mod.get_params()
    hvd.broadcast_parameters(arg, root_rank=0)
    hvd.broadcast_parameters(aux, root_rank=0, prefix="aux_")
    mod.set_params(arg, aux)


def train_module(mod):
    for x, y in batches():
        mod.forward(mx.io.DataBatch([x], [y]), is_train=True)
        mod.backward()
        mod.update()
        # Each step to its end: without this, plain MXNet 1.9.1's Module under
        # DistributedOptimizer ends with BatchNorm moving statistics that differ from run to
        # run (its weights do not), so no run could be compared with another bit for bit.
        mx.nd.waitall()


def bound_module(fixed=None):
    mod = mx.mod.Module(
        symbol(), data_names=("data",), label_names=("lro_label",), fixed_param_names=fixed
    )
    mod.bind(data_shapes=[("data", DATA)], label_shapes=[("lro_label", (BATCH, OUT))])
    mx.random.seed(1 + rank)
    mod.init_params(mx.init.Uniform(0.5))
    return mod


def run_module(scenario):
    if scenario == "module-frozen-before-bind":
        mxcompat.freeze(*FROZEN)
    mod = bound_module(list(FIXED) if scenario == "module-fixed" else None)
    broadcast_module(mod)
    mod.init_optimizer(kvstore=None, optimizer=new_optimizer())
    if scenario == "module-frozen-after-bind":
        mxcompat.freeze(*FROZEN)
    start = module_params(mod)
    train_module(mod)
    return start, module_params(mod)


def run_to_gluon():
    # A Module converted to Gluon, broadcast and trained by DistributedTrainer.
    net = bound_module().to_gluon()
    hvd.broadcast_parameters(net.collect_params(), root_rank=0)
    start = block_params(net)
    train_gluon(net)
    return start, block_params(net)


def run_to_module():
    # A Gluon block converted to a Module, broadcast and trained by DistributedOptimizer.
    net = gluon_net()
    mx.random.seed(1 + rank)
    net.initialize(mx.init.Uniform(0.5))
    mod = net.to_module(
        loss="linear",
        label_names=("lro_label",),
        data_shapes=[("data", DATA)],
        label_shapes=[("lro_label", (BATCH, OUT))],
    )
    broadcast_module(mod)
    mod.init_optimizer(kvstore=None, optimizer=new_optimizer())
    start = module_params(mod)
    train_module(mod)
    strip = lambda d: {k[len("net_") :] if k.startswith("net_") else k: v for k, v in d.items()}  # noqa: E731
    return strip(start), strip(module_params(mod))


for scenario in scenarios:
    if scenario == "to-gluon":
        start, end = run_to_gluon()
    elif scenario == "to-module":
        start, end = run_to_module()
    elif scenario.startswith("gluon"):
        start, end = run_gluon(scenario)
    else:
        start, end = run_module(scenario)
    if mode == "mxcompat":
        mxcompat.unfreeze()
    np.savez(
        os.path.join(outdir, "%s-%d.npz" % (scenario, rank)),
        **dict(
            [("start:" + n, v) for n, v in start.items()]
            + [("end:" + n, v) for n, v in end.items()]
        ),
    )

applied = list(sys.modules["mxcompat"].patched()) if "mxcompat" in sys.modules else None
with open(os.path.join(outdir, "%s-%d.json" % (mode, rank)), "w") as f:
    json.dump({"size": hvd.size(), "patched": applied, "mxnet": mx.__version__}, f)
hvd.shutdown()
