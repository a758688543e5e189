"""What mxcompat costs and what it saves, side by side with MXNet's own way.

    python -m benchmarks            # full run (ResNet-18/50, CIFAR-sized and 224x224 inputs)
    python -m benchmarks --quick    # small models, few repetitions: < 2 minutes, for CI

Every pair is measured in the same process (import times in fresh processes), interleaved
A B A B after a warm-up, as the median of the repetitions.  Prints a table with both absolute
times and the ratio B/A, plus the versions, and writes the rows as JSON (``--json``).
Nothing here asserts a time: targets are printed beside the measured ratio.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import warnings

os.environ.setdefault("MXNET_SUBGRAPH_VERBOSE", "0")
warnings.simplefilter("ignore", DeprecationWarning)

import mxcompat  # noqa: E402
import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402

from ._harness import Table, interleave, median  # noqa: E402

# (model, input side, batch): what fits two cores in the full run; --quick uses the first.
FULL_CONFIGS = [("resnet18_v1", 32, 32), ("resnet18_v1", 224, 1), ("resnet50_v1", 32, 32),
                ("resnet50_v1", 224, 1)]
QUICK_CONFIGS = [("resnet18_v1", 32, 1)]


def resnet_symbol(name):
    from mxnet.gluon.model_zoo import vision
    net = getattr(vision, name)(classes=10)
    return mx.sym.SoftmaxOutput(net(mx.sym.var("data")), name="softmax")


def training_module(name, size, batch, **module_kwargs):
    mod = mx.mod.Module(resnet_symbol(name), **module_kwargs)
    mod.bind(data_shapes=[("data", (batch, 3, size, size))],
             label_shapes=[("softmax_label", (batch,))])
    mx.random.seed(0)
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.01,
                                                          "momentum": 0.9, "wd": 1e-4})
    data = mx.io.DataBatch([mx.nd.random.uniform(shape=(batch, 3, size, size))],
                           [mx.nd.zeros(batch)])
    return mod, data


def _patch_state(name):
    if name.startswith("patched"):
        mxcompat.patch()
    else:
        mxcompat.unpatch()


def bench_patch_overhead(table, configs, reps):
    for name, size, batch in configs:
        mod, data = training_module(name, size, batch)

        def step():
            mod.forward_backward(data)
            mod.update()
            mx.nd.waitall()

        times = interleave({"patched": step, "unpatched": step}, reps, setup=_patch_state)
        table.add("Module step %s %dx%d b%d (fwd_bwd+update+waitall)" % (name, size, size, batch),
                  "unpatched", times["unpatched"], "patched", times["patched"], "<= 1.01x")

        # The Python cost of update() alone: MXNet only queues work, so this is where a
        # wrapper's own overhead would show.  Drain the queue outside the timing.
        def update_only():
            mod.update()

        def drain(side):
            mx.nd.waitall()
            _patch_state(side)

        times = interleave({"patched": update_only, "unpatched": update_only}, reps,
                           setup=drain)
        mx.nd.waitall()
        table.add("Module.update() call only, async (%s b%d)" % (name, batch),
                  "unpatched", times["unpatched"], "patched", times["patched"])
    mxcompat.patch()


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

        def step():
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(batch)
            mx.nd.waitall()

        times = interleave({"patched": step, "unpatched": step}, reps, setup=_patch_state)
        table.add("Gluon Trainer.step %s %dx%d b%d" % (name, size, size, batch),
                  "unpatched", times["unpatched"], "patched", times["patched"], "<= 1.01x")
    mxcompat.patch()


_IMPORT_PROBE = r"""
import os, sys, time, warnings
warnings.simplefilter("ignore")
os.environ["MXNET_SUBGRAPH_VERBOSE"] = "0"
t0 = time.perf_counter()
if sys.argv[1] == "mxcompat-first":
    import mxcompat
t1 = time.perf_counter()
import mxnet
t2 = time.perf_counter()
if sys.argv[1] == "mxnet-first":
    import mxcompat
t3 = time.perf_counter()
print(t3 - t0, t3 - t2)
"""


def bench_import(table, reps):
    def probe(order):
        out = subprocess.check_output([sys.executable, "-c", _IMPORT_PROBE, order],
                                      universal_newlines=True, stderr=subprocess.DEVNULL)
        total, after = (float(v) for v in out.split())
        return total, after

    runs = {"plain": [], "mxcompat-first": [], "mxnet-first": []}
    tail = []
    for rep in range(reps):
        for order in (list(runs) if rep % 2 == 0 else list(runs)[::-1]):
            total, after = probe(order)
            runs[order].append(total)
            if order == "mxnet-first":
                tail.append(after)
    table.add("import mxnet, then import mxcompat (fresh processes)", "import mxnet",
              runs["plain"], "import mxnet + mxcompat", runs["mxnet-first"])
    table.add("import mxcompat, then import mxnet (fresh processes)", "import mxnet",
              runs["plain"], "mxcompat + import mxnet", runs["mxcompat-first"])
    table.add("`import mxcompat` after mxnet, in-process (patching included)",
              "import mxnet", runs["plain"], "import mxcompat alone", tail, "<= 20 ms")


def versions():
    return {"mxnet": mx.__version__, "python": platform.python_version(),
            "numpy": np.__version__, "mxcompat": mxcompat.__version__,
            "machine": "%s, %d cores" % (platform.machine(), os.cpu_count() or 0)}


SECTIONS = {
    "overhead": lambda t, cfg, reps: bench_patch_overhead(t, cfg, reps),
    "trainer": lambda t, cfg, reps: bench_trainer_step(t, cfg, reps),
    "import": lambda t, cfg, reps: bench_import(t, max(5, reps // 2)),
}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="small model, few repetitions (CI: keeps the benchmarks running)")
    parser.add_argument("--reps", type=int, help="repetitions per side (default 20; quick 5)")
    parser.add_argument("--only", action="append", choices=sorted(SECTIONS),
                        help="run only these sections (repeatable)")
    parser.add_argument("--json", default="benchmarks/results.json",
                        help="where to write the rows (default %(default)s)")
    args = parser.parse_args(argv)
    reps = args.reps or (5 if args.quick else 20)
    configs = QUICK_CONFIGS if args.quick else FULL_CONFIGS
    info = versions()
    print("mxcompat benchmarks: mxnet %(mxnet)s, Python %(python)s, NumPy %(numpy)s, "
          "mxcompat %(mxcompat)s, %(machine)s" % info)
    print("reps per side: %d, interleaved A/B, medians; ratio = B/A" % reps)
    table = Table()
    print(table.header())
    for name in args.only or list(SECTIONS):
        SECTIONS[name](table, configs, reps)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"versions": info, "quick": args.quick, "reps": reps,
                       "rows": table.rows}, f, indent=2)
        print("wrote %s" % args.json)
    return 0
