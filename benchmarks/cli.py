"""What mxcompat costs and what it saves, side by side with MXNet's own way.

    python -m benchmarks            # full run (ResNet-18/50, CIFAR-sized and 224x224 inputs)
    python -m benchmarks --quick    # ResNet-18 at 32x32, batch 1, few repetitions: CI

Every pair is measured in the same process (import times and peak memory in fresh
processes), interleaved A B A B after a warm-up, as the median of the repetitions.  Prints a
table with both absolute times and the ratio B/A, plus the versions, and writes the rows as
JSON (``--json``).  Nothing here asserts a time: targets are printed beside the ratio.

Sections (``--only NAME``, repeatable), one module each (its docstring says what it measures):

overhead  module_update.py      Module step and ``update()`` call, patched vs unpatched
trainer   trainer_step.py       Gluon ``Trainer.step`` and the ``step()`` call, the same
ops       operator_calls.py     small operator calls with the ``numpy2`` patch off vs on
loads     checked_loads.py      ``nd.load`` of a 100 and a 500 MB ``.params``, checked or not
freeze    freezing.py           the registry before/after bind vs ``fixed_param_names``; Gluon
                                ``freeze``/``gradients=False`` vs ``grad_req='null'``
convert   conversion.py         ``to_gluon``/``to_module`` vs copies and file round trips
memory    conversion_memory.py  each conversion's peak RSS growth (probes/conversion_peak_rss.py)
import    import_time.py        ``import mxcompat`` before/after mxnet (probes/import_order.py)
startup   startup.py            an interpreter start that never imports mxnet, with and without
                                the ``.pth`` of ``mxcompat install mxnet-cu11X``
onnx      onnx_inference.py     ``to_onnx`` in onnxruntime vs MXNet, and the export itself
torch     torch_inference.py    ``to_torch``'s module vs MXNet, and the conversion itself
torchtrain torch_training.py    ``to_torch``'s training step vs the same net in torch.nn layers
                                (fp32, bf16 + channels_last, compiled), BatchNorm and LSTM vs
                                F.batch_norm and nn.LSTM (needs torch)
horovod   horovod_step.py       a Horovod step on 2 workers, patched vs not, backbone frozen vs
                                ``fixed_param_names`` (probes/horovod_step_worker.py; needs Horovod)
suite     mxnet_suite.py        MXNet's own Module/Gluon/Trainer tests without vs with mxcompat
                                (given ``--mxnet-src`` or $MXCOMPAT_MXNET_SRC; else skipped)
longrun   long_run.py           20 000 update()/step() with the registry changing: time per step
                                and RSS growth (a process per side), mxcompat's own allocations
                                (tracemalloc), 1 000 build/freeze/convert/drop cycles

models.py holds the models and the patch/registry state the sections share, _harness.py the
interleaving and the table.

Full-mode configurations: ResNet-18 and ResNet-50 at 32x32 (batch 1 and 32) and 224x224
(batch 1); ``--config resnet50_v1:224:1`` (repeatable) picks others.  224x224 at batch 32 is
left out: one ResNet-18 training step takes ~3.4 s on two cores (ResNet-50 ~3x that), and the
~10 training sides measured per configuration, 22+ steps each, would take the full run far
beyond 25 minutes.
"""

import argparse
import json
import os
import platform
import warnings

os.environ.setdefault("MXNET_SUBGRAPH_VERBOSE", "0")
warnings.simplefilter("ignore", DeprecationWarning)

# Imported before the sections (versions() reports them), mxcompat first, as a user's
# program does: on NumPy 2 or Python 3.12+ MXNet cannot be imported without it.
import mxcompat  # noqa: E402, F401, I001  (before the sections: they measure it loaded)
import mxnet  # noqa: E402, F401
import numpy  # noqa: E402, F401
from mxcompat._core import settings  # noqa: E402
from mxcompat._core.versions import running  # noqa: E402

from . import (  # noqa: E402
    checked_loads,
    conversion,
    conversion_memory,
    freezing,
    horovod_step,
    import_time,
    long_run,
    module_update,
    mxnet_suite,
    onnx_inference,
    operator_calls,
    startup,
    torch_inference,
    torch_training,
    trainer_step,
)
from ._harness import Table  # noqa: E402

# (model, input side, batch); --quick uses the first only.
FULL_CONFIGS = [
    ("resnet18_v1", 32, 1),
    ("resnet18_v1", 32, 32),
    ("resnet18_v1", 224, 1),
    ("resnet50_v1", 32, 1),
    ("resnet50_v1", 32, 32),
    ("resnet50_v1", 224, 1),
]
QUICK_CONFIGS = [("resnet18_v1", 32, 1)]

# Name, module (its run(table, configs, reps)), in the order they run.
SECTIONS = [
    ("overhead", module_update),
    ("trainer", trainer_step),
    ("ops", operator_calls),
    ("loads", checked_loads),
    ("freeze", freezing),
    ("convert", conversion),
    ("memory", conversion_memory),
    ("import", import_time),
    ("startup", startup),
    ("onnx", onnx_inference),
    ("torch", torch_inference),
    ("torchtrain", torch_training),
    ("horovod", horovod_step),
    ("suite", mxnet_suite),
    ("longrun", long_run),
]


def versions():
    import wrapt  # noqa: F401  (reported)

    stack = running()
    info = dict((n, stack[n]) for n in ("mxnet", "python", "numpy", "mxcompat", "wrapt"))
    info["machine"] = "%s, %d cores" % (platform.machine(), os.cpu_count() or 0)
    return info


def _config(text):
    try:
        name, size, batch = text.split(":")
        return name, int(size), int(batch)
    except ValueError:
        raise argparse.ArgumentTypeError(
            "expected MODEL:SIDE:BATCH, e.g. resnet18_v1:32:1, not %r" % text
        ) from None


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small model, few repetitions (CI: keeps the benchmarks running)",
    )
    parser.add_argument("--reps", type=int, help="repetitions per side (default 20; quick 5)")
    parser.add_argument(
        "--only",
        action="append",
        choices=[n for n, _ in SECTIONS],
        help="run only these sections (repeatable)",
    )
    parser.add_argument(
        "--config",
        action="append",
        type=_config,
        metavar="MODEL:SIDE:BATCH",
        help="run these configurations instead, e.g. resnet50_v1:224:1 "
        "(repeatable; any gluon.model_zoo.vision ResNet)",
    )
    parser.add_argument(
        "--mxnet-src",
        default=settings.path(settings.MXNET_SRC),
        help="git directory of apache/mxnet for the suite section "
        "(default $%s; without it that section is skipped)" % mxnet_suite.SRC_ENV,
    )
    parser.add_argument(
        "--json",
        default="benchmarks/results.json",
        help="where to write the rows (default %(default)s)",
    )
    parser.add_argument("--markdown", help="also write the table as Markdown to this file")
    args = parser.parse_args(argv)
    reps = args.reps or (5 if args.quick else 20)
    configs = args.config or (QUICK_CONFIGS if args.quick else FULL_CONFIGS)
    info = versions()
    print(
        "mxcompat benchmarks: mxnet %(mxnet)s, Python %(python)s, NumPy %(numpy)s, "
        "mxcompat %(mxcompat)s, wrapt %(wrapt)s, %(machine)s" % info
    )
    print("reps per side: %d, interleaved A/B, medians; ratio = B/A" % reps)
    table = Table()
    print(table.header())
    for name, section in SECTIONS:
        if not args.only or name in args.only:
            if section is mxnet_suite:
                section.run(table, configs, reps, source=args.mxnet_src, quick=args.quick)
            elif section in (long_run, torch_training, checked_loads):
                section.run(table, configs, reps, quick=args.quick)
            else:
                section.run(table, configs, reps)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {"versions": info, "quick": args.quick, "reps": reps, "rows": table.rows},
                f,
                indent=2,
            )
        print("wrote %s" % args.json)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table.markdown() + "\n")
        print("wrote %s" % args.markdown)
    return 0
