"""The NumPy patches together (``numpy_names``, ``numpy2``, ``distutils``): MXNet on today's
NumPy and Python computes, bit for bit, what the same release computes without mxcompat in its
reference environment (``reference_env``: e.g. 1.9.1 on Python 3.11 + NumPy 1.23.5), in the same
run on the same machine (``numpy_reference`` says what is computed).
"""

import sys
import warnings

import numpy as np
import pytest

from tests.support import numpy_reference, reference_env
from tests.support.processes import subprocess_env


@pytest.fixture(scope="module")
def reference():
    """Plain MXNet's results in the reference environment, computed now on this machine."""
    try:
        python, where = reference_env.reference_python(np.__version__)
    except reference_env.Unavailable as e:
        pytest.skip(str(e))
    return where, reference_env.compute_reference(python, subprocess_env())


def _same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_results_match_the_reference_environment(reference):
    where, want = reference
    want = dict(want)
    env = str(want.pop("__env__"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = numpy_reference.compute()
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    different = [
        "%s: %r != reference %r" % (k, got[k], want[k])
        for k in want
        if k in got and not _same(got[k], want[k])
    ]
    assert not (missing or extra or different), (
        "NumPy %s / Python %s with mxcompat vs %s (%s):\n%s"
        % (
            np.__version__,
            sys.version.split()[0],
            where,
            env,
            "\n".join(
                ["missing: %s" % k for k in missing[:20]]
                + ["extra: %s" % k for k in extra[:20]]
                + different[:40]
            ),
        )
    )
