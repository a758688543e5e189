"""Section ``horovod``: a Horovod training step on two workers (``horovodrun -np 2 --gloo`` on
127.0.0.1; probes/horovod_step_worker.py), with and without mxcompat: Module +
``DistributedOptimizer`` with the registry empty, the backbone frozen by the registry before
bind vs MXNet's ``fixed_param_names``, and Gluon + ``DistributedTrainer`` with the registry
empty.  Every side runs in the same two worker processes, interleaved; rank 0's times.

Runs the ResNet-18 configurations at 32x32 of the run (``--quick``: batch 1), each in one
job bounded in time.  Needs Horovod built with MXNet and gloo (docs/horovod.md); without it
the section says so and is skipped.
"""

import importlib.util
import json
import os
import tempfile

from mxcompat._core import settings
from tools import horovod

from .models import config_label

_PROBE = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "probes", "horovod_step_worker.py"
)
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JOB_TIMEOUT = 900  # seconds, for one configuration's job


def _job(model, size, batch, reps):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "times.json")
        # `mxcompat run`: on Pythons where MXNet imports only with mxcompat, Horovod's launcher
        # checks need it too (docs/horovod.md); the worker itself imports mxcompat first.
        program = [_PROBE, out, model, str(size), str(batch), str(reps), _ROOT]
        env = settings.environ_without_ours()
        env["OMP_NUM_THREADS"] = "1"
        returncode, log = horovod.run(horovod.command(program, mxcompat_run=[]), env, JOB_TIMEOUT)
        if returncode is None:
            raise RuntimeError("horovod: the job took over %d s:\n%s" % (JOB_TIMEOUT, log[-3000:]))
        if returncode != 0:
            raise RuntimeError("horovod: the job failed (%d):\n%s" % (returncode, log[-3000:]))
        with open(out) as f:
            return json.load(f)


def run(table, configs, reps):
    if importlib.util.find_spec("horovod") is None:
        print("horovod: skipped (Horovod is not installed here; docs/horovod.md builds it)")
        return
    chosen = [c for c in configs if c[0] == "resnet18_v1" and c[1] == 32] or [
        ("resnet18_v1", 32, 1)
    ]
    for name, size, batch in chosen:
        result = _job(name, size, batch, reps)
        times = result["times"]
        label = "Horovod %d-worker %%s %s" % (result["size"], config_label(name, size, batch))
        table.add(
            label % "Module step",
            "unpatched",
            times["module"],
            "patched (registry empty)",
            times["module patched"],
            "<= 1.01x",
        )
        table.add(
            label % "Module step" + ", frozen backbone",
            "fixed_param_names",
            times["module fixed_param_names"],
            "mxcompat.freeze before bind",
            times["module registry"],
            "<= 1.01x",
        )
        table.add(
            label % "Trainer.step",
            "unpatched",
            times["gluon"],
            "patched (registry empty)",
            times["gluon patched"],
            "<= 1.01x",
        )
