"""What mxcompat costs and what it saves, side by side with MXNet's own way.

    python -m benchmarks            # full run (ResNet-18/50, CIFAR-sized and 224x224 inputs)
    python -m benchmarks --quick    # ResNet-18 at 32x32, batch 1, few repetitions: CI

Every pair is measured in the same process (import times and peak memory in fresh
processes), interleaved A B A B after a warm-up, as the median of the repetitions.  Prints a
table with both absolute times and the ratio B/A, plus the versions, and writes the rows as
JSON (``--json``).  Nothing here asserts a time: targets are printed beside the ratio.

Sections (``--only NAME``, repeatable):

overhead  a Module training step (forward_backward + update + waitall) patched vs
          ``mxcompat.unpatch()``, with the freeze registry empty and holding one pattern
          that matches nothing in the model; and the Python cost of the ``update()`` call
          alone (MXNet queues the work: the wrappers' own cost, without the step's noise).
trainer   the same for a Gluon ``Trainer.step`` (autograd forward/backward + step + waitall)
          and the ``step()`` call alone.
ops       small imperative operator calls (NDArray, ``mx.np``) and a hybridized forward, with
          the ``numpy2`` patch removed vs applied (its check runs on every operator call).
freeze    the backbone (every parameter but the last FullyConnected's) frozen through the
          registry before ``bind`` vs native ``fixed_param_names`` (their own interleaving,
          3x the repetitions, plus the ``update()`` call alone) vs nothing frozen, with the
          gradient memory each executor allocated; and frozen after bind (the update-path
          skip) vs nothing frozen.
convert   ``to_gluon`` / ``to_module``, unbound, with copies vs copying every weight once and
          vs the file round trip users do today (``save_checkpoint`` -> ``SymbolBlock.imports``;
          ``export`` -> ``Module.load``), shared (``copy=False``) vs the file round trip and
          (``to_gluon``) vs MXNet's floor, its ``SymbolBlock`` built without weights; bound
          ``to_module(data_shapes=...)`` vs ``Module(sym).bind()`` + ``set_params()``.
memory    peak RSS growth of each conversion, one fresh process per conversion.
onnx      ``to_onnx``'s model in onnxruntime vs the same net as a bound MXNet Module
          (``forward`` + ``asnumpy``), one ORT intra-op thread per ``OMP_NUM_THREADS``
          (MXNet's), per configuration; and the export once per model: MXNet's own
          ``export_model`` (to a file) vs ``to_onnx`` without and with verification.  Skipped
          (one line) without onnx and onnxruntime.
import    ``import mxcompat`` before/after ``import mxnet``, in fresh processes, with the
          bytecode cached as a pip install has it (Python >= 3.8), split into wrapt and
          mxcompat's own share, and once without any bytecode cache.

Full-mode configurations: ResNet-18 and ResNet-50 at 32x32 (batch 1 and 32) and 224x224
(batch 1); ``--config resnet50_v1:224:1`` (repeatable) picks others.  224x224 at batch 32 is
left out: one ResNet-18 training step takes ~3.4 s on two cores (ResNet-50 ~3x that), and the
~10 training sides measured per configuration, 22+ steps each, would take the full run far
beyond 25 minutes.  Conversions run once per model (the bound pair at batch 1 and the model's
largest input side).  The source Module of ``to_gluon`` is an
unbound inference Module (``Module.load(..., label_names=None)`` of an export, no loss head)
so that the file round trip it is compared with loads as it is.
"""
import argparse
import gc
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

os.environ.setdefault("MXNET_SUBGRAPH_VERBOSE", "0")
warnings.simplefilter("ignore", DeprecationWarning)

import mxcompat  # noqa: E402
import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402

from ._harness import Table, interleave  # noqa: E402

# (model, input side, batch); --quick uses the first only.
FULL_CONFIGS = [("resnet18_v1", 32, 1), ("resnet18_v1", 32, 32), ("resnet18_v1", 224, 1),
                ("resnet50_v1", 32, 1), ("resnet50_v1", 32, 32), ("resnet50_v1", 224, 1)]
QUICK_CONFIGS = [("resnet18_v1", 32, 1)]

# A pattern that matches no parameter of the benchmarked models: the registry is in use
# (non-empty), as in a program that froze something in another model.
UNRELATED_PATTERN = "othernet_dense0_weight"

def _warm_registry(names, module=None, trainer=None):
    """Refill what the freeze registry caches per registry state (untimed): its match
    cache for ``names`` and, for a Module or a Trainer, what its first update after a
    registry change does once (pattern check, thaw check, "nothing to mask" for a Module
    bound frozen).  The interleaving changes the registry between sides, which empties them;
    a training loop sets the registry once and then always hits them."""
    from mxcompat.freeze import module as freeze_module, registry, trainer as freeze_trainer
    registry.matches(tuple(names))
    if module is not None:
        freeze_module.warm(module)
    if trainer is not None:
        freeze_trainer.trainer_matches(trainer, trainer._params)
    # Settle: MXNet work pushed right after milliseconds of busy Python (a side's patch()
    # or its freeze of every backbone name) waits ~5 ms inside MXNet's own push, for
    # unpatched and native fixed_param_names sides alike (measured with a plain Python
    # loop instead): without this pause the side with the busier setup looks slower.
    time.sleep(0.02)


def resnet_symbol(name):
    from mxnet.gluon.model_zoo import vision
    net = getattr(vision, name)(classes=10)
    return mx.sym.SoftmaxOutput(net(mx.sym.var("data")), name="softmax")


def training_module(name, size, batch, symbol=None, **module_kwargs):
    mod = mx.mod.Module(symbol if symbol is not None else resnet_symbol(name), **module_kwargs)
    mod.bind(data_shapes=[("data", (batch, 3, size, size))],
             label_shapes=[("softmax_label", (batch,))])
    mx.random.seed(0)
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.01,
                                                          "momentum": 0.9, "wd": 1e-4})
    data = mx.io.DataBatch([mx.nd.random.uniform(shape=(batch, 3, size, size))],
                           [mx.nd.zeros(batch)])
    return mod, data


def _module_step(mod, data):
    def step():
        mod.forward_backward(data)
        mod.update()
        mx.nd.waitall()
    return step


def _label(name, size, batch):
    return "%s %dx%d b%d" % (name.replace("_v1", ""), size, size, batch)


def _patch_state(name):
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


# --- 1. patch overhead ----------------------------------------------------------------------

def bench_patch_overhead(table, configs, reps):
    for name, size, batch in configs:
        mod, data = training_module(name, size, batch)
        step = _module_step(mod, data)

        def setup(side):
            _patch_state(side)
            _warm_registry(mod._param_names, mod)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", mxcompat.MXCompatWarning)   # "matches nothing"
            times = interleave({"unpatched": step, "patched": step, "patched+pattern": step},
                               reps, setup=setup)
        label = _label(name, size, batch)
        table.add("Module step %s (fwd_bwd+update+waitall)" % label,
                  "unpatched", times["unpatched"], "patched", times["patched"], "<= 1.01x")
        table.add("Module step %s, registry non-empty" % label, "unpatched",
                  times["unpatched"], "patched, 1 unrelated pattern", times["patched+pattern"],
                  "<= 1.01x")

        # The Python cost of update() alone: MXNet only queues work, so this is where a
        # wrapper's own overhead shows without the step's noise.  Drained outside the timing.
        def update_only():
            mod.update()

        def drain(side):
            mx.nd.waitall()
            setup(side)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", mxcompat.MXCompatWarning)
            times = interleave({"unpatched": update_only, "patched": update_only,
                                "patched+pattern": update_only}, reps, setup=drain)
        mx.nd.waitall()
        table.add("Module.update() call only, async (%s)" % label,
                  "unpatched", times["unpatched"], "patched", times["patched"])
        table.add("Module.update() call only, async (%s), registry non-empty" % label,
                  "unpatched", times["unpatched"], "patched, 1 unrelated pattern",
                  times["patched+pattern"])
    mxcompat.patch()
    mxcompat.unfreeze()


# --- operator calls (the numpy2 patch on the per-operator path) -----------------------------

def _numpy2_state(name):
    if name == "unpatched":
        mxcompat.unpatch("numpy2")
    else:
        mxcompat.patch("numpy2")


def _op_loop(body, calls):
    def run():
        for _ in range(calls):
            body()
    return run


def bench_operator_calls(table, reps):
    """Small imperative operators, whose arguments hold no NumPy scalar, with the numpy2
    patch removed vs applied (its per-call check is all that differs; on NumPy 1 it is not
    applied and both sides run the same code)."""
    from mxnet import gluon
    calls = 100
    # Short timings alternated many times: each side has 10x the usual repetitions.
    reps = 10 * reps
    x = mx.nd.ones((1, 4, 8, 8))
    cases = [("NDArray ops (Pooling, slice, reshape), 1x4x8x8",
              lambda: (mx.nd.Pooling(x, kernel=(2, 2), pool_type="max"),
                       mx.nd.slice(x, begin=(0, 0, 0, 0), end=(1, 2, 4, 4)),
                       x.reshape((1, -1))))]
    if hasattr(mx, "np") and hasattr(mx, "npx"):
        a = mx.np.ones((1, 4, 8, 8))
        cases.append(("mx.np ops (transpose, npx.pooling, sum, npx.relu)",
                      lambda: (mx.np.transpose(a, (0, 1, 3, 2)),
                               mx.npx.pooling(a, kernel=(2, 2), pool_type="max"),
                               mx.np.sum(a, axis=(2, 3)), mx.npx.relu(a))))
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Conv2D(8, 3, padding=1), gluon.nn.Activation("relu"),
                gluon.nn.GlobalAvgPool2D(), gluon.nn.Dense(10))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    net(x).wait_to_read()
    cases.append(("hybridized forward (conv, relu, pool, dense), 1x4x8x8",
                  lambda: net(x)))
    applied = "numpy2" in mxcompat.patched()
    for label, body in cases:
        run = _op_loop(body, calls)
        mx.nd.waitall()
        times = interleave({"unpatched": run, "patched": run}, reps,
                           setup=lambda side: (mx.nd.waitall(), _numpy2_state(side)))
        mx.nd.waitall()
        per_call = dict((k, [t / calls for t in v]) for k, v in times.items())
        if not applied:
            label += " (NumPy 1: numpy2 not applied)"
        table.add("%s, per iteration" % label, "numpy2 unpatched", per_call["unpatched"],
                  "numpy2 patched", per_call["patched"], "<= 1.02x")
        # On a loaded machine most repetitions wait for a core; the fastest of each side is
        # the uncontended cost (same samples, shown beside the medians).
        table.add("  same, fastest repetition of each side", "numpy2 unpatched",
                  [min(per_call["unpatched"])], "numpy2 patched", [min(per_call["patched"])],
                  "<= 1.02x")
    mxcompat.patch()


# --- 4. Gluon Trainer.step --------------------------------------------------------------------

def bench_trainer_step(table, configs, reps):
    from mxnet import autograd, gluon
    from mxnet.gluon.model_zoo import vision
    for name, size, batch in configs:
        net = getattr(vision, name)(classes=10)
        net.initialize(mx.init.Xavier())
        net.hybridize()
        trainer = gluon.Trainer(net.collect_params(), "sgd",
                                {"learning_rate": 0.01, "momentum": 0.9, "wd": 1e-4})
        x = mx.nd.random.uniform(shape=(batch, 3, size, size))
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        y = mx.nd.zeros(batch)
        names = [p.name for p in trainer._params]

        def backward():
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()

        def step():
            backward()
            trainer.step(batch)
            mx.nd.waitall()

        def setup(side):
            _patch_state(side)
            _warm_registry(names, trainer=trainer)

        def step_only():
            trainer.step(batch)

        def backward_first(side):
            # Fresh gradients, queued work done: only the step call is timed.
            setup(side)
            backward()
            mx.nd.waitall()

        label = _label(name, size, batch)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", mxcompat.MXCompatWarning)
            times = interleave({"unpatched": step, "patched": step, "patched+pattern": step},
                               reps, setup=setup)
            table.add("Gluon Trainer.step %s" % label, "unpatched", times["unpatched"],
                      "patched (registry empty)", times["patched"], "<= 1.01x")
            table.add("Gluon Trainer.step %s, registry non-empty" % label, "unpatched",
                      times["unpatched"], "patched, 1 unrelated pattern",
                      times["patched+pattern"], "<= 1.01x")
            times = interleave({"unpatched": step_only, "patched": step_only,
                                "patched+pattern": step_only}, reps, setup=backward_first)
            mx.nd.waitall()
            table.add("Trainer.step() call only, async (%s)" % label, "unpatched",
                      times["unpatched"], "patched (registry empty)", times["patched"])
            table.add("Trainer.step() call only, async (%s), registry non-empty" % label,
                      "unpatched", times["unpatched"], "patched, 1 unrelated pattern",
                      times["patched+pattern"])
    mxcompat.patch()
    mxcompat.unfreeze()


# --- 2. freezing --------------------------------------------------------------------------------

def head_params(symbol):
    """The parameters of the last FullyConnected layer (the classifier)."""
    nodes = json.loads(symbol.tojson())["nodes"]
    last = [n for n in nodes if n["op"] == "FullyConnected"][-1]
    inputs = [nodes[entry[0]] for entry in last["inputs"]]
    return [n["name"] for n in inputs if n["op"] == "null" and n["name"] != "data"]


def _grad_mb(mod):
    return sum(g[0].size * np.dtype(g[0].dtype).itemsize
               for g in mod._exec_group.grad_arrays if g[0] is not None) / 2.0 ** 20


def bench_freeze(table, configs, reps):
    for name, size, batch in configs:
        symbol = resnet_symbol(name)
        head = head_params(symbol)
        params = [n for n in symbol.list_arguments() if n not in ("data", "softmax_label")]
        backbone = [n for n in params if n not in head]

        none, data = training_module(name, size, batch, symbol=symbol)
        with mxcompat.frozen(*backbone):        # frozen before bind: no gradient buffers
            registry, _ = training_module(name, size, batch, symbol=symbol)
        native, _ = training_module(name, size, batch, symbol=symbol,
                                    fixed_param_names=backbone)

        # One data batch for all: same work.
        sides = {"nothing frozen": _module_step(none, data),
                 "registry, before bind": _module_step(registry, data),
                 "fixed_param_names": _module_step(native, data),
                 "registry, after bind": _module_step(none, data)}
        close = ("fixed_param_names", "registry, before bind")

        def setup(side):
            # The registry holds the backbone exactly while a registry side runs.
            if side.startswith("registry"):
                mxcompat.freeze(*backbone)
            else:
                mxcompat.unfreeze()
            _warm_registry(params, registry if side == "registry, before bind" else None)

        # Registry vs native differ by microseconds on steps of milliseconds: their own
        # interleaving, with three times the repetitions (cheap: both steps skip the
        # backbone's backward).
        pair = interleave(dict((k, sides[k]) for k in close), 3 * reps, setup=setup)
        times = interleave(dict((k, v) for k, v in sides.items() if k != "fixed_param_names"),
                           reps, setup=setup)

        def drain(side):
            mx.nd.waitall()
            setup(side)

        # update() alone (async): the registry's own per-update cost, without the step's noise.
        calls = interleave({"fixed_param_names": native.update,
                            "registry, before bind": registry.update}, reps, setup=drain)
        mx.nd.waitall()
        mxcompat.unfreeze()
        label = _label(name, size, batch)
        table.add("Freeze before bind %s: registry vs native" % label,
                  "fixed_param_names", pair["fixed_param_names"], "registry, before bind",
                  pair["registry, before bind"], "<= 1.03x")
        table.add("Freeze before bind, update() call only (%s)" % label, "fixed_param_names",
                  calls["fixed_param_names"], "registry, before bind",
                  calls["registry, before bind"])
        table.add("Freeze before bind %s: registry vs none frozen" % label,
                  "nothing frozen", times["nothing frozen"], "registry, before bind",
                  times["registry, before bind"], "< 1 (faster)")
        table.add("Freeze after bind (update skip) %s vs none frozen" % label,
                  "nothing frozen", times["nothing frozen"], "registry, after bind",
                  times["registry, after bind"], "< 1 (faster)")
        grads = {"none": _grad_mb(none), "registry": _grad_mb(registry),
                 "native": _grad_mb(native)}
        table.add("Gradient memory, %s: registry vs native" % label, "fixed_param_names",
                  [grads["native"]], "registry, before bind", [grads["registry"]],
                  "1x", unit="MB")
        table.add("Gradient memory, %s: registry vs none frozen" % label, "nothing frozen",
                  [grads["none"]], "registry, before bind", [grads["registry"]], unit="MB")
        exec_mb = {k: m._total_exec_bytes for k, m in
                   (("none", none), ("registry", registry), ("native", native))}
        if any(exec_mb.values()):
            # Module._total_exec_bytes: the executors' own pools, MB as MXNet's debug_str
            # counts them (not the parameter or gradient arrays).
            table.add("Executor pool (_total_exec_bytes), %s: registry" % label,
                      "nothing frozen", [exec_mb["none"]], "registry, before bind",
                      [exec_mb["registry"]], unit="MB")
            table.add("Executor pool (_total_exec_bytes), %s: native" % label,
                      "fixed_param_names", [exec_mb["native"]], "registry, before bind",
                      [exec_mb["registry"]], "1x", unit="MB")
        del none, registry, native, sides
        gc.collect()


# --- 3. conversion ----------------------------------------------------------------------------

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


def _param_data(net):
    return [p.data() for p in net.collect_params().values()]


_results = []   # the last conversion's result, alive until the next side's setup


def _waited(func):
    """``func`` and the engine work it queued; its result is kept (a conversion's result is
    used), so its arrays are freed untimed, not while the next array is being copied."""
    def run():
        _results[:] = [func()]
        mx.nd.waitall()
    return run


FLOOR = "SymbolBlock(sym, data) alone"

# (copy vs one copy of every weight, share vs the file round trip): Module->Gluon's from
# issue 17, Gluon->Module's from before.
CONVERT_TARGETS = {"Module->Gluon": ("<= 1.3x", "<= 0.033x (>= 30x faster)"),
                   "Gluon->Module": ("<= 1.5x", "<= 0.05x (>= 20x faster)")}


def conversion_sides(net, mod, workdir):
    """The unbound conversions of both directions, each a callable (with waitall)."""
    from mxnet import gluon
    mod_arrays = list(mod._arg_params.values()) + list(mod._aux_params.values())
    net_arrays = _param_data(net)
    ckpt, exported = os.path.join(workdir, "ckpt"), os.path.join(workdir, "exported")

    def checkpoint_roundtrip():
        # What Module.save_checkpoint writes; the Module method itself needs a bound module
        # before MXNet 1.6 (get_params asserts it).
        mx.model.save_checkpoint(ckpt, 0, mod.symbol, mod._arg_params, mod._aux_params)
        return gluon.SymbolBlock.imports(ckpt + "-symbol.json", ["data"],
                                         ckpt + "-0000.params")

    def export_roundtrip():
        net.export(exported)
        return mx.mod.Module.load(exported, 0, label_names=None)

    def symbol_block_alone():
        # MXNet's floor for a Gluon model of the module: its SymbolBlock, no weights.
        return gluon.SymbolBlock(mod.symbol, [mx.sym.var("data", dtype="float32")])

    to_gluon = {
        "copy every weight once": lambda: [a.copy() for a in mod_arrays],
        "to_gluon(copy=True)": lambda: mxcompat.to_gluon(mod),
        "to_gluon(copy=False)": lambda: mxcompat.to_gluon(mod, copy=False),
        "save_checkpoint+imports": checkpoint_roundtrip,
        FLOOR: symbol_block_alone,
    }
    to_module = {
        "copy every weight once": lambda: [a.copy() for a in net_arrays],
        "to_module(copy=True)": lambda: mxcompat.to_module(net),
        "to_module(copy=False)": lambda: mxcompat.to_module(net, copy=False),
        "export+Module.load": export_roundtrip,
    }
    return to_gluon, to_module


def _conversion_models(configs):
    """Each model once, with its largest input side (the bound pair binds batch 1 at it)."""
    sizes = {}
    for name, size, _ in configs:
        sizes[name] = max(size, sizes.get(name, 0))
    return sorted(sizes.items())


def _malloc_trim():
    try:
        import ctypes
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):     # not glibc
        return lambda pad: 0


_trim = _malloc_trim()


def _collect(side):
    """Every conversion starts from the same allocator state: the previous result freed
    (converted models hold reference cycles, and the harness turns gc off) and nothing freed
    still resident, so each side pays for the fresh pages it writes, as a one-off conversion
    does.  Otherwise glibc hands some sides the resident memory another side just freed,
    and the ratios jumped between runs."""
    del _results[:]
    gc.collect()
    mx.nd.waitall()      # MXNet frees arrays through its engine
    _trim(0)


def bench_convert(table, configs, reps):
    with warnings.catch_warnings():
        # SymbolBlock.imports: "Cannot decide type for the following arguments" (data).
        warnings.simplefilter("ignore", UserWarning)
        _bench_convert(table, configs, reps)


def _bench_convert(table, configs, reps):
    for name, size in _conversion_models(configs):
        workdir = tempfile.mkdtemp(prefix="mxcompat-bench-")
        try:
            net = gluon_net(name, size)
            mod = inference_module(net, workdir)
            weights = sum(a.size * 4 for a in _param_data(net)) / 2.0 ** 20
            model = "%s (%.0f MB of weights)" % (name.replace("_v1", ""), weights)
            to_gluon, to_module = conversion_sides(net, mod, workdir)

            for direction, sides in (("Module->Gluon", to_gluon), ("Gluon->Module", to_module)):
                base, copy, share, files = list(sides)[:4]
                copy_target, share_target = CONVERT_TARGETS[direction]
                # Two interleavings.  Interleaved with the file round trip, the copying
                # conversion measured 1.5-3x slower than beside a plain copy (state the file
                # loads leave behind; not reproducible in isolation), which would blur its
                # ratio to the plain copy.
                times = interleave({k: _waited(sides[k]) for k in (base, copy)}, reps,
                                   setup=_collect)
                table.add("%s %s: copy" % (direction, model), base, times[base], copy,
                          times[copy], copy_target)
                keys = (files, copy, share) + ((FLOOR,) if FLOOR in sides else ())
                times = interleave({k: _waited(sides[k]) for k in keys}, reps, setup=_collect)
                table.add("%s %s: copy vs files" % (direction, model), files, times[files],
                          copy, times[copy], "< 1 (faster)")
                table.add("%s %s: share vs files" % (direction, model), files, times[files],
                          share, times[share], share_target)
                if FLOOR in times:
                    table.add("%s %s: share vs MXNet's floor" % (direction, model), FLOOR,
                              times[FLOOR], share, times[share])

            # Bound, ready to predict: what a user writes without mxcompat.
            shapes = [("data", (1, 3, size, size))]
            symbol = net(mx.sym.var("data"))
            arg_names = set(symbol.list_arguments())
            aux_names = set(symbol.list_auxiliary_states())
            params = net.collect_params()
            arg = {k: p.data() for k, p in params.items() if k in arg_names}
            aux = {k: p.data() for k, p in params.items() if k in aux_names}

            def bare():
                m = mx.mod.Module(symbol, label_names=None)
                m.bind(data_shapes=shapes, for_training=False)
                m.set_params(arg, aux)

            def converted():
                mxcompat.to_module(net, data_shapes=shapes)

            times = interleave({"bind+set_params": _waited(bare),
                                "to_module(data_shapes)": _waited(converted)}, reps,
                               setup=_collect)
            table.add("Gluon->Module %s bound 1x3x%dx%d" % (name.replace("_v1", ""), size,
                                                           size),
                      "Module(sym).bind+set_params", times["bind+set_params"],
                      "to_module(data_shapes=...)", times["to_module(data_shapes)"], "<= 1.1x")
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        del net, mod
        gc.collect()


_MEMORY_PROBE = r"""
import gc, json, os, resource, sys, tempfile, warnings
warnings.simplefilter("ignore")
os.environ["MXNET_SUBGRAPH_VERBOSE"] = "0"
sys.path.insert(0, sys.argv[1])
from benchmarks.run import conversion_sides, gluon_net, inference_module
import mxnet as mx

name, size, direction, side = sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]


def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0   # kB -> MB
    return None


workdir = tempfile.mkdtemp()
net = gluon_net(name, size)
mod = inference_module(net, workdir)
sides = conversion_sides(net, mod, workdir)[direction == "to_module"]
convert = sides[side]
gc.collect()
mx.nd.waitall()
try:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")        # resets VmHWM to the current RSS (Linux >= 4.0)
    before, how = status("VmRSS"), "VmHWM"
except (IOError, OSError):
    before, how = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, "ru_maxrss"
result = convert()
mx.nd.waitall()
after = status("VmHWM") if how == "VmHWM" else \
    resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
weights = sum(p.data().size * 4 for p in net.collect_params().values()) / 2.0 ** 20
print(json.dumps({"peak_growth_mb": after - before, "weights_mb": weights, "how": how}))
"""


def _peak_growth(name, size, direction, side):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    # glibc: every allocation of 64 kB or more gets its own mapping, returned when freed.
    # Otherwise its threshold grows with the arrays freed while the model is built, and the
    # conversion reuses that freed (still resident) heap: the peak would read low.
    env["MALLOC_MMAP_THRESHOLD_"] = "65536"
    out = subprocess.check_output(
        [sys.executable, "-c", _MEMORY_PROBE, root, name, str(size), direction, side],
        universal_newlines=True, stderr=subprocess.DEVNULL, env=env, timeout=600)
    return json.loads(out.strip().splitlines()[-1])


def bench_memory(table, configs, reps):
    for name, _ in _conversion_models(configs):
        size = 32      # the input size does not change what a conversion holds
        for direction, base, files, copy, share in (
                ("to_gluon", "copy every weight once", "save_checkpoint+imports",
                 "to_gluon(copy=True)", "to_gluon(copy=False)"),
                ("to_module", "copy every weight once", "export+Module.load",
                 "to_module(copy=True)", "to_module(copy=False)")):
            peak = {side: _peak_growth(name, size, direction, side)
                    for side in (base, files, copy, share)}
            weights = peak[base]["weights_mb"]
            what = "%s %s (weights %.0f MB)" % (direction, name.replace("_v1", ""), weights)
            mb = {side: [p["peak_growth_mb"]] for side, p in peak.items()}
            table.add("Peak RSS growth, %s: copy" % what, base, mb[base], copy, mb[copy],
                      "~1x (one copy)", unit="MB")
            table.add("Peak RSS growth, %s: share" % what, files, mb[files], share, mb[share],
                      "~0 MB (no copy)", unit="MB")


# --- import time ----------------------------------------------------------------------------

_IMPORT_PROBE = r"""
import os, sys, time, warnings
warnings.simplefilter("ignore")
os.environ["MXNET_SUBGRAPH_VERBOSE"] = "0"
order = sys.argv[1]
t0 = time.perf_counter()
if order == "mxcompat-first":
    import mxcompat
t1 = time.perf_counter()
import mxnet
t2 = time.perf_counter()
if order == "wrapt-first":
    import wrapt
t3 = time.perf_counter()
if order == "no-bytecode":
    # As a venv without .pyc files (uv installs without --compile-bytecode) under
    # PYTHONDONTWRITEBYTECODE: wrapt's and mxcompat's sources are compiled at every import.
    # The standard library keeps its bytecode: what wrapt 2 imports of it comes first.
    from importlib import metadata
    if int(metadata.version("wrapt").split(".")[0]) >= 2:
        import asyncio
    sys.pycache_prefix = sys.argv[2]
    sys.dont_write_bytecode = True
if order in ("mxnet-first", "wrapt-first", "no-bytecode"):
    import mxcompat
t4 = time.perf_counter()
print(t4 - t0, t3 - t2, t4 - t3, t1 - t0)
"""


def _import_env(cache):
    """The probes' environment: bytecode cached in ``cache`` (as a pip install has it), or
    the environment as it is when Python < 3.8 cannot redirect the cache (the probes would
    otherwise write .pyc files into site-packages)."""
    env = dict(os.environ)
    if sys.version_info >= (3, 8):
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache
        return env, True
    return env, not env.get("PYTHONDONTWRITEBYTECODE")


def bench_import(table, reps):
    cache = tempfile.mkdtemp(prefix="mxcompat-bench-pyc-")
    empty = tempfile.mkdtemp(prefix="mxcompat-bench-nopyc-")
    env, cached = _import_env(cache)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in
                                                 env.get("PYTHONPATH", "").split(os.pathsep)
                                                 if p])

    def probe(order):
        out = subprocess.check_output([sys.executable, "-c", _IMPORT_PROBE, order, empty],
                                      universal_newlines=True, stderr=subprocess.DEVNULL,
                                      env=env, timeout=300)
        return [float(v) for v in out.split()]

    orders = ["plain", "mxcompat-first", "mxnet-first", "wrapt-first"]
    if sys.version_info >= (3, 8):
        orders.append("no-bytecode")
    try:
        for order in orders:
            probe(order)            # warm-up: fills the bytecode cache
        runs = dict((order, []) for order in orders)
        for rep in range(reps):
            for order in (orders if rep % 2 == 0 else orders[::-1]):
                runs[order].append(probe(order))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(empty, ignore_errors=True)

    def col(order, i):
        return [r[i] for r in runs[order]]

    import wrapt
    how = "bytecode cached" if cached else "bytecode as installed"
    table.add("import mxnet, then mxcompat (fresh processes, %s)" % how, "import mxnet",
              col("plain", 0), "import mxnet + mxcompat", col("mxnet-first", 0))
    table.add("import mxcompat, then mxnet (fresh processes, %s)" % how, "import mxnet",
              col("plain", 0), "mxcompat + import mxnet", col("mxcompat-first", 0))
    table.add("`import mxcompat` before mxnet (alone)", "import mxnet",
              col("plain", 0), "import mxcompat alone", col("mxcompat-first", 3), "<= 5 ms")
    table.add("`import mxcompat` after mxnet (patching included)", "import mxnet",
              col("plain", 0), "import mxcompat alone", col("mxnet-first", 2), "<= 20 ms")
    table.add("  of which: import wrapt %s" % wrapt.__version__, "import mxcompat alone",
              col("mxnet-first", 2), "import wrapt alone", col("wrapt-first", 1))
    table.add("  of which: mxcompat's own modules + patching", "import mxcompat alone",
              col("mxnet-first", 2), "mxcompat (wrapt imported)", col("wrapt-first", 2))
    if "no-bytecode" in runs:
        table.add("`import mxcompat` after mxnet, no .pyc for wrapt/mxcompat",
                  "bytecode cached", col("mxnet-first", 2), "compiled from source",
                  col("no-bytecode", 2))


# --- ONNX ----------------------------------------------------------------------------------

def bench_onnx(table, configs, reps):
    """The exported model in onnxruntime vs MXNet's own inference (a bound Module, as legacy
    serving code has it), same input, same thread count; and the export itself."""
    try:
        import onnx  # noqa: F401
        import onnxruntime as ort
    except ImportError:
        print("onnx: skipped (needs onnx and onnxruntime: pip install 'mxcompat[onnx]')")
        return
    threads = int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count() or 1)
    exported = set()
    for name, size, batch in configs:
        net = gluon_net(name, size)
        shape = (batch, 3, size, size)
        label = _label(name, size, batch)
        if (name, size) not in exported:
            exported.add((name, size))
            _bench_export(table, net, shape, label, max(1, reps // 10))
        model = mxcompat.to_onnx(net, [shape])       # verified once, untimed
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
        mod = mxcompat.to_module(net, data_shapes=[("data", shape)])
        x = np.random.RandomState(0).uniform(-1, 1, shape).astype("float32")
        batch_nd = mx.io.DataBatch([mx.nd.array(x)])

        def mxnet_side():
            mod.forward(batch_nd, is_train=False)
            return mod.get_outputs()[0].asnumpy()

        def onnx_side():
            return session.run(None, {"data": x})[0]

        times = interleave({"mxnet": mxnet_side, "onnxruntime": onnx_side}, reps)
        table.add("Inference %s, %d thread(s)" % (label, threads), "MXNet Module.forward",
                  times["mxnet"], "onnxruntime (to_onnx)", times["onnxruntime"])


def _bench_export(table, net, shape, label, reps):
    workdir = tempfile.mkdtemp(prefix="mxcompat-bench-onnx-")
    symbol = net._cached_graph[1]
    params = {p.name: p.data() for p in net.collect_params().values()}
    path = os.path.join(workdir, "m.onnx")
    from mxcompat import _compat
    if _compat.since(_compat.MX_ONNX_PACKAGE):
        export = mx.onnx.export_model
    else:
        export = mx.contrib.onnx.export_model
    try:
        times = interleave({
            "mxnet": lambda: export(symbol, params, [shape], np.float32, path),
            "to_onnx": lambda: mxcompat.to_onnx(net, [shape], verify=False),
            "verified": lambda: mxcompat.to_onnx(net, [shape]),
        }, reps, warmup=0)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    table.add("ONNX export %s" % label.split(" b")[0], "MXNet export_model (file)",
              times["mxnet"], "to_onnx(verify=False)", times["to_onnx"])
    table.add("ONNX export %s, verified" % label.split(" b")[0], "MXNet export_model (file)",
              times["mxnet"], "to_onnx (onnxruntime check)", times["verified"])


def versions():
    import wrapt
    return {"mxnet": mx.__version__, "python": platform.python_version(),
            "numpy": np.__version__, "mxcompat": mxcompat.__version__,
            "wrapt": wrapt.__version__,
            "machine": "%s, %d cores" % (platform.machine(), os.cpu_count() or 0)}


SECTIONS = [
    ("overhead", lambda t, cfg, reps: bench_patch_overhead(t, cfg, reps)),
    ("trainer", lambda t, cfg, reps: bench_trainer_step(t, cfg, reps)),
    ("ops", lambda t, cfg, reps: bench_operator_calls(t, reps)),
    ("freeze", lambda t, cfg, reps: bench_freeze(t, cfg, reps)),
    ("convert", lambda t, cfg, reps: bench_convert(t, cfg, reps)),
    ("memory", lambda t, cfg, reps: bench_memory(t, cfg, reps)),
    ("import", lambda t, cfg, reps: bench_import(t, max(3, reps // 2))),
    ("onnx", lambda t, cfg, reps: bench_onnx(t, cfg, reps)),
]


def _config(text):
    try:
        name, size, batch = text.split(":")
        return name, int(size), int(batch)
    except ValueError:
        raise argparse.ArgumentTypeError("expected MODEL:SIDE:BATCH, e.g. resnet18_v1:32:1, "
                                         "not %r" % text)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="small model, few repetitions (CI: keeps the benchmarks running)")
    parser.add_argument("--reps", type=int, help="repetitions per side (default 20; quick 5)")
    parser.add_argument("--only", action="append", choices=[n for n, _ in SECTIONS],
                        help="run only these sections (repeatable)")
    parser.add_argument("--config", action="append", type=_config, metavar="MODEL:SIDE:BATCH",
                        help="run these configurations instead, e.g. resnet50_v1:224:1 "
                             "(repeatable; any gluon.model_zoo.vision ResNet)")
    parser.add_argument("--json", default="benchmarks/results.json",
                        help="where to write the rows (default %(default)s)")
    parser.add_argument("--markdown", help="also write the table as Markdown to this file")
    args = parser.parse_args(argv)
    reps = args.reps or (5 if args.quick else 20)
    configs = args.config or (QUICK_CONFIGS if args.quick else FULL_CONFIGS)
    info = versions()
    print("mxcompat benchmarks: mxnet %(mxnet)s, Python %(python)s, NumPy %(numpy)s, "
          "mxcompat %(mxcompat)s, wrapt %(wrapt)s, %(machine)s" % info)
    print("reps per side: %d, interleaved A/B, medians; ratio = B/A" % reps)
    table = Table()
    print(table.header())
    for name, run in SECTIONS:
        if not args.only or name in args.only:
            run(table, configs, reps)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"versions": info, "quick": args.quick, "reps": reps,
                       "rows": table.rows}, f, indent=2)
        print("wrote %s" % args.json)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table.markdown() + "\n")
        print("wrote %s" % args.markdown)
    return 0
