"""The cache's files: one per ``libmxnet.so`` and Python (and ``-O`` level), in a folder only
the user can write.

    MAGIC | length (4 bytes) | library | length | key | CRC-32 of what follows MAGIC | payload

``library`` is the real path of the ``libmxnet.so`` the file is for (as the file system
spells it); the key is the ``repr`` of a tuple of strings and numbers (what the generated code
depends on, ``operator_cache._key``), compared byte for byte with this process's; the payload
is one ``marshal`` dump of ``{(section, operator, function name, digits of the handle):
entry}``.  ``marshal`` is not safe against damaged or crafted input (a code object with bad
bytecode can crash the interpreter when run), so nothing is unmarshalled unless the folder and
the file belong to this user and nobody else may write them, the key matches and the CRC-32 of
what was read is the writer's (against damage, as in zip and gzip; the folder's rights keep
others out).  Written under a temporary name and renamed: a reader sees a whole file or none,
and processes that write at once leave one of their (equal) files.  Each write also removes
the files of libraries that no longer exist (an environment deleted), of another format, and
temporary files a killed writer left behind.
"""

import hashlib
import marshal
import os
import stat
import struct
import time
import zlib

from ..._core import settings

_FORMAT = b"mxcompat operator cache "  # then the format's number
MAGIC = _FORMAT + b"2\n"
_LENGTH = struct.Struct("<I")
_CRC = struct.Struct("<I")
_LARGEST = 1 << 28  # MXNet 1.9.1's is about 8 MB: anything this big is not ours
_SUFFIX = ".bin"
_WRITING = ".writing-"
_STALE = 3600  # seconds after which a temporary file is a killed writer's


def folder():
    """``$MXCOMPAT_OPERATOR_CACHE``, else ``mxcompat/operators`` in the user's cache folder
    (``settings.cache_folder``)."""
    return settings.cache_folder("operators", settings.OPERATOR_CACHE)


def path_for(library, tag):
    """The cache file of ``library`` (a real path) for this Python (``tag``)."""
    digest = hashlib.sha256(("%s\0%s" % (library, tag)).encode()).hexdigest()[:16]
    name = os.path.basename(library).split(".so")[0]
    return os.path.join(folder(), "%s-%s%s" % (name, digest, _SUFFIX))


def _private(st):
    # Owned by this user, and neither group nor others may write it.
    return st.st_uid == getattr(os, "getuid", lambda: -1)() and not st.st_mode & 0o022


def _field(data, at):
    """The length-prefixed field at ``at``: ``(bytes, where the next begins)``, or
    ``(None, None)`` where ``data`` is too short."""
    end = at + _LENGTH.size
    if len(data) < end:
        return None, None
    (length,) = _LENGTH.unpack_from(data, at)
    if len(data) < end + length:
        return None, None
    return data[end : end + length], end + length


def _library_of(data):
    if not data.startswith(MAGIC):
        return None
    return _field(data, len(MAGIC))[0]


def read(path, library, key):
    """The entries stored at ``path`` for ``library`` and ``key`` (bytes), or ``None`` where
    there is none, or any doubt: another library or key, a file or folder someone else could
    have written, a truncated or damaged file."""
    try:
        if not _private(os.stat(os.path.dirname(path))):
            return None
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags)
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
    if _library_of(data) != library:
        return None
    stored, at = _field(data, _field(data, len(MAGIC))[1])
    if stored != key or len(data) < at + _CRC.size:
        return None
    body = memoryview(data)[at + _CRC.size :]
    crc = zlib.crc32(body, zlib.crc32(memoryview(data)[len(MAGIC) : at]))
    if _CRC.unpack_from(data, at)[0] != crc:
        return None
    try:
        entries = marshal.loads(body)
    except (ValueError, EOFError, TypeError):
        return None
    return entries if type(entries) is dict else None


def write(path, library, key, entries):
    """Store ``entries`` for ``library`` and ``key`` at ``path``, atomically.  ``OSError``
    where it cannot be written; nothing is written into a folder others may write."""
    where = os.path.dirname(path)
    os.makedirs(where, mode=0o700, exist_ok=True)
    if not _private(os.stat(where)):
        raise OSError("%s may be written by others than its owner" % where)
    import tempfile  # only when writing: it imports random, shutil…

    payload = marshal.dumps(entries)
    head = _LENGTH.pack(len(library)) + library + _LENGTH.pack(len(key)) + key
    crc = zlib.crc32(payload, zlib.crc32(head))
    fd, temp = tempfile.mkstemp(prefix=_WRITING, dir=where)  # mode 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC + head + _CRC.pack(crc))
            f.write(payload)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    _prune(where, os.path.basename(path))


def _prune(where, keep):
    # Our files (by their first bytes: the folder may be one the user named) of libraries
    # that are gone or of another format, and killed writers' temporary files.
    now = time.time()
    for name in os.listdir(where):
        path = os.path.join(where, name)
        try:
            if name.startswith(_WRITING):
                if now - os.lstat(path).st_mtime > _STALE:
                    os.unlink(path)
            elif name.endswith(_SUFFIX) and name != keep:
                with open(path, "rb") as f:
                    data = f.read(len(MAGIC) + _LENGTH.size + 4096)
                library = _library_of(data)
                if data.startswith(_FORMAT) and (
                    library is None or not os.path.exists(os.fsdecode(library))
                ):
                    os.unlink(path)
        except OSError:
            pass  # another process's, removed meanwhile
