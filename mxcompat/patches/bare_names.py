"""``Module(..., fixed_param_names='kw')``: a bare string is one name.

MXNet turns every ``*_names`` argument into ``list(names)``, so a bare string — the classic
``('kw')`` that forgot its comma — becomes its characters (``['k', 'w']``): a baffling
"input with name 'k' is not found" error, or, for labels, names that silently match nothing.
mxcompat reads a bare string as the one name it spells, with one ``MXCompatWarning``.
"""

from .._core.log import warn_once
from .._core.registry import Patch, Target, record, register
from .._core.util import bind_arguments, unpack_sym_gen

NAME_ARGUMENTS = ("data_names", "label_names", "state_names", "fixed_param_names")


def _normalise(owner, bound):
    for arg in NAME_ARGUMENTS:
        value = bound.arguments.get(arg)
        if isinstance(value, str):
            bound.arguments[arg] = [value]
            record("bare_names")
            warn_once(
                ("bare-name", owner, arg, value),
                "%s(%s=%r): a bare string is one name, not a list of its characters; "
                "mxcompat reads it as [%r] (write (%r,) to silence this)"
                % (owner, arg, value, value, value),
            )


def _wrap_init(owner):
    def wrapper(wrapped, instance, args, kwargs):
        bound = bind_arguments(wrapped, args, kwargs)
        _normalise(owner, bound)
        return wrapped(*bound.args, **bound.kwargs)

    return wrapper


def _wrap_call_sym_gen(wrapped, instance, args, kwargs):
    # sym_gen returns (symbol, data_names, label_names); bare strings there too.
    result = wrapped(*args, **kwargs)
    unpacked = unpack_sym_gen(result)
    if unpacked is None:
        return result
    symbol, data_names, label_names = unpacked
    fixed = []
    for arg, value in (("data_names", data_names), ("label_names", label_names)):
        if isinstance(value, str):
            record("bare_names")
            warn_once(
                ("bare-name", "sym_gen", arg, value),
                "sym_gen returned %s=%r: a bare string is one name, not a list of its "
                "characters; mxcompat reads it as [%r]" % (arg, value, value),
            )
            value = [value]
        fixed.append(value)
    return (symbol,) + tuple(fixed)


PATCH = "bare_names"
register(
    Patch(
        PATCH,
        "A bare string given as data/label/state/fixed_param names is one name.",
        targets=[
            Target("mxnet.module.module", "Module.__init__", _wrap_init("Module")),
            Target(
                "mxnet.module.bucketing_module",
                "BucketingModule.__init__",
                _wrap_init("BucketingModule"),
            ),
            Target(
                "mxnet.module.bucketing_module", "BucketingModule._call_sym_gen", _wrap_call_sym_gen
            ),
        ],
    )
)
