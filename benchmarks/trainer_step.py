"""Section ``trainer``: a Gluon ``Trainer.step`` (autograd forward/backward + step + waitall)
patched vs unpatched, registry empty and with one unrelated pattern, and the ``step()`` call
alone."""

import warnings

import mxnet as mx

import mxcompat

from ._harness import interleave
from .models import CALL_CLOCK, config_label, patch_state, warm_registry


def run(table, configs, reps):
    from mxnet import autograd, gluon
    from mxnet.gluon.model_zoo import vision

    for name, size, batch in configs:
        net = getattr(vision, name)(classes=10)
        net.initialize(mx.init.Xavier())
        net.hybridize()
        trainer = gluon.Trainer(
            net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9, "wd": 1e-4}
        )
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
            patch_state(side)
            warm_registry(names, trainer=trainer)

        def step_only():
            trainer.step(batch)

        def backward_first(side):
            # Fresh gradients, queued work done: only the step call is timed.
            setup(side)
            backward()
            mx.nd.waitall()

        label = config_label(name, size, batch)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", mxcompat.MXCompatWarning)
            times = interleave(
                {"unpatched": step, "patched": step, "patched+pattern": step}, reps, setup=setup
            )
            table.add(
                "Gluon Trainer.step %s" % label,
                "unpatched",
                times["unpatched"],
                "patched (registry empty)",
                times["patched"],
                "<= 1.01x",
            )
            table.add(
                "Gluon Trainer.step %s, registry non-empty" % label,
                "unpatched",
                times["unpatched"],
                "patched, 1 unrelated pattern",
                times["patched+pattern"],
                "<= 1.01x",
            )
            times = interleave(
                {"unpatched": step_only, "patched": step_only, "patched+pattern": step_only},
                reps,
                setup=backward_first,
                clock=CALL_CLOCK,
            )  # each repetition needs a backward
            mx.nd.waitall()
            table.add(
                "Trainer.step() call only, CPU (%s)" % label,
                "unpatched",
                times["unpatched"],
                "patched (registry empty)",
                times["patched"],
                "<= 1.03x",
            )
            table.add(
                "Trainer.step() call only, CPU (%s), registry non-empty" % label,
                "unpatched",
                times["unpatched"],
                "patched, 1 unrelated pattern",
                times["patched+pattern"],
                "<= 1.05x",
            )
    mxcompat.patch()
    mxcompat.unfreeze()
