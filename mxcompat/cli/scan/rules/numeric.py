"""The rules of ``mxcompat scan`` for numbers, NumPy and the standard library: distutils,
integer division, Python scalars of arrays, the NumPy names NumPy removed, tar extraction."""

import libcst as cst

from .base import Finding, dotted, keyword, number_value, rule, string_value

_INT_DTYPES = {"int8", "uint8", "int16", "int32", "int64", "int"}


def _is_int_dtype(node):
    text = string_value(node)
    if text is None:
        name = dotted(node)
        text = name.rsplit(".", 1)[-1] if name else None
    return text in _INT_DTYPES


def is_int_ndarray(node, ctx):
    """Whether ``node`` is certainly an integer NDArray: ``x.astype('int32')``, an ``nd``
    array made with an integer dtype, or a name bound to one of them in this scope."""
    if isinstance(node, cst.Name):
        value = ctx.bound(node.value)
        return value is not None and value is not node and is_int_ndarray(value, ctx)
    if not isinstance(node, cst.Call):
        return False
    func = dotted(node.func) or ""
    if isinstance(node.func, cst.Attribute) and node.func.attr.value == "astype":
        return bool(node.args) and _is_int_dtype(node.args[0].value)
    dtype = keyword(node, "dtype")
    return (
        dtype is not None
        and _is_int_dtype(dtype.value)
        and (func.startswith(("mx.nd.", "nd.", "mxnet.nd.", "mx.ndarray.", "mxnet.ndarray.")))
    )


# --- the rules ---------------------------------------------------------------------------------


@rule(
    "MXC006",
    "distutils-version",
    (cst.ImportFrom, cst.Import),
    trap=("distutils", "at your own `from distutils.version"),
    summary="distutils.version (gone on Python 3.12)",
)
def _distutils(node, ctx):
    if isinstance(node, cst.ImportFrom):
        module = dotted(node.module) if node.module is not None else None
        names = (
            () if isinstance(node.names, cst.ImportStar) else [dotted(a.name) for a in node.names]
        )
        hit = module == "distutils.version" or (module == "distutils" and "version" in names)
    else:
        hit = any(dotted(a.name) == "distutils.version" for a in node.names)
    if hit:
        yield Finding(
            "MXC006",
            "distutils is gone from Python 3.12 (without setuptools); mxcompat serves "
            "distutils.version from `import mxnet` on, not above it; fix: from looseversion "
            "import LooseVersion (the same class, package looseversion) or packaging.version",
            node,
            None,
        )


def _divisor_truncates_to_zero(node):
    value = number_value(node)
    return value is not None and int(value) == 0


@rule(
    "MXC007",
    "int-ndarray-float-division",
    (cst.BinaryOperation, cst.AugAssign),
    trap=("int_division", "Floating point exception"),
    summary="an integer NDArray divided by a float literal that truncates to 0",
)
def _int_division(node, ctx):
    if isinstance(node, cst.BinaryOperation):
        ok = isinstance(node.operator, cst.Divide)
        left, right = node.left, node.right
    else:
        ok = isinstance(node.operator, cst.DivideAssign)
        left, right = node.target, node.value
    if ok and _divisor_truncates_to_zero(right) and is_int_ndarray(left, ctx):
        yield Finding(
            "MXC007",
            "%s is an integer NDArray: MXNet converts %s to its integer dtype (0) and the "
            "process dies of SIGFPE (every 1.x release); mxcompat raises ZeroDivisionError "
            "instead (patch int_division); fix: divide a float copy, %s.astype('float32')"
            % (ctx.code(left), ctx.code(right), ctx.code(left)),
            node,
            None,
        )


@rule(
    "MXC008",
    "scalar-of-asnumpy",
    cst.Call,
    fixable=True,
    summary="float()/int() of an NDArray's asnumpy()",
)
def _scalar_of_asnumpy(node, ctx):
    if not (
        isinstance(node.func, cst.Name)
        and node.func.value in ("float", "int")
        and len(node.args) == 1
        and node.args[0].keyword is None
    ):
        return
    arg = node.args[0].value
    if not (
        isinstance(arg, cst.Call)
        and not arg.args
        and isinstance(arg.func, cst.Attribute)
        and arg.func.attr.value == "asnumpy"
    ):
        return
    item = cst.Call(cst.Attribute(arg, cst.Name("item")))
    fixed = node.with_changes(args=[node.args[0].with_changes(value=item)])
    yield Finding(
        "MXC008",
        "%s: asnumpy() is an array of shape (1,) or more, which NumPy >= 2.4 refuses to "
        "convert (TypeError: only 0-dimensional arrays can be converted; a "
        "DeprecationWarning from 1.25); fix: %s" % (ctx.code(node), ctx.code_of(fixed)),
        node,
        fixed,
    )


def removed_numpy_names():
    from ....numpy_legacy import REPLACEMENTS

    return {name: REPLACEMENTS[name][1] for name in REPLACEMENTS}


@rule(
    "MXC009",
    "numpy-removed-name",
    cst.Attribute,
    summary="a NumPy name today's NumPy removed (ruff's NPY201 rewrites them)",
)
def _numpy_name(node, ctx):
    base = dotted(node.value)
    if base is None or base not in ctx.numpy_aliases:
        return
    replacement = ctx.removed_numpy_names.get(node.attr.value)
    if replacement is None:
        return
    yield Finding(
        "MXC009",
        "%s is gone from today's NumPy (use %s); `ruff check --select NPY201 --fix` rewrites "
        "NumPy's removed names, and MXCOMPAT_NUMPY_LEGACY=1 serves them meanwhile"
        % (ctx.code(node), replacement),
        node,
        None,
    )


_TAR_OPENERS = {"tarfile.open", "tarfile.TarFile", "tarfile.TarFile.open"}


def _is_tarfile(node, ctx):
    """Whether ``node`` is certainly a ``TarFile``: ``tarfile.open(...)``, or a name bound to
    one in this scope (an assignment or ``with tarfile.open(...) as tar``)."""
    if isinstance(node, cst.Name):
        value = ctx.bound(node.value)
        return value is not None and value is not node and _is_tarfile(value, ctx)
    return isinstance(node, cst.Call) and dotted(node.func) in _TAR_OPENERS


@rule(
    "MXC011",
    "tar-extract-filter",
    cst.Call,
    trap=(None, "from your own `tar.extractall"),
    summary="a tarfile extractall()/extract() without filter= (Python 3.14's 'data' default)",
)
def _tar_filter(node, ctx):
    func = node.func
    if not (
        isinstance(func, cst.Attribute)
        and func.attr.value in ("extractall", "extract")
        and keyword(node, "filter") is None
        and _is_tarfile(func.value, ctx)
    ):
        return
    # No fix: filter= is a TypeError on the Pythons without PEP 706 (before 3.12 and its
    # patch releases), and which filter an archive needs is the user's call.
    yield Finding(
        "MXC011",
        "%s: from Python 3.14 tarfile extracts with the 'data' filter (PEP 706): absolute "
        "names, links leading out of the target and device files raise tarfile.FilterError, "
        "owners and group/other write bits are dropped (3.12/3.13 warn); fix: pass "
        "filter='data', or filter='fully_trusted' for a trusted archive that needs them"
        % ctx.code(node),
        node,
        None,
    )
