"""The GPU architectures a library carries, read from its ``.nv_fatbin`` section in Python (no
``cuobjdump``).

The section holds fat binaries one after the other.  Each starts with a 16-byte header: the
magic ``0xBA55ED50``, a 2-byte version, a 2-byte header size, an 8-byte size of the entries that
follow.  Each entry starts with its own header: a 2-byte kind (1: PTX, 2: an ELF cubin of
machine code), 2 bytes, a 4-byte header size, an 8-byte payload size, and at byte 28 the
4-byte architecture (``86`` for sm_86); the next entry follows the payload.  Only the headers
are read (a few bytes per entry), so a 900 MB ``libmxnet.so`` takes well under a second; the
answer is cached per file (path, size, modification time) in this process and on disk
(``settings.cache_folder("arch")``), so ``mxcompat check`` and the first GPU context read it
once per installed wheel.
"""

import json
import os
import struct

from .._core import elf, settings

MAGIC = 0xBA55ED50
KIND_PTX, KIND_CUBIN = 1, 2
_CONTAINER = struct.Struct("<IHHQ")
_ENTRY = struct.Struct("<HHIQ")
_ARCH_AT = 28

_memo: dict = {}


class Architectures:
    """``sm``: the architectures with machine code (``(8, 6)`` for sm_86), sorted; ``ptx``:
    those with PTX, which a newer GPU's driver could compile."""

    __slots__ = ("sm", "ptx")

    def __init__(self, sm, ptx):
        self.sm = tuple(sorted(set(sm)))
        self.ptx = tuple(sorted(set(ptx)))

    def names(self):
        """``["sm_50", ..., "compute_86"]``: cuobjdump's names, machine code then PTX."""
        return ["sm_%d%d" % a for a in self.sm] + ["compute_%d%d" % a for a in self.ptx]

    def __eq__(self, other):
        return isinstance(other, Architectures) and (self.sm, self.ptx) == (other.sm, other.ptx)

    def __repr__(self):
        return "Architectures(%s)" % ", ".join(self.names())


def _split(number):
    # 86 -> (8, 6), 120 -> (12, 0): the minor is the last digit.
    return divmod(number, 10)


def read(path):
    """The ``Architectures`` of the library at ``path`` (empty where it has no
    ``.nv_fatbin``: a CPU build).  ``ValueError`` where the section is not laid out as above."""
    where = elf.section(path, ".nv_fatbin")
    sm, ptx = set(), set()
    if where is None:
        return Architectures(sm, ptx)
    start, size = where
    end = start + size
    with open(path, "rb") as f:
        at = start
        while at + _CONTAINER.size <= end:
            f.seek(at)
            head = f.read(_CONTAINER.size)
            magic, _version, header_size, entries_size = _CONTAINER.unpack(head)
            if magic != MAGIC:
                if head == b"\0" * len(head):  # padding between fat binaries
                    at += 8
                    continue
                raise ValueError("%s: no fat binary header at byte %d" % (path, at))
            entry = at + header_size
            stop = entry + entries_size
            while entry + _ARCH_AT + 4 <= stop:
                f.seek(entry)
                data = f.read(_ARCH_AT + 4)
                kind, _flags, entry_header, payload = _ENTRY.unpack_from(data)
                (arch,) = struct.unpack_from("<I", data, _ARCH_AT)
                if kind == KIND_CUBIN:
                    sm.add(_split(arch))
                elif kind == KIND_PTX:
                    ptx.add(_split(arch))
                if entry_header == 0:
                    raise ValueError("%s: an empty fat binary entry at byte %d" % (path, entry))
                entry += entry_header + payload
            at = stop
    return Architectures(sm, ptx)


def _key(path):
    st = os.stat(path)
    return "%s:%d:%d" % (os.path.realpath(path), st.st_size, st.st_mtime_ns)


def cached(path):
    """``read(path)``, from this process's memo or the disk cache where the file is unchanged."""
    key = _key(path)
    if key in _memo:
        return _memo[key]
    store = os.path.join(settings.cache_folder("arch"), "architectures.json")
    try:
        with open(store) as f:
            known = json.load(f)
    except (OSError, ValueError):
        known = {}
    if key in known:
        found = Architectures([tuple(a) for a in known[key][0]], [tuple(a) for a in known[key][1]])
    else:
        found = read(path)
        known[key] = [found.sm, found.ptx]
        try:
            os.makedirs(os.path.dirname(store), exist_ok=True)
            partial = "%s.%d" % (store, os.getpid())
            with open(partial, "w") as f:
                json.dump(known, f)
            os.replace(partial, store)
        except OSError:
            pass  # an unwritable cache only costs the read again
    _memo[key] = found
    return found
