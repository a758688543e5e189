"""The supported combinations of MXNet, Python and NumPy, and how each is installed.

The one table: ``mxcompat matrix`` builds its environments from it, the documentation's
"Supported versions" page renders it at build time (``markdown``), and the test suite checks
that ``tox.ini`` (our own matrix) says the same (tests/core/test_versions.py), so they never
drift.  Each row was found by installing
the release on that stack and running it: a release's own pins (1.3.1 and 1.4.1 declare
``numpy<1.15``, so Python 3.7 is the newest with wheels) give its first row; the rows beyond
them install MXNet with ``--no-deps`` beside a newer NumPy, and load through mxcompat.

Also the versions of the stack running now (``running``) and the one line that reports them
(``stack_line``: ``mxcompat patches``, ``mxcompat check``, the pytest plugin's header).
"""

import platform
import sys
from collections import namedtuple

from packaging.version import Version

from . import facts
from .about import VERSION

# What every MXNet wheel requires besides NumPy: installed by hand next to a --no-deps MXNet.
MXNET_EXTRAS = ("requests<3", "graphviz==0.8.4")

# The NumPy requirement each MXNet wheel declares (its METADATA's Requires-Dist): 1.3.1 and
# 1.4.1 ask for a NumPy older than 1.15, 1.5 to 1.9 for one older than 2.
WHEEL_NUMPY = (("1.5", "numpy>1.16.0,<2.0.0"), ("1.3", "numpy>=1.8.2,<1.15.0"))


class Combination(namedtuple("Combination", "name mxnet python numpy no_deps")):
    """One environment: ``mxnet`` is the wheel's exact version, ``numpy`` a requirement
    (``numpy==1.23.5``, or ``numpy>=2`` for the newest there is), ``no_deps`` whether MXNet is
    installed with ``--no-deps`` (its wheel pins ``numpy<2``, or ``<1.15``, which NumPy 2
    envs must ignore).  ``name`` is the tox env's."""

    __slots__ = ()

    @property
    def latest(self):
        """Whether NumPy is unpinned (the newest release, whatever it is today)."""
        return not self.numpy.startswith("numpy==")

    @property
    def numpy_version(self):
        """The pinned NumPy version, or ``None`` for the newest."""
        return None if self.latest else self.numpy[len("numpy==") :]

    @property
    def modern(self):
        """Today's stack: Python 3.12+ (NumPy 1.26 or 2)."""
        return Version(self.python) >= Version("3.12")

    def install_steps(self):
        """The pip arguments of each install, in order, into a fresh environment."""
        if self.no_deps:
            return [["--no-deps", "mxnet==" + self.mxnet], [self.numpy] + list(MXNET_EXTRAS)]
        return [["mxnet==" + self.mxnet, self.numpy]]

    def install_lines(self):
        """``install_steps`` as the command lines a user would type."""
        return [
            "pip install " + " ".join(_quoted(a) for a in step) for step in self.install_steps()
        ]


def _quoted(arg):
    return '"%s"' % arg if any(c in arg for c in "<>") else arg


def _combination(name, mxnet, python, numpy, no_deps=False):
    return Combination(name, mxnet, python, numpy, no_deps)


# Each MXNet release on the newest Python and NumPy its wheel's pins allow, then today's stack
# (Python 3.12-3.15 with NumPy 1.26 and 2.x), which only mxcompat makes MXNet load on.
COMBINATIONS = (
    _combination("mx191", "1.9.1", "3.11", "numpy==1.23.5"),
    _combination("mx180", "1.8.0.post0", "3.11", "numpy==1.23.5"),
    _combination("mx170", "1.7.0.post2", "3.11", "numpy==1.23.5"),
    _combination("mx160", "1.6.0", "3.11", "numpy==1.23.5"),
    _combination("mx151", "1.5.1.post0", "3.11", "numpy==1.23.5"),
    # numpy<1.15 (1.3.1/1.4.1's pin) has no wheel after Python 3.7.
    _combination("mx141", "1.4.1", "3.7", "numpy==1.14.6"),
    _combination("mx131", "1.3.1", "3.7", "numpy==1.14.6"),
    # 1.26 is the only NumPy < 2 with Python 3.12 wheels.
    _combination("py312-mxnet191-numpy126", "1.9.1", "3.12", "numpy==1.26.4"),
    _combination("py313-mxnet191-numpy24", "1.9.1", "3.13", "numpy==2.4.6", no_deps=True),
    _combination("py313-mxnet151-numpy24", "1.5.1.post0", "3.13", "numpy==2.4.6", no_deps=True),
    _combination("py313-mxnet141-numpy21", "1.4.1", "3.13", "numpy==2.1.3", no_deps=True),
    _combination("py313-mxnet131-numpy21", "1.3.1", "3.13", "numpy==2.1.3", no_deps=True),
    # MXNet will never release again: a new NumPy must be caught by the matrix, not a user.
    _combination("py313-mxnet191-numpylatest", "1.9.1", "3.13", "numpy>=2", no_deps=True),
    _combination("py313-mxnet151-numpylatest", "1.5.1.post0", "3.13", "numpy>=2", no_deps=True),
    # Python 3.14 and 3.15: every release, MXNet's wheels being py3-none (ctypes).  No NumPy < 2
    # has a cp314 or cp315 wheel; the oldest with one is 2.3.2 on 3.14 (1.3.1/1.4.1's rows, as
    # on 3.13 the oldest there is) and 2.5.2 on 3.15 (every release passed mxcompat check on
    # 3.14.10 and 3.15.2 with NumPy 2.5.5, and 1.3.1/1.4.1/1.9.1 with 2.3.2 and 2.5.2).  The
    # libmxnet.so of 1.3.1, 1.4.1, 1.5.1.post0 and 1.6.0 asks for an executable stack (its
    # GNU_STACK is RWE; 1.7-1.9: RW), which glibc >= 2.41 refuses to dlopen: there they load
    # only through the exec_stack patch (so they passed, on glibc 2.43); on an older glibc,
    # as before.
    _combination("py314-mxnet191-numpy25", "1.9.1", "3.14", "numpy==2.5.5", no_deps=True),
    _combination("py314-mxnet180-numpy25", "1.8.0.post0", "3.14", "numpy==2.5.5", no_deps=True),
    _combination("py314-mxnet170-numpy25", "1.7.0.post2", "3.14", "numpy==2.5.5", no_deps=True),
    _combination("py314-mxnet160-numpy25", "1.6.0", "3.14", "numpy==2.5.5", no_deps=True),
    _combination("py314-mxnet151-numpy25", "1.5.1.post0", "3.14", "numpy==2.5.5", no_deps=True),
    _combination("py314-mxnet141-numpy23", "1.4.1", "3.14", "numpy==2.3.2", no_deps=True),
    _combination("py314-mxnet131-numpy23", "1.3.1", "3.14", "numpy==2.3.2", no_deps=True),
    _combination("py314-mxnet191-numpylatest", "1.9.1", "3.14", "numpy>=2", no_deps=True),
    # The oldest release and the newest whose library needs exec_stack, on the newest NumPy.
    _combination("py314-mxnet160-numpylatest", "1.6.0", "3.14", "numpy>=2", no_deps=True),
    _combination("py314-mxnet131-numpylatest", "1.3.1", "3.14", "numpy>=2", no_deps=True),
    _combination("py315-mxnet191-numpy25", "1.9.1", "3.15", "numpy==2.5.5", no_deps=True),
    _combination("py315-mxnet180-numpy25", "1.8.0.post0", "3.15", "numpy==2.5.5", no_deps=True),
    _combination("py315-mxnet170-numpy25", "1.7.0.post2", "3.15", "numpy==2.5.5", no_deps=True),
    _combination("py315-mxnet160-numpy25", "1.6.0", "3.15", "numpy==2.5.5", no_deps=True),
    _combination("py315-mxnet151-numpy25", "1.5.1.post0", "3.15", "numpy==2.5.5", no_deps=True),
    _combination("py315-mxnet141-numpy25", "1.4.1", "3.15", "numpy==2.5.5", no_deps=True),
    _combination("py315-mxnet131-numpy25", "1.3.1", "3.15", "numpy==2.5.5", no_deps=True),
    _combination("py315-mxnet191-numpylatest", "1.9.1", "3.15", "numpy>=2", no_deps=True),
)


def by_name(name):
    for combination in COMBINATIONS:
        if combination.name == name:
            return combination
    raise KeyError(name)


def release_matches(wanted, version):
    """Whether ``wanted`` names the release ``version``: "1.5.1" and "1.5.1.post0" are one
    release (``facts.release``), "1.5" is every 1.5.x."""
    from packaging.version import InvalidVersion

    try:
        prefix = Version(wanted).release  # its numbers, as many as were written
    except InvalidVersion:
        return False
    return facts.parse_version(version)[: len(prefix)] == prefix


def running(installed=False):
    """The versions of this process's stack: ``{"mxcompat", "mxnet", "python", "numpy",
    "wrapt"}``, each the imported module's ``__version__`` (nothing is imported), ``None``
    where it is not imported, or with ``installed`` the installed distribution's then."""
    found = {"mxcompat": VERSION, "python": platform.python_version()}
    for name in ("mxnet", "numpy", "wrapt"):
        found[name] = getattr(sys.modules.get(name), "__version__", None)
        if found[name] is None and installed:
            found[name] = _installed(name)
    return found


def _installed(distribution):
    try:
        from importlib import metadata
    except ImportError:  # Python 3.7: the backport (pytest depends on it there)
        import importlib_metadata as metadata
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def stack_line(stack, names, missing="-"):
    """``names`` of ``stack`` (``running()``'s) in one line, each as written with its version
    (looked up in lower case; ``missing`` where there is none):
    ``stack_line(s, ("mxnet", "Python", "NumPy", "mxcompat"))`` is
    ``"mxnet 1.9.1, Python 3.11.2, NumPy 1.23.5, mxcompat 0.1.0"``."""
    return ", ".join(
        "%s %s" % (name, missing if stack[name.lower()] is None else stack[name.lower()])
        for name in names
    )


def wheel_numpy(mxnet):
    """The NumPy requirement MXNet ``mxnet``'s own wheel declares."""
    for since, requirement in WHEEL_NUMPY:
        if Version(mxnet) >= Version(since):
            return requirement
    raise KeyError(mxnet)


def overrides(mxnet, latest=False):
    """uv's ``--overrides`` lines that replace MXNet ``mxnet``'s NumPy pin with the NumPy of this
    table, one line per Python (an environment marker each).  An override replaces every
    requirement of its package, and one whose marker is false drops it, so every Python gets a
    line: a Python with a combination gets that combination's NumPy (the unpinned one if
    ``latest`` and the table has it), every other Python the wheel's own requirement (which
    fails there as it would without mxcompat: nothing untested is promised)."""
    rows = {}
    for c in COMBINATIONS:
        if c.mxnet == mxnet and (c.python not in rows or c.latest == latest):
            rows[c.python] = c.numpy
    if not rows:
        raise KeyError(mxnet)
    own = wheel_numpy(mxnet)
    lines = ['%s; python_version == "%s"' % (rows[p], p) for p in sorted(rows, key=Version)]
    others = " and ".join('python_version != "%s"' % p for p in sorted(rows, key=Version))
    return lines + ["%s; %s" % (own, others)]


def install_line(combination):
    """The command lines that install ``combination`` and mxcompat into a fresh environment."""
    lines = combination.install_lines()
    lines[-1] += " mxcompat"
    return " then ".join("`%s`" % line for line in lines)


def markdown(combinations=COMBINATIONS):
    """The "Supported versions" table (the docs render it at build time)."""
    rows = [
        "| MXNet | Python | NumPy | install (in a fresh venv) | tox env |",
        "|---|---|---|---|---|",
    ]
    for c in combinations:
        numpy = c.numpy_version or "the newest (`%s`, unpinned)" % c.numpy
        rows.append(
            "| %s | %s | %s | %s | `%s` |" % (c.mxnet, c.python, numpy, install_line(c), c.name)
        )
    return "\n".join(rows) + "\n"
