"""Section ``overhead``: a Module training step (forward_backward + update + waitall) patched
vs ``mxcompat.unpatch()``, with the freeze registry empty and holding one pattern that
matches nothing in the model; and the Python cost of the ``update()`` call alone (MXNet
queues the work: the wrappers' own cost, without the step's noise)."""

import warnings

import mxnet as mx

import mxcompat

from ._harness import interleave
from .models import (
    CALL_CLOCK,
    CALL_REPS,
    config_label,
    module_step,
    patch_state,
    training_module,
    warm_registry,
)


def run(table, configs, reps):
    for name, size, batch in configs:
        mod, data = training_module(name, size, batch)
        step = module_step(mod, data)

        def setup(side):
            patch_state(side)
            warm_registry(mod._param_names, mod)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", mxcompat.MXCompatWarning)  # "matches nothing"
            times = interleave(
                {"unpatched": step, "patched": step, "patched+pattern": step}, reps, setup=setup
            )
        label = config_label(name, size, batch)
        table.add(
            "Module step %s (fwd_bwd+update+waitall)" % label,
            "unpatched",
            times["unpatched"],
            "patched",
            times["patched"],
            "<= 1.01x",
        )
        table.add(
            "Module step %s, registry non-empty" % label,
            "unpatched",
            times["unpatched"],
            "patched, 1 unrelated pattern",
            times["patched+pattern"],
            "<= 1.01x",
        )

        # The Python cost of update() alone: MXNet only queues work, so this is where a
        # wrapper's own overhead shows without the step's noise (on an accelerator it is
        # most of a small model's step).  Drained outside the timing; CPU time (CALL_CLOCK).
        def update_only():
            mod.update()

        def drain(side):
            mx.nd.waitall()
            setup(side)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", mxcompat.MXCompatWarning)
            times = interleave(
                {"unpatched": update_only, "patched": update_only, "patched+pattern": update_only},
                CALL_REPS * reps,
                setup=drain,
                clock=CALL_CLOCK,
            )
        mx.nd.waitall()
        table.add(
            "Module.update() call only, CPU (%s)" % label,
            "unpatched",
            times["unpatched"],
            "patched",
            times["patched"],
            "<= 1.03x",
        )
        table.add(
            "Module.update() call only, CPU (%s), registry non-empty" % label,
            "unpatched",
            times["unpatched"],
            "patched, 1 unrelated pattern",
            times["patched+pattern"],
            "<= 1.05x",
        )
    mxcompat.patch()
    mxcompat.unfreeze()
