"""Every ``MXCOMPAT_*`` environment variable: its name, how its value is read and the help
``mxcompat --help`` prints for it; the environment without them (for a child process that must
not inherit them); and the one base folder of every cache.  Only ``os`` is imported: the import
hook reads these at ``import mxcompat``, before anything else of mxcompat is loaded.

The variables only the CI scripts and the tests of the packaging and the docs read
(``.ci/newroot``'s ``MXCOMPAT_ROOT_*``, ``MXCOMPAT_DIST``, ``MXCOMPAT_DOCS_HTML``) are
described where they are read."""

import os

PREFIX = "MXCOMPAT_"

DISABLE = "MXCOMPAT_DISABLE"  # a flag: no patch at all
DISABLE_PATCHES = "MXCOMPAT_DISABLE_PATCHES"  # a list: every patch but these
FREEZE = "MXCOMPAT_FREEZE"  # a list: parameter names / globs to freeze
NUMPY_LEGACY = "MXCOMPAT_NUMPY_LEGACY"  # a flag: the opt-in for users' NumPy code
# A list of module:Class a kvstore server may unpickle from a worker (patches/kvstore_server.py).
KVSTORE_CLASSES = "MXCOMPAT_KVSTORE_CLASSES"

# The tools' own: a traceback under each failed `mxcompat check` line; where `mxcompat matrix`
# caches its environments; the name of the matrix env a command runs in (set for it).
CHECK_TRACEBACK = "MXCOMPAT_CHECK_TRACEBACK"
MATRIX_CACHE = "MXCOMPAT_MATRIX_CACHE"
MATRIX_ENV = "MXCOMPAT_MATRIX_ENV"
# Where the copies of a library that asks for an executable stack go (patches/exec_stack/).
LIB_CACHE = "MXCOMPAT_LIB_CACHE"
# Where the code MXNet generates for its operators is kept (patches/operator_cache/).
OPERATOR_CACHE = "MXCOMPAT_OPERATOR_CACHE"
# Where a CUDA wheel's libraries come from (cuda/libs.py): "pip" prefers the nvidia-*-cu11
# packages to a system CUDA 11, "system" never loads them; unset: the system's, else pip's.
CUDA_LIBS = "MXCOMPAT_CUDA_LIBS"
# The project's own tests and tools: where they cache environments and wheels; a git directory
# of apache/mxnet, whose test files the MXNet-suite runner and its benchmark run.
TEST_CACHE = "MXCOMPAT_TEST_CACHE"
MXNET_SRC = "MXCOMPAT_MXNET_SRC"

# Set in the environment, these make `import mxcompat` load everything at once (a bad value
# is warned about at import, as always); the others are read when mxnet is imported.
READ_AT_IMPORT = (FREEZE, NUMPY_LEGACY, DISABLE_PATCHES)


# Every variable, for `mxcompat --help` (those marked ``help``) and the documentation's
# environment-variable page (generated from this tuple).  ``kind``: "flag" (yes/no, read by
# ``flag``), "list" (comma-separated, read by ``items``) or "path"/"name" (taken as it is).
class Variable:
    # A plain class: this module imports only os (see its docstring).
    __slots__ = ("name", "kind", "example", "effect", "help")

    def __init__(self, name, kind, example, effect, help):
        self.name = name
        self.kind = kind
        self.example = example
        self.effect = effect
        self.help = help


VARIABLES = (
    Variable(DISABLE, "flag", "1", "apply no patch at all", True),
    Variable(DISABLE_PATCHES, "list", "a,b", "apply every patch but these", True),
    Variable(FREEZE, "list", "p1,p2", "freeze these parameter names / globs at import", True),
    Variable(
        NUMPY_LEGACY,
        "flag",
        "1",
        "serve NumPy names today's NumPy removed to legacy code\n"
        "(np.asscalar, np.float...), one warning per name",
        True,
    ),
    Variable(
        KVSTORE_CLASSES,
        "list",
        "mymod:MyOpt",
        "classes of yours (module:Class) a kvstore server may unpickle from a worker\n"
        "besides MXNet's optimizers and schedulers: a custom optimizer or scheduler",
        True,
    ),
    Variable(
        CHECK_TRACEBACK,
        "flag",
        "1",
        "print a traceback under each failed mxcompat check line",
        False,
    ),
    Variable(
        MATRIX_CACHE,
        "path",
        "DIR",
        "where mxcompat matrix keeps its environments (default ~/.cache/mxcompat/matrix)",
        False,
    ),
    Variable(
        TEST_CACHE,
        "path",
        "DIR",
        "where mxcompat's own tests and the MXNet-suite runner keep their environments and\n"
        "wheels (default ~/.cache/mxcompat/tests)",
        False,
    ),
    Variable(
        MXNET_SRC,
        "path",
        "DIR",
        "a git directory of apache/mxnet: the MXNet-suite runner's and benchmark's test files",
        False,
    ),
    Variable(
        LIB_CACHE,
        "path",
        "DIR",
        "where copies of libmxnet.so without the executable-stack flag go on glibc >= 2.41\n"
        "(default ~/.cache/mxcompat/libs)",
        True,
    ),
    Variable(
        OPERATOR_CACHE,
        "path",
        "DIR",
        "where the code MXNet generates for its operators at import is kept\n"
        "(default ~/.cache/mxcompat/operators)",
        True,
    ),
    Variable(
        CUDA_LIBS,
        "name",
        "pip",
        "a CUDA wheel's libraries: pip = the nvidia-*-cu11 packages even over a system\n"
        "CUDA 11; system = never those (default: the system's, else the packages')",
        True,
    ),
    Variable(
        MATRIX_ENV,
        "name",
        "mx191",
        "set by mxcompat matrix: the name of the environment the command runs in",
        False,
    ),
)


def _help():
    lines = ["environment variables (read by every process that imports mxcompat):"]
    for v in VARIABLES:
        if v.help:
            first, *rest = v.effect.split("\n")
            lines.append("  %-32s %s" % ("%s=%s" % (v.name, v.example), first))
            lines.extend(" " * 35 + more for more in rest)
    return "\n".join(lines) + "\n"


HELP = _help()

_FALSY = ("", "0", "false", "no", "off")
_TRUTHY = ("1", "true", "yes", "on")


def flag(name):
    """Whether variable ``name`` is set to something true.  Anything that is neither a yes nor
    a no counts as set, with one warning saying so."""
    value = os.environ.get(name, "")
    word = value.strip().lower()
    if word in _FALSY:
        return False
    if word not in _TRUTHY:
        # Only on this path: log (logging, warnings) is not loaded by `import mxcompat`.
        from .log import warn_once

        warn_once(
            ("env-flag", name, value),
            "%s=%r is neither a yes (1, true, yes, on) nor a no (0, false, no, off, "
            "empty); mxcompat reads it as yes" % (name, value),
        )
    return True


def split(text):
    """The comma-separated items of ``text``, stripped, empty ones left out: how every list
    variable is read (also ``mxcompat run --freeze``'s value, which becomes one)."""
    return [item.strip() for item in text.split(",") if item.strip()]


def items(name):
    """The items of list variable ``name`` (``split``)."""
    return split(os.environ.get(name, ""))


def any_read_at_import():
    return any(os.environ.get(name) for name in READ_AT_IMPORT)


def path(name):
    """The folder or file path variable ``name`` holds (``~`` expanded, made absolute), or
    ``None`` where it is unset or empty."""
    value = os.environ.get(name)
    return os.path.abspath(os.path.expanduser(value)) if value else None


def cache_folder(name, variable=None):
    """Where cache ``name`` lives: the path variable ``variable`` holds if it is set, else
    ``mxcompat/<name>`` in ``$XDG_CACHE_HOME``, else in ``~/.cache``.  Every cache of the
    project has that one base: ``matrix`` (mxcompat matrix's environments), ``libs``
    (exec_stack's library copies), ``operators`` (operator_cache's code), ``tests`` (the
    tests' and the MXNet-suite runner's environments and wheels), ``horovod`` (the CI's
    Horovod wheels), ``sid-root`` (``.ci/newroot``'s Debian root)."""
    chosen = path(variable) if variable else None
    if chosen:
        return chosen
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "mxcompat", name)


def environ_without_ours(keep=()):
    """A copy of ``os.environ`` without mxcompat's own variables (every ``MXCOMPAT_*`` one but
    those named in ``keep``): for a child process whose mxcompat must act on what its caller
    sets, not on a switch inherited from the shell (a stray ``MXCOMPAT_FREEZE``)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(PREFIX) or k in keep}
