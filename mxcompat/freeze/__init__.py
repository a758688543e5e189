"""The frozen-parameter registry (``mxcompat.freeze``) and the patch that makes every MXNet
update path honour it, bit for bit (user manual: docs/guide/freeze.md).

How each path is held, and why there:

- Frozen before a training ``Module.bind``: the frozen names join that bind's
  ``fixed_param_names``, so MXNet itself gives them ``grad_req='null'`` and allocates no
  gradient (the cost of the native way).  Except a FullyConnected weight whose bias trains, on
  the oneDNN builds from 1.7 (``_compat.ONEDNN_FC_NULL_WEIGHT_SKIPS_BIAS``): ``'null'`` there
  would stop the bias nobody froze, so that weight keeps its gradient and the update skip
  holds it (``onednn_fc_bias.null_would_stop_bias``; whatever ``MXNET_MKLDNN_ENABLED`` says,
  since MXNet reads it once).
- Frozen after bind: ``model._update_params``/``_update_params_on_kvstore`` (patched in
  ``mxnet.model`` and in ``mxnet.module.module``, which imports its own references) see a
  frozen entry's gradients as ``None``, MXNet's own skip for a fixed parameter: no optimizer
  call, no kvstore push or pull.  The lists keep their length, so the optimizer-state index
  MXNet derives from a position (``index * num_device + device``) stays every other one's.
- Frozen or unfrozen after a training bind: at its next ``forward`` the Module is bound
  again (``module.settle``) with the registry's fixed names of now, so it gets the cost of
  the native way; modules sharing arrays are bound again together, every value is copied
  per device.  Until then (a change between backward and update) the update skip holds.
  Not an ``SVRGModule``, which reads every gradient (``facts.SVRG_READS_EVERY_GRADIENT``).
- Gluon: ``Trainer.step``/``update``/``allreduce_grads`` see a frozen parameter as
  ``grad_req == 'null'`` for the update only (its own ``grad_req`` is untouched).  With
  ``freeze(..., gradients=False)`` its backward is skipped too, from the step after
  (``trainer``): an opt-in, as user code can tell (its ``grad()`` reads zeros).

Layout: ``registry`` (the patterns and their version counter, which every cache keys on),
``module`` (bind, the rebind after a registry change, and the Module update functions),
``trainer`` (Gluon's Trainer), ``report`` (``frozen_report``); here, ``MXCOMPAT_FREEZE``
and the patch.  BatchNorm statistics are held by the patch ``frozen_statistics``, and
``Module._fixed_param_names`` lists the registry's names through the patch
``fixed_param_names``.
"""

from .._core import settings
from .._core.log import warn
from .._core.registry import Patch, Target, register
from .module import (
    wrap_container_update,
    wrap_install_monitor,
    wrap_module_bind,
    wrap_module_forward,
    wrap_module_update,
    wrap_update_fn,
)
from .registry import freeze, frozen, frozen_patterns, is_frozen, unfreeze
from .report import FrozenReport, frozen_report
from .trainer import wrap_trainer

__all__ = [
    "freeze",
    "unfreeze",
    "frozen",
    "is_frozen",
    "frozen_patterns",
    "frozen_report",
    "FrozenReport",
]

# --- the environment ----------------------------------------------------------------------------


def _freeze_from_env():
    # Comma-separated names and globs; importing mxcompat must not fail on a bad one.  One
    # warning for all the bad ones: the good ones are frozen.
    errors = []
    for item in settings.items(settings.FREEZE):
        try:
            freeze(item)
        except (TypeError, ValueError) as exc:
            errors.append(str(exc))
    if errors:
        warn(
            "%s: %s; %s ignored"
            % (
                settings.FREEZE,
                "; ".join(errors),
                "that pattern is" if len(errors) == 1 else "those patterns are",
            )
        )


_freeze_from_env()


# --- the patch --------------------------------------------------------------------------------

PATCH = "freeze"
register(
    Patch(
        PATCH,
        "The mxcompat.freeze registry: frozen parameters are never updated, on every path.",
        targets=[
            Target("mxnet.model", "_update_params", wrap_update_fn),
            Target("mxnet.model", "_update_params_on_kvstore", wrap_update_fn),
            Target("mxnet.model", "_update_params_on_kvstore_nccl", wrap_update_fn, optional=True),
            # mxnet/module/module.py imports its own references to these (`from ..model import`,
            # in every release), so wrapping mxnet.model's alone leaves Module.update unfrozen.
            Target("mxnet.module.module", "_update_params", wrap_update_fn),
            Target("mxnet.module.module", "_update_params_on_kvstore", wrap_update_fn),
            Target("mxnet.module.module", "Module.bind", wrap_module_bind),
            Target("mxnet.module.module", "Module.update", wrap_module_update),
            # Frozen or unfrozen after bind: the next forward rebinds (module.settle).
            Target("mxnet.module.module", "Module.forward", wrap_module_forward),
            Target("mxnet.module.module", "Module.install_monitor", wrap_install_monitor),
            Target(
                "mxnet.module.bucketing_module", "BucketingModule.update", wrap_container_update
            ),
            Target(
                "mxnet.module.sequential_module", "SequentialModule.update", wrap_container_update
            ),
            Target("mxnet.gluon.trainer", "Trainer._allreduce_grads", wrap_trainer(False)),
            Target("mxnet.gluon.trainer", "Trainer._update", wrap_trainer(True)),
        ],
    )
)
