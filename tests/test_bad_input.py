"""Bad input, systematically: property-based tests (Hypothesis) of every public entry point.

Property both ways: an input the strategy's own model calls bad gets exactly one clear error
(a documented type, in mxcompat's words, raised by mxcompat's code, not from inside MXNet) or
exactly one MXCompatWarning, and leaves the registry, the active patches and MXNet's objects as
they were; an input the model calls good keeps working.  How many inputs each entry point got
is printed at the end (``-s``) and checked by the last test.
"""

import collections
import os
import re
import subprocess
import sys
import traceback
import warnings

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis is not installed here")
import mxnet as mx  # noqa: E402
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import mxcompat  # noqa: E402
from mxcompat._core import facts, log  # noqa: E402
from tests.support.models import dense_net  # noqa: E402
from tests.support.processes import subprocess_env  # noqa: E402
from tests.support.stack import plain_import_works  # noqa: E402

TRIED = collections.Counter()  # entry point -> inputs tried
# Each example resets state itself (the autouse fixture runs once per test, not per example).
FAST = settings(
    deadline=None,
    max_examples=40,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
SLOW = settings(FAST, max_examples=12)
SUBPROCESS = settings(FAST, max_examples=3)

MXNET_DIR = os.path.dirname(os.path.abspath(mx.__file__))


def _importable(name):
    try:
        __import__(name)
        return True
    except Exception:
        return False


HAS_ONNX = _importable("onnx") and _importable("onnxruntime")
needs_onnx = pytest.mark.skipif(
    not HAS_ONNX,
    reason="onnx and onnxruntime are not installed in this env (mxcompat's onnx extra)",
)


def _state():
    import mxnet.module.module as mm

    return (
        mxcompat.frozen_patterns(),
        mxcompat.patched(),
        vars(mm.Module)["bind"],
        vars(mm.Module).get("to_gluon"),
    )


def _reset():
    mxcompat.patch()
    mxcompat.unfreeze()
    log.reset_once()


def expect_one_error(call, types, where):
    """Call; exactly one exception of ``types`` in mxcompat's words, raised by mxcompat's code,
    no warning, and the state unchanged.  Returns the exception."""
    before = _state()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            call()
        except types as exc:
            error = exc
        else:
            raise AssertionError("no error for a bad input")
    assert str(error).startswith("mxcompat"), error
    assert where in str(error), error
    last = traceback.extract_tb(error.__traceback__)[-1].filename
    assert not os.path.abspath(last).startswith(MXNET_DIR), (last, error)
    assert [
        str(w.message) for w in caught if issubclass(w.category, mxcompat.MXCompatWarning)
    ] == []
    assert _state() == before
    return error


# --- freeze / unfreeze / is_frozen / frozen -------------------------------------------------


def _valid_pattern(p):
    """The model: what freeze() accepts."""
    if isinstance(p, re.Pattern if hasattr(re, "Pattern") else type(re.compile(""))):
        return isinstance(p.pattern, str)
    if not isinstance(p, str) or not p.strip():
        return False
    i = 0
    while i < len(p):
        if p[i] == "[":
            j = i + 1
            if j < len(p) and p[j] == "!":
                j += 1
            if j < len(p) and p[j] == "]":
                j += 1
            end = p.find("]", j)
            if end < 0:
                return False
            body = p[i + 1 : end]
            body = body[1:] if body.startswith("!") else body
            k = 0
            while k < len(body):
                if k + 2 < len(body) and body[k + 1] == "-":
                    if body[k] > body[k + 2]:
                        return False
                    k += 3
                else:
                    k += 1
            i = end + 1
        else:
            i += 1
    return True


GLOB_TEXT = st.text(alphabet=st.sampled_from("ab_z01*?[]!-\\^ é\x00"), max_size=8)
PATTERNS = st.one_of(
    GLOB_TEXT,
    st.text(max_size=6),
    st.binary(max_size=4),
    st.none(),
    st.integers(),
    st.floats(allow_nan=False),
    st.lists(st.text(max_size=3), max_size=2),
    st.tuples(st.text(max_size=3)),
    st.sampled_from(["", "  ", "[z-a]", "fc1_[weight", "[!]]", "kw", "*"]).map(str),
    st.builds(re.compile, st.sampled_from(["fc\\d_bias", "a|b", ".*", "x+"])),
    st.builds(re.compile, st.sampled_from([b"x", b"y+"])),
)


@FAST
@given(pattern=PATTERNS)
@example(pattern="[z-a]")  # re.error from sre_parse on Python 3.7
@example(pattern="a[b-\\]")
@example(pattern=re.compile(b"x"))
def test_freeze_any_pattern(pattern):
    _reset()
    TRIED["freeze/unfreeze/is_frozen/frozen"] += 1
    for caller in ("freeze", "unfreeze", "frozen"):
        func = getattr(mxcompat, caller)
        call = (
            (lambda: func(pattern).__enter__()) if caller == "frozen" else (lambda: func(pattern))
        )
        if _valid_pattern(pattern):
            with warnings.catch_warnings():
                warnings.simplefilter("error", mxcompat.MXCompatWarning)
                if caller == "frozen":
                    with func(pattern) as inside:
                        assert inside == (pattern,)
                    assert mxcompat.frozen_patterns() == ()
                elif caller == "freeze":
                    assert func(pattern) == (pattern,)
                    if isinstance(pattern, str):
                        assert mxcompat.is_frozen(pattern) is True or any(
                            c in pattern for c in "[?*"
                        )
                else:
                    assert func(pattern) == ()
        else:
            expect_one_error(call, (TypeError, ValueError), "mxcompat.%s" % caller)
        _reset()
    if not isinstance(pattern, str):
        expect_one_error(lambda: mxcompat.is_frozen(pattern), TypeError, "is_frozen")


@FAST
@given(first=PATTERNS, second=PATTERNS)
def test_freeze_several_all_or_nothing(first, second):
    _reset()
    TRIED["freeze/unfreeze/is_frozen/frozen"] += 1
    mxcompat.freeze("kept")
    if _valid_pattern(first) and _valid_pattern(second):
        got = mxcompat.freeze(first, second)
        assert got[0] == "kept" and set(got[1:]) <= {first, second}
    else:
        expect_one_error(
            lambda: mxcompat.freeze(first, second), (TypeError, ValueError), "mxcompat.freeze"
        )
        assert mxcompat.frozen_patterns() == ("kept",)


# --- patch / unpatch ------------------------------------------------------------------------

PATCH_NAMES = st.one_of(
    st.sampled_from(list(mxcompat.patch_names())),
    st.text(max_size=8),
    st.none(),
    st.integers(),
    st.binary(max_size=3),
    st.lists(st.sampled_from(list(mxcompat.patch_names())), max_size=2),
)


@FAST
@given(names=st.lists(PATCH_NAMES, max_size=3))
@example(names=[["labels"]])  # "unhashable type: 'list'" from the registry dict
@example(names=[None])
def test_patch_unpatch_names(names):
    _reset()
    TRIED["patch/unpatch"] += 1
    valid = all(isinstance(n, str) and n in mxcompat.patch_names() for n in names)
    for func in (mxcompat.unpatch, mxcompat.patch):
        if valid:
            active = func(*names)
            if func is mxcompat.unpatch:
                assert not set(names) & set(active)
        else:
            error = expect_one_error(
                lambda: func(*names),
                TypeError if any(not isinstance(n, str) for n in names) else ValueError,
                "mxcompat",
            )
            assert ("patch name" in str(error)) or ("unknown patch" in str(error))
    _reset()


# --- to_module / to_gluon -------------------------------------------------------------------


NET = None
SHAPES = st.one_of(
    st.lists(st.integers(-2, 6), max_size=4).map(tuple),
    st.lists(
        st.one_of(st.integers(1, 4), st.floats(1, 3), st.booleans(), st.text(max_size=1)),
        min_size=1,
        max_size=3,
    ).map(tuple),
    st.none(),
    st.text(max_size=3),
)
DESCS = st.one_of(
    st.lists(st.tuples(st.sampled_from(["data", "x", "", "softmax_label"]), SHAPES), max_size=2),
    st.lists(st.one_of(st.integers(), st.none(), st.tuples(st.just("data"))), max_size=2),
    st.none(),
    st.text(max_size=3),
    st.integers(),
    st.dictionaries(st.just("data"), SHAPES, max_size=1),
)


def _good_shape(s):
    return (
        isinstance(s, tuple)
        and len(s) >= 1
        and all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in s)
    )


def _fits_net(shape):
    # Dense(in_units=3) flattens all but the first axis: the rest must multiply to 3.
    n = 1
    for d in shape[1:]:
        n *= d
    return n == 3


def _good_data_shapes(ds):
    return (
        isinstance(ds, list)
        and len(ds) == 1
        and isinstance(ds[0], tuple)
        and len(ds[0]) == 2
        and ds[0][0] in ("data", "x", "softmax_label")
        and _good_shape(ds[0][1])
        and _fits_net(ds[0][1])
    )


@SLOW
@given(
    data_shapes=DESCS,
    copy=st.one_of(st.booleans(), st.sampled_from(["no", None, 2])),
    context=st.one_of(st.none(), st.just(mx.cpu()), st.sampled_from(["cpu", 5, ()])),
)
@example(data_shapes=[("data", (2, 5))], copy=True, context=None)  # simple_bind's trace
@example(data_shapes=[("data", (0, 3))], copy=True, context=None)  # "Too many slices"
@example(data_shapes=[("data", (2.5, 3))], copy=True, context=None)  # silently truncated
@example(data_shapes=[("data", (2, 3))], copy="no", context=None)  # read as copy=True
@example(data_shapes=None, copy=True, context=[])  # IndexError
def test_to_module_arguments(data_shapes, copy, context):
    global NET
    _reset()
    TRIED["to_module"] += 1
    NET = NET or dense_net((3, 4, 2))
    weights = {k: v.data().asnumpy().copy() for k, v in NET.collect_params().items()}
    arrays = {k: v.data() for k, v in NET.collect_params().items()}
    good = (
        (data_shapes is None or _good_data_shapes(data_shapes))
        and isinstance(copy, bool)
        and (context is None or context == mx.cpu())
    )
    call = lambda: NET.to_module(data_shapes=data_shapes, copy=copy, context=context)  # noqa
    if good:
        mod = call()
        if data_shapes is not None:
            x = mx.nd.ones(data_shapes[0][1])
            mod.forward(mx.io.DataBatch([x], []), is_train=False)
            assert abs(mod.get_outputs()[0].asnumpy() - NET(x).asnumpy()).max() < 1e-5
    else:
        expect_one_error(call, (TypeError, ValueError), "mxcompat.to_module")
    # Nothing half-done to the block: the same arrays, the same values.
    for k, v in NET.collect_params().items():
        assert v.data() is arrays[k] or copy is False
        assert (v.data().asnumpy() == weights[k]).all()


class _NotHybridizable(mx.gluon.nn.HybridBlock):
    def hybrid_forward(self, F, x):
        return x.asnumpy()


@SLOW
@given(
    block=st.sampled_from(["none", "int", "str", "block", "nonhybrid", "uninit", "other"]),
    data_names=st.one_of(
        st.none(), st.just(["data"]), st.just("data"), st.just([1]), st.just(["a", "b"])
    ),
)
def test_to_module_wrong_blocks(block, data_names):
    _reset()
    TRIED["to_module"] += 1
    blocks = {
        "none": None,
        "int": 5,
        "str": "net",
        "block": mx.gluon.nn.Block(),
        "nonhybrid": _NotHybridizable(),
        "uninit": mx.gluon.nn.Dense(3),
        "other": dense_net((3, 4, 2)),
    }
    target = blocks[block]
    if block == "other" and data_names in (None, ["data"]):
        assert mxcompat.to_module(target, data_names=data_names).data_names == ["data"]
        return
    types = TypeError if block in ("none", "int", "str", "block") else (TypeError, ValueError)
    expect_one_error(
        lambda: mxcompat.to_module(target, data_names=data_names), types, "mxcompat.to_module"
    )


MODULE = None


@SLOW
@given(
    block=st.sampled_from(["none", "same", "other_out", "dense", "int", "block", "empty"]),
    ctx=st.one_of(st.none(), st.just(mx.cpu()), st.sampled_from(["cpu", 5, ()])),
    copy=st.one_of(st.booleans(), st.sampled_from(["no", 2])),
)
@example(block="none", ctx="cpu", copy=True)  # TypeError from NDArray.copyto
@example(block="none", ctx=None, copy="no")  # read as copy=True
def test_to_gluon_arguments(block, ctx, copy):
    global MODULE, NET
    _reset()
    TRIED["to_gluon"] += 1
    NET = NET or dense_net((3, 4, 2))
    MODULE = MODULE or NET.to_module(data_shapes=[("data", (2, 3))])
    blocks = {
        "none": None,
        "same": dense_net((3, 4, 2)),
        "other_out": dense_net((3, 4, 3)),
        "dense": mx.gluon.nn.Dense(2),
        "int": 5,
        "block": mx.gluon.nn.Block(),
        "empty": mx.gluon.nn.HybridSequential(),
    }
    target = blocks[block]
    good = block in ("none", "same") and isinstance(copy, bool) and ctx in (None, mx.cpu())
    call = lambda: MODULE.to_gluon(target, copy=copy, ctx=ctx)  # noqa: E731
    if good:
        net = call()
        x = mx.nd.ones((2, 3))
        assert abs(net(x).asnumpy() - NET(x).asnumpy()).max() < 1e-5
    else:
        if target is not None and hasattr(target, "collect_params"):
            target.initialize() if block != "dense" else None
        expect_one_error(call, (TypeError, ValueError), "mxcompat.to_gluon")
    for bad in (None, 5, NET):
        if bad is NET:
            continue
        expect_one_error(lambda: mxcompat.to_gluon(bad), TypeError, "mxcompat.to_gluon")


# --- to_onnx --------------------------------------------------------------------------------


@needs_onnx
@SLOW
@given(
    input_shapes=st.one_of(
        SHAPES,
        st.lists(SHAPES, max_size=2),
        DESCS,
        st.dictionaries(st.sampled_from(["data", "x"]), SHAPES, max_size=2),
    ),
    opset=st.one_of(st.none(), st.integers(0, 20), st.sampled_from(["x", 1.5, True])),
)
@example(input_shapes=[(2, 5)], opset=None)  # MXNetError from infer_shape, printed args
@example(input_shapes=[()], opset=None)  # TypeError inside MXNet's exporter
@example(input_shapes=[(2, 3)], opset="x")  # '<=' not supported
def test_to_onnx_arguments(input_shapes, opset):
    global NET
    _reset()
    TRIED["to_onnx"] += 1
    NET = NET or dense_net((3, 4, 2))
    from mxcompat.onnx import mxnet_exporter

    low, high = mxnet_exporter._opsets()
    shapes = input_shapes
    if isinstance(shapes, dict):
        shapes = [shapes.get("data")] if list(shapes) == ["data"] else None
    elif isinstance(shapes, tuple) and shapes and all(isinstance(d, int) for d in shapes):
        shapes = [shapes]
    elif (
        isinstance(shapes, list)
        and len(shapes) == 1
        and isinstance(shapes[0], tuple)
        and len(shapes[0]) == 2
        and shapes[0][0] == "data"
    ):
        shapes = [shapes[0][1]]
    good = (
        isinstance(shapes, list)
        and len(shapes) == 1
        and _good_shape(shapes[0])
        and _fits_net(shapes[0])
        and (opset is None or (type(opset) is int and low <= opset <= high))
    )
    call = lambda: mxcompat.to_onnx(NET, input_shapes, opset=opset, verify=False)  # noqa
    if good:
        assert len(call().graph.input) == 1
    else:
        expect_one_error(call, (TypeError, ValueError), "mxcompat.to_onnx")


@needs_onnx
@SLOW
@given(
    model=st.sampled_from(["none", "int", "str", "pair", "triple_bad", "block"]),
    path=st.one_of(st.none(), st.integers(0, 9)),
    rtol=st.sampled_from([1e-4, "x", -1]),
)
@example(model="none", path=5, rtol=1e-4)  # onnx.save wrote to file descriptor 5
def test_to_onnx_wrong_models(model, path, rtol):
    _reset()
    TRIED["to_onnx"] += 1
    models = {
        "none": None,
        "int": 5,
        "str": "m",
        "pair": (1, 2),
        "triple_bad": (mx.sym.var("data"), "x", {}),
        "block": mx.gluon.nn.Block(),
    }
    expect_one_error(
        lambda: mxcompat.to_onnx(models[model], [(2, 3)], path=path, rtol=rtol),
        (TypeError, ValueError),
        "mxcompat.to_onnx",
    )


# --- quantize -------------------------------------------------------------------------------

QUANTIZE_RUNS = facts.since(facts.QUANTIZE_MODEL_MKLDNN) and facts.has_mkldnn()


@SLOW
@given(
    kw=st.fixed_dictionaries(
        {},
        optional={
            "calib_mode": st.sampled_from(["naive", "none", "x", 5]),
            "quantized_dtype": st.sampled_from(["uint8", "int8", "bad"]),
            "ctx": st.sampled_from([mx.cpu(), "cpu", 5]),
            "calib_data": st.sampled_from(["ok", "wide", "str", "empty"]),
            "num_calib_examples": st.sampled_from([None, 4, "x", 0]),
            "excluded_sym_names": st.sampled_from([None, [], 5]),
            "bogus": st.just(1),
        },
    )
)
@example(kw={"ctx": "cpu"})  # AttributeError: 'str' has no 'device_type'
@example(kw={"calib_data": "wide"})  # simple_bind's trace from calibration
@example(kw={"bogus": 1})  # TypeError of quantize_model_mkldnn
def test_quantize_arguments(kw):
    global NET
    _reset()
    TRIED["quantize"] += 1
    NET = NET or dense_net((3, 4, 2))
    kw = dict(kw)
    data = {"ok": mx.nd.ones((4, 3)), "wide": mx.nd.ones((4, 5)), "str": "x", "empty": []}
    kw["calib_data"] = data[kw.get("calib_data", "ok")]
    good = (
        kw.get("calib_mode", "naive") in ("naive", "none")
        and kw.get("quantized_dtype", "uint8") != "bad"
        and kw.get("ctx", mx.cpu()) == mx.cpu()
        and "bogus" not in kw
        and kw.get("num_calib_examples") in (None, 4)
        and kw.get("excluded_sym_names") in (None, [])
        and (
            kw["calib_data"] is data["ok"]
            or kw.get("calib_mode") == "none"
            and not isinstance(kw["calib_data"], (str, list))
        )
    )
    if kw.get("calib_mode") == "none" and kw["calib_data"] is not data["ok"]:
        good = False
    if good and not QUANTIZE_RUNS:
        with pytest.raises(RuntimeError, match="^mxcompat.quantize: MXNet .* MKLDNN"):
            mxcompat.quantize(NET, **kw)
    elif good:
        mod = mxcompat.quantize(NET, **kw)
        assert mod.data_names == ["data"]
    else:
        expect_one_error(
            lambda: mxcompat.quantize(NET, **kw), (TypeError, ValueError), "mxcompat.quantize"
        )


@SLOW
@given(model=st.sampled_from([None, 5, "x", (1, 2), (1, 2, 3), "block"]))
def test_quantize_wrong_models(model):
    _reset()
    TRIED["quantize"] += 1
    model = mx.gluon.nn.Block() if model == "block" else model
    expect_one_error(
        lambda: mxcompat.quantize(model, calib_data=mx.nd.ones((4, 3))),
        TypeError,
        "mxcompat.quantize",
    )


# --- MXCOMPAT_* environment variables, in subprocesses --------------------------------------

PROBE = """
import warnings, json
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import mxcompat
    try:
        import mxnet
        failed = None
    except Exception as exc:  # MXCOMPAT_DISABLE where MXNet needs mxcompat to import
        failed = type(exc).__name__
    mxcompat.patched()
print(json.dumps({"warnings": [str(w.message) for w in caught
                               if w.category.__name__ == "MXCompatWarning"],
                  "failed": failed,
                  "patched": list(mxcompat.patched()),
                  "frozen": [str(p) for p in mxcompat.frozen_patterns()]}))
"""

ENV_VALUES = st.one_of(
    st.sampled_from(["1", "0", "yes", "off", "", "maybe", "2", " TRUE "]),
    st.text(alphabet=st.sampled_from("ab01,[]*- "), max_size=6),
)


def _probe(env):
    import json

    proc = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        env=subprocess_env(env),
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


YES, NO = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


@SUBPROCESS
@given(name=st.sampled_from(["MXCOMPAT_DISABLE", "MXCOMPAT_NUMPY_LEGACY"]), value=ENV_VALUES)
@example(name="MXCOMPAT_DISABLE", value="maybe")  # read as yes, silently
@example(name="MXCOMPAT_NUMPY_LEGACY", value="2")
def test_env_flags(name, value):
    TRIED["env " + name] += 1
    seen = _probe({name: value})
    word = value.strip().lower()
    if word in YES or word in NO:
        assert seen["warnings"] == []
    else:
        assert seen["warnings"] == [
            "%s=%r is neither a yes (1, true, yes, on) nor a no (0, false, no, off, empty); "
            "mxcompat reads it as yes" % (name, value)
        ]
    if name == "MXCOMPAT_DISABLE":
        assert (seen["patched"] == []) == (word not in NO)
        # Without the patches MXNet 1.6+ cannot import on NumPy 2 / Python 3.12+ (README).
        assert seen["failed"] is None or (word not in NO and not plain_import_works())
    else:
        assert seen["failed"] is None


@SUBPROCESS
@given(
    value=st.lists(
        st.sampled_from(["kw", "fc1_*", "", " ", "[z-a]", "fc[2", "a[!b]"]), max_size=3
    ).map(",".join)
)
@example(value="[z-a],fc[2")  # two warnings before
def test_env_freeze(value):
    TRIED["env MXCOMPAT_FREEZE"] += 1
    seen = _probe({"MXCOMPAT_FREEZE": value})
    items = [i.strip() for i in value.split(",") if i.strip()]
    good = [i for i in items if _valid_pattern(i)]
    assert seen["frozen"] == list(collections.OrderedDict.fromkeys(good))
    assert len(seen["warnings"]) == (1 if len(good) < len(items) else 0)
    if len(good) < len(items):
        assert seen["warnings"][0].startswith("MXCOMPAT_FREEZE: mxcompat.freeze: invalid glob")


@SUBPROCESS
@given(
    value=st.lists(st.sampled_from(["labels", "nope", "", " freeze ", "x y"]), max_size=3).map(
        ",".join
    )
)
def test_env_disable_patches(value):
    TRIED["env MXCOMPAT_DISABLE_PATCHES"] += 1
    seen = _probe({"MXCOMPAT_DISABLE_PATCHES": value})
    items = [i.strip() for i in value.split(",") if i.strip()]
    unknown = [i for i in items if i not in mxcompat.patch_names()]
    assert len(seen["warnings"]) == (1 if unknown else 0)
    assert not set(items) & set(seen["patched"])


# --- the CLI --------------------------------------------------------------------------------


def _cli(args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "mxcompat"] + list(args),
        capture_output=True,
        text=True,
        env=subprocess_env(env),
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


BAD_CLI = [
    [],
    ["bogus"],
    ["run"],
    ["run", "--freeze"],
    ["run", "--no-patch", "nope", "x.py"],
    ["run", "-E", "x.py"],
    ["run", "-Z", "x.py"],
    ["run", "--bogus"],
    ["run", "-m"],
    ["check", "--bogus"],
    ["patches", "--json", "extra"],
    ["onnx"],
    ["onnx", "p", "x", "--input-shape", "1"],
    ["onnx", "p", "0", "--input-shape", "a,b"],
    ["onnx", "p", "0", "--input-shape", "1,0"],
    ["onnx", "p", "0", "--input-shape", "1", "--opset", "x"],
    ["matrix", "--bogus"],
    ["matrix", "--mxnet", "9.9", "--list"],
    ["matrix", "--jobs", "x"],
    ["matrix", "--jobs", "0", "--list"],
    ["matrix", "--python", "abc", "--list"],
    ["matrix", "--timeout", "-5", "--no-install-project", "--", "true"],
    ["matrix", "--timeout", "nan", "--no-install-project", "--", "true"],
    ["run", "--freeze", "[z-a]", "x.py"],
    ["run", "--freeze=", "x.py"],
    ["run", "--freeze", "kw,fc[2", "x.py"],
]


@settings(SUBPROCESS, max_examples=len(BAD_CLI) // 3)
@given(args=st.sampled_from(BAD_CLI))
@example(args=["matrix", "--timeout", "-5", "--no-install-project", "--", "true"])
@example(args=["run", "--freeze", "kw,fc[2", "x.py"])  # passed on, one warning in the script
def test_cli_usage_errors(args):
    TRIED["cli " + (args[0] if args else "(none)")] += 1
    proc = _cli(args)
    assert proc.returncode == 2, (args, proc.returncode, proc.stderr)
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, proc.stderr
    assert "Traceback" not in proc.stderr


@needs_onnx
@SUBPROCESS
@given(shape=st.sampled_from(["2,5", "2", "2,3,4"]))
def test_cli_onnx_shape_that_does_not_fit(shape, tmpdir):
    TRIED["cli onnx"] += 1
    prefix = str(tmpdir.join("m"))
    if not os.path.exists(prefix + "-symbol.json"):
        net = dense_net((3, 4, 2))
        net.hybridize()
        net(mx.nd.ones((2, 3)))
        net.export(prefix)
    proc = _cli(["onnx", prefix, "0", "--input-shape", shape, "--no-verify"])
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("mxcompat onnx: mxcompat.to_onnx: the input shape(s) data="), (
        proc.stderr
    )
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_inputs_tried():
    """Runs last (file order): every entry point got inputs; the counts go to the report."""
    counts = dict(sorted(TRIED.items()))
    sys.stdout.write("\ninputs tried per entry point: %s\n" % counts)
    expected = {
        "freeze/unfreeze/is_frozen/frozen",
        "patch/unpatch",
        "to_module",
        "to_gluon",
        "quantize",
        "env MXCOMPAT_DISABLE",
        "env MXCOMPAT_NUMPY_LEGACY",
        "env MXCOMPAT_FREEZE",
        "env MXCOMPAT_DISABLE_PATCHES",
    }
    if HAS_ONNX:
        expected.add("to_onnx")
    missing = expected - set(counts)
    if missing and len(TRIED) < 5:
        pytest.skip("run alone or with -k: the other property tests did not run")
    assert not missing, counts
