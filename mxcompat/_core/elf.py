"""The one ELF field this patch reads and writes: the flags of the ``PT_GNU_STACK`` program
header, which say whether a library asks for an executable stack.

Written for mxcompat (no ``patchelf``/``execstack`` process, no dependency): the ELF header
gives where the program headers are (``e_phoff``), how big each is (``e_phentsize``) and how
many (``e_phnum``); the ``PT_GNU_STACK`` entry's ``p_flags`` holds ``PF_X``.  32- and 64-bit
files of either byte order are read; anything else (not ELF, truncated, more than 65535
program headers) is left alone as ``UNREADABLE``.
"""

import struct

PT_GNU_STACK = 0x6474E551
PF_X = 0x1

# What ``stack()`` finds; only EXECUTABLE is ever changed (``clear_executable``).
EXECUTABLE = "asks for an executable stack"
NOT_EXECUTABLE = "asks for a non-executable stack"
NO_HEADER = "has no PT_GNU_STACK program header"
UNREADABLE = "is not an ELF file mxcompat reads"

# e_ident[EI_CLASS] -> (offset and format of e_phoff, of e_phentsize + e_phnum; the offset of
# p_flags inside a program header; the smallest program header).
_CLASSES = {
    1: (28, "I", 42, 4 * 6, 32),  # ELF32: p_flags after six 4-byte fields
    2: (32, "Q", 54, 4, 56),  # ELF64: p_flags right after p_type
}
_BYTE_ORDERS = {1: "<", 2: ">"}
_PN_XNUM = 0xFFFF  # the real count is elsewhere (section 0): no shared library needs that


def _locate(f):
    """``(outcome, offset of p_flags in the file, p_flags, struct byte order)``."""
    ident = f.read(64)
    if len(ident) < 52 or ident[:4] != b"\x7fELF":
        return UNREADABLE, None, None, None
    layout = _CLASSES.get(ident[4])
    order = _BYTE_ORDERS.get(ident[5])
    if layout is None or order is None:
        return UNREADABLE, None, None, None
    phoff_at, phoff_format, counts_at, flags_at, smallest = layout
    if len(ident) < counts_at + 4:
        return UNREADABLE, None, None, None
    (phoff,) = struct.unpack_from(order + phoff_format, ident, phoff_at)
    phentsize, phnum = struct.unpack_from(order + "HH", ident, counts_at)
    if phnum == _PN_XNUM or (phnum and phentsize < smallest):
        return UNREADABLE, None, None, None
    f.seek(phoff)
    table = f.read(phentsize * phnum)
    if len(table) < phentsize * phnum:
        return UNREADABLE, None, None, None
    for index in range(phnum):
        at = index * phentsize
        (p_type,) = struct.unpack_from(order + "I", table, at)
        if p_type == PT_GNU_STACK:
            (flags,) = struct.unpack_from(order + "I", table, at + flags_at)
            outcome = EXECUTABLE if flags & PF_X else NOT_EXECUTABLE
            return outcome, phoff + at + flags_at, flags, order
    return NO_HEADER, None, None, None


def stack(path):
    """What the library at ``path`` (or an open binary file, e.g. a wheel's member) asks of
    the stack: one of the four outcomes above."""
    if hasattr(path, "read"):
        return _locate(path)[0]
    with open(path, "rb") as f:
        return _locate(f)[0]


def stack_flags(path):
    """The ``p_flags`` of ``path``'s ``PT_GNU_STACK`` header (``PF_R | PF_W`` is 6, with
    ``PF_X`` 7), or ``None`` where ``stack()`` finds none."""
    with open(path, "rb") as f:
        return _locate(f)[2]


def clear_executable(path):
    """Clear ``PF_X`` in the ``PT_GNU_STACK`` header of the file at ``path``, in place (one
    4-byte field, nothing else of the file changes).  Returns what ``stack()`` found before:
    only an ``EXECUTABLE`` file is written to."""
    with open(path, "r+b") as f:
        outcome, offset, flags, order = _locate(f)
        if outcome == EXECUTABLE:
            f.seek(offset)
            f.write(struct.pack(order + "I", flags & ~PF_X))
    return outcome
