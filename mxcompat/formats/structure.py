"""The structure of MXNet's files checked without reading their data: what the ``checked_loads``
patch asks before MXNet's C++ parses a file (``mx.nd.load``, ``mx.sym.load``...).

Unlike ``read_params`` this copies no array: it reads each header, checks the sizes it names
against the bytes that are left, and seeks past the data.  It accepts every layout MXNet loads
(legacy, V1, V2, V3, the sparse storage types, every type flag, trailing bytes MXNet ignores)
and refuses what would make MXNet allocate or read beyond the file: a count, a number of
dimensions or a size larger than the file holds, a storage, device or type flag MXNet does not
define, a name that is not UTF-8 (MXNet's Python reads each name as UTF-8).  A symbol JSON is
checked as ``normalise_symbol`` reads it (every input and head naming a node before it, so no
cycle; ``arg_nodes`` listing the variables; attributes as strings), each output index within
what ``node_row_ptr`` says its node has, and its control-flow subgraphs alike.  Every refusal
is one ``CheckpointError`` naming the file, the byte offset and what was expected; the values
inside a well-formed file are not judged."""

from __future__ import annotations

import io
import json
import os
import struct

import numpy as np

from .checkpoint import check_outputs, normalise_symbol
from .ndarray_file import DEVICES, DTYPES, LIST_MAGIC, V1_MAGIC, V2_MAGIC, V3_MAGIC, _error

# mshadow's type flags and their sizes in bytes (bfloat16 is 2).
_SIZES = {flag: np.dtype(t).itemsize for flag, t in DTYPES.items()}
# The number of auxiliary arrays of each storage type: default, row_sparse (its row
# indices), csr (its row pointers and column indices).
_AUX = {0: 0, 1: 1, 2: 2}


class _Stream:
    """A cursor over a file (or bytes) that reads headers and seeks past data; every read
    and skip checks the bytes are there first."""

    def __init__(self, f, length, where):
        self.f, self.length, self.where = f, length, where
        self.offset = f.tell()

    def left(self):
        return self.length - self.offset

    def skip(self, n, what):
        if n < 0 or n > self.left():
            raise _error(
                self.where, self.offset, "%s (%d bytes)" % (what, n), "%d left" % self.left()
            )
        self.offset += n
        self.f.seek(self.offset)

    def unpack(self, fmt, what):
        n = struct.calcsize(fmt)
        if n > self.left():
            raise _error(
                self.where, self.offset, "%s (%d bytes)" % (what, n), "%d left" % self.left()
            )
        data = self.f.read(n)
        if len(data) != n:  # the file shrank under us
            raise _error(self.where, self.offset, what, "the end of the file")
        self.offset += n
        return struct.unpack(fmt, data)

    def shape(self, signed, dim_fmt, what):
        at = self.offset
        (ndim,) = self.unpack("<i" if signed else "<I", "the number of dimensions of " + what)
        dim_size = struct.calcsize(dim_fmt)
        if ndim < -1 or ndim * dim_size > self.left():
            raise _error(self.where, at, "the number of dimensions of " + what, ndim)
        if ndim == -1:
            return None
        start = self.offset
        dims = self.unpack("<%d%s" % (ndim, dim_fmt), "the dimensions of " + what) if ndim else ()
        if any(d < -1 for d in dims):
            raise _error(self.where, start, "dimensions of %s of at least 0" % what, dims)
        return tuple(dims)

    def flag(self, what):
        at = self.offset
        (flag,) = self.unpack("<i", what)
        if flag not in _SIZES:
            raise _error(self.where, at, "%s MXNet defines (0 to 12)" % what, flag)
        return flag


def _size(shape):
    n = 1
    for d in shape:
        n *= max(d, 0)
    return n


def _check_array(s):
    """One array's headers, its data skipped."""
    start = s.offset
    (magic,) = s.unpack("<I", "an NDArray's magic number")
    aux_shapes, sshape = [], None
    if magic in (V2_MAGIC, V3_MAGIC):
        at = s.offset
        (stype,) = s.unpack("<i", "the storage type")
        if stype not in _AUX:
            raise _error(s.where, at, "a storage type (0: default, 1: row_sparse, 2: csr)", stype)
        nad = _AUX[stype]
        if nad:
            sshape = s.shape(True, "q", "the storage shape")
        shape = s.shape(True, "q", "the array's shape")
        if shape is None or (magic == V2_MAGIC and not shape) or -1 in shape:
            return  # MXNet's empty (none) NDArray: nothing follows
    elif magic == V1_MAGIC:
        nad = 0
        shape = s.shape(False, "q", "the array's shape")
        if not shape:
            return
    else:  # the oldest layout: this word is the number of dimensions, then 32-bit ones
        nad = 0
        if magic * 4 > s.left():
            raise _error(
                s.where, start, "an NDArray's magic number (0xF993FAC9, 0xF993FACA)", hex(magic)
            )
        s.offset = start
        s.f.seek(start)
        shape = s.shape(False, "I", "the array's shape")
        if not shape:
            return
    at = s.offset
    (device,) = s.unpack("<i", "the array's device type")
    if device not in DEVICES:
        raise _error(s.where, at, "a device type (1: cpu, 2: gpu)", device)
    s.unpack("<i", "the array's device id")
    flag = s.flag("the array's type flag")
    aux_flags = []
    for i in range(nad):
        aux_flags.append(s.flag("the type flag of auxiliary array %d" % i))
        aux_shapes.append(s.shape(True, "q", "auxiliary array %d" % i))
    if nad:
        _check_sparse(s, at, sshape, aux_shapes)
    if nad == 1:  # row_sparse: one row of values per row index
        values = _size(aux_shapes[0][:1]) * _size(shape[1:])
    elif nad == 2:  # csr: one value per column index
        values = _size(aux_shapes[1])
    else:
        values = _size(shape)
    s.skip(values * _SIZES[flag], "the array's data")
    for i in range(nad):
        s.skip(_size(aux_shapes[i]) * _SIZES[aux_flags[i]], "auxiliary array %d's data" % i)


def _check_sparse(s, at, sshape, aux_shapes):
    """A sparse array's storage and index shapes must be known: MXNet allocates by them.
    Its values are counted by its indices, not its storage shape: MXNet writes a csr array's
    storage shape as (0,) beside 5 values and 5 column indices (1.9.1)."""
    if sshape is None or any(a is None for a in aux_shapes):
        raise _error(s.where, at, "a sparse array's storage and index shapes", "unknown ones")


def _check_list(s):
    (magic,) = s.unpack("<Q", "the NDArray list magic 0x112")
    if magic != LIST_MAGIC:
        raise _error(s.where, 0, "the NDArray list magic 0x112 (an MXNet .params file)", hex(magic))
    s.unpack("<Q", "the reserved word")
    at = s.offset
    (count,) = s.unpack("<Q", "the number of arrays")
    if count > s.left() // 4:  # the smallest array (an empty legacy one) is 4 bytes
        raise _error(s.where, at, "a number of arrays the file can hold", count)
    for _ in range(count):
        _check_array(s)
    at = s.offset
    (n_names,) = s.unpack("<Q", "the number of names")
    if n_names not in (0, count):
        raise _error(s.where, at, "%d names (one per array) or none" % count, n_names)
    for _ in range(n_names):
        at = s.offset
        (length,) = s.unpack("<Q", "a name's length")
        s.skip(length, "a name")
        s.f.seek(at + 8)
        try:  # MXNet's Python reads each name as UTF-8
            s.f.read(length).decode("utf-8")
        except UnicodeDecodeError:
            raise _error(s.where, at, "a name in UTF-8") from None
    # Bytes after the names: MXNet reads no further, nor does this.


def check_ndarray_file(path, where=None):
    """A file of ``mx.nd.save`` (a ``.params``) checked for structure; ``CheckpointError``
    (naming ``where``, else the path) if MXNet's loader would read beyond it or be handed
    sizes it does not hold."""
    path = os.fspath(path)
    try:
        f = open(path, "rb")
    except OSError:
        return  # MXNet's own error (no such file) stays MXNet's
    with f:
        length = os.fstat(f.fileno()).st_size
        _check_list(_Stream(f, length, where or os.fsdecode(path)))


def check_ndarray_bytes(data, where="the NDArray bytes"):
    """``mx.nd.load_frombuffer``'s bytes, checked as ``check_ndarray_file`` checks a file."""
    view = memoryview(data).cast("B")
    _check_list(_Stream(io.BytesIO(view), len(view), where))


def check_raw_ndarray(data, where="a pickled NDArray"):
    """One array's bytes (``NDArray.__setstate__``: an optimizer states file's arrays)."""
    view = memoryview(data).cast("B")
    _check_array(_Stream(io.BytesIO(view), len(view), where))


# --- the symbol JSON -------------------------------------------------------------------------


def _check_graph(graph, where):
    # Each output index within what node_row_ptr counts (a variable's beyond its one output
    # is left to MXNet's own checks here: no size follows from it).
    check_outputs(normalise_symbol(graph, where), where, variables=False)
    for i, node in enumerate(graph["nodes"]):
        subgraphs = node.get("subgraphs", [])
        if not isinstance(subgraphs, list):
            raise _error(where, None, "node %d's subgraphs as a list" % i)
        for j, sub in enumerate(subgraphs):
            _check_graph(sub, "%s (subgraph %d of node %d)" % (where, j, i))


def check_symbol_json(text, where="the symbol JSON"):
    """``Symbol.tojson()``'s text checked for structure: every node entry within range (no
    cycle: inputs come before their node), the variables listed, attributes as strings."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _error(where, exc.start, "text in UTF-8 (a symbol JSON)") from None
    try:
        graph = json.loads(text)
    except ValueError as exc:
        pos = getattr(exc, "pos", None)
        at = None if pos is None else len(text[:pos].encode("utf-8"))
        raise _error(where, at, "JSON (%s)" % getattr(exc, "msg", exc)) from None
    except RecursionError:
        raise _error(where, None, "JSON nested as MXNet writes it") from None
    _check_graph(graph, where)


def check_symbol_file(path, where=None):
    """A ``-symbol.json`` file checked as ``check_symbol_json`` checks its text."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return  # MXNet's own error stays MXNet's
    check_symbol_json(data, where or os.fsdecode(path))
