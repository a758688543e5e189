"""``from distutils.version import LooseVersion, StrictVersion`` on Python 3.12+.

Python 3.12 removed ``distutils``; MXNet 1.6+ imports ``distutils.version`` while
``import mxnet`` executes (``numpy_dispatch_protocol.py``, and ``numpy_op_fallback.py`` from
1.7), so it fails without setuptools.  When an import of ``mxnet`` starts on Python 3.12+,
mxcompat appends a finder to the *end* of ``sys.meta_path`` that serves ``distutils`` (an
empty package) and ``distutils.version`` with two classes.  Being last, it is asked only
when nothing else has ``distutils``: the standard library's (Python <= 3.11) or setuptools'
``_distutils_hack`` always win.  Patch name ``distutils``.

The rule, the same for every release 1.3.1 … 1.9.1 (``facts.MXNET_IMPORTS_DISTUTILS``): on a
Python without ``distutils``, ``distutils.version`` is importable by any code of the process
from the moment ``import mxnet`` starts, as it was on the Pythons MXNet was released for.
Legacy code does ``from distutils.version import LooseVersion`` itself (MXNet's own
``test_ndarray.py`` does); it works beside 1.3-1.5, which never import it, as beside 1.6+.
Serving it to MXNet's frames only would not make a narrower promise: once imported, a module
is in ``sys.modules`` for everyone.  What is left as it was:

* before ``import mxnet`` starts nothing is served (``import mxcompat`` changes nothing until
  MXNet loads): ``from distutils.version import ...`` above ``import mxnet`` fails as without
  mxcompat; import mxnet first, or use ``looseversion`` / ``packaging.version``;
* only ``distutils`` and ``distutils.version``: ``distutils.core`` and the rest are still
  ``ModuleNotFoundError``;
* where setuptools is installed (or the Python has ``distutils``), that ``distutils`` is the
  one every import gets, MXNet's included;
* ``unpatch("distutils")`` (or ``MXCOMPAT_DISABLE_PATCHES=distutils``) takes the finder out;
  a ``distutils`` already imported stays in ``sys.modules``.

What MXNet compares, and where the classes come from:

* ``LooseVersion(numpy.__version__) >= LooseVersion('1.15')`` / ``'1.17'``
  (``numpy_dispatch_protocol.py``, 1.6+): ``LooseVersion`` is the maintained ``looseversion``
  package's (a dependency on Python >= 3.12 only), which keeps distutils' class as it was,
  without its deprecation warning.
* ``StrictVersion(numpy.version.version) >= StrictVersion('1.6.0')`` (``numpy_op_fallback``,
  1.7+, when ``empty_like`` falls back to NumPy): ``StrictVersion`` below is mxcompat's own.
  It accepts exactly the strings distutils' did (``N.N[.N]``, then optionally ``a``/``b``
  and a number) and orders them the same way, so a NumPy MXNet could not compare before
  (``2.0.0rc1``, ``2.1.0.dev0``) still raises ``ValueError`` as with the standard library.
  ``packaging.version`` was not used: it accepts those strings, so a strictness check of our
  own would be needed anyway, and that check is the whole parser (no dependency for it).
"""

import importlib.abc
import importlib.machinery
import operator
import re
import sys

from .._core.registry import Patch, record, register

PATCH = "distutils"

# distutils' strict format: two or three dot-separated numbers, then optionally 'a' or 'b'
# and a number.  ASCII digits only, and '$' lets one trailing newline through, as the
# standard library's pattern did.
_STRICT = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?(?:([ab])(\d+))?$", re.ASCII)


def _comparison(test):
    def compare(self, other):
        if isinstance(other, str):
            other = StrictVersion(other)
        elif not isinstance(other, StrictVersion):
            return NotImplemented
        return test(self._key(), other._key())

    return compare


class StrictVersion:
    """distutils' ``StrictVersion``: ``StrictVersion("1.26.4") >= "1.6.0"``.

    ``version`` is ``(major, minor, patch)`` (``"1.2"`` is ``(1, 2, 0)``), ``prerelease``
    ``("a", 3)``, ``("b", 1)`` or ``None``; a string of another form raises ``ValueError``.
    Compares with another ``StrictVersion`` or a string; never warns.
    """

    def __init__(self, vstring=None):
        if vstring:
            self.parse(vstring)

    def parse(self, vstring):
        match = _STRICT.match(vstring)
        if match is None:
            raise ValueError("invalid version number '%s'" % vstring)
        major, minor, patch, tag, number = match.groups()
        self.version = (int(major), int(minor), int(patch or 0))
        self.prerelease = (tag, int(number)) if tag else None

    def _key(self):
        # A release sorts after its pre-releases, and 'a' before 'b'.
        return self.version, self.prerelease is None, self.prerelease or ("", 0)

    __eq__ = _comparison(operator.eq)
    __lt__ = _comparison(operator.lt)
    __le__ = _comparison(operator.le)
    __gt__ = _comparison(operator.gt)
    __ge__ = _comparison(operator.ge)

    def __str__(self):
        # distutils writes "1.2" for 1.2.0.
        numbers = self.version if self.version[2] else self.version[:2]
        text = ".".join(str(n) for n in numbers)
        if self.prerelease:
            text += "%s%d" % self.prerelease
        return text

    def __repr__(self):
        return "StrictVersion ('%s')" % self


class _PackageLoader(importlib.abc.Loader):
    """Loads ``distutils`` as an empty package whose only submodule is ``version``."""

    def create_module(self, spec):
        return None  # the default module object

    def exec_module(self, module):
        module.__doc__ = (
            "Served by mxcompat: this Python has no distutils; only "
            "distutils.version (LooseVersion, StrictVersion) is provided."
        )


class _VersionLoader(importlib.abc.Loader):
    """Loads ``distutils.version`` with ``looseversion``'s ``LooseVersion`` and our own
    ``StrictVersion``."""

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        # Imported only here: the dependency exists on Python 3.12+ only, where this runs.
        from looseversion import LooseVersion

        module.__doc__ = (
            "Served by mxcompat: LooseVersion (from the looseversion package) "
            "and StrictVersion, for MXNet on a Python without distutils."
        )
        module.LooseVersion = LooseVersion
        module.StrictVersion = StrictVersion
        record(PATCH)


class DistutilsFallbackFinder(importlib.abc.MetaPathFinder):
    """Last in ``sys.meta_path``: ``distutils`` and ``distutils.version`` if nobody else has
    them."""

    _mxcompat_distutils = True

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "distutils":
            return importlib.machinery.ModuleSpec(
                "distutils", _PackageLoader(), origin="mxcompat", is_package=True
            )
        if fullname == "distutils.version":
            return importlib.machinery.ModuleSpec(
                "distutils.version", _VersionLoader(), origin="mxcompat"
            )
        return None


def needed():
    """Whether this is Python 3.12 or newer, whose standard library has no distutils."""
    return sys.version_info >= (3, 12)


def install():
    """Append the fallback finder (once); it only ever answers for ``distutils``."""
    if not any(getattr(f, "_mxcompat_distutils", False) for f in sys.meta_path):
        sys.meta_path.append(DistutilsFallbackFinder())


def uninstall():
    sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "_mxcompat_distutils", False)]


def _before_mxnet(version):
    if needed():
        install()


def served():
    """True if ``distutils`` in this process is mxcompat's."""
    module = sys.modules.get("distutils")
    return module is not None and getattr(module.__spec__, "origin", None) == "mxcompat"


def _on_apply():
    # Normally already added before mxnet's import; again after an unpatch/patch cycle.
    if needed():
        install()


# Every release (one rule for users' code, above); Python 3.12+ only (when=needed).
register(
    Patch(
        PATCH,
        "distutils.version (LooseVersion, StrictVersion) on Python 3.12+, from import mxnet on.",
        when=needed,
        on_apply=_on_apply,
        on_remove=uninstall,
        before_import=_before_mxnet,
    )
)
