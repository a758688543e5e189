"""What the sections share: the models they train or convert (model-zoo ResNets as a Module or
a Gluon net), a Module's training step, and the patch/registry state each side runs in."""

import os
import time

import mxnet as mx

import mxcompat

# The clock of the "call only" rows (update() and step() alone): the calling thread's CPU
# time.  Those calls only queue work, and MXNet's engine threads start on it at once: on two
# cores the wall time of a call is mostly its wait for a core (measured on MXNet 1.9.1: 350-430
# us of wall time for 40-70 us of CPU, the same frozen update() call), which lands in whichever
# side it hits.  The wrappers' cost is CPU in this thread, all of it counted.
CALL_CLOCK = time.thread_time

# How many more repetitions a "call only" row takes than a step (its calls are short).
CALL_REPS = 5

# A pattern that matches no parameter of the benchmarked models: the registry is in use
# (non-empty), as in a program that froze something in another model.
UNRELATED_PATTERN = "othernet_dense0_weight"


def warm_registry(names, module=None, trainer=None):
    """Refill what the freeze registry caches per registry state (untimed): its match
    cache for ``names`` and, for a Module or a Trainer, what its first update after a
    registry change does once (pattern check, thaw check, "nothing to mask" for a Module
    bound frozen).  The interleaving changes the registry between sides, which empties them;
    a training loop sets the registry once and then always hits them."""
    from mxcompat.freeze import registry
    from mxcompat.freeze.module import warm
    from mxcompat.freeze.trainer import trainer_matches

    registry.matches(tuple(names))
    if module is not None:
        warm(module)
        # frozen_statistics' per-executor list of frozen aux states, found at the first
        # backward after a registry change.
        from mxcompat.freeze import frozen_statistics

        for executor in module._exec_group.execs:
            frozen_statistics._frozen_aux(executor, registry.state.version)
    if trainer is not None:
        trainer_matches(trainer, trainer._params)
    # Settle: MXNet work pushed right after milliseconds of busy Python (a side's patch()
    # or its freeze of every backbone name) waits ~5 ms inside MXNet's own push, for
    # unpatched and native fixed_param_names sides alike (measured with a plain Python
    # loop instead): without this pause the side with the busier setup looks slower.
    time.sleep(0.02)


def patch_state(name):
    """Sides named 'unpatched…' run on vanilla MXNet; '…+pattern' with the unrelated
    pattern registered; every other side patched with an empty registry."""
    if name.startswith("unpatched"):
        mxcompat.unpatch()
    else:
        mxcompat.patch()
    if name.endswith("+pattern"):
        mxcompat.freeze(UNRELATED_PATTERN)
    else:
        mxcompat.unfreeze()


def config_label(name, size, batch):
    return "%s %dx%d b%d" % (name.replace("_v1", ""), size, size, batch)


# --- Module (symbolic) ------------------------------------------------------------------------


def resnet_symbol(name):
    from mxnet.gluon.model_zoo import vision

    net = getattr(vision, name)(classes=10)
    return mx.sym.SoftmaxOutput(net(mx.sym.var("data")), name="softmax")


def training_module(name, size, batch, symbol=None, **module_kwargs):
    mod = mx.mod.Module(symbol if symbol is not None else resnet_symbol(name), **module_kwargs)
    mod.bind(
        data_shapes=[("data", (batch, 3, size, size))], label_shapes=[("softmax_label", (batch,))]
    )
    mx.random.seed(0)
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(
        optimizer="sgd", optimizer_params={"learning_rate": 0.01, "momentum": 0.9, "wd": 1e-4}
    )
    data = mx.io.DataBatch(
        [mx.nd.random.uniform(shape=(batch, 3, size, size))], [mx.nd.zeros(batch)]
    )
    return mod, data


def module_step(mod, data):
    def step():
        mod.forward_backward(data)
        mod.update()
        mx.nd.waitall()

    return step


# --- Gluon ------------------------------------------------------------------------------------


def gluon_net(name, size):
    """An initialised, hybridized model-zoo net that has run one forward pass."""
    from mxnet.gluon.model_zoo import vision

    net = getattr(vision, name)(classes=10)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    net(mx.nd.zeros((1, 3, size, size)))
    mx.nd.waitall()
    return net


def inference_module(net, workdir):
    """An unbound Module holding ``net``'s parameters, as ``Module.load`` gives one."""
    prefix = os.path.join(workdir, "source")
    net.export(prefix)
    return mx.mod.Module.load(prefix, 0, label_names=None)


def param_data(net):
    return [p.data() for p in net.collect_params().values()]
