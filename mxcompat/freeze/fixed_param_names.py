"""``module._fixed_param_names`` lists what is frozen: the module's own fixed names and the
names of its parameters that the ``mxcompat.freeze`` registry matches.

Legacy code reads that attribute to report what stays fixed (a popular translation toolkit
logs "Fixed model parameters: ..." from it); without this patch it shows only the names given
to the constructor, never the registry's.  Reading it on a ``Module`` or ``BucketingModule``
gives the constructor's names, then every other parameter of the module that the live
registry matches, in the module's parameter order (a BucketingModule knows its parameters
once bound).  The list is computed at each read, so it follows ``freeze``/``unfreeze``.

Assigning it sets the module's own names, as in MXNet (the registry's are never stored).
Inside ``Module.bind`` and ``BucketingModule.bind``/``switch_bucket`` MXNet reads the
attribute to choose ``grad_req`` and to build bucket modules: there it reads the module's own
names only, because the ``freeze`` patch decides what the registry adds to a bind (and a
bucket module must not turn today's registry into its own fixed names).  Patch name
``fixed_param_names``, declared in ``mxcompat/patches/fixed_param_names.py`` with these
wrappers.
"""

import threading

from .._core.registry import is_active
from . import registry
from .module import module_param_names

ATTR = "_fixed_param_names"
_local = threading.local()  # .depth: inside MXNet's own bind/switch_bucket


class FixedNames(list):
    """What ``_fixed_param_names`` reads as: a list of names; ``own`` is the module's own list
    (constructor or assigned names, without the registry's).

    Changing it in place changes the module's own list, as changing MXNet's list does
    (``mod._fixed_param_names.append("x")``, ``+=``); ``view + names`` keeps the registry's
    names out of what is assigned back.  Removing a name only the registry freezes is an
    error: ``mxcompat.unfreeze`` thaws it.
    """

    __slots__ = ("own",)

    def __add__(self, other):
        view = FixedNames(list.__add__(self, list(other)))
        view.own = self.own + list(other)
        return view

    def __iadd__(self, other):
        self.extend(other)
        return self

    def append(self, name):
        list.append(self, name)
        self.own.append(name)

    def extend(self, names):
        names = list(names)
        list.extend(self, names)
        self.own.extend(names)

    def insert(self, index, name):
        list.insert(self, index, name)
        self.own.insert(index, name)

    def remove(self, name):
        if name in self and name not in self.own:
            raise ValueError(
                "mxcompat: %r is frozen by the mxcompat.freeze registry, not "
                "fixed by this module: mxcompat.unfreeze(...) thaws it" % (name,)
            )
        list.remove(self, name)
        self.own.remove(name)


class FixedNamesAttribute:
    """Data descriptor on the class: the value is kept in the instance ``__dict__`` under the
    same name, so removing the descriptor (``unpatch``) leaves plain MXNet attributes."""

    def __get__(self, instance, owner):
        if instance is None:
            return self
        own = instance.__dict__.get(ATTR)
        if (
            own is None
            or getattr(_local, "depth", 0)
            or not registry.state.patterns
            or not is_active("freeze")
        ):
            return own
        names = module_param_names(instance)
        found = registry.matches(tuple(names))
        view = FixedNames(own)
        view.own = own
        if found is not None:
            seen = set(own)
            list.extend(view, (n for n, m in zip(names, found[0]) if m and n not in seen))
        return view

    def __set__(self, instance, value):
        if isinstance(value, FixedNames):
            value = list(value.own)
        instance.__dict__[ATTR] = value

    def __delete__(self, instance):
        del instance.__dict__[ATTR]


def own_fixed_names(module):
    """The module's own fixed names, whether or not this patch is on."""
    return module.__dict__.get(ATTR)


def mxnet_internal(wrapped, instance, args, kwargs):
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        return wrapped(*args, **kwargs)
    finally:
        _local.depth -= 1
