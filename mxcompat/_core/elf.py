"""mxcompat's one ELF reader.  What it reads: the flags of the ``PT_GNU_STACK`` program header,
which say whether a library asks for an executable stack (the one field it also writes, for the
``exec_stack`` patch); and, through the section headers, a library's ``DT_NEEDED`` and
``DT_RUNPATH``/``DT_RPATH`` entries, the symbols it imports, where a named section lies
(``.nv_fatbin``, read by ``mxcompat/cuda/fatbin.py``); and, through the program headers, its
GNU build ID (the hash of its content the linker wrote, read by the ``operator_cache`` patch).

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


# The section headers: e_ident[EI_CLASS] -> (offset and format of e_shoff; offset of
# e_shentsize, e_shnum, e_shstrndx; one section header's fields as read below; a dynamic entry;
# a symbol's (name, section index) and its size).
_SECTIONS = {
    1: (32, "I", 46, "IIIIIIIIII", "iI", (0, "I", 14, "H"), 16),
    2: (40, "Q", 58, "IIQQQQIIQQ", "qQ", (0, "I", 6, "H"), 24),
}
DT_NEEDED, DT_RPATH, DT_RUNPATH = 1, 15, 29
SHT_DYNAMIC, SHT_DYNSYM = 6, 11


class Section:
    __slots__ = ("name", "type", "offset", "size", "link")

    def __init__(self, name, type, offset, size, link):
        self.name, self.type, self.offset, self.size, self.link = name, type, offset, size, link


def _read_exact(f, offset, size):
    f.seek(offset)
    data = f.read(size)
    if len(data) != size:
        raise ValueError("truncated ELF file")
    return data


def sections(f):
    """The sections of the open ELF file ``f`` in their order, and the byte order and class:
    ``([Section], "<" or ">", 1 or 2)``.  ``ValueError`` where ``f`` is no ELF file read here."""
    f.seek(0)
    ident = f.read(64)
    if len(ident) < 52 or ident[:4] != b"\x7fELF":
        raise ValueError("not an ELF file")
    kind = _SECTIONS.get(ident[4])
    order = _BYTE_ORDERS.get(ident[5])
    if kind is None or order is None:
        raise ValueError("an ELF class or byte order mxcompat does not read")
    shoff_at, shoff_format, counts_at, header_format = kind[:4]
    (shoff,) = struct.unpack_from(order + shoff_format, ident, shoff_at)
    entsize, count, names_index = struct.unpack_from(order + "HHH", ident, counts_at)
    header = struct.Struct(order + header_format)
    if not count or entsize < header.size or names_index >= count:
        raise ValueError("no section headers mxcompat reads")
    table = _read_exact(f, shoff, entsize * count)
    rows = [header.unpack_from(table, i * entsize) for i in range(count)]
    names = rows[names_index]
    names_data = _read_exact(f, names[4], names[5])
    found = []
    for row in rows:
        end = names_data.find(b"\0", row[0])
        name = names_data[row[0] : end if end >= 0 else None].decode("latin-1")
        found.append(Section(name, row[1], row[4], row[5], row[6]))
    return found, order, ident[4]


def section(path, name):
    """``(offset, size)`` of section ``name`` in the file at ``path``, or ``None``."""
    with open(path, "rb") as f:
        for s in sections(f)[0]:
            if s.name == name:
                return s.offset, s.size
    return None


def _string(table, at):
    end = table.find(b"\0", at)
    return table[at : end if end >= 0 else None].decode("latin-1")


def _string_at(f, strings, at):
    # One name of a string table without reading the table (libmxnet.so's .dynstr is 27 MB).
    if at >= strings.size:
        raise ValueError("a string outside its table")
    f.seek(strings.offset + at)
    data = f.read(min(4096, strings.size - at))
    end = data.find(b"\0")
    return data[: end if end >= 0 else None].decode("latin-1")


def dynamic(path):
    """The dynamic entries of the library at ``path`` that name something: ``{"needed": [...],
    "runpath": [...]}``, the ``DT_NEEDED`` sonames in order and the folders of ``DT_RUNPATH``
    (or of ``DT_RPATH`` where it has no ``DT_RUNPATH``), unexpanded (``$ORIGIN`` as written)."""
    with open(path, "rb") as f:
        found, order, kind = sections(f)
        entry = struct.Struct(order + _SECTIONS[kind][4])
        needed, runpath, rpath = [], [], []
        for s in found:
            if s.type != SHT_DYNAMIC or s.link >= len(found):
                continue
            strings = found[s.link]
            data = _read_exact(f, s.offset, s.size - s.size % entry.size)
            for tag, value in entry.iter_unpack(data):
                if tag == DT_NEEDED:
                    needed.append(_string_at(f, strings, value))
                elif tag in (DT_RUNPATH, DT_RPATH):
                    folders = [p for p in _string_at(f, strings, value).split(":") if p]
                    (runpath if tag == DT_RUNPATH else rpath).extend(folders)
    return {"needed": needed, "runpath": runpath or rpath}


def imported_symbols(path):
    """The names of the dynamic symbols the library at ``path`` imports (undefined in it), in
    the order of its ``.dynsym``."""
    with open(path, "rb") as f:
        found, order, kind = sections(f)
        name_at, name_format, index_at, index_format = _SECTIONS[kind][5]
        size = _SECTIONS[kind][6]
        names = []
        for s in found:
            if s.type != SHT_DYNSYM or s.link >= len(found):
                continue
            strings = found[s.link]
            table = _read_exact(f, strings.offset, strings.size)
            data = _read_exact(f, s.offset, s.size - s.size % size)
            for at in range(0, len(data), size):
                (name,) = struct.unpack_from(order + name_format, data, at + name_at)
                (index,) = struct.unpack_from(order + index_format, data, at + index_at)
                if index == 0 and name:
                    names.append(_string(table, name))
    return names


NT_GNU_BUILD_ID = 3
PT_NOTE = 4
# e_ident[EI_CLASS] -> a program header's (p_type, p_offset, p_filesz, p_align), as unpacked
# from its fields in their order.
_PROGRAM = {1: ("IIIIIIII", (0, 1, 4, 7)), 2: ("IIQQQQQQ", (0, 2, 5, 7))}


def build_id(path):
    """The GNU build ID of the library at ``path`` (its ``NT_GNU_BUILD_ID`` note: a hash of
    the content, written by the linker) as a hex string, or ``None`` where it has none.  Read
    through the program headers (``PT_NOTE``), which a loadable file always has (MXNet
    1.6.0's ``libmxnet.so`` has no section headers this reader reads); a few small reads.
    ``ValueError`` where ``path`` is no ELF file read here."""
    with open(path, "rb") as f:
        ident = f.read(64)
        if len(ident) < 52 or ident[:4] != b"\x7fELF":
            raise ValueError("not an ELF file")
        layout = _CLASSES.get(ident[4])
        order = _BYTE_ORDERS.get(ident[5])
        if layout is None or order is None:
            raise ValueError("an ELF class or byte order mxcompat does not read")
        phoff_at, phoff_format, counts_at, _, smallest = layout
        (phoff,) = struct.unpack_from(order + phoff_format, ident, phoff_at)
        phentsize, phnum = struct.unpack_from(order + "HH", ident, counts_at)
        if phnum == _PN_XNUM or (phnum and phentsize < smallest):
            raise ValueError("program headers mxcompat does not read")
        header, fields = _PROGRAM[ident[4]]
        header = struct.Struct(order + header)
        table = _read_exact(f, phoff, phentsize * phnum)
        for index in range(phnum):
            row = header.unpack_from(table, index * phentsize)
            kind, offset, size, align = (row[i] for i in fields)
            if kind == PT_NOTE and 0 < size <= 65536:
                found = _build_id_note(_read_exact(f, offset, size), order, 8 if align == 8 else 4)
                if found is not None:
                    return found
    return None


def _build_id_note(notes, order, align):
    at = 0
    while at + 12 <= len(notes):
        name_size, desc_size, kind = struct.unpack_from(order + "III", notes, at)
        name_at = at + 12
        desc_at = name_at + (name_size + align - 1) // align * align
        end = desc_at + (desc_size + align - 1) // align * align
        if desc_at + desc_size > len(notes):
            return None
        if kind == NT_GNU_BUILD_ID and notes[name_at : name_at + name_size] == b"GNU\0":
            return notes[desc_at : desc_at + desc_size].hex() or None
        at = end
    return None
