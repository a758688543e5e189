"""The patch ``scipy_chisquare``: ``mx.test_utils.chi_square_check`` / ``verify_generator`` get
the p-value SciPy < 1.7 computed, where SciPy 1.7+ refuses expected counts that do not sum to
the observed total; users' own ``scipy.stats.chisquare`` is left as SciPy makes it."""

import mxnet as mx
import numpy as np
import pytest

import mxcompat
from mxcompat._core import facts, registry
from tests.support.processes import run_python

try:
    import scipy.stats as stats
except ImportError:
    stats = None

NEEDS_SCIPY = pytest.mark.skipif(stats is None, reason="needs SciPy")
CHECKS_SUMS = stats is not None and facts.scipy_since(facts.SCIPY_CHISQUARE_SUM_CHECK)
SUM_CHECK = pytest.mark.skipif(
    not CHECKS_SUMS, reason="needs SciPy >= 1.7, whose chisquare checks the sums"
)
REFUSED = "sum of the observed frequencies must agree with the sum of the expected"


def _normal_buckets(count=3):
    # Three buckets: each expected count is int32(nsamples * float32(1/3)), one short of the
    # samples drawn in all (99999 for 100000).
    return mx.test_utils.gen_buckets_probs_with_ppf(lambda x: stats.norm.ppf(x, 0, 1), count)


def _pre_17_p_value(obs, exp):
    """Pearson's test as SciPy < 1.7 computed it for the counts as given, written out here:
    the statistic summed in order over Python floats, k - 1 degrees of freedom."""
    statistic = 0.0
    for o, e in zip(obs.tolist(), exp.tolist()):
        statistic += (float(o) - float(e)) ** 2 / float(e)
    return stats.chi2.sf(statistic, len(obs) - 1)


def _check_normal(nsamples=100000, seed=7):
    buckets, probs = _normal_buckets()
    rng = np.random.RandomState(seed)
    return mx.test_utils.chi_square_check(
        lambda n: rng.normal(0, 1.0, size=n), buckets, probs, nsamples=nsamples
    )


@SUM_CHECK
def test_the_patch_applies_where_scipy_checks_the_sums():
    from mxcompat.patches.scipy_chisquare import MXNetStats

    assert "scipy_chisquare" in mxcompat.patched()
    assert isinstance(mx.test_utils.ss, MXNetStats)
    assert mx.test_utils.ss.__wrapped__ is stats


@NEEDS_SCIPY
@pytest.mark.skipif(CHECKS_SUMS, reason="SciPy >= 1.7 here: the patch applies")
def test_the_patch_does_not_apply_on_scipy_before_17():
    assert "scipy_chisquare" not in mxcompat.patched()
    assert mx.test_utils.ss is stats


def test_without_scipy_nothing_happens(python):
    # MXNet's test_utils binds ss = None when scipy.stats cannot be imported.
    proc = python(
        """
        import sys
        sys.modules["scipy"] = sys.modules["scipy.stats"] = None
        import mxcompat, mxnet as mx
        print(mx.test_utils.ss, "scipy_chisquare" in mxcompat.patched())
        """
    )
    assert proc.stdout.split() == ["None", "False"]


@NEEDS_SCIPY
def test_chi_square_check_returns_the_p_value_scipy_before_17_computed():
    before = registry.handled().get("scipy_chisquare", 0)
    p, obs, exp = _check_normal()
    assert obs.sum() == 100000 and exp.sum() == 99999  # the sums MXNet's check compares
    # Exactly, on SciPy 1.5 (its own chisquare: the formula above is what it computed) as on
    # 1.7-1.14 (mxcompat's) and 1.15+ (SciPy's sum_check=False).
    assert p == _pre_17_p_value(obs, exp)
    assert 0.0 < p < 1.0
    assert registry.handled().get("scipy_chisquare", 0) == before + (1 if CHECKS_SUMS else 0)


@NEEDS_SCIPY
def test_verify_generator_runs_and_returns_each_repeat_s_p_value():
    # A discrete generator: the test counts its samples itself (bincount) to know each
    # repeat's frequencies.
    rng = np.random.RandomState(3)
    drawn = []

    def generator(n):
        drawn.append(rng.randint(0, 3, size=n))
        return drawn[-1]

    nsamples = 100000
    p_values = mx.test_utils.verify_generator(
        generator, [0, 1, 2], [1.0 / 3] * 3, nsamples=nsamples, nrepeat=3
    )
    # MXNet's expected count: nsamples times the float32 probability, truncated.
    expected = np.array([int(np.float32(nsamples) * np.float32(1.0 / 3))] * 3)
    assert expected.sum() != nsamples
    assert len(drawn) == 3
    assert p_values == [_pre_17_p_value(np.bincount(d, minlength=3), expected) for d in drawn]


@SUM_CHECK
def test_unpatched_mxnet_s_check_raises_scipy_s_value_error():
    mxcompat.unpatch("scipy_chisquare")
    assert mx.test_utils.ss is stats  # SciPy's own module object again
    with pytest.raises(ValueError, match=REFUSED):
        _check_normal()
    mxcompat.patch("scipy_chisquare")
    assert _check_normal()[0] > 0


@SUM_CHECK
def test_turned_off_from_the_environment_the_check_raises(python):
    proc = python(
        """
        import mxcompat, mxnet as mx, numpy as np, scipy.stats as ss
        print("scipy_chisquare" in mxcompat.patched(), mx.test_utils.ss is ss)
        buckets, probs = mx.test_utils.gen_buckets_probs_with_ppf(ss.norm.ppf, 3)
        try:
            mx.test_utils.chi_square_check(np.random.normal, buckets, probs, nsamples=1000)
        except ValueError as e:
            print(type(e).__name__, str(e).splitlines()[0])
        """,
        env={"MXCOMPAT_DISABLE_PATCHES": "scipy_chisquare"},
    )
    first, second = proc.stdout.splitlines()
    assert first == "False True"
    assert second.startswith("ValueError For each axis slice, the " + REFUSED)


@SUM_CHECK
def test_users_own_chisquare_still_raises():
    from scipy.stats import chisquare

    from mxcompat.patches.scipy_chisquare import MXNetStats

    assert not isinstance(stats, MXNetStats)
    for call in (stats.chisquare, chisquare):
        with pytest.raises(ValueError, match=REFUSED):
            call(f_obs=np.array([10, 20, 30]), f_exp=np.array([10, 20, 29], dtype=np.int32))


# Observed and expected counts whose sums agree along each axis slice that is summed.
_OBS = np.array([[16, 18, 16, 14, 12, 12], [32, 24, 16, 28, 20, 24]])
_EXP = np.array([[16, 16, 16, 16, 16, 8], [24, 24, 24, 24, 24, 24]], dtype=np.int32)
AGREEING = (
    (_OBS.T, _EXP.T, {}),
    (_OBS, _EXP, {"axis": 1}),
    (_OBS, _EXP, {"axis": None}),
    (_OBS, _EXP, {"ddof": 1, "axis": -1}),
    (_OBS[1], _EXP[1], {"ddof": 2}),
)


@NEEDS_SCIPY
def test_frequencies_whose_sums_agree_give_scipy_s_own_result():
    # The same numbers as SciPy's chisquare, to the last bit (what SciPy < 1.7 and SciPy
    # 1.7+ agree on), through the chisquare MXNet's check calls.
    before = registry.handled().get("scipy_chisquare", 0)
    for obs, exp, kwargs in AGREEING:
        ours = mx.test_utils.ss.chisquare(obs, exp, **kwargs)
        theirs = stats.chisquare(obs, exp, **kwargs)
        assert np.array_equal(ours[0], theirs[0]), kwargs
        assert np.array_equal(ours[1], theirs[1]), kwargs
    # Uniform expectation (no f_exp): SciPy's own call.
    assert tuple(mx.test_utils.ss.chisquare([5, 9, 7])) == tuple(stats.chisquare([5, 9, 7]))
    assert registry.handled().get("scipy_chisquare", 0) == before  # nothing was handled


@SUM_CHECK
def test_mxcompat_s_own_computation_matches_scipy_where_the_sums_agree():
    # The path of SciPy 1.7-1.14 (no sum_check there), checked on every SciPy that checks.
    from mxcompat.patches.scipy_chisquare import pearson

    for obs, exp, kwargs in AGREEING:
        ours = pearson(obs, exp, **kwargs)
        theirs = stats.chisquare(obs, exp, **kwargs)
        assert np.array_equal(ours.statistic, theirs[0]), kwargs
        assert np.array_equal(ours.pvalue, theirs[1]), kwargs
    p, obs, exp = _check_normal()
    assert pearson(obs, exp).pvalue == p == _pre_17_p_value(obs, exp)


@NEEDS_SCIPY
def test_every_other_name_is_scipy_stats_own():
    assert mx.test_utils.ss.norm is stats.norm
    assert mx.test_utils.ss.chi2 is stats.chi2


@SUM_CHECK
def test_a_test_utils_imported_after_the_patch_gets_it_from_the_import_hook():
    proc = run_python(
        """
        import importlib, sys
        import mxcompat, mxnet as mx, scipy.stats as ss
        from mxcompat.patches.scipy_chisquare import MXNetStats
        old = sys.modules.pop("mxnet.test_utils")
        mxcompat.unpatch("scipy_chisquare")
        mxcompat.patch("scipy_chisquare")  # waits for mxnet.test_utils
        print(old.ss is ss, "scipy_chisquare" in mxcompat.patched())
        test_utils = importlib.import_module("mxnet.test_utils")
        print(test_utils is not old, isinstance(test_utils.ss, MXNetStats))
        mxcompat.unpatch("scipy_chisquare")
        print(test_utils.ss is ss)
        """
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["True", "True", "True", "True", "True"]
