"""MXNet's NDArray layouts read with NumPy alone (``checkpoint.py`` and ``states_file.py``
read their files through them): one array (legacy, V1, V2 and V3 layouts) and the NDArray
list of ``mx.nd.save``; ``CheckpointError`` with the file, the offset and what was expected."""

from __future__ import annotations

import struct

import numpy as np

LIST_MAGIC = 0x112
V1_MAGIC, V2_MAGIC, V3_MAGIC = 0xF993FAC8, 0xF993FAC9, 0xF993FACA
# mshadow's type flags (which release writes which: facts.NDARRAY_BOOL, NDARRAY_BFLOAT16).
DTYPES = {
    0: "<f4",
    1: "<f8",
    2: "<f2",
    3: "u1",
    4: "<i4",
    5: "i1",
    6: "<i8",
    7: "?",
    8: "<i2",
    9: "<u2",
    10: "<u4",
    11: "<u8",
    12: "<u2",  # bfloat16: read as its bits, then widened to float32 (exactly)
}
BFLOAT16 = 12
STORAGE = {0: "default", 1: "row_sparse", 2: "csr"}
DEVICES = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}


class CheckpointError(ValueError):
    """A file that is not what MXNet writes, in mxcompat's words: the file, the byte offset,
    what was expected there and what was found."""


def _error(where, offset, expected, found=None):
    at = "" if offset is None else ", at byte %d" % offset
    tail = "" if found is None else ", found %s" % (found,)
    return CheckpointError("mxcompat: %s%s: expected %s%s" % (where, at, expected, tail))


def _read(path, what):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise CheckpointError("mxcompat: cannot read the %s %s: %s" % (what, path, exc)) from None


class _Reader:
    """A cursor over the bytes of one file; every read checks the bytes are there first."""

    def __init__(self, data, offset, where):
        self.data, self.offset, self.where = data, offset, where

    def take(self, n, what):
        if n < 0 or n > len(self.data) - self.offset:
            left = len(self.data) - self.offset
            raise _error(self.where, self.offset, "%s (%d bytes)" % (what, n), "%d left" % left)
        start = self.offset
        self.offset += n
        return start

    def unpack(self, fmt, what):
        start = self.take(struct.calcsize(fmt), what)
        return struct.unpack_from(fmt, self.data, start)[0]

    def left(self):
        return len(self.data) - self.offset


def _shape(r, signed_ndim, dim_fmt, what):
    at = r.offset
    ndim = r.unpack("<i" if signed_ndim else "<I", "the number of dimensions of " + what)
    if ndim < -1 or ndim * struct.calcsize(dim_fmt) > r.left():
        raise _error(r.where, at, "the number of dimensions of " + what, ndim)
    if ndim == -1:
        return None
    start = r.take(ndim * struct.calcsize(dim_fmt), "the dimensions of " + what)
    dims = struct.unpack_from("<%d%s" % (ndim, dim_fmt), r.data, start)
    if any(d < -1 for d in dims):
        raise _error(r.where, start, "dimensions of %s of at least 0" % what, dims)
    return tuple(dims)


def read_ndarray(data, offset, where):
    """One array in MXNet's per-array layout (an NDArray pickle's bytes carry it too) at
    ``offset`` of ``data``: ``(numpy array, offset after it)``; the array is None for MXNet's
    empty (none) NDArray.  ``where``: the file, for the messages."""
    r = _Reader(data, offset, where)
    start = offset
    magic = r.unpack("<I", "an NDArray's magic number")
    what = "the array's shape"
    if magic in (V2_MAGIC, V3_MAGIC):
        at = r.offset
        stype = r.unpack("<i", "the storage type")
        if stype != 0:
            kind = STORAGE.get(stype)
            if kind is None:
                raise _error(where, at, "a storage type (0: default)", stype)
            raise _error(where, at, "a dense array (mxcompat reads no sparse ones)", kind)
        shape = _shape(r, True, "q", what)
        # V2 keeps MXNet's old meaning: no dimensions is no array; V3 has 0-d arrays.
        if shape is None or (magic == V2_MAGIC and not shape) or -1 in shape:
            return None, r.offset
    elif magic == V1_MAGIC:
        shape = _shape(r, False, "q", what)
        if not shape:
            return None, r.offset
    else:  # the oldest layout: this word is the number of dimensions, then 32-bit ones
        if magic * 4 > r.left():
            raise _error(
                where, start, "an NDArray's magic number (0xF993FAC9, 0xF993FACA)", hex(magic)
            )
        r.offset = start
        shape = _shape(r, False, "I", what)
        if not shape:
            return None, r.offset
    at = r.offset
    device = r.unpack("<i", "the array's device type")
    if device not in DEVICES:
        raise _error(where, at, "a device type (1: cpu, 2: gpu)", device)
    r.unpack("<i", "the array's device id")
    at = r.offset
    flag = r.unpack("<i", "the array's type flag")
    if flag not in DTYPES:
        raise _error(where, at, "a type flag MXNet defines (0 to 12)", flag)
    dtype = np.dtype(DTYPES[flag])
    size = nonzero = 1
    for d in shape:
        size *= d
        nonzero *= max(d, 1)
    # An empty array's other dimensions still make its shape: NumPy holds none whose
    # product (zeros left out) passes its index type, MXNet's C++ allocates nothing.
    if nonzero * max(dtype.itemsize, 1) > np.iinfo(np.intp).max:
        raise _error(
            where,
            start,
            "an array shape NumPy can hold (its non-zero dimensions' product in bytes below 2**63)",
            shape,
        )
    begin = r.take(size * dtype.itemsize, "the array's data")
    if not size:
        return np.zeros(shape, "f4" if flag == BFLOAT16 else dtype.newbyteorder("=")), r.offset
    array = np.frombuffer(data, dtype, size, begin).reshape(shape)
    if flag == BFLOAT16:
        array = (array.astype("<u4") << 16).view("<f4")
    return array.astype(array.dtype.newbyteorder("="), copy=True), r.offset


def read_ndarray_list(data, where):
    """``mx.nd.save``'s format: ``(arrays, names)``, the names ``[]`` for a list saved
    without names.  The whole of ``data`` must be the list."""
    r = _Reader(data, 0, where)
    magic = r.unpack("<Q", "the NDArray list magic 0x112")
    if magic != LIST_MAGIC:
        raise _error(where, 0, "the NDArray list magic 0x112 (an MXNet .params file)", hex(magic))
    r.unpack("<Q", "the reserved word")
    at = r.offset
    count = r.unpack("<Q", "the number of arrays")
    if count > r.left() // 4:
        raise _error(where, at, "a number of arrays the file can hold", count)
    arrays = []
    for _ in range(count):
        array, r.offset = read_ndarray(data, r.offset, where)
        arrays.append(array)
    at = r.offset
    n_names = r.unpack("<Q", "the number of names")
    if n_names not in (0, count):
        raise _error(where, at, "%d names (one per array) or none" % count, n_names)
    names = []
    for _ in range(n_names):
        at = r.offset
        length = r.unpack("<Q", "a name's length")
        start = r.take(length, "a name")
        try:
            names.append(data[start : start + length].decode("utf-8"))
        except UnicodeDecodeError:
            raise _error(where, at, "a name in UTF-8") from None
    if r.left():
        raise _error(where, r.offset, "the end of the file", "%d more bytes" % r.left())
    return arrays, names
