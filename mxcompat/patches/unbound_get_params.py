"""``Module.get_params()`` answers the same on every release: the parameters, or a clear error.

From 1.6 (``facts.UNBOUND_GET_PARAMS``) ``get_params()`` returns the parameters of a module
that has them without being bound (``Module.load(prefix, epoch)``, ``BucketingModule.load``);
1.3–1.5 assert that the module is bound, so ``Module.load(...).get_params()`` (or
``save_checkpoint``/``save_params`` on it) fails with a bare ``AssertionError``.  With this
patch 1.3–1.5 return them as 1.6+ do: the ``arg_params``/``aux_params`` ``Module.load`` read
(an unbound module has no device copies to sync from).

A module that has no parameters yet (never ``init_params``/``set_params``, nor loaded) fails
on every release with a bare ``AssertionError``; mxcompat raises it with a message saying
what to call first, the same on every release.  It stays an ``AssertionError`` (what MXNet
raises there), so a caller's ``except AssertionError`` keeps working.  Patch name
``unbound_get_params``.
"""

from .._core import facts
from .._core.registry import Patch, Target, record, register

PATCH = "unbound_get_params"
DOC = (
    "Module.get_params() returns a loaded module's parameters before bind (as 1.6+ do), "
    "and says what to call first when there are none."
)


def _not_ready(instance, cls):
    if instance.binded:
        todo = "call init_params() or set_params(arg_params, aux_params) first"
    else:
        todo = "bind it and call init_params() or set_params(arg_params, aux_params) first"
        if cls == "Module":
            # BucketingModule.load is 1.6+ only; Module.load is on every release.
            todo += ", or create it with Module.load(prefix, epoch)"
    return AssertionError(
        "mxcompat: %s.get_params(): the module has no parameters yet; %s" % (cls, todo)
    )


def _wrap_get_params(cls):
    def wrapper(wrapped, instance, args, kwargs):
        if not instance.params_initialized:
            record(PATCH)
            raise _not_ready(instance, cls)
        if cls == "Module" and not instance.binded and not facts.since(facts.UNBOUND_GET_PARAMS):
            # What 1.6+ return here: unbound, nothing was computed on a device since load.
            record(PATCH)
            return instance._arg_params, instance._aux_params
        return wrapped(*args, **kwargs)

    return wrapper


register(
    Patch(
        PATCH,
        DOC,
        targets=[
            Target("mxnet.module.module", "Module.get_params", _wrap_get_params("Module")),
            Target(
                "mxnet.module.bucketing_module",
                "BucketingModule.get_params",
                _wrap_get_params("BucketingModule"),
            ),
        ],
    )
)
