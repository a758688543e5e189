"""Per MXNet release: the stacks its own unittest files run on, which files, which tests are
not run (network) and which differences are NumPy's documented change in the test's own code.

The releases and their reference stacks are ``_core/versions``' rows of the stack each release
installs on with its own pins (``mx131`` … ``mx191``); nothing of them is restated here but
the Python of the nose-era releases (below)."""

import os
import re
from collections import namedtuple

from mxcompat._core import facts, versions

MXNET_EXTRAS = versions.MXNET_EXTRAS

# 1.3-1.8's files are nose tests as MXNet's CI ran them (module-level ``setup``/``teardown``,
# ``nose.tools``): pytest 7.4 still calls nose-style fixtures (pytest 8 dropped them) and nose
# 1.3.7 imports on Python <= 3.9 only, so their reference runs on Python 3.8 (3.7 for 1.3/1.4,
# whose numpy<1.15 has no newer wheels) with the NumPy of the release's versions row.
NOSE_PYTHON = "3.8"
NOSE_REFERENCE_TOOLS = (
    "pytest==7.4.4",
    "pytest-timeout==2.2.0",
    "nose==1.3.7",
    "mock==5.1.0",
)
# nose 1.3.7 does not import on Python >= 3.10 (collections.Callable): pynose is the same API
# for the files' ``from nose.tools import ...`` on 3.13.
NOSE_CANDIDATE_TOOLS = (
    "pytest==7.4.4",
    "pytest-timeout==2.2.0",
    "pynose==1.5.5",
    "mock==5.1.0",
)
# 1.9.1 as it has always been judged here: pytest 9 both sides, pynose for the nose imports.
PYTEST_TOOLS = ("pytest==9.2.0", "pytest-timeout==2.4.0", "pynose==1.5.5", "mock==5.2.0")
CANDIDATE_PYTHON = "3.13"
CANDIDATE_NUMPY = "numpy>=2"
# SciPy, h5py and OpenCV (used by some tests) resolved against each side's NumPy, wheels only.
SCIENCE = ("scipy", "h5py", "opencv-python-headless")
# What a candidate Python has no wheel of yet (h5py: none for 3.15 in December 2026): left out
# there, so the tests that use it skip or fail on that side alone and show as differences.
SCIENCE_WITHOUT_WHEELS = {"3.15": ("h5py",)}
# SciPy 1.7 (June 2021) made ``chisquare`` refuse frequencies whose totals differ, which
# ``mxnet.test_utils.chi_square_check`` passes (the generator tests of test_random): 1.3-1.8
# were released before it, so their reference has the SciPy they were tested with.  1.9.1
# (May 2022) came after it, and its Python 3.11 has no SciPy < 1.7 wheel: its reference keeps
# the newer SciPy, where those tests fail.
NOSE_REFERENCE_SCIENCE = ("scipy<1.7",) + SCIENCE[1:]

# The files that exercise what mxcompat patches, in run order; each release runs those of them
# its tag has, each to its end (``--file-timeout`` only stops a hung process).
REQUIRED = (
    "test_module",
    "test_gluon",
    "test_gluon_trainer",
    "test_contrib_svrg_module",
    "test_ndarray",
    "test_metric",
    "test_io",
    "test_optimizer",
    "test_kvstore",
    "test_gluon_data",
    # The generator tests (mxnet.test_utils.chi_square_check: the scipy_chisquare patch).
    "test_random",
)
# What .ci/run runs for every release: small, so that all releases add minutes, not an hour.
QUICK = ("test_metric", "test_gluon_trainer", "test_module")
QUICK_191 = ("test_metric", "test_gluon_trainer", "test_numpy_ndarray")
SUBSETS = ("quick", "required", "others", "full")


def files_of(unittest, subset, quick=QUICK):
    """The files of one tag's unittest folder a subset runs: ``full`` is every ``test_*.py``
    of the tag, REQUIRED first; ``others`` the files beyond REQUIRED, which run within the
    time budget (``--budget``) each."""
    present = sorted(name[:-3] for name in os.listdir(unittest) if re.match(r"test_\w+\.py$", name))
    if subset == "quick":
        return [f for f in quick if f in present]
    required = [f for f in REQUIRED if f in present]
    others = [f for f in present if f not in REQUIRED]
    return {"required": required, "others": others, "full": required + others}[subset]


# Tests that need the network (no host but the package registries is reachable here): they
# fail on both sides, so they are not run.  Exact pytest ids, every release (an id a release
# lacks deselects nothing).
_DATA = "downloads MXNet's test data (%s), and no host but the package registries is reachable"
DESELECT = {
    "test_gluon_data.py::test_recordimage_dataset": _DATA % "test_images.tar.gz",
    "test_gluon_data.py::test_recordimage_dataset_with_data_loader_multiworker": _DATA
    % "test_images.tar.gz",
    "test_gluon_data.py::test_image_folder_dataset": _DATA % "test_images.tar.gz",
    "test_gluon_data.py::test_datasets": _DATA % "MNIST, CIFAR, Fashion-MNIST",
    "test_io.py::test_MNISTIter": _DATA % "mnist.zip",
    "test_io.py::test_Cifar10Rec": _DATA % "cifar10.zip",
    "test_io.py::test_image_iter_exception": _DATA % "cifar10.zip",
    "test_io.py::test_ImageRecordIter_seed_augmentation": _DATA % "cifar10.zip",
    "test_io.py::test_LibSVMIter": _DATA % "news20.t.bz2",
    "test_gluon_contrib.py::test_datasets": _DATA % "WikiText-2",
    "test_gluon_estimator.py::test_initializer": _DATA % "a model-zoo ResNet",
    "test_gluon.py::test_symbol_block": _DATA % "a model-zoo ResNet",
    "test_gluon.py::test_export": _DATA % "a model-zoo ResNet",
    "test_gluon.py::test_import": _DATA % "a model-zoo ResNet",
    "test_gluon.py::test_save_load": _DATA % "a model-zoo ResNet",
    "test_gluon.py::test_hybrid_static_memory": _DATA % "a model-zoo ResNet",
    "test_gluon.py::test_hybrid_static_memory_switching": _DATA % "a model-zoo ResNet",
    "test_gluon.py::test_hybrid_static_memory_recording": _DATA % "a model-zoo ResNet",
    "test_test_utils.py::test_download_successful": "downloads apache/incubator-mxnet's README.md "
    "from raw.githubusercontent.com, and no host but the package registries is reachable",
    "test_contrib_io.py::test_contrib_DataLoaderIter": _DATA % "MNIST",
    "test_contrib_text.py::test_download_embed": _DATA % "a pretrained word embedding",
    "test_gluon_model_zoo.py::test_models": _DATA % "the model zoo's pretrained weights",
}
# TestImage's images come from its nose-style setupClass, which downloads them (and which
# pytest does not call): these fail on both sides for want of the images.
for _name in ("test_det_augmenters", "test_image_detiter", "test_imageiter"):
    DESELECT["test_image.py::TestImage::" + _name] = _DATA % (
        "test_images.tar.gz, in TestImage.setupClass"
    )


# Differences allowed because NumPy itself changed what the TEST's own code computes (each with
# the NumPy release note and the test line), never MXNet's library code failing on today's
# NumPy (that is a bug of mxcompat's).  {tag: {test id: Allowed}}.
class Allowed(namedtuple("Allowed", "change line code why")):
    """``change``: NumPy's release note; ``line``/``code``: the test's own line that meets it."""

    def __str__(self):
        return "%s: the test's own %s (%s) %s" % (self.change, self.line, self.code, self.why)

    @property
    def short(self):
        """The change in two words, for the README's row: ``NEP 50``, ``NumPy 2.4``."""
        if "NEP 50" in self.change:
            return "NEP 50"
        return re.match(r"NumPy \d+\.\d+", self.change).group(0)


_NEP50 = (
    "NEP 50 (NumPy 2.0 release notes, 'NEP 50 promotion state')",
    "`(...).sum().asscalar() / label.size`",
    "is the test's expected value: float32 now (NumPy 1: float64), so its exact comparison "
    "with MXNet's float64 accuracy fails; MXNet's accuracy is the same on both sides",
)
_INDEXING = (
    "NumPy 2.4 release notes (expired deprecation from 1.25, 'conversion of an array with "
    "ndim > 0 to a scalar')",
    "`np_array[np_index] = mx_value.asnumpy()`",
    "stores a (1, 1) array into one element of the NumPy side; MXNet's side of the same line works",
)
# The line of each tag where the test's code stands.
_ACC_LINE = {"1.3.1": 55, "1.4.1": 55, "1.5.1": 120}
_INDEXING_LINE = {"1.6.0": 663}
# test_numpy_interoperability's workloads are built by one function for the whole file: the one
# out-of-range literal below fails the two tests that use them (every workload is then unrun).
_OUT_OF_BOUND = (
    "NumPy 2.0 release notes (NEP 50: 'out-of-bound Python integers' raise OverflowError; "
    "deprecated since 1.24)",
    "`np.array([1621],dtype=_np.uint8)`",
    "asks for 1621 as uint8; MXNet's mx.np.array passes the test's own value to NumPy, which "
    "wrapped it to 85 before and refuses it now (mxcompat does not bring back a silent wrap)",
)
_INT_OF_ARRAY = (
    _INDEXING[0],
    "`csr.indptr[0:int(num_nodes + 1)]`",
    "converts the test's own NumPy array of shape (1,) (`out[0][-1].asnumpy()`) with int(), "
    "a TypeError since NumPy 2.4; MXNet's sampler output is the same on both sides",
)

# 1.3/1.4's reference has NumPy 1.14.6; 1.5+'s has 1.23.5, where the same lines fail too.
_LIST_INDEX = (
    "NumPy 1.23 release notes (expired deprecation from 1.15, 'multidimensional indexing "
    "with non-tuple values is not allowed')",
    "`x.asnumpy()[idx]`",
    "indexes the test's own NumPy array with a list of slices, an IndexError since NumPy "
    "1.23; MXNet's output `y` is not reached by the error",
)
_UINT8_ARANGE = (
    _OUT_OF_BOUND[0],
    "`np.arange(*config, dtype=dtype)`",
    "is the test's own NumPy expectation for `(-100, 100, 1)` as uint8, refused by NumPy now "
    "(it wrapped before); MXNet's arange is not reached",
)

# test_numpy_op compares mx.np with NumPy's own functions, called by the test itself.
_NONZERO_0D = (
    "NumPy 2.1 release notes (expired deprecation from 1.17, 'nonzero on 0d arrays')",
    "`np_out = _np.nonzero(x.asnumpy())`",
    "is the test's own NumPy expectation for a 0-d input, a ValueError since NumPy 2.1; "
    "MXNet's nonzero of the same input is computed before it",
)
_PERCENTILE = (
    "NumPy 2.4 release notes (expired deprecation from 1.22, percentile's `interpolation=` "
    "renamed `method=`)",
    "`_np.percentile(a.asnumpy(), np_q, axis=axis, interpolation=interpolation, "
    "keepdims=keepdims)`",
    "is the test's own NumPy expectation, a TypeError since NumPy 2.4; MXNet's percentile "
    "is computed before it",
)
_UNIQUE_INVERSE = (
    "NumPy 2.0 release notes ('np.unique return_inverse shape for multi-dimensional inputs')",
    "`np_out = _np.unique(x.asnumpy(), *config[1:])`",
    "is the test's own NumPy expectation: its inverse indices now have the input's shape (5, 4) "
    "(NumPy 1: flat, (20,), as MXNet's), so comparing it with MXNet's fails",
)
# {tag: (nonzero line, percentile line or None, unique line)}
_NUMPY_OP_LINES = {
    "1.6.0": (3384, None, 3432),
    "1.7.0": (6534, 7533, 6582),
    "1.8.0": (6611, 7619, 6659),
    "1.9.1": (6619, 7628, 6667),
}


def _allowed(note, line):
    change, code, why = note
    return Allowed(change, line, code, why)


ALLOWED = {}
for _tag_ in ("1.3.1", "1.4.1", "1.5.1", "1.6.0", "1.7.0", "1.8.0", "1.9.1"):
    ALLOWED[_tag_] = {
        "test_metric.py::test_acc": _allowed(
            _NEP50, "test_metric.py:%d" % _ACC_LINE.get(_tag_, 138)
        )
    }
for _tag_ in ("1.6.0", "1.7.0", "1.8.0", "1.9.1"):
    ALLOWED[_tag_]["test_numpy_ndarray.py::test_np_ndarray_indexing"] = _allowed(
        _INDEXING, "test_numpy_ndarray.py:%d" % _INDEXING_LINE.get(_tag_, 705)
    )
    ALLOWED[_tag_]["test_dgl_graph.py::test_uniform_sample"] = _allowed(
        _INT_OF_ARRAY, "test_dgl_graph.py:64"
    )
for _name, _line in (
    ("test_crop", 2427),
    ("test_slice_axis", 2462),
    ("test_slice_like", 2510),
    ("test_flip", 2527),
):
    ALLOWED["1.4.1"]["test_operator.py::" + _name] = _allowed(
        _LIST_INDEX, "test_operator.py:%d" % _line
    )
ALLOWED["1.4.1"]["test_operator.py::test_init"] = _allowed(_UINT8_ARANGE, "test_operator.py:3659")
for _tag_, (_nonzero, _percentile, _unique) in _NUMPY_OP_LINES.items():
    _ids = ALLOWED[_tag_]
    _ids["test_numpy_op.py::test_np_nonzero"] = _allowed(
        _NONZERO_0D, "test_numpy_op.py:%d" % _nonzero
    )
    _ids["test_numpy_op.py::test_np_unique"] = _allowed(
        _UNIQUE_INVERSE, "test_numpy_op.py:%d" % _unique
    )
    if _percentile:
        _ids["test_numpy_op.py::test_np_percentile"] = _allowed(
            _PERCENTILE, "test_numpy_op.py:%d" % _percentile
        )
# 1.6.0 and 1.7.0 build these workloads when the file is imported: the first out-of-range
# literal leaves the file with no test on the candidate (its collection error, and each test
# absent); 1.8+ build them in the tests that use them.
_AT_IMPORT = (
    "",  # the file's own id: its collection error
    "::test_np_array_function_protocol",
    "::test_np_array_ufunc_protocol",
    "::test_np_memory_array_function",
    "::test_np_fallback_ops",
)
_AT_IMPORT_WHY = (
    "while the file is imported (its workloads are built at module level), so the file "
    "collects no test; NumPy wrapped it before and refuses it now (mxcompat does not bring "
    "back a silent wrap)"
)
for _name in _AT_IMPORT:
    ALLOWED["1.6.0"]["test_numpy_interoperability.py" + _name] = Allowed(
        _OUT_OF_BOUND[0],
        "test_numpy_interoperability.py:786",
        "`np.array([20, 200], dtype=np.int8)`",
        "asks for 200 as int8 " + _AT_IMPORT_WHY,
    )
    ALLOWED["1.7.0"]["test_numpy_interoperability.py" + _name] = Allowed(
        _OUT_OF_BOUND[0],
        "test_numpy_interoperability.py:107",
        _OUT_OF_BOUND[1],
        "asks for 1621 as uint8 " + _AT_IMPORT_WHY,
    )
for _tag_ in ("1.8.0", "1.9.1"):
    for _name in ("test_np_array_function_protocol", "test_np_array_ufunc_protocol"):
        ALLOWED[_tag_]["test_numpy_interoperability.py::" + _name] = _allowed(
            _OUT_OF_BOUND, "test_numpy_interoperability.py:114"
        )

# Tests that fail on a release's REFERENCE because of its own stack, and pass on the candidate
# with mxcompat: {tag: {test id: (short cause, what happens)}}.  Shown as differences, with
# this cause; a reference pass is never one.
_SCIPY_SUM_CHECK = (
    "the reference's SciPy >= 1.7",
    "1.9.1's reference (Python 3.11) has no SciPy < 1.7 wheel, and SciPy 1.7+ refuses the "
    "frequencies `mxnet.test_utils.chi_square_check` passes to `chisquare`; mxcompat's "
    "`scipy_chisquare` computes what SciPy < 1.7 did",
)
REFERENCE_STACK = {
    "1.9.1": {
        "test_random.py::" + _name: _SCIPY_SUM_CHECK
        for _name in (
            "test_normal_generator",
            "test_uniform_generator",
            "test_exponential_generator",
            "test_poisson_generator",
            "test_negative_binomial_generator",
            "test_multinomial_generator",
            "test_randint_generator",
        )
    }
}

Release = namedtuple(
    "Release",
    "tag row reference_python reference_tools candidate_tools quick reference_science",
)


def _release(row):
    tag = facts.release(row.mxnet)
    if tag == "1.9.1":
        return Release(tag, row, row.python, PYTEST_TOOLS, PYTEST_TOOLS, QUICK_191, SCIENCE)
    python = min(row.python, NOSE_PYTHON, key=facts.parse_version)
    return Release(
        tag,
        row,
        python,
        NOSE_REFERENCE_TOOLS,
        NOSE_CANDIDATE_TOOLS,
        QUICK,
        NOSE_REFERENCE_SCIENCE,
    )


# Oldest first: the rows of each release on the stack its own pins install.
RELEASES = tuple(
    _release(row)
    for row in sorted(
        (c for c in versions.COMBINATIONS if re.match(r"mx\d+$", c.name)),
        key=lambda c: facts.parse_version(c.mxnet),
    )
)


def by_tag(tag):
    for release in RELEASES:
        if release.tag == tag or release.row.mxnet == tag:
            return release
    raise KeyError(tag)
