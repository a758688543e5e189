"""The cleared copies: one folder per library in a per-user cache, made once, shared by every
process.

A folder ``<cache>/<name>-<where>-<stamp>/`` holds the copy under the library's own file name
(so ``/proc/<pid>/maps``, error messages and the library's ``SONAME`` read as before) and a
symbolic link to every other shared library of the original's folder: MXNet's wheels link
``libmxnet.so`` with ``RPATH=$ORIGIN`` and ship ``libgfortran.so.3`` and ``libquadmath.so.0``
beside it (1.8+ also ``libopenblas.so.0``), which the dynamic loader then looks for beside the
copy.  ``<where>`` names the original's path, ``<stamp>`` its size, mtime, inode and
mxcompat's version: a reinstalled MXNet or another mxcompat gets a new folder, and the
folders of the same path's older stamps are removed (a process that mapped one keeps its
mapping).

The folder is filled under a temporary name and renamed into place, so another process sees
the whole folder or none: two processes that start together both build one, the first
rename wins and the other uses it.
"""

import hashlib
import os
import shutil
import tempfile

from ..._core import elf, settings


def cache_root():
    """Where the copies go: ``$MXCOMPAT_LIB_CACHE``, else ``mxcompat/libs`` in the user's cache
    folder (``settings.cache_folder``)."""
    return settings.cache_folder("libs", settings.LIB_CACHE)


def _digest(*parts):
    return hashlib.sha256("\0".join(str(p) for p in parts).encode()).hexdigest()[:12]


def folder_for(original, version):
    """The cache folder of ``original`` (a real path) as it is now, for mxcompat ``version``."""
    st = os.stat(original)
    name = os.path.basename(original).split(".so")[0]
    where = _digest(original)
    stamp = _digest(st.st_size, st.st_mtime_ns, st.st_ino, version)
    return os.path.join(cache_root(), "%s-%s-%s" % (name, where, stamp))


def _siblings(folder, skip):
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name != skip and (name.endswith(".so") or ".so." in name) and os.path.isfile(path):
            yield name, path


def _usable(copy, original):
    try:
        return (
            os.path.getsize(copy) == os.path.getsize(original)
            and elf.stack(copy) == elf.NOT_EXECUTABLE
        )
    except OSError:
        return False


def _build(original, temp):
    name = os.path.basename(original)
    copy = os.path.join(temp, name)
    shutil.copyfile(original, copy)
    shutil.copymode(original, copy)
    found = elf.clear_executable(copy)
    if found != elf.EXECUTABLE:
        raise OSError("%s %s" % (original, found))  # it changed while being copied
    with open(copy, "rb+") as f:
        os.fsync(f.fileno())  # the data is on disk before the folder's name says it is done
    for sibling, path in _siblings(os.path.dirname(original), name):
        os.symlink(path, os.path.join(temp, sibling))


def _remove_older(root, folder):
    prefix = os.path.basename(folder).rsplit("-", 1)[0] + "-"
    for entry in os.listdir(root):
        if entry.startswith(prefix) and entry != os.path.basename(folder):
            shutil.rmtree(os.path.join(root, entry), ignore_errors=True)


def cleared_copy(path, version):
    """The path of a copy of the library at ``path`` whose stack is not executable, made (or
    found) in the cache.  Raises ``OSError`` where the cache cannot be written."""
    original = os.path.realpath(path)
    folder = folder_for(original, version)
    copy = os.path.join(folder, os.path.basename(original))
    if _usable(copy, original):
        return copy
    root = os.path.dirname(folder)
    os.makedirs(root, exist_ok=True)
    temp = tempfile.mkdtemp(prefix=".building-", dir=root)
    try:
        _build(original, temp)
        if os.path.isdir(folder) and not _usable(copy, original):
            # Damaged (a file removed by hand): set aside, then replaced.
            os.rename(folder, tempfile.mkdtemp(prefix=".stale-", dir=root) + "/x")
        try:
            os.rename(temp, folder)
        except OSError:
            if not _usable(copy, original):  # not another process's finished folder
                raise
        else:
            temp = None
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
    for entry in os.listdir(root):
        if entry.startswith(".stale-"):
            shutil.rmtree(os.path.join(root, entry), ignore_errors=True)
    _remove_older(root, folder)
    return copy
