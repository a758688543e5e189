"""checked_loads: MXNet's loaders get a structure check first.  500 damaged files (300
``.params``, 200 symbols, from a seed) crash nothing under mxcompat: each loads as it loads
without mxcompat or raises the one ``CheckpointError`` (also an ``MXNetError``); the loads run
in fresh interpreters per batch, so a crash is a failure, not a dead test run.  Well-formed
files (every dtype, sparse, the older layouts, V3, Gluon's and Module's files, a Trainer's
states, an old-form symbol) load bit for bit as without mxcompat."""

import json
import os
import pickle
import struct

import mxnet as mx
import numpy as np
import pytest
from mxnet import gluon

import mxcompat
from mxcompat._core import facts
from mxcompat.formats import structure
from mxcompat.formats.ndarray_file import CheckpointError
from mxcompat.patches import checked_loads

from ..support import damaged_files, repo
from ..support.processes import run_python, subprocess_env
from ..support.stack import plain_import_works

SEED = 20261206
ENV = subprocess_env({"PYTHONPATH": repo.ROOT})
# "As before": MXNet alone, or where it imports only with mxcompat (NumPy 2, Python 3.12+),
# mxcompat without this patch.
BASELINE = "off" if plain_import_works() else "unchecked"


def _error_line(outcome):
    # MXNet's messages carry the time of day; the rest must match.
    import re

    return re.sub(r"\[\d\d:\d\d:\d\d\]", "[T]", outcome)


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    return damaged_files.make(str(tmp_path_factory.mktemp("damaged")), mx, SEED)


def _held_as_before(paths, kind):
    ours = damaged_files.run(paths, kind, "on", ENV)
    crashed = {p: o for p, o in ours.items() if o.startswith("crash")}
    assert not crashed, crashed
    # Every file mxcompat let through must load (or fail) exactly as without it.
    passed = [p for p in paths if not ours[p].startswith("CheckpointError: mxcompat: ")]
    theirs = damaged_files.run(passed, kind, BASELINE, ENV) if passed else {}
    differ = {
        os.path.basename(p): (ours[p], theirs[p])
        for p in passed
        if _error_line(ours[p]) != _error_line(theirs[p])
    }
    assert not differ, differ
    refused = len(paths) - len(passed)
    return refused, passed, theirs


def test_damaged_params_crash_nothing(damaged):
    params, _ = damaged
    refused, passed, theirs = _held_as_before(params, "params")
    # Most damage is caught; what passes is damage in the data (it loads, as before) or a
    # name that is not UTF-8's... refused too: the rest load.
    assert refused > 200 and all(theirs[p].startswith("loaded ") for p in passed), {
        p: theirs[p] for p in passed if not theirs[p].startswith("loaded ")
    }


def test_damaged_symbols_crash_nothing(damaged):
    _, symbols = damaged
    refused, passed, theirs = _held_as_before(symbols, "symbol")
    # What passes is a graph MXNet reads as well-formed: it loads, or MXNet refuses an
    # operator's name or attributes itself, as it did.
    assert refused > 100
    assert all(
        theirs[p].startswith("loaded ") or theirs[p].startswith("MXNetError: ") for p in passed
    )


# --- well-formed files load as without mxcompat ---------------------------------------------


def _legacy(values, magic):
    values = np.ascontiguousarray(values, "<f4")
    if magic is None:
        head = struct.pack("<I%dI" % values.ndim, values.ndim, *values.shape)
    else:
        head = struct.pack("<II%dq" % values.ndim, magic, values.ndim, *values.shape)
    return head + struct.pack("<iii", 1, 0, 0) + values.tobytes()


def _well_formed(folder):
    """Files of every form this release writes or loads: (params paths, symbol paths)."""
    rng = np.random.RandomState(1)
    params, symbols = [], []

    def save(name, arrays):
        path = os.path.join(folder, name + ".params")
        mx.nd.save(path, arrays)
        params.append(path)

    dtypes = ["float32", "float64", "float16", "uint8", "int32", "int8", "int64"]
    if facts.since(facts.NDARRAY_BOOL):
        dtypes.append("bool")
    save("dtypes", {d: mx.nd.array(rng.uniform(0, 100, (3, 4)), dtype=d) for d in dtypes})
    save("list", [mx.nd.ones((2, 3)), mx.nd.array([7.0])])
    save("empty_list", [])
    sparse = {
        "rsp": mx.nd.array(rng.uniform(size=(6, 3)) * (rng.uniform(size=(6, 1)) > 0.5)).tostype(
            "row_sparse"
        ),
        "rsp0": mx.nd.zeros((4, 2)).tostype("row_sparse"),
        "csr": mx.nd.array(rng.uniform(size=(5, 4)) * (rng.uniform(size=(5, 4)) > 0.6)).tostype(
            "csr"
        ),
        "csr0": mx.nd.zeros((3, 7)).tostype("csr"),
        "dense": mx.nd.ones((2,)),
    }
    save("sparse", sparse)
    for magic, name in ((None, "legacy"), (structure.V1_MAGIC, "v1")):
        path = os.path.join(folder, name + ".params")
        arrays = [_legacy(np.arange(12.0).reshape(3, 4), magic), _legacy([[-1.5]], magic)]
        names = [b"a", b"b"]
        with open(path, "wb") as f:
            f.write(struct.pack("<QQQ", 0x112, 0, 2) + b"".join(arrays))
            f.write(struct.pack("<Q", 2) + b"".join(struct.pack("<Q", 1) + n for n in names))
        params.append(path)
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Conv2D(3, 3), gluon.nn.BatchNorm(), gluon.nn.Dense(4))
    net.initialize()
    net.hybridize()
    net(mx.nd.ones((1, 2, 6, 6)))
    net.export(os.path.join(folder, "net"), 3)
    params.append(os.path.join(folder, "net-0003.params"))
    symbols.append(os.path.join(folder, "net-symbol.json"))
    path = os.path.join(folder, "gluon.params")
    net.save_parameters(path)
    params.append(path)
    # An old-form symbol (before nnvm: "param" and "attr", entries of two items).
    graph = json.loads(open(os.path.join(folder, "net-symbol.json")).read())
    for node in graph["nodes"]:
        node["param"] = node.pop("attrs", {})
        node["inputs"] = [e[:2] for e in node["inputs"]]
    graph["heads"] = [h[:2] for h in graph["heads"]]
    graph.pop("attrs", None)
    path = os.path.join(folder, "old-symbol.json")
    with open(path, "w") as f:
        json.dump(graph, f)
    symbols.append(path)
    return params, symbols


def test_well_formed_files_load_bit_for_bit_as_without_mxcompat(tmp_path):
    params, symbols = _well_formed(str(tmp_path))
    for path in params:
        structure.check_ndarray_file(path)
    for path in symbols:
        structure.check_symbol_file(path)
    for kind, paths in (("params", params), ("symbol_plain", symbols)):
        ours = damaged_files.run(paths, kind, "on", ENV)
        theirs = damaged_files.run(paths, kind, BASELINE, ENV)
        for path in paths:
            assert ours[path].startswith("loaded "), (path, ours[path])
            assert ours[path] == theirs[path], path


def test_v3_and_npx_files(tmp_path):
    if not facts.since(facts.NDARRAY_V3_SAVE):
        pytest.skip("MXNet %s has no NumPy shape semantics (V3 arrays)" % mx.__version__)
    path = str(tmp_path / "np.params")
    with mx.util.np_shape(True):
        arrays = {"s": mx.nd.array(np.array(2.5)), "e": mx.nd.array(np.zeros((0, 3)))}
        arrays["w"] = mx.nd.array(np.arange(6.0).reshape(2, 3))
        mx.nd.save(path, arrays)
        structure.check_ndarray_file(path)
        loaded = mx.nd.load(path)
        assert loaded["s"].shape == () and loaded["e"].shape == (0, 3)
        assert np.array_equal(loaded["w"].asnumpy(), np.arange(6.0).reshape(2, 3))
    if facts.since(facts.NUMPY_SUBPACKAGE):
        with mx.util.np_shape(True), mx.util.np_array(True):
            mx.npx.save(path, {"w": mx.np.arange(12).reshape(3, 4), "s": mx.np.array(3.0)})
            assert mx.npx.load(path)["w"].shape == (3, 4)
            with open(path, "r+b") as f:
                f.truncate(os.path.getsize(path) - 3)
            with pytest.raises(CheckpointError, match="np.params, at byte"):
                mx.npx.load(path)


# --- every way in -------------------------------------------------------------------------------


def _truncated(path, keep=None):
    data = open(path, "rb").read()
    bad = path + ".bad"
    with open(bad, "wb") as f:
        f.write(data[: len(data) // 2 if keep is None else keep])
    return bad


def test_every_loader_refuses_with_one_error_that_is_mxnets_too(tmp_path):
    folder = str(tmp_path)
    sym = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    mod = mx.mod.Module(sym, label_names=None)
    mod.bind([("data", (1, 3))])
    mod.init_params()
    mod.init_optimizer(optimizer="adam")
    prefix = os.path.join(folder, "m")
    mod.save_checkpoint(prefix, 1, save_optimizer_states=True)
    params = prefix + "-0001.params"
    symbol = prefix + "-symbol.json"
    graph = json.load(open(symbol))
    graph["heads"] = [[len(graph["nodes"]) + 4, 0, 0]]
    bad_symbol = os.path.join(folder, "bad-symbol.json")
    json.dump(graph, open(bad_symbol, "w"))
    bad_params = _truncated(params)
    loaders = {
        "nd.load": lambda: mx.nd.load(bad_params),
        "nd.load_frombuffer": lambda: mx.nd.load_frombuffer(open(bad_params, "rb").read()),
        "sym.load": lambda: mx.sym.load(bad_symbol),
        "sym.load_json": lambda: mx.sym.load_json(json.dumps(graph)),
        "gluon.SymbolBlock.imports": lambda: gluon.SymbolBlock.imports(
            bad_symbol, ["data"], params
        ),
        "Block.load_parameters": lambda: gluon.nn.Dense(2, in_units=3).load_parameters(bad_params),
    }
    if not hasattr(mx.nd, "load_frombuffer"):
        del loaders["nd.load_frombuffer"]
    # A checkpoint whose .params is damaged, its symbol whole.
    bad_prefix = os.path.join(folder, "b")
    os.rename(bad_params, bad_prefix + "-0001.params")
    with open(bad_prefix + "-symbol.json", "w") as f:
        f.write(open(symbol).read())
    bad_params = bad_prefix + "-0001.params"
    loaders["model.load_checkpoint"] = lambda: mx.model.load_checkpoint(bad_prefix, 1)
    loaders["Module.load"] = lambda: mx.mod.Module.load(bad_prefix, 1)
    loaders["SymbolBlock.imports (params)"] = lambda: gluon.SymbolBlock.imports(
        symbol, ["data"], bad_params
    )
    for name, load in loaders.items():
        with pytest.raises(mx.base.MXNetError) as info:
            load()
        assert isinstance(info.value, CheckpointError), name
        assert str(info.value).startswith("mxcompat: "), (name, str(info.value))
    # The well-formed checkpoint loads.
    mx.mod.Module.load(prefix, 1, load_optimizer_states=True)


def test_states_files_arrays_are_checked(tmp_path):
    """Trainer.load_states and Module.load_optimizer_states unpickle NDArrays: each array's
    bytes are checked before MXNet reads them."""
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "adam")
    with mx.autograd.record():
        loss = net(mx.nd.ones((1, 3))).sum()
    loss.backward()
    trainer.step(1)
    path = str(tmp_path / "t.states")
    trainer.save_states(path)
    trainer.load_states(path)  # well-formed: as before
    states = pickle.loads(open(path, "rb").read())
    raw = states[0][0][0].__getstate__()["handle"] if isinstance(states, tuple) else None
    good = raw if raw is not None else mx.nd.ones((2, 3)).__getstate__()["handle"]
    structure.check_raw_ndarray(good)
    # An array whose shape claims more than its bytes, as a damaged states file holds it.
    bad = bytearray(good)
    struct.pack_into("<q", bad, 12, 2**40)
    array = mx.nd.NDArray.__new__(mx.nd.NDArray)
    with pytest.raises(CheckpointError, match="a pickled NDArray, at byte"):
        array.__setstate__({"handle": bad})


def test_plain_paths_only(tmp_path):
    """A URI or a missing file goes to MXNet as it is (its own error), not to the check."""
    assert checked_loads._plain_file(b"s3://bucket/x.params") is None
    assert checked_loads._plain_file(b"/no/such.params") is None
    assert checked_loads._plain_file(str(tmp_path).encode()) is None  # a folder
    with pytest.raises(mx.base.MXNetError) as info:
        mx.nd.load(str(tmp_path / "missing.params"))
    assert not isinstance(info.value, CheckpointError)


def test_off_with_the_others(tmp_path):
    path = _truncated(_save_small(tmp_path))
    mxcompat.unpatch("checked_loads")
    try:
        with pytest.raises(mx.base.MXNetError) as info:
            mx.nd.load(path)
        assert not isinstance(info.value, CheckpointError)
    finally:
        mxcompat.patch("checked_loads")
    with pytest.raises(CheckpointError):
        mx.nd.load(path)


def _save_small(tmp_path):
    path = str(tmp_path / "small.params")
    mx.nd.save(path, {"w": mx.nd.ones((4, 4))})
    return path


def test_disable_patches_turns_it_off(tmp_path):
    path = _truncated(_save_small(tmp_path))
    code = (
        "import mxcompat, mxnet as mx\n"
        "from mxcompat.formats.ndarray_file import CheckpointError\n"
        "try:\n"
        "    mx.nd.load(%r)\n"
        "except mx.base.MXNetError as exc:\n"
        "    print(isinstance(exc, CheckpointError))\n" % path
    )
    for env, checked in (({}, "True"), ({"MXCOMPAT_DISABLE_PATCHES": "checked_loads"}, "False")):
        proc = run_python(code, env=dict(ENV, **env))
        assert proc.stdout.strip() == checked, proc.stderr[-2000:]


def test_the_error_names_the_file_the_offset_and_what_was_expected(tmp_path):
    path = _save_small(tmp_path)
    data = bytearray(open(path, "rb").read())
    struct.pack_into("<Q", data, 16, 2**40)  # the number of arrays
    with open(path, "wb") as f:
        f.write(bytes(data))
    with pytest.raises(CheckpointError) as info:
        mx.nd.load(path)
    assert str(info.value) == (
        "mxcompat: %s, at byte 16: expected a number of arrays the file can hold, "
        "found 1099511627776" % path
    )
    symbol = str(tmp_path / "x-symbol.json")
    mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc").save(symbol)
    graph = json.load(open(symbol))
    graph["nodes"][-1]["inputs"][0][0] = 9  # fc's data: a node that is not there
    json.dump(graph, open(symbol, "w"))
    with pytest.raises(
        CheckpointError, match="^mxcompat: %s: expected node 3's input as " % symbol
    ):
        mx.sym.load(symbol)
