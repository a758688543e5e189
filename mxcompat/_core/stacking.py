"""How patches stack on MXNet's attributes and come off again: the wrapper chains.

Every applied target is a record ``(parent, attr, owned, original, installed)``.  Taking one
off restores the exact original object, or, where other code has wrapped over ours since
(ddtrace, OpenTelemetry: wrapt proxies), takes ours out from beneath theirs.  The registry
(``registry.py``) decides what is applied; this module only knows the chains.
"""

import wrapt


def raw_attribute(parent, attr):
    """The attribute as stored, looked up along the MRO for a class (no descriptor binding)."""
    if isinstance(parent, type):
        for klass in parent.__mro__:
            if attr in vars(klass):
                return vars(klass)[attr]
        return None
    return vars(parent).get(attr)


def wrapped_by(obj, name):
    """True if ``obj`` is, or stacks on, a wrapper installed by the patch ``name``."""
    while hasattr(obj, "_self_mxcompat_patch"):
        if obj._self_mxcompat_patch == name:
            return True
        obj = obj.__wrapped__
    return False


def restore(records):
    for parent, attr, owned, original, installed in reversed(records):
        current = vars(parent).get(attr)
        if current is not installed:
            # Other code wrapped over ours since (ddtrace, OpenTelemetry: wrapt proxies):
            # take ours out from beneath theirs, so their wrapper survives.  Replaced
            # outright (not wrapped), the attribute is theirs: leave it.
            # An attribute we added (no wrapper of ours beneath theirs) stays: theirs needs it.
            outer = outer_of(current, installed)
            if outer is not None and hasattr(installed, "__wrapped__"):
                outer.__wrapped__ = installed.__wrapped__
            continue
        if owned:
            setattr(parent, attr, original)
        else:
            delattr(parent, attr)


# wrapt 2 proxies (FunctionWrapper included) derive from BaseObjectProxy, wrapt 1's from
# ObjectProxy.
_PROXY = getattr(wrapt, "BaseObjectProxy", wrapt.ObjectProxy)


def outer_of(obj, installed):
    """The wrapt proxy in the chain from ``obj`` whose ``__wrapped__`` is ``installed``."""
    while isinstance(obj, _PROXY):
        if obj.__wrapped__ is installed:
            return obj
        obj = obj.__wrapped__
    return None


def foreign_wrapper(records):
    """Something other code installed over a patch (its applied ``records``) that cannot be
    unwrapped from beneath (not a wrapt proxy chain), or ``None``."""
    for parent, attr, _, _, installed in records:
        current = vars(parent).get(attr)
        # Our own patches stacked above are unwound before this one is removed.
        while current is not installed and hasattr(current, "_self_mxcompat_patch"):
            current = current.__wrapped__
        if (
            current is not installed
            and outer_of(current, installed) is None
            and reaches(current, installed)
        ):
            return current
    return None


def reaches(obj, installed):
    # A wrapper made with functools.wraps names what it wraps in __wrapped__; one without
    # it cannot be told from a replacement, and a replacement does not need us beneath it.
    seen = 0
    while obj is not None and seen < 100:
        if obj is installed:
            return True
        obj = getattr(obj, "__wrapped__", None)
        seen += 1
    return False
