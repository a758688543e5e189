"""The NumPy names MXNet's Python code uses, back where NumPy 1.24 … 2.x removed them.

MXNet 1.6–1.9 cannot even be imported on NumPy >= 1.24 (``mxnet/numpy/utils.py`` reads
``np.bool``) nor on NumPy 2 (``np.PZERO``, ``np.alltrue``, the financial functions…), and
other releases read removed names at run time (``np.Inf`` in the Gluon estimator,
``np.float`` in the ONNX exporter).  When an import of ``mxnet`` starts, mxcompat adds to
``numpy`` exactly the names below that the installed NumPy lacks; a name NumPy has is never
replaced, and nothing is added in a process that never imports mxnet.  The list is every
``numpy.X`` that the Python code of MXNet 1.3.1 … 1.9.1 reads and some NumPy from 1.14 to 2.4
lacks (``tests/patches/test_numpy_names.py`` re-derives it from the installed release's source with
``ast``).  Values are the replacements NumPy itself documents:

==============================  ==================================  ===================
name                            value                               removed in NumPy
==============================  ==================================  ===================
``bool``, ``int``, ``float``    the builtins ``bool``, ``int``,      1.24
                                ``float``
``Inf``, ``PINF``               ``inf``                             2.0
``NINF``                        ``-inf``                            2.0
``NAN``, ``NaN``                ``nan``                             2.0
``PZERO``, ``NZERO``            ``0.0``, ``-0.0``                   2.0
``alltrue``, ``sometrue``       ``np.all``, ``np.any``              2.0
``product``, ``round_``         ``np.prod``, ``np.round``           2.0
``msort(a)``                    ``np.sort(a, axis=0)``              2.0
``compat``                      a module with ``basestring = str``  2.0
``trapz``                       ``np.trapezoid``                    2.4
``in1d(a, b, ...)``             ``np.isin(a, b, ...).ravel()``      2.4
``mirr``, ``npv``, ``pmt``,     functions that raise                1.20 (stubs), 2.0
``ppmt``, ``pv``, ``rate``      ``RuntimeError`` naming
                                ``numpy-financial`` when called
==============================  ==================================  ===================

(NumPy 2 has ``np.bool`` again, as ``np.bool_``: it is then left alone.)  The financial
functions behave as NumPy 1.20–1.26's own stubs did: MXNet 1.7+ only re-exports them, so
import works and a call says to use ``numpy-financial``.

The names are restored by the ``sys.meta_path`` finder of ``_core.hooks`` (patch
``numpy_names``); ``MXCOMPAT_DISABLE=1`` or ``MXCOMPAT_DISABLE_PATCHES=numpy_names`` turns
this off and ``mxcompat.unpatch("numpy_names")`` removes the names again.
"""

from .._core import hooks, numpy_removed
from .._core.log import warn_once
from .._core.numpy_removed import NAMES, _added, added, missing, remove  # noqa: F401
from .._core.registry import Patch, record, register

PATCH = "numpy_names"

# MXNet's import begins with the names restored (the finder of _core.hooks).
_restored_before_mxnet = False


def restore(np=None):
    """Add the missing names to NumPy; never replaces one it has.  Returns the names added."""
    names = numpy_removed.restore(np)
    if names:
        record(PATCH)
    return names


def _before_mxnet(version):
    # Runs from the meta_path finder when `import mxnet` starts.
    global _restored_before_mxnet
    restore()
    _restored_before_mxnet = True


def _on_apply():
    # mxnet is imported: either the finder already restored the names (nothing to do), or
    # mxnet was imported before mxcompat and loaded without them.
    late = restore()
    if late and not _restored_before_mxnet:
        warn_once(
            hooks.LATE_IMPORT_KEY,
            "mxnet was imported before mxcompat, so it loaded without the NumPy names "
            "it needs (numpy.%s); mxcompat added them now, but import mxcompat before "
            "mxnet (first line of the program), or start the program with "
            "`mxcompat run`." % ", numpy.".join(late),
        )


register(
    Patch(
        PATCH,
        "The NumPy names MXNet's Python code reads, back where NumPy 1.24 … 2.x removed them.",
        on_apply=_on_apply,
        on_remove=remove,
        before_import=_before_mxnet,
    )
)
