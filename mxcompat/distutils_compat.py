"""``from distutils.version import LooseVersion, StrictVersion`` on Python 3.12+.

Python 3.12 removed ``distutils``; MXNet 1.6+ imports ``distutils.version`` while
``import mxnet`` executes (``numpy_dispatch_protocol.py``, and ``numpy_op_fallback.py`` from
1.7), so it fails without setuptools.  When an import of ``mxnet`` starts on Python 3.12+,
mxcompat appends a finder to the *end* of ``sys.meta_path`` that serves ``distutils`` (an
empty package) and ``distutils.version`` (CPython 3.11's ``LooseVersion`` and
``StrictVersion``, in ``_distutils_version.py``).  Being last, it is asked only when nothing
else has ``distutils``: the standard library's (Python <= 3.11) or setuptools'
``_distutils_hack`` always win.  MXNet 1.3-1.5 do not need it and do not get it.  Patch name
``distutils``; once mxnet is imported, ``distutils`` stays importable in that process.
"""
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

from . import _compat, _preimport
from ._patching import Patch, register

PATCH = "distutils"

_VERSION_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "_distutils_version.py")


class _PackageLoader(importlib.abc.Loader):
    """Loads ``distutils`` as an empty package whose only submodule is ``version``."""

    def create_module(self, spec):
        return None   # the default module object

    def exec_module(self, module):
        module.__doc__ = ("Served by mxcompat: this Python has no distutils; only "
                          "distutils.version (LooseVersion, StrictVersion) is provided.")


class DistutilsFallbackFinder(importlib.abc.MetaPathFinder):
    """Last in ``sys.meta_path``: ``distutils`` and ``distutils.version`` if nobody else has
    them."""

    _mxcompat_distutils = True

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "distutils":
            return importlib.machinery.ModuleSpec(
                "distutils", _PackageLoader(), origin="mxcompat", is_package=True)
        if fullname == "distutils.version":
            return importlib.util.spec_from_file_location("distutils.version", _VERSION_FILE)
        return None


def needed():
    return sys.version_info >= (3, 12)


def install():
    """Append the fallback finder (once); it only ever answers for ``distutils``."""
    if not any(getattr(f, "_mxcompat_distutils", False) for f in sys.meta_path):
        sys.meta_path.append(DistutilsFallbackFinder())


def uninstall():
    sys.meta_path[:] = [f for f in sys.meta_path
                        if not getattr(f, "_mxcompat_distutils", False)]


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


class _DistutilsPatch(Patch):
    """Applies on Python 3.12+ only (``patched()`` does not list it on older Pythons)."""

    def applies_to(self, version):
        return Patch.applies_to(self, version) and needed()


# Only 1.6+ import distutils (numpy_dispatch_protocol.py); 1.3-1.5 never get the finder.
register(_DistutilsPatch(PATCH, "distutils.version (LooseVersion, StrictVersion) for MXNet on "
                               "Python 3.12+.", since=_compat.NUMPY_SUBPACKAGE,
                         on_apply=_on_apply, on_remove=uninstall))
_preimport.register(PATCH, _before_mxnet)
_preimport.install()
