"""Every feature that acts when a module is imported, in every import order a user can write.

Each case runs in a fresh interpreter.  The import-hook mechanism (``_core.hooks``) is shared
by the NumPy opt-in (waits for ``numpy``), the registry (``mxnet``), ``python_oo`` (MXNet's
doc modules) and ``scipy_chisquare`` (``mxnet.test_utils``), and by the pre-import actions
that run while ``mxnet/__init__.py`` imports NumPy itself: a change to the mechanism that
loses one of them in one order fails here.
"""

import json
import sys

import pytest

from mxcompat._core import facts
from tests.support.processes import mxcompat_cmd, run_python
from tests.support.processes import write as write_file
from tests.support.stack import MX_VERSION, applicable_patches, plain_import_works

NUMPY = sys.modules["numpy"]
NUMPY_MAJOR = facts.parse_version(NUMPY.__version__)[0]

# The orders a user can write; OPT_IN is where `mxcompat.numpy_legacy(True)` goes when the
# API is the way in (right after `import mxcompat`).
ORDERS = {
    "mxcompat-mxnet-numpy": ["import mxcompat", "OPT_IN", "import mxnet", "import numpy as np"],
    "mxcompat-numpy-mxnet": ["import mxcompat", "OPT_IN", "import numpy as np", "import mxnet"],
    "numpy-mxcompat-mxnet": ["import numpy as np", "import mxcompat", "OPT_IN", "import mxnet"],
    "mxnet-mxcompat": ["import mxnet", "import mxcompat", "OPT_IN", "import numpy as np"],
}

PROBE = """
import json, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    served = [getattr(np, "asscalar", None) is not None]
    if served[0]:
        served.append(np.asscalar(np.array([7.5])))
        served.append(np.asscalar(np.array([1.5])))
ours = [str(w.message) for w in caught if type(w.message).__name__ == "MXCompatWarning"]
import importlib  # the module: `mxcompat.numpy_legacy` is the public function of that name
print(json.dumps([served, ours, importlib.import_module("mxcompat.numpy_legacy").enabled()]))
"""


def _lines(order, opt_in):
    return [
        opt_in if line == "OPT_IN" else line for line in ORDERS[order] if line != "OPT_IN" or opt_in
    ]


def _needs_plain_import(order, way):
    # `mxcompat run` imports mxcompat before the script's first line whatever the order.
    if order == "mxnet-mxcompat" and way != "run" and not plain_import_works():
        pytest.skip(
            "`import mxnet` before mxcompat fails here (MXNet %s on NumPy %s / Python %d.%d): "
            "only `mxcompat run` can import in that order"
            % (MX_VERSION, NUMPY.__version__, sys.version_info[0], sys.version_info[1])
        )


def _run(order, way, tmp_path, opted_in=True):
    if way == "run":
        script = write_file(tmp_path / "legacy.py", "\n".join(_lines(order, "")) + PROBE)
        args = ["run", "--numpy-legacy", script] if opted_in else ["run", script]
        return mxcompat_cmd(*args)
    opt_in = "mxcompat.numpy_legacy(True)" if way == "api" and opted_in else ""
    env = {"MXCOMPAT_NUMPY_LEGACY": "1"} if way == "env" and opted_in else None
    return run_python("\n".join(_lines(order, opt_in)) + PROBE, env=env)


@pytest.mark.parametrize("way", ["env", "run", "api"])
@pytest.mark.parametrize("order", sorted(ORDERS))
def test_numpy_legacy_in_every_import_order(order, way, tmp_path):
    if (
        not hasattr(NUMPY.lib, "NumpyVersion")
        or NUMPY.lib.NumpyVersion(NUMPY.__version__) < "1.23.0"
    ):
        pytest.skip("NumPy %s still has numpy.asscalar (removed in 1.23)" % NUMPY.__version__)
    _needs_plain_import(order, way)
    proc = _run(order, way, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    served, warned, enabled = json.loads(proc.stdout.splitlines()[-1])
    assert served == [True, 7.5, 1.5]
    # One warning, at the first use only.
    assert warned == [
        "numpy.asscalar is gone from NumPy %s; legacy code gets a.item() from mxcompat "
        "(numpy_legacy): use that instead" % NUMPY.__version__
    ]
    assert enabled is True


# Without the opt-in the env and API ways are the same plain script; `mxcompat run` differs.
@pytest.mark.parametrize("way", ["env", "run"])
@pytest.mark.parametrize("order", sorted(ORDERS))
def test_numpy_legacy_without_the_opt_in_serves_nothing(order, way, tmp_path):
    _needs_plain_import(order, way)
    proc = _run(order, way, tmp_path, opted_in=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    served, warned, enabled = json.loads(proc.stdout.splitlines()[-1])
    has_it = NUMPY.lib.NumpyVersion(NUMPY.__version__) < "1.23.0"
    # NumPy < 1.23 still has its own asscalar (with its own DeprecationWarning, not ours).
    assert served[0] is has_it
    assert (warned, enabled) == ([], False)


# --- the other features that wait for an import ---------------------------------------------

PATCHES_PROBE = """
import json, sys
import mxnet as mx
from mxcompat.patches import scipy_chisquare
print(json.dumps([list(mxcompat.patched()),
                  isinstance(getattr(mx.test_utils, "ss", None), scipy_chisquare.MXNetStats)]))
"""

REGISTRY_ORDERS = {
    "mxcompat-mxnet": ["import mxcompat", "import mxnet"],
    "numpy-mxcompat-mxnet": ["import numpy", "import mxcompat", "import mxnet"],
    "mxcompat-numpy-mxnet": ["import mxcompat", "import numpy", "import mxnet"],
    # MXNet's submodule first: the parent package is imported on the way.
    "mxcompat-mxnet.gluon": ["import mxcompat", "import mxnet.gluon"],
    "mxcompat-mxnet.test_utils": ["import mxcompat", "import mxnet.test_utils"],
    "scipy-mxcompat-mxnet": ["import scipy.stats", "import mxcompat", "import mxnet"],
    "mxnet-mxcompat": ["import mxnet", "import mxcompat"],
    "mxnet.test_utils-mxcompat": ["import mxnet.test_utils", "import mxcompat"],
}


def _scipy_installed():
    return run_python("import scipy.stats").returncode == 0


@pytest.mark.parametrize("order", sorted(REGISTRY_ORDERS))
def test_the_patches_land_in_every_import_order(order):
    """The registry (waits for ``mxnet``) and ``scipy_chisquare`` (``mxnet.test_utils``)."""
    if order.startswith("mxnet") and not plain_import_works():
        pytest.skip(
            "`import mxnet` before mxcompat fails here (MXNet %s on NumPy %s / Python %d.%d)"
            % (MX_VERSION, NUMPY.__version__, sys.version_info[0], sys.version_info[1])
        )
    if order.startswith("scipy") and not _scipy_installed():
        pytest.skip("needs SciPy (this env has none)")
    proc = run_python("\n".join(REGISTRY_ORDERS[order]) + PATCHES_PROBE)
    assert proc.returncode == 0, proc.stderr[-3000:]
    patched, chisquare_proxied = json.loads(proc.stdout)
    assert patched == list(applicable_patches())
    assert chisquare_proxied is ("scipy_chisquare" in patched)


@pytest.mark.parametrize(
    "order", ["mxcompat-mxnet", "numpy-mxcompat-mxnet", "mxcompat-numpy-mxnet"]
)
def test_python_oo_in_every_import_order(order):
    """``python_oo`` waits for MXNet's doc modules; without it ``import mxnet`` fails under
    ``-OO`` in every release, so mxnet-first orders cannot be written there."""
    proc = run_python(
        "import sys; sys.flags.optimize >= 2 or sys.exit('not -OO')\n"
        + "\n".join(REGISTRY_ORDERS[order])
        + "\nimport mxcompat\nfrom mxcompat._core import registry\n"
        + "print('python_oo' in mxcompat.patched(), registry.handled().get('python_oo', 0) > 0)",
        env={"PYTHONOPTIMIZE": "2"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["True", "True"]
