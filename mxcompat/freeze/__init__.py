"""A global frozen-parameter registry that every MXNet update path honours, bit for bit.

MXNet 1.x's only native way to keep a weight fixed is ``Module(..., fixed_param_names=...)``
at construction; zeroing its gradient is not enough (weight decay and momentum still move
it).  ``freeze`` registers names once, for every Module, BucketingModule, SequentialModule,
FeedForward and Gluon ``Trainer``::

    mxcompat.freeze("kw", "resnetv10_stage1_*", re.compile(r"fc\\d_bias"))
    mxcompat.unfreeze("kw")
    with mxcompat.frozen("fc1_*"):
        mod.fit(...)

Patterns.  A string is an exact parameter name or a shell-style glob (``fnmatch``: ``*``,
``?``, ``[seq]``, case-sensitive).  A compiled regex must match the *whole* name
(``re.fullmatch``; write ``.*conv.*`` for a substring), so a pattern never freezes more than
it says.  The registry is global and thread-safe, and it is read at every bind, update and
step, never cached at patch time.

Frozen before ``Module.bind`` (training binds only).  For that bind, the frozen names join the
module's ``fixed_param_names``, so MXNet gives them ``grad_req='null'``: no gradient buffer
and no weight gradient, the cost of native ``fixed_param_names``.  MXNet's own ``grad_req``
rules are then applied unchanged:

- ``grad_req`` a string: frozen parameters get ``'null'``, like fixed ones;
- a dict: MXNet gives fixed parameters ``'null'`` and then applies the user's dict, so a name
  the dict sets explicitly keeps the user's ``grad_req``;
- a list or tuple: MXNet ignores ``fixed_param_names``; the list decides.

In the last two cases a frozen parameter can still get a gradient buffer: the update skip
below keeps it frozen all the same.  One exception, because frozen means what the user froze
and nothing more: on the oneDNN (MKLDNN) builds from MXNet 1.7, FullyConnected's backward skips
the *bias* gradient when the weight's ``grad_req`` is ``'null'`` (``_compat.
ONEDNN_FC_NULL_WEIGHT_SKIPS_BIAS``), so on a Module with a CPU context a frozen FC weight whose
bias gets a gradient keeps its gradient buffer and is frozen by the update skip instead (the
rule is ``onednn_fc_bias.null_would_stop_bias``; a bias frozen too but given a gradient by a
``grad_req`` dict counts, so it trains correctly once unfrozen).  freeze does this whether or
not the ``onednn_fc_bias`` patch is active: that patch is about MXNet's own
``fixed_param_names``, whose plain-MXNet behaviour it can give back; the registry has no such
behaviour to give back, and stopping a bias nobody froze would be a silent wrong result.
(On MKLDNN builds this holds whatever ``MXNET_MKLDNN_ENABLED`` says: MXNet reads it once, and
the update skip is exact either way, at the cost of one weight gradient.)

Frozen after bind, or after ``init_optimizer``: ``model._update_params`` and
``_update_params_on_kvstore`` (patched in ``mxnet.model`` and in ``mxnet.module.module``, which
imports its own references) see the frozen entries' gradients as ``None``, which is MXNet's
own "fixed parameter" skip: the optimizer is never called for them (no weight decay, no
momentum, no optimizer state touched) and they are neither pushed to nor pulled from a
kvstore.  The lists keep their length, so the optimizer-state index MXNet derives from a
parameter's position (``index * num_device + device``) stays the same for every other one.
With a distributed kvstore every worker must freeze the same names (``dist_sync`` waits for
every worker's push of a key).

Unfrozen again, a parameter trains from the next update, unless it was frozen when its Module
was bound: MXNet then allocated no gradient for it, and one ``MXCompatWarning`` says how to
rebind.  A pattern that matches no parameter of a Module or Trainer that updates while the
registry is in use gets one ``MXCompatWarning`` naming it and the closest names.

``MXCOMPAT_FREEZE=kw,stage1_*`` (what ``mxcompat run --freeze`` sets) freezes those patterns
when mxcompat is imported; an invalid one is skipped with one ``MXCompatWarning``.

Gluon: ``Trainer.step``/``update``/``allreduce_grads`` skip every parameter whose
``Parameter.name`` is frozen, the same way (an update-time ``grad_req == 'null'`` view of the
parameter at its own index; the parameter's ``grad_req`` is not touched).  ``frozen_report``
counts frozen and trainable parameters and elements of a Module or a Block, and prints like
sockeye's parameter log.

Layout: ``registry`` (the patterns and their version), ``module`` (bind and the update
functions of the Module path), ``trainer`` (Gluon's Trainer), ``report`` (``frozen_report``);
here, the environment variable and the patch.  BatchNorm statistics are held by the patch
``frozen_statistics`` and ``module._fixed_param_names`` lists the registry's names through the
patch ``fixed_param_names`` (modules of their own, as every patch).
"""

import os

from .._log import warn
from .._patching import Patch, Target, register
from .module import (wrap_container_update, wrap_module_bind, wrap_module_update,
                     wrap_update_fn)
from .registry import freeze, frozen, frozen_patterns, is_frozen, unfreeze
from .report import FrozenReport, frozen_report
from .trainer import wrap_trainer

__all__ = ["freeze", "unfreeze", "frozen", "is_frozen", "frozen_patterns", "frozen_report",
           "FrozenReport"]

# --- the environment ----------------------------------------------------------------------------

ENV_FREEZE = "MXCOMPAT_FREEZE"


def _freeze_from_env():
    # Comma-separated names and globs; importing mxcompat must not fail on a bad one.
    for item in os.environ.get(ENV_FREEZE, "").split(","):
        item = item.strip()
        if item:
            try:
                freeze(item)
            except (TypeError, ValueError) as exc:
                warn("%s: %s; that pattern is ignored" % (ENV_FREEZE, exc))


_freeze_from_env()


# --- the patch --------------------------------------------------------------------------------

PATCH = register(Patch(
    "freeze",
    "The mxcompat.freeze registry: frozen parameters are never updated, on every path.",
    targets=[
        Target("mxnet.model", "_update_params", wrap_update_fn),
        Target("mxnet.model", "_update_params_on_kvstore", wrap_update_fn),
        Target("mxnet.model", "_update_params_on_kvstore_nccl", wrap_update_fn,
               optional=True),
        # module.py imports its own references to these (see MXNET_VERSIONS.md).
        Target("mxnet.module.module", "_update_params", wrap_update_fn),
        Target("mxnet.module.module", "_update_params_on_kvstore", wrap_update_fn),
        Target("mxnet.module.module", "Module.bind", wrap_module_bind),
        Target("mxnet.module.module", "Module.update", wrap_module_update),
        Target("mxnet.module.bucketing_module", "BucketingModule.update",
               wrap_container_update),
        Target("mxnet.module.sequential_module", "SequentialModule.update",
               wrap_container_update),
        Target("mxnet.gluon.trainer", "Trainer._allreduce_grads", wrap_trainer(False)),
        Target("mxnet.gluon.trainer", "Trainer._update", wrap_trainer(True)),
    ],
))
