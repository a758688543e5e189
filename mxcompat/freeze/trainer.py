"""The freeze registry on Gluon's Trainer: frozen parameters are seen as ``grad_req ==
'null'`` by its update loops, at their own index."""

import weakref

from . import registry

# --- Gluon Trainer ----------------------------------------------------------------------------


class _FrozenView:
    """A Parameter as the Trainer's update loops see it while frozen: ``grad_req`` reads
    'null' (their skip), everything else is the parameter's.  Its position in
    ``Trainer._params`` is kept, so the optimizer and kvstore indices do not move."""

    grad_req = "null"

    def __init__(self, param):
        object.__setattr__(self, "_param", param)

    def __getattr__(self, attr):
        return getattr(self._param, attr)

    def __setattr__(self, attr, value):
        setattr(self._param, attr, value)


# Trainer -> (version, id of its parameter list, its length, found).  Never the list itself: a
# Parameter refers to its Trainer (Parameter._trainer), so a value holding the parameters
# would keep its own weak key alive, and with it the Trainer and its (dist) kvstore, until
# interpreter exit (measured: a ps-lite worker then aborts at exit and its cluster hangs).
_trainer_cache = weakref.WeakKeyDictionary()


def trainer_matches(trainer, params):
    """``_matches`` of the trainer's parameter names plus the names, computed once per
    registry state and parameter list rather than at every step."""
    version = registry.state.version
    cached = _trainer_cache.get(trainer)
    if (
        cached is not None
        and cached[0] == version
        and cached[1] == id(params)
        and cached[2] == len(params)
    ):
        return cached[3]
    names = tuple(p.name for p in params)
    found = registry.matches(names)
    if found is not None:
        found = found + (names,)
    _trainer_cache[trainer] = (version, id(params), len(params), found)
    return found


def wrap_trainer(check):
    def wrapper(wrapped, instance, args, kwargs):
        if not registry.state.patterns:
            return wrapped(*args, **kwargs)
        params = instance._params
        found = trainer_matches(instance, params)
        if found is None:
            return wrapped(*args, **kwargs)
        mask, unmatched, _, names = found
        if check and unmatched:
            registry.warn_unmatched(unmatched, names, instance, "gluon.Trainer")
        if not any(mask):
            return wrapped(*args, **kwargs)
        instance._params = [_FrozenView(p) if m else p for p, m in zip(params, mask)]
        try:
            return wrapped(*args, **kwargs)
        finally:
            instance._params = params

    return wrapper
