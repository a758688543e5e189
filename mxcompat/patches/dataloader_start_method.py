"""MXNet's DataLoader workers start with ``fork`` where Python no longer does by default.

Every MXNet release starts a ``DataLoader``'s workers (1.3: ``multiprocessing.Process`` per
iterator; 1.4+: a ``multiprocessing.Pool``, and ``DataLoaderV1``'s processes) from
multiprocessing's *default* start method, which was ``fork`` on Linux on every Python MXNet
was released for.  From Python 3.14 (``facts.PYTHON_FORKSERVER_DEFAULT``) it is
``forkserver``: each worker is a fresh interpreter that re-runs the script's top level, so
a legacy training script without an ``if __name__ == "__main__":`` guard fails, and a
``transform`` lambda or an unpicklable dataset cannot reach the workers.

With this patch the ``multiprocessing`` that MXNet's ``gluon/data/dataloader.py`` sees is a
proxy of the module whose ``Process``, ``Pool``, ``get_context()`` and the other factories
come from ``get_context("fork")`` while *nobody chose* a start method; everything else, and
every other user of ``multiprocessing`` (the user's own pools, other libraries), is untouched.
``unpatch()`` puts the module itself back.

Who chose, and its limits.  ``multiprocessing.get_start_method(allow_none=True)`` is ``None``
until a start method is set or the default context is *used* (``multiprocessing.Queue()``,
``get_context()``, even ``get_start_method()``), which fixes it to the default.  So:

* ``None``: nobody chose: MXNet's workers fork.
* a method other than the platform default (``set_start_method("spawn")``, or ``"fork"``):
  only ``set_start_method`` can have set it: respected.
* the platform default (``forkserver``): respected when ``set_start_method`` set it while this
  patch was applied (it records what ``multiprocessing.set_start_method`` and
  ``DefaultContext.set_start_method`` were asked); otherwise it is taken for the default
  having been used, not chosen, and MXNet's workers fork, as legacy scripts expect.  The
  limit: ``set_start_method("forkserver")`` called *before* ``import mxnet`` (or through a
  ``set_start_method`` imported by name before it) cannot be told from that.  Call it after
  ``import mxnet`` (``force=True`` if the context was already used), or turn the patch off
  (``MXCOMPAT_DISABLE_PATCHES=dataloader_start_method``).

Only on Linux, only where the default is not ``fork`` (Python 3.14+): elsewhere nothing
changes.  ``thread_pool=True`` runs threads and is not concerned.
"""

from __future__ import annotations

import sys
import types

import wrapt

from .._core import facts
from .._core.registry import Patch, Target, record, register

PATCH = "dataloader_start_method"
DOC = (
    "MXNet's DataLoader workers start with fork, as on every Python MXNet was released for, "
    "unless the script chose a start method (Python 3.14+ on Linux)."
)

# What MXNet's dataloader module takes from its `multiprocessing`, and which of it depends on
# the start method: each factory below is served from the fork context while nobody chose.
CONTEXT_BOUND = (
    "Process",
    "Pool",
    "Queue",
    "SimpleQueue",
    "JoinableQueue",
    "Lock",
    "RLock",
    "Condition",
    "Semaphore",
    "BoundedSemaphore",
    "Event",
    "Barrier",
    "Value",
    "Array",
    "Manager",
)

# The start method `set_start_method` last set while the patch was applied (None: none, or
# reset with set_start_method(None, force=True)).
_recorded = [None]


def default_start_method():
    """The platform's default start method (``get_all_start_methods()`` puts it first on the
    Pythons that have a non-fork default), read without fixing the default context."""
    import multiprocessing

    return multiprocessing.get_all_start_methods()[0]


def user_chose():
    """Whether a start method was chosen for this process (see the module docstring)."""
    import multiprocessing

    current = multiprocessing.get_start_method(allow_none=True)
    if current is None:
        return False
    return current != default_start_method() or _recorded[0] == current


def default_is_not_fork():
    """Whether multiprocessing's default start method is not fork here (Python 3.14+ on
    Linux): where MXNet's workers would no longer fork by default."""
    return (
        sys.platform.startswith("linux")
        and facts.python_since(facts.PYTHON_FORKSERVER_DEFAULT)
        and default_start_method() != "fork"
    )


def _record_choice(wrapped, instance, args, kwargs):
    result = wrapped(*args, **kwargs)
    # Reached only when the call succeeded: the default context now holds this method.
    _recorded[0] = args[0] if args else kwargs.get("method")
    return result


def _routed(name):
    def get(self):
        return getattr(self._self_context(), name)

    get.__name__ = name
    return property(get, doc="``%s`` of the fork context, unless a start method was chosen." % name)


class ForkUnlessChosen(wrapt.ObjectProxy):
    """MXNet's dataloader module's ``multiprocessing``: the module, but its start-method
    dependent factories come from the fork context while nobody chose a start method."""

    def _self_context(self):
        if user_chose() or self._self_passed():
            return self.__wrapped__
        record(PATCH)
        # get_context with a method never fixes the default context: a start method the
        # user sets afterwards still can be set, and is then respected.
        return self.__wrapped__.get_context("fork")

    def _self_passed(self):
        # The user put a context of their own in MXNet's module: theirs.
        return not isinstance(self.__wrapped__, types.ModuleType)

    def get_context(self, method=None):
        if method is None and not (user_chose() or self._self_passed()):
            record(PATCH)
            return self.__wrapped__.get_context("fork")
        return self.__wrapped__.get_context(method)


for _name in CONTEXT_BOUND:
    setattr(ForkUnlessChosen, _name, _routed(_name))
del _name


register(
    Patch(
        PATCH,
        DOC,
        when=default_is_not_fork,
        targets=[
            Target("mxnet.gluon.data.dataloader", "multiprocessing", proxy=ForkUnlessChosen),
            Target("multiprocessing", "set_start_method", _record_choice),
            Target("multiprocessing.context", "DefaultContext.set_start_method", _record_choice),
        ],
    )
)
