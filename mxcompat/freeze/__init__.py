"""The frozen-parameter registry (``mxcompat.freeze``) and the patch that makes every MXNet
update path honour it, bit for bit (user manual: docs/guide/freeze.md).

How each path is held, and why there:

- Frozen before a training ``Module.bind``: the frozen names join that bind's
  ``fixed_param_names``, so MXNet itself gives them ``grad_req='null'`` and allocates no
  gradient (the cost of the native way).  Except a FullyConnected weight whose bias trains, on
  the oneDNN builds from 1.7 (``facts.ONEDNN_FC_NULL_WEIGHT_SKIPS_BIAS``): ``'null'`` there
  would stop the bias nobody froze, so that weight keeps its gradient and the update skip
  holds it (``onednn_fc_bias.null_would_stop_bias``; whatever ``MXNET_MKLDNN_ENABLED`` says,
  since MXNet reads it once).
- Frozen after bind: ``model._update_params``/``_update_params_on_kvstore`` (patched in
  ``mxnet.model`` and in ``mxnet.module.module``, which imports its own references) see a
  frozen entry's gradients as ``None``, MXNet's own skip for a fixed parameter: no optimizer
  call, no kvstore push or pull.  The lists keep their length, so the optimizer-state index
  MXNet derives from a position (``index * num_device + device``) stays every other one's.
- Frozen or unfrozen after a training bind: at its next ``forward`` the Module is bound
  again (``binding.settle``) with the registry's fixed names of now, so it gets the cost of
  the native way; modules sharing arrays are bound again together, every value is copied
  per device.  Until then (a change between backward and update) the update skip holds.
  Not an ``SVRGModule``, which reads every gradient (``facts.SVRG_READS_EVERY_GRADIENT``).
- Gluon: ``Trainer.step``/``update``/``allreduce_grads`` see a frozen parameter as
  ``grad_req == 'null'`` for the update only (its own ``grad_req`` is untouched).  With
  ``freeze(..., gradients=False)`` its backward is skipped too, from the step after
  (``trainer``): an opt-in, as user code can tell (its ``grad()`` reads zeros).

Layout: ``registry`` (the patterns and their version counter, which every cache keys on),
``binding`` (bind, and the rebind after a registry change), ``module`` (the Module update
functions), ``trainer`` (Gluon's Trainer), ``report`` (``frozen_report``), ``frozen_statistics``,
``fixed_param_names`` and ``onednn_fc_bias`` (the wrappers of the patches of those names);
here, ``MXCOMPAT_FREEZE``.  Each patch is declared in ``mxcompat/patches/<name>.py``: ``freeze``
(the update paths above), ``frozen_statistics`` (BatchNorm statistics held),
``fixed_param_names`` (``Module._fixed_param_names`` lists the registry's names) and
``onednn_fc_bias``.
"""

from .._core import settings
from .._core.log import warn
from .registry import freeze, frozen, frozen_patterns, is_frozen, unfreeze
from .report import FrozenReport, frozen_report

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
