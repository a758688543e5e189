"""A distributed Gluon ``Trainer`` starts every worker from the same weights (every release;
the race is likely from MXNet 1.7).

From 1.7 (``facts.TRAINER_LAZY_KVSTORE_RACE``) ``Trainer._init_params`` hands each parameter
to a distributed kvstore with ``kvstore.broadcast`` (rank 0 pushes it, then every worker pulls
it back into its weights), and ``_allreduce_grads`` sums the gradients with ``pushpull``.  When
the kvstore is set up lazily inside the first ``step()`` (or ``allreduce_grads()``/
``update()``), both are queued in the engine back to back, and nothing orders a worker's pull
of the initial weights before its own push of the first gradients: when the server has summed
every worker's gradients by the time that pull reaches it, the worker receives the summed
*gradients* as its weights.  With ``dist_sync`` and ``update_on_kvstore=False`` (each worker
updates its own copy) it then trains on from them: the workers have different weights for the
rest of the run, and nothing is reported.  Measured: 4 of 8 plain runs on 1.9.1, 1 of 8 on 1.7;
18-20 of 20 trials on 1.7-1.9 when a worker's engine is still busy as it reaches ``step()``;
always the worker of rank 1 (of 2).  1.3-1.6 ``init`` and ``pull``, then ``push`` and ``pull``:
nothing orders those either, and the same trials diverged there too, rarely (1 of 20 on 1.3.1
in one run, 0 of 20 in others), so the patch applies on every release.

The patch waits, once, right after ``_init_params`` has broadcast parameters to a
distributed kvstore, until they have arrived in the worker's weights: the first push then
leaves only after that worker's pull was answered, and a server cannot sum a gradient of every
worker before each has its weights.  One wait per parameter initialisation (the first step,
and a step after deferred parameters got their shapes); no cost per step.  A local kvstore
(one machine) has no server and is left alone.  Patch name ``trainer_kvstore_init``.
"""

from .._core.registry import Patch, Target, record, register

PATCH = "trainer_kvstore_init"
DOC = (
    "A distributed Gluon Trainer (MXNet >= 1.7) waits for its initial weights to arrive "
    "before the first gradients are pushed, so every worker starts from the same weights."
)


def _wrap_init_params(wrapped, instance, args, kwargs):
    before = list(getattr(instance, "_params_to_init", ()))
    result = wrapped(*args, **kwargs)
    kvstore = getattr(instance, "_kvstore", None)
    if kvstore is None or "dist" not in str(getattr(kvstore, "type", "")):
        return result
    # Those still to do are deferred (no shape yet): broadcast at a later step, waited for then.
    pending = set(id(p) for p in getattr(instance, "_params_to_init", ()))
    waited = False
    for param in before:
        if id(param) in pending or getattr(param, "_stype", "default") != "default":
            # Sparse weights are only init-ed here; they are pulled by rows in forward.
            continue
        for array in param.list_data():
            array.wait_to_read()
        waited = True
    if waited:
        record(PATCH)
    return result


register(
    Patch(
        PATCH,
        DOC,
        targets=[Target("mxnet.gluon.trainer", "Trainer._init_params", _wrap_init_params)],
    )
)
