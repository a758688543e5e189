"""How patches stack on MXNet's attributes and come off again: the wrapper chains.

Every applied target is a record ``(parent, attr, owned, original, installed)``.  Taking one
off restores the exact original object, or, where other code has wrapped over ours since
(ddtrace, OpenTelemetry: wrapt proxies), takes ours out from beneath theirs.  The registry
(``registry.py``) decides what is applied; this module only knows the chains.
"""

import sys

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


def resolve(target):
    # Only modules already in sys.modules are used: mxnet/__init__ imports all we patch, and
    # importing here (under our lock) could deadlock against another thread's import.
    module = sys.modules.get(target.module)
    if module is None:
        if target.optional:
            return None
        raise RuntimeError("mxcompat: %s is not imported" % target.module)
    parent = module
    for part in target.parts[:-1]:
        parent = getattr(parent, part)
    return parent, target.parts[-1]


def install(name, targets):
    """Apply ``targets`` of patch ``name``: their records (all or none)."""
    records = []
    try:
        for target in targets:
            resolved = resolve(target)
            if resolved is None:
                continue
            parent, attr = resolved
            # __dict__, not getattr: restore the raw object (a staticmethod stays one) and
            # know whether the attribute was the class's own or inherited.
            owned = attr in vars(parent)
            if target.new is None and not hasattr(parent, attr):
                if target.optional:
                    continue
                raise AttributeError("mxcompat: %s.%s not found" % (target.module, target.path))
            original = vars(parent)[attr] if owned else None
            if target.new is None and not owned and wrapped_by(raw_attribute(parent, attr), name):
                # Inherited from a class this patch already wrapped (e.g. a metric's reset
                # from EvalMetric on releases where the subclass has none): wrapping again
                # would run the wrapper twice.
                continue
            if target.wrapper is not None:
                installed = wrapt.wrap_function_wrapper(parent, attr, target.wrapper)
                installed._self_mxcompat_patch = name
            elif target.proxy is not None:
                installed = target.proxy(getattr(parent, attr))
                installed._self_mxcompat_patch = name
                setattr(parent, attr, installed)
            else:
                installed = target.new
                setattr(parent, attr, installed)
            records.append((parent, attr, owned, original, installed))
    except Exception:
        restore(records)
        raise
    return records


def check_hot(patch, others):
    # An armed target goes on top of the attribute as it is then, not at its patch's place
    # in ORDER: a second patch on the same attribute would stack in either order.
    def places(p, hot_only):
        return set((t.module, t.path) for t in p.targets if t.hot or not hot_only)

    for other in others:
        if other.name == patch.name:
            continue
        shared = (places(patch, True) & places(other, False)) | (
            places(other, True) & places(patch, False)
        )
        if shared:
            raise ValueError(
                "mxcompat: patches %r and %r both target %s, a hot target of one of them"
                % (patch.name, other.name, ", ".join(sorted("%s.%s" % t for t in shared)))
            )
