"""The NumPy scenarios of ``mxcompat check`` (after the model ones, before the training ones):
the names MXNet reads, the behaviour changes that reach it, integer division."""

import subprocess
import sys

from ..._core import facts
from .runner import check


@check("numpy", "NumPy names MXNet reads are there (only those NumPy lacks are added)")
def _check_numpy(mx, tmp):
    import numpy as np

    from ...patches import numpy_names

    lacking = numpy_names.missing(np)
    if lacking:
        raise AssertionError("numpy.%s still missing" % ", numpy.".join(lacking))
    added = numpy_names.added()
    # A NumPy-2 round trip through an operator parameter (NEP 51 reprs) and back.
    shape = tuple(np.array([2, 3]))
    got = mx.nd.zeros(shape).reshape(shape).shape
    if got != (2, 3):
        raise AssertionError("reshape with NumPy integers gave %r" % (got,))
    if not added:
        return "nothing to add on NumPy %s" % np.__version__
    return "added to NumPy %s: %s" % (np.__version__, ", ".join(added))


def _numpy_fix_scenarios(mx, np):
    """``(name, runs)`` of the NumPy behaviour fixes that apply on this NumPy, each with a tiny
    scenario that raises AssertionError when MXNet still meets the NumPy change."""
    from ...patches import numpy2

    scenarios = []

    def nep51():
        # The operator (not NDArray.reshape): its parameters reach MXNet's core as str().
        got = mx.nd.reshape(mx.nd.zeros((2, 3)), shape=(np.int64(3), np.int64(2))).shape
        if got != (3, 2):
            raise AssertionError("nd.reshape(shape=(np.int64(3), np.int64(2))) gave %r" % (got,))

    def nep50():
        m = mx.metric.MSE()
        m.update([mx.nd.array([1.0, 2.0])], [mx.nd.array([1.5, 2.0])])
        if type(m.sum_metric) is not np.float64:
            raise AssertionError("MSE sums in %s (NumPy 1: float64)" % type(m.sum_metric).__name__)

    def tostring():
        header = mx.recordio.IRHeader(0, np.array([1.0, 2.0], dtype=np.float32), 7, 0)
        got = mx.recordio.unpack(mx.recordio.pack(header, b"x"))[0].label
        if list(got) != [1.0, 2.0]:
            raise AssertionError("recordio.pack label round trip gave %r" % (got,))

    def one_element():
        _, (i,) = mx.nd.contrib.while_loop(
            lambda i: i < 10,
            lambda i: (i, [i + 1]),
            [mx.nd.array([0])],
            max_iterations=np.array([3]),
        )
        if i.asscalar() != 3:
            raise AssertionError(
                "while_loop(max_iterations=np.array([3])) ran to %r" % i.asscalar()
            )

    def to_numpy():
        a = mx.nd.array([1.5, 2.5])
        got = np.asarray(a)
        if got.dtype != np.float32 or list(got) != [1.5, 2.5]:
            raise AssertionError("np.asarray(NDArray) gave dtype %s" % got.dtype)

    def astype_other():
        got = mx.nd.array([1.5]).astype(mx.nd.zeros((1,), dtype="int32")).dtype
        if got != np.int32:
            raise AssertionError("astype(int32 NDArray) gave %r" % (got,))

    if numpy2._numpy2():
        scenarios += [
            ("NEP 51 scalar reprs in operator parameters", nep51),
            ("NEP 50 metric sums in float64", nep50),
        ]
    if facts.numpy_since(facts.NUMPY_NO_TOSTRING):
        scenarios.append(("ndarray.tostring in recordio.pack", tostring))
    if facts.numpy_since(facts.NUMPY_REFUSES_SCALAR_OF_1_ELEMENT_ARRAY):
        scenarios.append(("1-element max_iterations in while_loop", one_element))
    scenarios.append(("NDArray.__array__ (np.asarray gets the numbers)", to_numpy))
    if facts.numpy_since(facts.NUMPY_NO_TOSTRING):
        scenarios.append(("astype(other NDArray)", astype_other))
    return scenarios


@check("numpy_fixes", "NumPy's behaviour changes that reach MXNet are fixed (this NumPy's)")
def _check_numpy_fixes(mx, tmp):
    import numpy as np

    names = []
    for name, run in _numpy_fix_scenarios(mx, np):
        try:
            run()
        except Exception as exc:
            raise AssertionError("%s: %s: %s" % (name, type(exc).__name__, exc)) from exc
        names.append(name)
    return "in use on NumPy %s: %s" % (np.__version__, "; ".join(names))


_INT_DIVISION_PROBE = """
import warnings; warnings.simplefilter("ignore")
import mxcompat, mxnet as mx
try:
    (mx.nd.array([1, 2], dtype="int32") / 0.5).wait_to_read()
except ZeroDivisionError as err:
    print(err)
"""


@check("int_division", "int32 NDArray / 0.5 raises ZeroDivisionError; the process lives")
def _check_int_division(mx, tmp):
    import signal

    # A subprocess: without the patch MXNet kills the process that divides (SIGFPE).
    proc = subprocess.run(
        [sys.executable, "-c", _INT_DIVISION_PROBE], capture_output=True, text=True, timeout=120
    )
    if proc.returncode == -signal.SIGFPE:
        raise AssertionError("int32 NDArray / 0.5 killed the process (SIGFPE)")
    if proc.returncode != 0:
        raise AssertionError(
            (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]
        )
    if not proc.stdout.startswith("mxcompat: int32 NDArray / 0.5 divides by zero"):
        raise AssertionError("no ZeroDivisionError: %r" % proc.stdout.strip())
    return "ZeroDivisionError (plain MXNet: SIGFPE kills the process)"
