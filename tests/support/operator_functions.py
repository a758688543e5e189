"""Every function MXNet generated for its operators in this process, described so that two
processes can be compared one by one (``python -m tests.support.operator_functions``, run by
tests/patches/test_operator_cache.py with and without the ``operator_cache`` patch).

Prints one JSON object: ``functions`` maps ``module.attribute`` to a digest of the function
(name, qualified name, module, docstring, signature, defaults, its code object field by field,
constants and positions included, nested code too); ``all`` each operator module's
``__all__``; ``cache`` the patch's ``last_import()``.  The one number that differs between
processes, the operator's handle (an address), is described by the name of the operator it is
the handle of, so that the comparison also checks that each function calls its own operator.
Its length is in the code all the same (the columns of what follows it on its line, Python
3.11+): ``lengths``, a digest of every handle's number of digits, says which processes' code
can be compared (where a Python without PIE puts the operators at low addresses, they vary
from one process to the next), ``digits`` the lengths found."""

import ctypes
import hashlib
import inspect
import json
import sys
import types

import mxcompat  # noqa: F401  (first, as users do; MXCOMPAT_DISABLE_PATCHES decides)

# isort: split
import mxnet  # noqa: F401
from mxnet import base

_FIELDS = (
    "co_argcount",
    "co_posonlyargcount",
    "co_kwonlyargcount",
    "co_nlocals",
    "co_stacksize",
    "co_flags",
    "co_code",
    "co_names",
    "co_varnames",
    "co_freevars",
    "co_cellvars",
    "co_filename",
    "co_name",
    "co_qualname",
    "co_firstlineno",
    "co_exceptiontable",
)


def handles():
    """``{handle: operator name}`` for every operator of this process."""
    names = ctypes.POINTER(ctypes.c_char_p)()
    size = ctypes.c_uint()
    base.check_call(base._LIB.MXListAllOpNames(ctypes.byref(size), ctypes.byref(names)))
    found = {}
    for i in range(size.value):
        name = names[i].decode()
        handle = base.OpHandle()
        base.check_call(base._LIB.NNGetOpHandle(base.c_str(name), ctypes.byref(handle)))
        found[handle.value] = name
    return found


def describe_code(code, operators):
    fields = [(name, getattr(code, name)) for name in _FIELDS if hasattr(code, name)]
    # The line table under its name on each Python (co_lnotab warns from 3.12).
    table = "co_linetable" if hasattr(code, "co_linetable") else "co_lnotab"
    fields.append((table, getattr(code, table)))
    consts = []
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            consts.append(("code", describe_code(const, operators)))
        elif type(const) is int and const in operators:
            consts.append(("handle of", operators[const]))
        else:
            consts.append((type(const).__name__, const))
    fields.append(("co_consts", consts))
    return fields


def describe(function, operators):
    try:
        signature = str(inspect.signature(function))
    except (TypeError, ValueError) as error:
        signature = "no signature: %r" % error
    parts = [
        function.__name__,
        function.__qualname__,
        function.__module__,
        function.__doc__,
        signature,
        repr(function.__defaults__),
        repr(function.__kwdefaults__),
        repr(sorted(vars(function))),
        function.__globals__.get("__name__"),
        function.__closure__,
        describe_code(function.__code__, operators),
    ]
    return hashlib.sha1(repr(parts).encode()).hexdigest()


def main():
    operators = handles()
    lengths = ",".join(sorted("%s:%d" % (name, len(str(h))) for h, name in operators.items()))
    functions, exported = {}, {}
    for name, module in sorted(sys.modules.items()):
        if not (name == "mxnet" or name.startswith("mxnet.")) or module is None:
            continue
        generated = False
        for attr, value in sorted(vars(module).items()):
            code = getattr(value, "__code__", None)
            if isinstance(value, types.FunctionType) and code.co_filename == "<string>":
                functions["%s.%s" % (name, attr)] = describe(value, operators)
                generated = True
        if generated:
            exported[name] = list(getattr(module, "__all__", []))
    from mxcompat.patches import operator_cache

    json.dump(
        {
            "functions": functions,
            "all": exported,
            "cache": operator_cache.last_import(),
            "lengths": hashlib.sha1(lengths.encode()).hexdigest(),
            "digits": sorted(set(len(str(h)) for h in operators)),
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
