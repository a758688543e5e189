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

import sys

from .._core import distutils_fallback
from .._core.distutils_fallback import (  # noqa: F401 (the patch's own names)
    DistutilsFallbackFinder,
    StrictVersion,
    install,
    needed,
    uninstall,
)
from .._core.registry import Patch, record, register

PATCH = "distutils"
distutils_fallback.on_served = lambda: record(PATCH)


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
