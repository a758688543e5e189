"""A damaged file gets one error, never a crash: MXNet's C++ loaders trust the sizes and
indices a file names.  Of 300 randomly damaged copies of a small ``.params`` (truncated, bytes
flipped, a size field set to 2**31 or 2**40), ``mx.nd.load`` killed the process 13 times
(SIGSEGV, ``terminate called``, out of memory); of 200 damaged ``-symbol.json`` (an input or
head naming a node that is not there, a wrong ``arg_nodes`` entry, odd attributes),
``mx.sym.load`` plus ``infer_shape`` killed it 6 times (MXNet 1.9.1, one seed).

Before MXNet parses a file, mxcompat checks its structure with its own reader
(``mxcompat.formats.structure``): headers read, sizes held against the bytes that are left,
data skipped, not copied; node entries within range, in order (no cycle).  The check sits on
the C API functions every Python loader calls (``base._LIB``): ``MXNDArrayLoad`` (``nd.load``,
``npx.load``, ``Module.load``, ``load_checkpoint``, ``Block.load_parameters``,
``SymbolBlock.imports``), ``MXNDArrayLoadFromBuffer`` (``nd.load_frombuffer``),
``MXNDArrayLoadFromRawBytes`` (an unpickled NDArray: ``Trainer.load_states``,
``Module.load_optimizer_states``), ``MXSymbolCreateFromFile`` and ``MXSymbolCreateFromJSON``
(``sym.load``, ``sym.fromjson``/``load_json``, an unpickled Symbol): one place per format,
whichever Python function of whichever release reaches it.  A malformed file raises
``CheckpointError`` (a ``ValueError``) that is also MXNet's ``MXNetError``, naming the file,
the byte offset and what was expected, and MXNet never sees it.  A well-formed file loads as
before, bit for bit (the check reads; it changes nothing).  Paths that are not plain files
(``s3://``, ``hdfs://``, a pipe) go to MXNet unchecked.  Cost: a few reads per array.
Patch name ``checked_loads``.
"""

import os
import stat

from .._core.registry import Patch, Target, record, register

PATCH = "checked_loads"
DOC = (
    "Files are checked for structure before MXNet's C++ parses them (.params, symbol JSON, "
    "pickled NDArrays): a damaged file raises one CheckpointError (an MXNetError), never a crash."
)

_classes: dict = {}  # "error": the class made once MXNet is loaded


def error_class():
    """``CheckpointError`` that is also this MXNet's ``MXNetError`` (made once MXNet loaded),
    so code that catches MXNet's error keeps catching it."""
    cls = _classes.get("error")
    if cls is None:
        from mxnet.base import MXNetError

        from ..formats.ndarray_file import CheckpointError

        cls = type(
            "CheckpointError",
            (CheckpointError, MXNetError),
            {"__module__": CheckpointError.__module__, "__doc__": CheckpointError.__doc__},
        )
        _classes["error"] = cls
    return cls


def _refuse(check, *args):
    # The reader (and NumPy, which it imports) loads at the first load, not with the patch:
    # registering the patches (`mxcompat patches`) imports neither.
    from ..formats import structure
    from ..formats.ndarray_file import CheckpointError

    try:
        getattr(structure, check)(*args)
    except CheckpointError as exc:
        record(PATCH)
        raise error_class()(str(exc)) from None


def _plain_file(arg):
    """The path MXNet was handed (``c_str(fname)``) as bytes, where it names a regular file;
    None for a URI (dmlc's streams: s3://, hdfs://, http://) or anything else."""
    value = getattr(arg, "value", arg)
    if isinstance(value, str):
        value = value.encode("utf-8")
    if not isinstance(value, bytes) or b"://" in value:
        return None
    try:
        return value if stat.S_ISREG(os.stat(value).st_mode) else None
    except (OSError, ValueError):
        return None


def _where(path):
    return path.decode("utf-8", "backslashreplace")


def _bytes(arg, size=None):
    """A buffer handed to MXNet (bytes, a ctypes array) as a memoryview, None if it is not one."""
    try:
        view = memoryview(arg).cast("B")
    except TypeError:
        return None
    size = getattr(size, "value", size)
    return view if size is None else view[: int(size)]


def _load_file(wrapped, instance, args, kwargs):
    path = _plain_file(args[0]) if args else None
    if path is not None:
        _refuse("check_ndarray_file", path, _where(path))
    return wrapped(*args, **kwargs)


def _load_buffer(wrapped, instance, args, kwargs):
    view = _bytes(args[0], args[1]) if len(args) > 1 else None
    if view is not None:
        _refuse("check_ndarray_bytes", view, "the buffer of nd.load_frombuffer")
    return wrapped(*args, **kwargs)


def _load_raw_bytes(wrapped, instance, args, kwargs):
    view = _bytes(args[0], args[1]) if len(args) > 1 else None
    if view is not None:
        _refuse("check_raw_ndarray", view, "a pickled NDArray")
    return wrapped(*args, **kwargs)


def _symbol_file(wrapped, instance, args, kwargs):
    path = _plain_file(args[0]) if args else None
    if path is not None:
        _refuse("check_symbol_file", path, _where(path))
    return wrapped(*args, **kwargs)


def _symbol_json(wrapped, instance, args, kwargs):
    value = getattr(args[0], "value", None) if args else None
    if isinstance(value, bytes):
        _refuse("check_symbol_json", value, "the symbol JSON")
    return wrapped(*args, **kwargs)


# ctypes' CDLL makes a function's object at first use and keeps it: removing the patch drops
# ours, and MXNet's next call makes a fresh one for the same C function.
register(
    Patch(
        PATCH,
        DOC,
        targets=[
            Target("mxnet.base", "_LIB.MXNDArrayLoad", _load_file),
            Target("mxnet.base", "_LIB.MXNDArrayLoadFromBuffer", _load_buffer, optional=True),
            Target("mxnet.base", "_LIB.MXNDArrayLoadFromRawBytes", _load_raw_bytes),
            Target("mxnet.base", "_LIB.MXSymbolCreateFromFile", _symbol_file),
            Target("mxnet.base", "_LIB.MXSymbolCreateFromJSON", _symbol_json),
        ],
    )
)
