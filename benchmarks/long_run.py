"""Section ``longrun``: time and memory over a long training run, with the freeze registry
changing between stages, and over models built, frozen, trained, converted and dropped.

- 20 000 ``Module.update()`` steps and 20 000 ``Trainer.step()`` steps on a small net (an MLP
  with BatchNorm), the registry freezing its first layer and BatchNorm for 1 000 steps, then
  unfreezing them for 1 000, and so on: unpatched vs patched, one process per side
  (probes/long_run_worker.py) so that each side's RSS is its own, run alternately 100 steps
  at a time (A B B A ...; the idle one waits on its stdin), so a change in the machine's load
  lands on both.  Time per step: the median over the blocks of 100 after the first two stages
  (warm-up), wall and process CPU time; RSS growth: from the end of the warm-up to the end.
- mxcompat's own allocations: ``tracemalloc`` traces allocated by lines in the mxcompat package,
  read after ``gc.collect()`` at the end of every unfrozen stage of the same runs (in this
  process, patched; not timed), and every 100 of 1 000 cycles of: build a Module and a Gluon
  net, freeze, train one step each, ``to_gluon``/``to_module``, drop them.  Growth in KB from
  the end of the warm-up (two stages; the first 100 cycles) to the end, and the models still
  alive after the cycles (weak references, the registry still frozen when they are dropped).

Time per step is also given for the unfrozen and the frozen stages apart: unfrozen, both sides
do the same work; frozen, the patched side skips the frozen updates and holds the BatchNorm
statistics (a copy before each backward, written back after), which unpatched MXNet does not.

``--quick``: 600 steps in stages of 100, blocks of 50, 20 cycles.
"""

import gc
import json
import os
import subprocess
import sys
import tracemalloc
import warnings
import weakref

import mxnet as mx

import mxcompat

# chunk: the steps of one registry stage; block: the steps timed (and alternated) at a time.
FULL = {"steps": 20000, "chunk": 1000, "block": 100, "cycles": 1000, "read_every": 100}
QUICK = {"steps": 600, "chunk": 100, "block": 50, "cycles": 20, "read_every": 5}
WARMUP_STAGES = 2

_PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probes", "long_run_worker.py")
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PACKAGE = os.path.dirname(os.path.abspath(mxcompat.__file__))

BATCH, FEATURES, HIDDEN, CLASSES = 32, 64, 128, 10
UNMATCHED = "othernet_dense0_weight"  # checked at every step, matches nothing here


# --- the models (also run by the worker, and by tests/test_long_run.py) -----------------------


def mlp_symbol():
    data = mx.sym.var("data")
    hidden = mx.sym.FullyConnected(data, num_hidden=HIDDEN, name="fc1")
    hidden = mx.sym.Activation(mx.sym.BatchNorm(hidden, name="bn1"), act_type="relu")
    return mx.sym.SoftmaxOutput(
        mx.sym.FullyConnected(hidden, num_hidden=CLASSES, name="fc2"), name="softmax"
    )


def mlp_data():
    mx.random.seed(0)
    return (
        mx.nd.random.uniform(-1, 1, shape=(BATCH, FEATURES)),
        mx.nd.array([i % CLASSES for i in range(BATCH)]),
    )


def mlp_module():
    mod = mx.mod.Module(mlp_symbol(), context=mx.cpu())
    mod.bind(data_shapes=[("data", (BATCH, FEATURES))], label_shapes=[("softmax_label", (BATCH,))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(
        optimizer="sgd", optimizer_params={"learning_rate": 0.01, "momentum": 0.9, "wd": 1e-4}
    )
    return mod


def mlp_net(prefix=None):
    from mxnet import gluon

    net = gluon.nn.HybridSequential(prefix=prefix)
    with net.name_scope():
        net.add(
            gluon.nn.Dense(HIDDEN, in_units=FEATURES, prefix="fc1_"),
            gluon.nn.BatchNorm(prefix="bn1_"),
            gluon.nn.Activation("relu"),
            gluon.nn.Dense(CLASSES, in_units=HIDDEN, prefix="fc2_"),
        )
    net.initialize(mx.init.Xavier())
    net.hybridize()
    return net


def module_model():
    """A bound small Module's training step and the patterns a stage freezes."""
    mod = mlp_module()
    x, y = mlp_data()
    batch = mx.io.DataBatch([x], [y])

    def step():
        mod.forward_backward(batch)
        mod.update()
        mx.nd.waitall()

    return step, ("fc1_*", "bn1_*", UNMATCHED)


def trainer_model():
    """A small Gluon net's training step (Trainer.step) and the patterns a stage freezes."""
    from mxnet import autograd, gluon

    net = mlp_net(prefix="longrun_")
    trainer = gluon.Trainer(
        net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9, "wd": 1e-4}
    )
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    x, y = mlp_data()

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(BATCH)
        mx.nd.waitall()

    return step, ("longrun_fc1_*", "longrun_bn1_*", UNMATCHED)


# --- time and RSS: two workers in lockstep --------------------------------------------------


class _Worker:
    def __init__(self, side, kind, config):
        env = dict(os.environ, MXNET_SUBGRAPH_VERBOSE="0")
        self.proc = subprocess.Popen(
            [sys.executable, _PROBE, _ROOT, side, kind, str(config["block"]), str(config["chunk"])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            universal_newlines=True,
            env=env,
        )
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError("long_run_worker: expected 'ready', got %r" % line)

    def block(self, index):
        self.proc.stdin.write("%d\n" % index)
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("long_run_worker exited (%s)" % self.proc.wait())
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _lockstep(kind, config):
    workers = {}
    try:
        for side in ("unpatched", "patched"):
            workers[side] = _Worker(side, kind, config)
        results = {side: [] for side in workers}
        for index in range(config["steps"] // config["block"]):
            order = ("unpatched", "patched") if index % 2 == 0 else ("patched", "unpatched")
            for side in order:
                results[side].append(workers[side].block(index))
    finally:
        for worker in workers.values():
            worker.close()
    return results


def _time_and_rss(table, kind, what, config):
    results = _lockstep(kind, config)
    block, warmup = config["block"], WARMUP_STAGES * config["chunk"]
    label = "%d %s, registry changing every %d" % (config["steps"], what, config["chunk"])

    def per_step(side, clock="seconds", frozen=(True, False), settled=False):
        # settled: only blocks past their stage's first, whose steps follow no registry change
        # (a Module's rebind after one lands in the first block of its stage).
        return [
            r[clock] / block
            for r in results[side]
            if r["first"] >= warmup
            and r["frozen"] in frozen
            and (not settled or r["first"] % config["chunk"] >= block)
        ]

    def pair(
        title,
        clock="seconds",
        frozen=(True, False),
        names=("unpatched", "patched"),
        target="<= 1.01x",
        settled=False,
    ):
        return table.add(
            title,
            names[0],
            per_step("unpatched", clock, frozen, settled),
            names[1],
            per_step("patched", clock, frozen, settled),
            target,
        )

    pair("Long run: %s, time per step" % label)
    pair("  the same, process CPU time", "cpu")
    pair("  the same, unfrozen stages only", frozen=(False,))
    pair("  the same, unfrozen stages only, CPU", "cpu", (False,))
    pair(
        "  the same, unfrozen stages past their first block (no rebind), CPU",
        "cpu",
        (False,),
        settled=True,
    )
    pair(
        "  the same, frozen stages only",
        frozen=(True,),
        names=("unpatched (trains all)", "patched (frozen held)"),
        target=None,
    )
    end_of_warmup = {
        side: [r for r in rows if r["first"] < warmup][-1]["rss_mb"]
        for side, rows in results.items()
    }
    growth = {side: [rows[-1]["rss_mb"] - end_of_warmup[side]] for side, rows in results.items()}
    row = table.add(
        "Long run: %s, RSS growth after warm-up" % label,
        "unpatched",
        growth["unpatched"],
        "patched",
        growth["patched"],
        "within 1 MB",
        unit="MB",
    )
    row["rss_after_warmup_mb"] = end_of_warmup
    row["rss_mb"] = {side: [r["rss_mb"] for r in rows] for side, rows in results.items()}
    print(
        "    RSS after warm-up: unpatched %.1f MB, patched %.1f MB"
        % (end_of_warmup["unpatched"], end_of_warmup["patched"]),
        flush=True,
    )


# --- mxcompat's own allocations -------------------------------------------------------------


def _footprint():
    gc.collect()
    snapshot = tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.Filter(True, os.path.join(_PACKAGE, "*"))]
    )
    return sum(stat.size for stat in snapshot.statistics("filename")) / 1024.0


def _add_growth(table, label, reads, warmup, extra=None):
    """A row from footprint reads (KB): A the read after the warm-up, B the last."""
    row = table.add(
        "mxcompat's own allocations (tracemalloc): %s" % label,
        "after warm-up",
        [reads[warmup]],
        "at the end",
        [reads[-1]],
        "no growth",
        unit="KB",
    )
    row["growth_kb"] = reads[-1] - reads[warmup]
    row["reads_kb"] = reads
    row.update(extra or {})
    print(
        "    growth after warm-up: %+.2f KB (reads: %s)"
        % (row["growth_kb"], ", ".join("%.1f" % r for r in reads)),
        flush=True,
    )
    return row


def _traced_run(table, model, what, config):
    step, patterns = model()
    chunk, reads = config["chunk"], []
    for index in range(config["steps"] // chunk):
        if index % 2 == 0:
            mxcompat.freeze(*patterns)
        else:
            mxcompat.unfreeze(*patterns)
        for _ in range(chunk):
            step()
        if index % 2 == 1:  # the same registry state at every read
            reads.append(_footprint())
    # reads[0]: after the first frozen and unfrozen stages (the warm-up).
    _add_growth(table, "%d %s" % (config["steps"], what), reads, 0)


def _cycle(index, x, y):
    from mxnet import autograd, gluon

    mxcompat.freeze("*fc1_weight", "*bn1_*", UNMATCHED)
    mod = mlp_module()
    mod.forward_backward(mx.io.DataBatch([x], [y]))
    mod.update()
    block = mod.to_gluon(copy=bool(index % 2))
    block(x)
    net = mlp_net()  # auto prefix: every net's parameter names are new
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})
    with autograd.record():
        loss = gluon.loss.SoftmaxCrossEntropyLoss()(net(x), y)
    loss.backward()
    trainer.step(BATCH)
    converted = net.to_module(data_shapes=[("data", x.shape)], copy=bool(index % 2))
    converted.forward(mx.io.DataBatch([x]), is_train=False)
    mx.nd.waitall()
    return [weakref.ref(o) for o in (mod, block, net, trainer, converted)]


def _cycles(table, config):
    x, y = mlp_data()
    reads, alive = [], 0
    for index in range(config["cycles"]):
        refs = _cycle(index, x, y)
        if (index + 1) % config["read_every"] == 0:
            gc.collect()  # the registry still frozen
            alive += sum(r() is not None for r in refs)
            mxcompat.unfreeze()
            reads.append(_footprint())
        else:
            mxcompat.unfreeze()
    _add_growth(
        table,
        "%d cycles (build Module + Gluon net, freeze, train 1 step, to_gluon/"
        "to_module, drop)" % config["cycles"],
        reads,
        0,
        {"models_alive": alive},
    )
    print(
        "    models still alive after a cycle (of %d checked): %d" % (5 * len(reads), alive),
        flush=True,
    )


def run(table, configs, reps, quick=False):
    config = QUICK if quick else FULL
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mxcompat.MXCompatWarning)  # the unmatched pattern
        _time_and_rss(table, "module", "Module.update", config)
        _time_and_rss(table, "trainer", "Trainer.step", config)
        mxcompat.patch()
        was_tracing = tracemalloc.is_tracing()
        if not was_tracing:
            tracemalloc.start(1)
        try:
            _traced_run(table, module_model, "Module.update", config)
            _traced_run(table, trainer_model, "Trainer.step", config)
            _cycles(table, config)
        finally:
            if not was_tracing:
                tracemalloc.stop()
    mxcompat.patch()
    mxcompat.unfreeze()
