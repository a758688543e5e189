"""States files of Gluon Trainers as MXNet 1.1 and 1.2 write them, for the tests that resume
from them (tests/to_torch/test_old_states.py).

Their pickled optimizer carries its parameter dictionary ({index: Gluon Parameter}, with each
Parameter's name, lr_mult and wd_mult, its arrays and its Context; 1.3 on leave it out,
``Optimizer.__getstate__``), and a Parameter made with ``dtype=numpy.float32`` pickles NumPy's
class.  ``writer_python(release)`` is a cached virtualenv with that release on Python 3.6 (the
newest its wheels were built for) and the NumPy its wheel allows, built by mxcompat's
environment builder under ``MXCOMPAT_TEST_CACHE`` as the reference environments are.  MXNet
1.0.0's wheel links ``libgfortran.so.3`` (GCC 6's), which today's Linux lacks, so 1.0 is not
run: its ``Updater.get_states``, ``Trainer.save_states``, ``Optimizer`` (no ``__getstate__``)
and ``Parameter`` attributes are those of 1.1.0 (read in both tags' source), the same pickle.

Run there as ``python -m tests.support.old_states_writer DIR`` (without mxcompat: the release
as it was), it trains a small network ``N`` steps with each optimizer of ``OPTIMIZERS``, exports
it (``DIR/KIND-symbol.json``, ``DIR/KIND-000N.params``), saves the Trainer's states
(``DIR/KIND.states``), trains ``K`` more steps and saves the batches and every parameter after
them (``DIR/KIND-after.npz``: ``x``, ``y``, one array per parameter name)."""

import os
import sys

RELEASES = {"1.2.1": "numpy==1.14.6", "1.1.0": "numpy==1.13.3"}
PYTHON = "3.6"
N, K, BATCH = 4, 3, 5
SHAPES = (6, 7, 4)  # inputs, hidden units, classes
# (name, settings, the FactorScheduler's (step, factor) or None)
OPTIMIZERS = {
    "sgd": (
        "sgd",
        {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "clip_gradient": 0.5},
        (2, 0.5),
    ),
    "adam": ("adam", {"learning_rate": 0.01, "wd": 0.01, "clip_gradient": 0.5}, (2, 0.5)),
    "rmsprop": ("rmsprop", {"learning_rate": 0.01, "wd": 0.01, "centered": True}, None),
}


def writer_python(release):
    """The Python of the cached env of MXNet ``release`` (a key of ``RELEASES``)."""
    from mxcompat import _envs
    from mxcompat._core import settings

    name = "mxnet-%s-py%s-%s" % (release, PYTHON, RELEASES[release].replace("==", "-"))
    # --no-deps: what the wheel requires besides NumPy (requests, graphviz) is not used here,
    # and today's releases of them refuse Python 3.6.
    steps = [["--no-deps", "mxnet==" + release], [RELEASES[release]]]
    root = settings.cache_folder("tests", settings.TEST_CACHE)
    os.makedirs(root, exist_ok=True)
    try:
        return _envs.cached(root, name, PYTHON, steps)
    except _envs.EnvError as e:
        raise RuntimeError("cannot build MXNet %s's env: %s" % (release, e)) from None


def write(python, directory):
    """Run this module in ``python`` (a release's env, without mxcompat) into ``directory``."""
    from .processes import run_plain

    run_plain(python, "tests.support.old_states_writer", [directory], what="the writer")


# --- what runs in the release's env (MXNet and NumPy only) ----------------------------------------


def main(directory):
    import mxnet as mx
    import numpy as np
    from mxnet import autograd, gluon

    os.makedirs(directory, exist_ok=True)
    rng = np.random.RandomState(0)
    batches = [
        (rng.uniform(-1, 1, (BATCH, SHAPES[0])), rng.randint(0, SHAPES[2], (BATCH,)))
        for _ in range(N + K)
    ]
    for kind, (name, settings, schedule) in OPTIMIZERS.items():
        mx.random.seed(0)
        net = gluon.nn.HybridSequential()
        with net.name_scope():
            net.add(gluon.nn.Dense(SHAPES[1], activation="tanh", in_units=SHAPES[0]))
            net.add(gluon.nn.Dense(SHAPES[2], in_units=SHAPES[1]))
        net.initialize(mx.init.Xavier())
        # NumPy's class as the Parameters' dtype, as these releases pickle it.
        net.cast(np.float32)
        net.hybridize()
        params = list(net.collect_params().values())
        params[-1].lr_mult = 0.5  # a Parameter's own multiplier: in the file's parameter dict
        params[0].wd_mult = 2.0
        settings = dict(settings)
        if schedule is not None:
            settings["lr_scheduler"] = mx.lr_scheduler.FactorScheduler(*schedule)
        trainer = gluon.Trainer(net.collect_params(), name, settings)
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        prefix = os.path.join(directory, kind)
        for step, (x, y) in enumerate(batches):
            if step == N:
                net.export(prefix, N)
                trainer.save_states(prefix + ".states")
            with autograd.record():
                loss = loss_fn(net(mx.nd.array(x)), mx.nd.array(y))
            loss.backward()
            trainer.step(BATCH)
        after = {p.name: p.data().asnumpy() for p in params}
        np.savez(
            prefix + "-after.npz",
            x=np.array([x for x, _ in batches[N:]], np.float32),
            y=np.array([y for _, y in batches[N:]]),
            **after,
        )


if __name__ == "__main__":
    main(sys.argv[1])
