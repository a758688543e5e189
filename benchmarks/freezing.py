"""Section ``freeze``: the backbone (every parameter but the last FullyConnected's) frozen
through the registry before ``bind`` vs native ``fixed_param_names`` (their own
interleaving, 3x the repetitions, plus the ``update()`` call alone) vs nothing frozen, with
the gradient memory each executor allocated; and frozen after bind (rebound at its next
forward) vs native and vs nothing frozen, its gradient memory, and the rebind itself (the
one-off cost, in its own loop).  Gluon, hybridized and not: a ``Trainer.step`` (forward,
backward, step) with the backbone frozen through the registry, by default and with
``gradients=False``, vs the same net with the backbone's ``grad_req='null'`` set by hand, and
the gradient memory of each."""

import gc
import json
import time
import warnings

import mxnet as mx
import numpy as np

import mxcompat
from mxcompat.freeze import binding

from ._harness import interleave
from .models import (
    CALL_CLOCK,
    CALL_REPS,
    config_label,
    module_step,
    resnet_symbol,
    training_module,
    warm_registry,
)


def head_params(symbol):
    """The parameters of the last FullyConnected layer (the classifier)."""
    nodes = json.loads(symbol.tojson())["nodes"]
    last = [n for n in nodes if n["op"] == "FullyConnected"][-1]
    inputs = [nodes[entry[0]] for entry in last["inputs"]]
    return [n["name"] for n in inputs if n["op"] == "null" and n["name"] != "data"]


def _grad_mb(mod):
    return (
        sum(
            g[0].size * np.dtype(g[0].dtype).itemsize
            for g in mod._exec_group.grad_arrays
            if g[0] is not None
        )
        / 2.0**20
    )


def _rebind_ms(mod, data, backbone, reps):
    """The rebind alone, each way (frozen: gradients dropped; unfrozen: given back), in
    seconds: the engine drained first, the rebind's own final drain included."""
    times = []
    for i in range(2 * max(reps, 3)):
        if i % 2 == 0:
            mxcompat.freeze(*backbone)
        else:
            mxcompat.unfreeze()
        mx.nd.waitall()
        start = time.perf_counter()
        binding.settle(mod)
        times.append(time.perf_counter() - start)
        module_step(mod, data)()
    mxcompat.unfreeze()
    binding.settle(mod)
    return times


def _gluon_grad_mb(net):
    return (
        sum(
            g.size * np.dtype(g.dtype).itemsize
            for p in net.collect_params().values()
            if p._grad is not None
            for g in p.list_grad()
        )
        / 2.0**20
    )


def _gluon_side(name, size, batch, hybridize):
    """A model-zoo net (its own name prefix), its Trainer, its step, and its backbone: the
    parameters with a gradient, but the classifier's (``output``)."""
    from mxnet import autograd, gluon
    from mxnet.gluon.model_zoo import vision

    net = getattr(vision, name)(classes=10)
    mx.random.seed(0)
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    net(mx.nd.zeros((1, 3, size, size)))
    trainer = gluon.Trainer(
        net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9, "wd": 1e-4}
    )
    head = set(net.output.collect_params().keys())
    backbone = [
        p for k, p in net.collect_params().items() if k not in head and p.grad_req != "null"
    ]
    x = mx.nd.random.uniform(shape=(batch, 3, size, size))
    y = mx.nd.zeros(batch)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(batch)
        mx.nd.waitall()

    return net, trainer, backbone, step


def _gluon(table, name, size, batch, reps, hybridize):
    with warnings.catch_warnings():
        # Each side's patterns match nothing in the others' Trainers (one warning each).
        warnings.simplefilter("ignore", mxcompat.MXCompatWarning)
        _gluon_sides(table, name, size, batch, reps, hybridize)


def _gluon_sides(table, name, size, batch, reps, hybridize):
    # Four nets, each its own parameter names: the registry is set once for the run (as in a
    # fine-tuning loop), each side frozen its own way, none toggled between sides.
    sides = {
        k: _gluon_side(name, size, batch, hybridize)
        for k in ("nothing frozen", "registry", "registry, gradients=False", "grad_req='null'")
    }
    mxcompat.freeze(*[p.name for p in sides["registry"][2]])
    mxcompat.freeze(*[p.name for p in sides["registry, gradients=False"][2]], gradients=False)
    for p in sides["grad_req='null'"][2]:
        p.grad_req = "null"
    for _, trainer, _, step in sides.values():
        warm_registry([p.name for p in trainer._params], trainer=trainer)
        step()  # the first step after a freeze computes every gradient, then marks

    def setup(side):
        time.sleep(0.02)  # as warm_registry: let MXNet's queue settle after Python work

    steps = dict((k, v[3]) for k, v in sides.items())
    pair = ("grad_req='null'", "registry, gradients=False")
    close = interleave(dict((k, steps[k]) for k in pair), 3 * reps, setup=setup)
    times = interleave(steps, reps, setup=setup)
    mxcompat.unfreeze()
    label = "%s, %s" % (
        config_label(name, size, batch),
        "hybridized" if hybridize else "imperative",
    )
    table.add(
        "Gluon step %s: freeze(gradients=False) vs grad_req='null' by hand" % label,
        "grad_req='null'",
        close["grad_req='null'"],
        "registry, gradients=False",
        close["registry, gradients=False"],
        "<= 1.05x",
    )
    table.add(
        "Gluon step %s: freeze (default) vs grad_req='null' by hand" % label,
        "grad_req='null'",
        times["grad_req='null'"],
        "registry",
        times["registry"],
    )
    table.add(
        "Gluon step %s: freeze (default) vs nothing frozen" % label,
        "nothing frozen",
        times["nothing frozen"],
        "registry",
        times["registry"],
    )
    table.add(
        "Gluon step %s: freeze(gradients=False) vs nothing frozen" % label,
        "nothing frozen",
        times["nothing frozen"],
        "registry, gradients=False",
        times["registry, gradients=False"],
        "< 1 (faster)",
    )
    table.add(
        "Gluon gradient memory, %s: freeze (any) vs grad_req='null' by hand" % label,
        "grad_req='null'",
        [_gluon_grad_mb(sides["grad_req='null'"][0])],
        "registry, gradients=False",
        [_gluon_grad_mb(sides["registry, gradients=False"][0])],
        unit="MB",
    )


def run(table, configs, reps):
    for name, size, batch in configs:
        for hybridize in (False, True):
            _gluon(table, name, size, batch, reps, hybridize)
            gc.collect()
        symbol = resnet_symbol(name)
        head = head_params(symbol)
        params = [n for n in symbol.list_arguments() if n not in ("data", "softmax_label")]
        backbone = [n for n in params if n not in head]

        none, data = training_module(name, size, batch, symbol=symbol)
        with mxcompat.frozen(*backbone):  # frozen before bind: no gradient buffers
            registry, _ = training_module(name, size, batch, symbol=symbol)
        native, _ = training_module(name, size, batch, symbol=symbol, fixed_param_names=backbone)
        after, _ = training_module(name, size, batch, symbol=symbol)  # frozen once bound
        module_step(after, data)()  # a step with every gradient, as before a fine-tuning freeze
        after_grad_mb = _grad_mb(after)
        rebind_ms = _rebind_ms(after, data, backbone, reps)

        # One data batch for all: same work.
        sides = {
            "nothing frozen": module_step(none, data),
            "registry, before bind": module_step(registry, data),
            "fixed_param_names": module_step(native, data),
            "registry, after bind": module_step(after, data),
        }
        close = ("fixed_param_names", "registry, before bind")
        after_pair = ("fixed_param_names", "registry, after bind")

        def setup(side):
            # The registry holds the backbone exactly while a registry side runs.  Every side
            # registers it first, so each starts after the same Python work (a freeze of
            # every backbone name leaves the CPU's caches as cold for native as for ours).
            mxcompat.freeze(*backbone)
            if not side.startswith("registry"):
                mxcompat.unfreeze()
            # The module frozen after bind is rebound here, untimed, the first time only: its
            # fixed set is the registry's again at each of its turns.
            # Every module's first forward after a registry change compares it with its
            # binding: done here for the other sides too, untimed (a training loop changes
            # the registry once).
            binding.look()
            warm_registry(
                params, {"registry, before bind": registry, "registry, after bind": after}.get(side)
            )

        # Registry vs native differ by microseconds on steps of milliseconds: their own
        # interleaving, with three times the repetitions (cheap: both steps skip the
        # backbone's backward).
        pair = interleave(dict((k, sides[k]) for k in close), 3 * reps, setup=setup)
        after_times = interleave(dict((k, sides[k]) for k in after_pair), 3 * reps, setup=setup)
        times = interleave(sides, reps, setup=setup)

        def drain(side):
            mx.nd.waitall()
            setup(side)

        # update() alone (async): the registry's own per-update cost, without the step's
        # noise, as CPU time (CALL_CLOCK).
        calls = interleave(
            {"fixed_param_names": native.update, "registry, before bind": registry.update},
            CALL_REPS * reps,
            setup=drain,
            clock=CALL_CLOCK,
        )
        mx.nd.waitall()
        mxcompat.unfreeze()
        label = config_label(name, size, batch)
        table.add(
            "Freeze before bind %s: registry vs native" % label,
            "fixed_param_names",
            pair["fixed_param_names"],
            "registry, before bind",
            pair["registry, before bind"],
            "<= 1.03x",
        )
        table.add(
            "Freeze before bind, update() call only, CPU (%s)" % label,
            "fixed_param_names",
            calls["fixed_param_names"],
            "registry, before bind",
            calls["registry, before bind"],
            "<= 1.05x",
        )
        table.add(
            "Freeze before bind %s: registry vs none frozen" % label,
            "nothing frozen",
            times["nothing frozen"],
            "registry, before bind",
            times["registry, before bind"],
            "< 1 (faster)",
        )
        table.add(
            "Freeze after bind (rebound) %s vs native" % label,
            "fixed_param_names",
            after_times["fixed_param_names"],
            "registry, after bind",
            after_times["registry, after bind"],
            "<= 1.05x",
        )
        table.add(
            "Freeze after bind (rebound) %s vs none frozen" % label,
            "nothing frozen",
            times["nothing frozen"],
            "registry, after bind",
            times["registry, after bind"],
            "< 1 (faster)",
        )
        table.add(
            "Freeze after bind %s: the rebind (one-off) vs a step with every gradient" % label,
            "nothing frozen",
            times["nothing frozen"],
            "rebind",
            rebind_ms,
        )
        grads = {"none": _grad_mb(none), "registry": _grad_mb(registry), "native": _grad_mb(native)}
        table.add(
            "Gradient memory, %s: frozen after bind (rebound) vs native" % label,
            "fixed_param_names",
            [grads["native"]],
            "registry, after bind",
            [_grad_mb(after)],
            "1x",
            unit="MB",
        )
        table.add(
            "Gradient memory, %s: frozen after bind, before vs after its rebind" % label,
            "before the rebind",
            [after_grad_mb],
            "registry, after bind",
            [_grad_mb(after)],
            unit="MB",
        )
        table.add(
            "Gradient memory, %s: registry vs native" % label,
            "fixed_param_names",
            [grads["native"]],
            "registry, before bind",
            [grads["registry"]],
            "1x",
            unit="MB",
        )
        table.add(
            "Gradient memory, %s: registry vs none frozen" % label,
            "nothing frozen",
            [grads["none"]],
            "registry, before bind",
            [grads["registry"]],
            unit="MB",
        )
        exec_mb = {
            k: m._total_exec_bytes
            for k, m in (("none", none), ("registry", registry), ("native", native))
        }
        if any(exec_mb.values()):
            # Module._total_exec_bytes: the executors' own pools, MB as MXNet's debug_str
            # counts them (not the parameter or gradient arrays).
            table.add(
                "Executor pool (_total_exec_bytes), %s: registry" % label,
                "nothing frozen",
                [exec_mb["none"]],
                "registry, before bind",
                [exec_mb["registry"]],
                unit="MB",
            )
            table.add(
                "Executor pool (_total_exec_bytes), %s: native" % label,
                "fixed_param_names",
                [exec_mb["native"]],
                "registry, before bind",
                [exec_mb["registry"]],
                "1x",
                unit="MB",
            )
        none = registry = native = after = sides = None  # free this model before the next one
        gc.collect()
