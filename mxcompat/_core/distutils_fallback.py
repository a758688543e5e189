"""The ``distutils`` a Python 3.12+ lacks, as MXNet imports it: a finder, last in
``sys.meta_path``, that serves ``distutils`` (an empty package) and ``distutils.version``
(``LooseVersion``, ``StrictVersion``).  The patch ``distutils`` (whose docstring says what is
served and why) and the ``.pth`` of ``mxcompat install`` install it.  Imports nothing of
mxcompat."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import operator
import re
import sys
from typing import Callable

# Called once distutils.version is served (the patch records its use there).
on_served: Callable[[], object] | None = None

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
        if on_served is not None:
            on_served()


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
