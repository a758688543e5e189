"""The cache's file: one per ``libmxnet.so`` and Python (and ``-O`` level), in a folder only
the user can write.

    MAGIC | length of the key (4 bytes) | key | SHA-1 of key + payload | payload

The key is the ``repr`` of a tuple of strings and numbers (what the generated code depends
on: ``Session.key``), compared byte for byte with this process's; the payload is one
``marshal`` dump of ``{(section, operator, function name): (code, docstring, handle)}``.
``marshal`` is not safe against damaged or crafted input (a code object with bad bytecode can
crash the interpreter when run), so nothing is unmarshalled unless the folder and the file
belong to this user and nobody else may write them, the key matches and the digest of what
was read is the one the writer computed.  Written under a temporary name and renamed: a
reader sees a whole file or none, and processes that write at once leave one of their (equal)
files.
"""

import hashlib
import marshal
import os
import stat
import struct
import tempfile

from ..._core import settings

MAGIC = b"mxcompat operator cache 1\n"
_LENGTH = struct.Struct("<I")
_DIGEST = 20  # SHA-1: against damage (the folder's rights keep others out), and fast
_LARGEST = 1 << 28  # MXNet 1.9.1's is about 10 MB: anything this big is not ours


def folder():
    """``$MXCOMPAT_OPERATOR_CACHE``, else ``mxcompat/operators`` in the user's cache folder
    (``settings.cache_folder``)."""
    return settings.cache_folder("operators", settings.OPERATOR_CACHE)


def path_for(library, tag):
    """The cache file of ``library`` (a real path) for this Python (``tag``)."""
    digest = hashlib.sha256(("%s\0%s" % (library, tag)).encode()).hexdigest()[:16]
    name = os.path.basename(library).split(".so")[0]
    return os.path.join(folder(), "%s-%s.bin" % (name, digest))


def _private(st):
    # Owned by this user, and neither group nor others may write it.
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def read(path, key):
    """The payload's entries stored at ``path`` for ``key`` (bytes), or ``None`` where there
    is none, or any doubt: another key, a file or folder someone else could have written, a
    truncated or damaged file."""
    try:
        if not _private(os.stat(os.path.dirname(path))):
            return None
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not (stat.S_ISREG(st.st_mode) and _private(st)) or st.st_size > _LARGEST:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read()
    except OSError:
        return None
    finally:
        os.close(fd)
    start = len(MAGIC) + _LENGTH.size
    if len(data) < start or not data.startswith(MAGIC):
        return None
    (length,) = _LENGTH.unpack_from(data, len(MAGIC))
    if data[start : start + length] != key:
        return None
    body = start + length + _DIGEST
    if len(data) < body:
        return None
    digest = hashlib.sha1(memoryview(data)[len(MAGIC) : start + length])
    digest.update(memoryview(data)[body:])
    if digest.digest() != data[start + length : body]:
        return None
    try:
        entries = marshal.loads(memoryview(data)[body:])
    except (ValueError, EOFError, TypeError):
        return None
    return entries if isinstance(entries, dict) else None


def write(path, key, entries):
    """Store ``entries`` for ``key`` at ``path``, atomically.  ``OSError`` where it cannot be
    written; nothing is written into a folder others may write."""
    where = os.path.dirname(path)
    os.makedirs(where, mode=0o700, exist_ok=True)
    if not _private(os.stat(where)):
        raise OSError("%s may be written by others than its owner" % where)
    payload = marshal.dumps(entries)
    head = MAGIC + _LENGTH.pack(len(key)) + key
    digest = hashlib.sha1(head[len(MAGIC) :])
    digest.update(payload)
    fd, temp = tempfile.mkstemp(prefix=".writing-", dir=where)  # mode 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(head)
            f.write(digest.digest())
            f.write(payload)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
