"""MXNet's chi-square checks of its random generators on SciPy 1.7 and newer.

Every release 1.3.1 … 1.9.1 (``facts.MXNET_CHI_SQUARE_CHECK``) tests a generator with
``mx.test_utils.chi_square_check`` (``verify_generator`` repeats it): it counts samples per
bucket and ends with ``ss.chisquare(f_obs=obs_freq, f_exp=expected_freq)``, ``ss`` being the
``scipy.stats`` that ``mxnet/test_utils.py`` imports at module level (``None`` without SciPy).
The expected counts need not add up to the samples drawn: the buckets
``gen_buckets_probs_with_ppf`` makes leave out a distribution's tails, and ``nsamples * probs``
is truncated to int32.  SciPy up to 1.6 computed Pearson's statistic from the counts as given;
from 1.7 (``facts.SCIPY_CHISQUARE_SUM_CHECK``) ``chisquare`` raises ``ValueError: For each
axis slice, the sum of the observed frequencies must agree with the sum of the expected
frequencies ...``, so no generator check of MXNet's (its own ``test_random.py``, users'
``verify_generator`` calls) runs on any SciPy that Python 3.10+ installs.

With this patch the ``chisquare`` that ``mxnet.test_utils`` calls returns what SciPy < 1.7
returned for the same frequencies: the statistic ``sum((obs - exp)**2 / exp)`` along
``axis`` and its p-value from the chi-squared distribution with ``k - 1 - ddof`` degrees of
freedom.  On SciPy 1.15+ (``facts.SCIPY_CHISQUARE_SUM_CHECK_OPTION``) that is SciPy's own
``chisquare(..., sum_check=False)``; on 1.7–1.14, which have no such switch, it is computed
here with ``scipy.stats.chi2.sf``.  Frequencies whose sums agree get the same numbers as
SciPy's own call; a call without ``f_exp`` (uniform expectation, no check) or with other
keywords is SciPy's own.  On SciPy < 1.7, or without SciPy, the patch does not apply.

Why a proxy of ``mxnet.test_utils.ss`` rather than a wrapper of ``chi_square_check``: the
check's body is MXNet's (counting, bucketing), and wrapping it could only swap ``ss`` for the
duration of each call, which another thread's call would see.  The module attribute is what
``chi_square_check`` looks up; a ``wrapt.ObjectProxy`` there passes every other name
(``ss.norm.ppf``, ``ss.poisson`` in MXNet's tests) to ``scipy.stats`` itself, and users'
``scipy.stats.chisquare`` (or ``from scipy.stats import chisquare``) is untouched: it still
raises on mismatched sums, as SciPy means it to.  Every release imports ``mxnet.test_utils``
from ``mxnet/__init__.py``; the proxy is installed through ``hooks.when_imported`` all the
same, so a build that imports it later gets it then.  ``unpatch("scipy_chisquare")`` puts
``scipy.stats`` back.  Patch name ``scipy_chisquare``.
"""

import collections
import sys
import types

import wrapt

from .._core import facts, hooks
from .._core.registry import Patch, record, register

PATCH = "scipy_chisquare"
DOC = (
    "mxnet.test_utils.chi_square_check / verify_generator on SciPy 1.7+: its chisquare gets "
    "the statistic and p-value SciPy < 1.7 computed, where SciPy raises because the expected "
    "frequencies do not sum to the observed total."
)
TEST_UTILS = "mxnet.test_utils"

# What SciPy < 1.7 returned (a named pair): MXNet unpacks it as `_, p`.
ChisquareResult = collections.namedtuple("ChisquareResult", "statistic pvalue")

_on = False  # set while the patch is applied: a late import of test_utils asks it
# The test_utils modules given the proxy (a re-imported one too).
_proxied: "list[types.ModuleType]" = []


def pearson(f_obs, f_exp, ddof=0, axis=0):
    """Pearson's chi-squared test of ``f_obs`` against ``f_exp`` as given, whatever their sums:
    ``sum((f_obs - f_exp)**2 / f_exp)`` along ``axis`` (``None``: all of them) and its p-value
    with ``k - 1 - ddof`` degrees of freedom, ``k`` the number of frequencies summed."""
    import numpy as np
    from scipy.stats import chi2

    obs = np.asarray(f_obs, dtype=np.float64)
    exp = np.asarray(f_exp, dtype=np.float64)
    obs, exp = np.broadcast_arrays(obs, exp)
    if axis is None:
        obs, exp, axis = obs.ravel(), exp.ravel(), 0
    statistic = ((obs - exp) ** 2 / exp).sum(axis=axis)
    return ChisquareResult(statistic, chi2.sf(statistic, obs.shape[axis] - 1 - np.asarray(ddof)))


class MXNetStats(wrapt.ObjectProxy):
    """``scipy.stats`` as ``mxnet.test_utils`` sees it: every name SciPy's, but ``chisquare``
    computes from frequencies whose sums differ, as SciPy < 1.7 did."""

    def chisquare(self, f_obs, f_exp=None, ddof=0, axis=0, **kwargs):
        stats = self.__wrapped__
        if f_exp is None or kwargs:
            # No expected frequencies (SciPy derives them from f_obs: nothing to check), or
            # keywords MXNet never passes: SciPy's own call, as it is.
            return stats.chisquare(f_obs, f_exp, ddof, axis, **kwargs)
        import numpy as np

        if np.sum(f_obs) != np.sum(f_exp):
            record(PATCH)  # where SciPy 1.7+ may raise (MXNet's integer counts compare exactly)
        if facts.scipy_since(facts.SCIPY_CHISQUARE_SUM_CHECK_OPTION):
            return stats.chisquare(f_obs, f_exp, ddof, axis, sum_check=False)
        return pearson(f_obs, f_exp, ddof, axis)


def _install(test_utils):
    stats = getattr(test_utils, "ss", None)
    # None: MXNet found no SciPy; already ours: patched again after a late import.
    if _on and stats is not None and not isinstance(stats, MXNetStats):
        test_utils.ss = MXNetStats(stats)
        if test_utils not in _proxied:
            _proxied.append(test_utils)


def _on_apply():
    global _on
    _on = True
    hooks.when_imported(TEST_UTILS, _install)


def _on_remove():
    global _on
    _on = False
    while _proxied:
        test_utils = _proxied.pop()
        stats = getattr(test_utils, "ss", None)
        if isinstance(stats, MXNetStats):  # not if other code has set its own since
            test_utils.ss = stats.__wrapped__


def scipy_checks_sums():
    """Whether SciPy 1.7 or newer is installed, whose chisquare refuses expected frequencies
    that do not sum to the observed total.

    The SciPy that ``mxnet.test_utils`` imported (every release imports both from
    ``import mxnet``, before the patches are applied); before that import, the installed
    distribution's version, read without importing SciPy."""
    test_utils = sys.modules.get(TEST_UTILS)
    if test_utils is not None:
        # Its `ss` is None where MXNet could not import scipy.stats.
        return test_utils.ss is not None and facts.scipy_since(facts.SCIPY_CHISQUARE_SUM_CHECK)
    if "scipy" in sys.modules:
        return facts.scipy_since(facts.SCIPY_CHISQUARE_SUM_CHECK)
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # Python 3.7: only test_utils' own import tells
        return False
    try:
        return facts.scipy_since(facts.SCIPY_CHISQUARE_SUM_CHECK, version("scipy"))
    except PackageNotFoundError:
        return False


register(
    Patch(
        PATCH,
        DOC,
        since=facts.MXNET_CHI_SQUARE_CHECK,
        when=scipy_checks_sums,
        on_apply=_on_apply,
        on_remove=_on_remove,
    )
)
