"""Section ``freeze``: the backbone (every parameter but the last FullyConnected's) frozen
through the registry before ``bind`` vs native ``fixed_param_names`` (their own
interleaving, 3x the repetitions, plus the ``update()`` call alone) vs nothing frozen, with
the gradient memory each executor allocated; and frozen after bind (rebound at its next
forward) vs native and vs nothing frozen, its gradient memory, and the rebind itself (the
one-off cost, in its own loop)."""

import gc
import json
import time

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


def run(table, configs, reps):
    for name, size, batch in configs:
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
