"""bfloat16_name on real MXNet: ``dtype="bfloat16"`` in the operators, with and without
ml_dtypes.

Whether NumPy knows the name depends on whether ``import mxnet`` loaded ml_dtypes, which it
does only through onnx (``facts.NDARRAY_BFLOAT16``): so each side runs in a fresh
interpreter.  "Without": onnx and ml_dtypes kept out by ``None`` in ``sys.modules``, which is
what MXNet's ``try: import onnx`` meets where onnx is not installed (``mx170`` has neither
installed at all).  "With": onnx as installed (``mx180``, ``mx191`` and today's NumPy-2
stack), loaded by MXNet's own import.  Plain MXNet refuses the name without ml_dtypes and
computes with it; patched, the name computes the same bits on both sides, and NumPy is left
as it was.
"""

import importlib.util
import json
import subprocess
import sys

import mxnet as mx
import numpy as np
import pytest

import mxcompat
from mxcompat._core import facts
from tests.support.processes import subprocess_env

# float32 values and the bfloat16 bits amp_cast makes of them: the float32's top 16 bits,
# rounded to the nearest, ties to even (the first two are ties: kept even, rounded up to even).
BITS32 = [0x3F808000, 0x3F818000, 0x3EAAAAAB, 0xC0100000, 0x477FE000, 0xBA83126F]
VALUES = np.array(BITS32, dtype=np.uint32).view(np.float32).tolist()
BITS16 = [16256, 16258, 16043, 49168, 18304, 47747]
# Cast (and astype, through it) truncates to the top 16 bits instead (1.7 ... 1.9 alike).
TRUNCATED = [16256, 16257, 16042, 49168, 18303, 47747]
# Those bits read back as float32 (amp_cast to float32 pads them with zeros).
BACK = [1.0, 1.015625, 0.333984375, -2.25, 65536.0, -0.00099945068359375]
NOT_UNDERSTOOD = ["TypeError", "data type 'bfloat16' not understood"]

HAS_BFLOAT16 = facts.since(facts.NDARRAY_BFLOAT16)
needs_bfloat16 = pytest.mark.mxnet(">=1.7", reason="MXNet's operators have bfloat16 from 1.7")

PROBE = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
if sys.argv[1] == "without":
    # What `import onnx` meets where onnx is not installed: MXNet goes on without it.
    sys.modules["onnx"] = None
    sys.modules["ml_dtypes"] = None
import mxcompat, mxnet as mx, numpy as np

out = {
    "ml_dtypes": sys.modules.get("ml_dtypes") is not None,
    "patched": "bfloat16_name" in mxcompat.patched(),
}
x = mx.nd.array(json.loads(sys.argv[2]))

def bits(a):
    return a.asnumpy().view(np.uint16).tolist()

def attempt(name, compute):
    try:
        out[name] = compute()
    except Exception as err:
        out[name] = [type(err).__name__, str(err).splitlines()[0]]

attempt("amp_cast", lambda: bits(mx.nd.amp_cast(x, dtype="bfloat16")))
attempt("Cast", lambda: bits(mx.nd.Cast(x, dtype="bfloat16")))
attempt("back", lambda: mx.nd.amp_cast(
    mx.nd.amp_cast(x, dtype="bfloat16"), dtype="float32").asnumpy().tolist())
attempt("zeros", lambda: [str(mx.nd.zeros((2,), dtype="bfloat16").dtype),
                          bits(mx.nd.zeros((2,), dtype="bfloat16"))])
attempt("symbol", lambda: bits(
    mx.sym.amp_cast(mx.sym.var("d"), dtype="bfloat16").eval(d=x)[0]))
attempt("numpy", lambda: str(np.dtype("bfloat16")))
print(json.dumps(out))
"""


def probe(side, patched=True):
    env = {"MXNET_SUBGRAPH_VERBOSE": "0"}
    if not patched:
        env["MXCOMPAT_DISABLE_PATCHES"] = "bfloat16_name"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, side, json.dumps(VALUES)],
        capture_output=True,
        text=True,
        env=subprocess_env(env),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


COMPUTED = {
    "amp_cast": BITS16,
    "Cast": TRUNCATED,
    "back": BACK,
    "zeros": ["[('bfloat16', '<u2')]", [0, 0]],
    "symbol": BITS16,
}


@needs_bfloat16
def test_without_ml_dtypes_plain_mxnet_refuses_the_name():
    out = probe("without", patched=False)
    assert (out["ml_dtypes"], out["patched"]) == (False, False)
    for name in COMPUTED:
        assert out[name] == NOT_UNDERSTOOD, name
    assert out["numpy"] == NOT_UNDERSTOOD


@needs_bfloat16
def test_without_ml_dtypes_the_name_works_and_numpy_is_unchanged():
    out = probe("without")
    assert (out["ml_dtypes"], out["patched"]) == (False, True)
    for name, expected in COMPUTED.items():
        assert out[name] == expected, name
    # NumPy itself still does not know the name: only MXNet's operators read it.
    assert out["numpy"] == NOT_UNDERSTOOD


@needs_bfloat16
def test_with_ml_dtypes_loaded_by_mxnet_the_same_bits_with_or_without_the_patch():
    if importlib.util.find_spec("onnx") is None:
        pytest.skip("onnx is not installed in this env, so MXNet never loads ml_dtypes here")
    plain, patched = probe("as installed", patched=False), probe("as installed")
    assert (plain["ml_dtypes"], plain["patched"]) == (True, False)
    assert (patched["ml_dtypes"], patched["patched"]) == (True, True)
    for name, expected in COMPUTED.items():
        assert plain[name] == expected, name
        assert patched[name] == expected, name
    assert plain["numpy"] == patched["numpy"] == "bfloat16"


# --- in this process (ml_dtypes loaded or not, as this env's MXNet import left it) -----------


def bits(array):
    return array.asnumpy().view(np.uint16).tolist()


@needs_bfloat16
def test_every_operator_path_takes_the_name():
    x = mx.nd.array(VALUES)
    assert bits(mx.nd.amp_cast(x, dtype="bfloat16")) == BITS16
    assert bits(mx.nd.cast(x, dtype="bfloat16")) == TRUNCATED
    assert bits(mx.nd.ones((3,), dtype="bfloat16")) == [16256] * 3
    # The Symbol side: composed, bound by simple_bind, run.
    sym = mx.sym.amp_cast(mx.sym.var("d"), dtype="bfloat16")
    exe = sym.simple_bind(mx.cpu(), d=(len(VALUES),), grad_req="null")
    exe.forward(d=x)
    assert bits(exe.outputs[0]) == BITS16
    assert bits(mx.sym.var("d").astype("bfloat16").eval(d=x)[0]) == TRUNCATED


@needs_bfloat16
def test_other_dtypes_and_mxnets_own_bfloat16_dtype_are_read_as_before(unpatched):
    x = mx.nd.array(VALUES)
    structured = np.dtype([("bfloat16", np.uint16)])
    before = [
        mx.nd.Cast(x, dtype="float16").asnumpy().tolist(),
        bits(mx.nd.amp_cast(x, dtype=structured)),
        mx.nd.zeros((2,), dtype=np.int32).dtype,
    ]
    with pytest.raises(TypeError) as plain_error:
        mx.nd.amp_cast(x, dtype="bfloat15")
    mxcompat.patch()
    after = [
        mx.nd.Cast(x, dtype="float16").asnumpy().tolist(),
        bits(mx.nd.amp_cast(x, dtype=structured)),
        mx.nd.zeros((2,), dtype=np.int32).dtype,
    ]
    assert after == before and before[1] == BITS16
    with pytest.raises(TypeError) as error:
        mx.nd.amp_cast(x, dtype="bfloat15")
    assert str(error.value) == str(plain_error.value)


@needs_bfloat16
def test_functions_outside_the_operators_are_left_as_they_are(unpatched):
    # NDArray.astype, nd.array, nd.empty and sym.var map a dtype in Python: the name fails
    # there with ml_dtypes too (KeyError: ml_dtypes' type is not MXNet's), and the patch
    # leaves them alone.
    x = mx.nd.array(VALUES)
    calls = [
        lambda: x.astype("bfloat16"),
        lambda: mx.nd.array(VALUES, dtype="bfloat16"),
        lambda: mx.nd.empty((2,), dtype="bfloat16"),
        lambda: mx.sym.var("d", dtype="bfloat16"),
    ]

    def errors():
        found = []
        for call in calls:
            with pytest.raises(Exception) as info:
                call()
            found.append((type(info.value), str(info.value)))
        return found

    plain = errors()
    mxcompat.patch()
    assert errors() == plain
    expected = KeyError if "ml_dtypes" in sys.modules else TypeError
    assert [kind for kind, _ in plain] == [expected] * len(calls)


@needs_bfloat16
def test_unpatch_gives_the_operator_modules_numpy_back():
    modules = (sys.modules["mxnet.ndarray.register"], sys.modules["mxnet.symbol.register"])
    for module in modules:
        proxy = vars(module)["_np"]
        assert proxy is not np and proxy.__wrapped__ is np
        # Everything but dtype("bfloat16") is NumPy's own.
        assert proxy.float32 is np.float32 and proxy.dtype("float16") == np.dtype("float16")
    mxcompat.unpatch("bfloat16_name")
    try:
        assert all(vars(module)["_np"] is np for module in modules)
        assert "bfloat16_name" not in mxcompat.patched()
    finally:
        mxcompat.patch()
    assert all(vars(module)["_np"].__wrapped__ is np for module in modules)


def test_applied_from_the_release_with_bfloat16_on():
    assert ("bfloat16_name" in mxcompat.patched()) == HAS_BFLOAT16
    if not HAS_BFLOAT16:
        # The operator modules keep NumPy itself (as `np` up to 1.4, `_np` from 1.5).
        for module in ("mxnet.ndarray.register", "mxnet.symbol.register"):
            held = [vars(sys.modules[module]).get(name) for name in ("np", "_np")]
            assert np in held and all(value in (None, np) for value in held)
