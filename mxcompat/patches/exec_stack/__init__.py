"""MXNet 1.3-1.6 on glibc 2.41 and newer, whose ``dlopen`` refuses their ``libmxnet.so``.

The pip wheels of 1.3.1, 1.4.1, 1.5.1.post0 and 1.6.0 link ``libmxnet.so`` with a
``PT_GNU_STACK`` program header that asks for an executable stack
(``facts.LIBMXNET_STACK_NOT_EXECUTABLE``).  Since glibc 2.41
(``facts.GLIBC_DLOPEN_REFUSES_EXECSTACK``) ``dlopen`` no longer makes the stack executable for
a library: ``import mxnet`` fails in ``mxnet/base.py``'s ``_load_lib``, before any other code
of MXNet has run (``OSError: …/libmxnet.so: cannot enable executable stack as shared object
requires: Invalid argument``).

What the patch does, where this process's glibc refuses such a library: while
``mxnet/base.py`` runs (the one place every release loads the library: ``_load_lib`` takes
``libinfo.find_lib_path()[0]``, the installed file or ``$MXNET_LIBRARY_PATH``), the path
``find_lib_path`` returns is checked; if that library asks for an executable stack, MXNet gets
instead a copy whose one flag (``PF_X`` of ``PT_GNU_STACK``) is cleared, kept in a per-user
cache (``copies.py``; ``$MXCOMPAT_LIB_CACHE``) with links to the libraries beside the
original that the copy's ``RPATH=$ORIGIN`` looks for.  Once ``mxnet.base`` has loaded, MXNet's
own ``find_lib_path`` is back: ``mx.libinfo.find_lib_path()`` names the installed file, as
for every other tool that reads it.  Patch name ``exec_stack``.

Why a copy, and not the alternatives:

* ``GLIBC_TUNABLES=glibc.rtld.execstack=2`` (glibc 2.42+) lets ``dlopen`` make the stack
  executable again, but glibc reads it at process start only: ``import mxcompat`` inside a
  running program cannot use it, only ``mxcompat run``'s children could, and it would make
  every thread's stack of the process executable (what 2.41 turned off, for security) where
  the copy changes one library's request.  Where a user sets it, glibc allows the library and
  this patch does nothing.
* Changing the installed file needs write access to site-packages, changes what ``pip``
  installed (``pip check``/RECORD hashes) and other environments sharing it.
* ``patchelf``/``execstack`` may not be installed; the flag is one 4-byte field
  (``elf.py``).

Clearing the flag is safe for these wheels: nothing in MXNet runs code on the stack (the flag
comes from objects linked without a ``.note.GNU-stack`` section); the tests run MXNet's BLAS,
convolution and Module/Gluon paths from the copy on every release that needs it.  Had code
needed it, it would crash with ``SIGSEGV``, not compute something else.

Nothing changes where the trap does not exist: on a glibc older than 2.41, under the tunable,
when the stack is already executable, on musl or outside Linux the patch does not apply; a
library that does not ask for an executable stack (1.7+), or that this reader cannot read, is
loaded as it is.  Where the copy cannot be made (the cache cannot be written), one
``MXCompatWarning`` says so and MXNet's own ``OSError`` follows.
"""

import functools
import os
import sys

from ..._core import elf, facts, hooks, settings
from ..._core.about import VERSION
from ..._core.log import logger, step_aside
from ..._core.registry import Patch, record, register

PATCH = "exec_stack"


def glibc_version():
    """The running glibc's (major, minor), or ``None`` (musl, not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):
        return None
    name, _, number = text.partition(" ")
    return facts.parse_version(number)[:2] if name == "glibc" and number else None


def _tunable_allows():
    # glibc reads GLIBC_TUNABLES once, at start: os.environ still holds what it read unless the
    # program changed it since (a rare case, where the copy is then made without need).
    for item in os.environ.get("GLIBC_TUNABLES", "").split(":"):
        name, _, value = item.partition("=")
        if name.strip() == "glibc.rtld.execstack" and value.strip() == "2":
            return True
    return False


def _stack_already_executable():
    # glibc 2.41+ still loads such a library when the stack already is executable (a program
    # linked so): then there is nothing to do.
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                if line.rstrip().endswith("[stack]"):
                    return "x" in line.split()[1]
    except OSError:
        pass
    return False


@functools.lru_cache(maxsize=None)
def glibc_refuses():
    """Whether this process's glibc refuses to load a library that asks for an executable
    stack: glibc 2.41 or newer, not told otherwise (GLIBC_TUNABLES glibc.rtld.execstack=2,
    2.42+), its stack not executable already."""
    version = glibc_version()
    if version is None or version < facts.GLIBC_DLOPEN_REFUSES_EXECSTACK:
        return False
    if _tunable_allows() and version >= facts.GLIBC_EXECSTACK_TUNABLE_ALLOWS:
        return False
    return not _stack_already_executable()


def without_mxcompat(env):
    """``env`` (a dict) for a process that must load MXNet as released, without mxcompat (a
    reference run): where glibc refuses the executable stack 1.3-1.6's library asks for,
    glibc's own switch (2.42+, read at process start) is added to the tunables it already
    has.  It changes the stack's permissions only, never a computation."""
    if not glibc_refuses():
        return env
    tunables = [t for t in env.get("GLIBC_TUNABLES", "").split(":") if t]
    return dict(env, GLIBC_TUNABLES=":".join(tunables + ["glibc.rtld.execstack=2"]))


def loadable(path):
    """The path of a library glibc loads in place of ``path``: ``path`` itself unless it asks
    for an executable stack, else its cleared copy (``path`` where none can be made, after one
    warning)."""
    try:
        found = elf.stack(path)
    except OSError:
        return path  # MXNet's own error says what is wrong with it
    if found != elf.EXECUTABLE:
        logger.debug("%s %s: loaded as it is", path, found)
        return path
    from . import copies  # hashlib, shutil, tempfile: only where a copy is needed

    try:
        copy = copies.cleared_copy(path, VERSION)
    except OSError:
        step_aside(
            ("exec-stack-copy", path),
            "{path} asks for an executable stack, which glibc {glibc} refuses; mxcompat could "
            "not make a copy without that flag in {folder} ({error}), so MXNet will fail to "
            "load it. Set {variable} to a folder you can write to.",
            path=path,
            glibc=".".join(map(str, glibc_version() or ())),
            folder=copies.cache_root(),
            variable=settings.LIB_CACHE,
        )
        return path
    logger.debug("%s asks for an executable stack: MXNet loads %s", path, copy)
    return copy


def _loading_base():
    base = sys.modules.get("mxnet.base")
    return base is not None and hooks._initializing(base)


def _find_lib_path(wrapped, instance, args, kwargs):
    paths = wrapped(*args, **kwargs)
    if not _loading_base() or not paths:
        return paths
    chosen = loadable(paths[0])
    if chosen == paths[0]:
        return paths
    record(PATCH)
    return [chosen] + list(paths[1:])


def _wrap(libinfo):
    import wrapt

    wrapt.wrap_function_wrapper(libinfo, "find_lib_path", _find_lib_path)
    hooks.when_imported("mxnet.base", lambda base: _unwrap(libinfo))


def _unwrap(libinfo):
    current = libinfo.__dict__.get("find_lib_path")
    if getattr(current, "_self_wrapper", None) is _find_lib_path:
        libinfo.find_lib_path = current.__wrapped__


def _before_mxnet(version):
    if glibc_refuses():
        hooks.when_imported("mxnet.libinfo", _wrap)


# Every release (the flag is read from the library MXNet is about to load: a wheel, a
# variant such as mxnet-mkl, or a build of one's own); glibc >= 2.41 only (when=glibc_refuses).
register(
    Patch(
        PATCH,
        "MXNet 1.3-1.6 on glibc >= 2.41: libmxnet.so is loaded from a cached copy "
        "that does not ask for an executable stack.",
        when=glibc_refuses,
        before_import=_before_mxnet,
    )
)
