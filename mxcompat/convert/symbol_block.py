"""A ``SymbolBlock`` built for a conversion: without its own walk of every node (checked here
in one C call), without inferring the dtypes its caller sets, and with a faster common prefix
of its parameter names.  Each change is made for as long as some thread builds such a block
(``_core.scope.SharedScope``) and changes nothing another thread can observe.
"""

import contextlib
import ctypes
import functools
import os
import threading

from .._core import facts
from .._core.conversion import fail, import_mxnet, quoted
from .._core.scope import SharedScope


def _swap(owner, attr, value):
    """``owner.attr = value`` for a ``SharedScope``: returns what puts MXNet's own back."""
    saved = owner.__dict__[attr]
    setattr(owner, attr, value)

    def undo():
        setattr(owner, attr, saved)

    return undo


def _row_sparse_nodes(symbol):
    """The nodes of ``symbol`` whose storage type is row_sparse, which ``SymbolBlock``
    refuses: read in one C call (``MXSymbolListAttr``, what ``Symbol.attr_dict`` reads:
    every node's attributes as ``node$key``, value), where SymbolBlock's own walk makes two
    per node (ResNet-50: 474 nodes, a third of its SymbolBlock)."""
    mx = import_mxnet()
    size, pairs = mx.base.mx_uint(), ctypes.POINTER(ctypes.c_char_p)()
    mx.base.check_call(
        mx.base._LIB.MXSymbolListAttr(symbol.handle, ctypes.byref(size), ctypes.byref(pairs))
    )
    count = size.value
    # Only the values (bytes made for half the strings), and of them only those equal to
    # row_sparse's id looked at, found at C speed (list.index): other attributes have that
    # value too (a convolution's num_group), far fewer than all.
    values = pairs[1 : 2 * count : 2]
    row_sparse = str(mx.nd.ndarray._STORAGE_TYPE_STR_TO_ID["row_sparse"]).encode()
    suffix = b"$__storage_type__"
    found = []
    at = -1
    for _ in range(values.count(row_sparse)):
        at = values.index(row_sparse, at + 1)
        key = pairs[2 * at]
        if key.endswith(suffix):
            found.append(key[: -len(suffix)].decode())
    return found


_walk_checked = threading.local()  # .on: this thread checked SymbolBlock's storage types


def _install_shortcuts():
    mx = import_mxnet()
    symbol_class = mx.sym.Symbol
    # 1.3/1.4 iterate by name, which is quadratic (SymbolBlock's walk of ResNet-50: ~120 ms);
    # by index gives the same items wherever names are unique (and the right ones where they
    # are not), so another thread iterating meanwhile sees no difference.
    own = symbol_class.__dict__["__iter__"]
    by_index = own if facts.since(facts.SYMBOL_ITER_BY_INDEX) else _iterate_by_index

    def __iter__(self):
        if getattr(_walk_checked, "on", False):
            return iter(())
        return by_index(self)

    undo_iteration = _swap(symbol_class, "__iter__", __iter__)
    # SymbolBlock's parameter names' common prefix, compared character by character in
    # Python (ResNet-50: 0.3 ms); os.path.commonprefix gives the same string for any list of
    # names, so any thread may call it meanwhile.
    undo_prefix = _swap(mx.gluon.block, "_common_prefix", os.path.commonprefix)

    def undo():
        undo_prefix()
        undo_iteration()

    return undo


_shortcuts = SharedScope(_install_shortcuts)


@contextlib.contextmanager
def _storage_walk_skipped(symbol, where):
    """A ``SymbolBlock`` of ``symbol`` built in this thread meanwhile skips its walk of every
    internal node (the only Symbol it iterates, 1.3.1 ... 1.9.1: it asserts that no node is
    row_sparse); the same check is made here first, once, and fails in mxcompat's words.
    Its parameters' common prefix is found by ``os.path.commonprefix`` meanwhile.  Two
    threads converting at once share the one change (``_core.scope.SharedScope``)."""
    found = _row_sparse_nodes(symbol)
    if found:
        raise fail(
            where,
            "a Gluon SymbolBlock cannot hold row_sparse parameters, and the module's "
            "graph has %s" % quoted(found),
        )
    with _shortcuts:
        _walk_checked.on = True
        try:
            yield
        finally:
            _walk_checked.on = False


def _iterate_by_index(self):
    return (self[i] for i in range(len(self.list_outputs())))


_dtypes_given = threading.local()  # .on: this thread sets every parameter's dtype itself
_dtypes_wrapper = (None, None)  # (an _infer_param_types, its wrapper): made once, not per call


def _wrap_infer_param_types(saved, default):
    @functools.wraps(saved)
    def infer_param_types(in_params, out_params, arg_params, aux_params, *args, **kwargs):
        if not getattr(_dtypes_given, "on", False):
            return saved(in_params, out_params, arg_params, aux_params, *args, **kwargs)
        # What MXNet gives when it cannot infer: the default dtype for every parameter.
        dtype = kwargs.get("default_dtype", args[0] if args else default)
        return [dtype] * len(arg_params), [dtype] * len(aux_params)

    return infer_param_types


def _install_dtypes_given():
    global _dtypes_wrapper
    block = import_mxnet().gluon.block
    saved = block.__dict__["_infer_param_types"]
    wrapped, wrapper = _dtypes_wrapper
    if wrapped is not saved:
        wrapper = _wrap_infer_param_types(saved, import_mxnet().base.mx_real_t)
        _dtypes_wrapper = (saved, wrapper)
    # Another thread building a SymbolBlock meanwhile infers as before.
    return _swap(block, "_infer_param_types", wrapper)


_dtypes_given_scope = SharedScope(_install_dtypes_given)


@contextlib.contextmanager
def _param_dtypes_given():
    """A ``SymbolBlock`` built in this thread meanwhile skips inferring its parameters'
    dtypes (``gluon.block._infer_param_types``, 1.3.1 ... 1.9.1: three ``infer_type`` calls,
    a sixth of ResNet-18's ``SymbolBlock``), for a caller that sets every parameter's dtype
    from its array anyway: each parameter is made with the dtype MXNet gives when it cannot
    infer, and the caller's own replaces it."""
    with _dtypes_given_scope:
        _dtypes_given.on = True
        try:
            yield
        finally:
            _dtypes_given.on = False
