"""Whether the freeze wrappers on a training step's path have work to do: the ``armed``
conditions of the ``freeze`` and ``frozen_statistics`` patches (their ``hot`` targets:
``Module.forward``/``update``, ``_update_params*``, ``Executor.backward``, the Trainer's
update loops, Gluon's backwards).  With nothing frozen and no Module waiting for its rebind,
those are MXNet's own functions: a step costs what it costs unpatched.  Every change that can
give them work or take it away (a registry change, a Module's rebind, a Gluon parameter given
its gradient back, then its step) is followed by ``rearm`` (``mxcompat._core.registry``)."""

from .._core import registry as patches
from . import binding, registry, trainer


def freeze_armed():
    # Frozen patterns to honour, gradients given back that a step must treat as frozen
    # until a backward computes them, or bound Modules to rebind (after an unfreeze too).
    return bool(registry.state.patterns or trainer._thawed or binding.unsettled())


def statistics_armed():
    return bool(registry.state.patterns)


def _on_registry_change():
    # The one listener of the freeze wrappers, its steps in order: the Trainer's gradients
    # given back first (freeze_armed reads them), then the Modules' rebind looked at (at once,
    # not at a Module's next forward: armed or not, that forward must know whether its Module
    # waits for a rebind), then both patches re-armed.
    trainer.on_registry_change()
    binding.look()
    patches.rearm("freeze", "frozen_statistics")


registry.state.listeners.append(_on_registry_change)
