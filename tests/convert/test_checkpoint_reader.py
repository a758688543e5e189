"""MXNet's checkpoint files read without MXNet (``mxcompat.formats.checkpoint``), held against
MXNet's own writer and loader in each release: the ``.params`` of every dtype the release
writes (and the older layouts it still loads), the symbol JSON, the optimizer states files;
bad files give one ``CheckpointError`` (fuzzed with hypothesis).  Needs MXNet and NumPy
only: it runs in every release env."""

import json
import os
import pickle
import struct
import subprocess
import sys

import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon

from mxcompat._core import facts
from mxcompat.formats import checkpoint
from mxcompat.formats.checkpoint import CheckpointError
from mxcompat.formats.states_file import states_from_bytes
from mxcompat.torch import optim_state

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis is not installed here")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

FUZZ = settings(
    deadline=None,
    max_examples=60,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
DTYPES = ["float32", "float64", "float16", "uint8", "int32", "int8", "int64", "bool"]
NP_SHAPE = hasattr(mx, "util") and hasattr(mx.util, "np_shape")  # V3 arrays


def _writable(dtype):
    """Whether this release makes and saves arrays of ``dtype`` (bool: 1.6+)."""
    try:
        mx.nd.save(os.devnull, [mx.nd.array([1, 0], dtype=dtype)])
    except Exception:  # MXNet's own refusal, whatever its class in this release
        return False
    return True


def _same(ours, theirs):
    theirs = theirs.asnumpy()
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert np.array_equal(ours, theirs)


def _held(path):
    """read_params against mx.nd.load, array by array (named or not)."""
    ours = checkpoint.read_params(path)
    theirs = mx.nd.load(path)
    if isinstance(theirs, dict):
        assert list(ours.arrays) == list(ours.names) and set(ours.arrays) == set(theirs)
        for name, array in theirs.items():
            _same(ours.arrays[name], array)
    else:
        assert ours.names == [] and len(ours.values) == len(theirs)
        for a, b in zip(ours.values, theirs):
            _same(a, b)
    return ours


# --- .params ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_the_release_writes(dtype, tmp_path):
    writable = _writable(dtype)
    assert writable == (dtype != "bool" or facts.since(facts.NDARRAY_BOOL))
    if not writable:
        pytest.skip("MXNet %s has no %s arrays" % (mx.__version__, dtype))
    rng = np.random.RandomState(0)
    values = rng.uniform(-100, 100, (3, 4, 5))
    if dtype == "bool":
        values = values > 0
    path = str(tmp_path / "a.params")
    mx.nd.save(path, {"a": mx.nd.array(values, dtype=dtype), "b": mx.nd.ones((7,), dtype=dtype)})
    ours = _held(path)
    assert ours.arrays["a"].dtype == np.dtype(dtype)


# MXNet's own name for bfloat16 (type flag 12); the string "bfloat16" works only where NumPy
# knows it (facts.NDARRAY_BFLOAT16 says when).
BFLOAT16 = np.dtype([("bfloat16", np.uint16)])


def test_bfloat16_widens_exactly(tmp_path):
    has = hasattr(mx.nd, "amp_cast") and _bf16_ok()
    assert has == facts.since(facts.NDARRAY_BFLOAT16)
    if not has:
        pytest.skip("MXNet %s has no bfloat16 arrays" % mx.__version__)
    path = str(tmp_path / "b.params")
    source = mx.nd.array([1.5, -2.25, 3e38, 1e-3, 0.0, -7.0])
    mx.nd.save(path, {"w": mx.nd.amp_cast(source, dtype=BFLOAT16)})
    got = checkpoint.read_params(path).arrays["w"]
    want = mx.nd.amp_cast(mx.nd.load(path)["w"], dtype="float32").asnumpy()
    assert got.dtype == np.float32 and np.array_equal(got, want)


def _bf16_ok():
    try:
        mx.nd.amp_cast(mx.nd.ones(1), dtype=BFLOAT16).asnumpy()
    except Exception:  # a release without bfloat16 kernels
        return False
    return True


def test_large_and_many_dimensional_arrays(tmp_path):
    rng = np.random.RandomState(1)
    path = str(tmp_path / "big.params")
    arrays = {
        "big": mx.nd.array(rng.standard_normal((1024, 1031))),
        "deep": mx.nd.array(rng.standard_normal((1, 2, 1, 3, 1, 2, 1, 2))),
        "one": mx.nd.array([5.0]),
    }
    mx.nd.save(path, arrays)
    _held(path)


def test_odd_names(tmp_path):
    names = ["", "arg:a b", "aux:\u00fc/\u540d", "x\ny\tz", "arg:", "a" * 5000]
    path = str(tmp_path / "names.params")
    mx.nd.save(path, {n: mx.nd.ones((2,)) * i for i, n in enumerate(names)})
    ours = _held(path)
    assert sorted(ours.names) == sorted(names)
    assert set(ours.arg) == {"a b", ""} and set(ours.aux) == {"\u00fc/\u540d"}


def test_a_list_and_a_dict(tmp_path):
    path = str(tmp_path / "list.params")
    mx.nd.save(path, [mx.nd.ones((2, 3)), mx.nd.zeros((1,), dtype="int32")])
    assert _held(path).arrays == {}
    mx.nd.save(path, {"p": mx.nd.ones((2, 3))})
    assert set(_held(path).arrays) == {"p"}
    mx.nd.save(path, [])
    assert _held(path).values == []


def _net():
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Conv2D(4, 3, in_channels=3), gluon.nn.BatchNorm(in_channels=4))
        net.add(gluon.nn.Activation("relu"), gluon.nn.Dense(5, in_units=4 * 6 * 6))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    net(mx.nd.ones((2, 3, 8, 8)))
    return net


def test_gluon_save_parameters(tmp_path):
    path = str(tmp_path / "net.params")
    net = _net()
    net.save_parameters(path)
    ours = _held(path)
    assert ours.arg == {} and ours.aux == {} and len(ours.arrays) == 8


def test_module_checkpoint_arg_and_aux(tmp_path):
    prefix = str(tmp_path / "net")
    _net().export(prefix, 3)
    sym, arg, aux = mx.model.load_checkpoint(prefix, 3)
    ours = checkpoint.read_params(prefix + "-0003.params")
    assert set(ours.arg) == set(arg) and set(ours.aux) == set(aux) and aux
    for mine, theirs in ((ours.arg, arg), (ours.aux, aux)):
        for name, array in theirs.items():
            _same(mine[name], array)


def test_np_shape_arrays_v3(tmp_path):
    assert NP_SHAPE == facts.since(facts.NDARRAY_V3_SAVE)
    if not NP_SHAPE:
        pytest.skip("MXNet %s has no NumPy shape semantics (V3 arrays)" % mx.__version__)
    path = str(tmp_path / "np.params")
    with mx.util.np_shape(True):
        arrays = {
            "scalar": mx.nd.array(np.array(2.5)),
            "empty": mx.nd.array(np.zeros((0, 3))),
            "w": mx.nd.array(np.arange(6.0).reshape(2, 3)),
        }
        mx.nd.save(path, arrays)
        with open(path, "rb") as f:
            assert struct.unpack_from("<I", f.read(), 24)[0] == checkpoint.V3_MAGIC
        ours = _held(path)
    assert ours.arrays["scalar"].shape == () and ours.arrays["empty"].shape == (0, 3)


def test_npx_save_of_mx_np_arrays(tmp_path):
    if not facts.since(facts.NUMPY_SUBPACKAGE):
        pytest.skip("MXNet %s has no mx.np arrays" % mx.__version__)
    path = str(tmp_path / "npx.params")
    with mx.util.np_shape(True), mx.util.np_array(True):
        values = {
            "s": mx.np.array(3.0),
            "w": mx.np.arange(12).reshape(3, 4),
            "e": mx.np.ones((2, 0)),
        }
        mx.npx.save(path, values)
        theirs = mx.npx.load(path)
    ours = checkpoint.read_params(path)
    assert set(ours.arrays) == set(theirs) == set(values)
    for name, array in theirs.items():
        _same(ours.arrays[name], array)


def _list_file(*arrays, names=()):
    out = struct.pack("<QQQ", 0x112, 0, len(arrays)) + b"".join(arrays)
    out += struct.pack("<Q", len(names))
    return out + b"".join(struct.pack("<Q", len(n)) + n for n in names)


def _dense(values, magic):
    """One array in the oldest layout (no magic, 32-bit dimensions) or in V1's."""
    values = np.ascontiguousarray(values, "<f4")
    if magic is None:
        head = struct.pack("<I%dI" % values.ndim, values.ndim, *values.shape)
    else:
        head = struct.pack("<II%dq" % values.ndim, magic, values.ndim, *values.shape)
    return head + struct.pack("<iii", 1, 0, 0) + values.tobytes()


@pytest.mark.parametrize("magic", [None, checkpoint.V1_MAGIC], ids=["legacy", "v1"])
def test_older_layouts_mxnet_still_loads(magic, tmp_path):
    """No 1.x release writes them, every one loads them: so does the reader."""
    path = str(tmp_path / "old.params")
    a, b = np.arange(12.0).reshape(3, 4), np.array([[-1.5]])
    with open(path, "wb") as f:
        f.write(_list_file(_dense(a, magic), _dense(b, magic), names=[b"a", b"b"]))
    _held(path)


@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_sparse_is_refused_by_name(stype, tmp_path):
    path = str(tmp_path / "sparse.params")
    mx.nd.save(path, {"w": mx.nd.ones((4, 3)).tostype(stype)})
    with pytest.raises(
        CheckpointError, match="at byte 28: expected a dense array.*found %s" % stype
    ):
        checkpoint.read_params(path)


# --- bad files: one CheckpointError with the offset -----------------------------------------


def _small(tmp_path):
    path = str(tmp_path / "small.params")
    mx.nd.save(path, {"arg:w": mx.nd.array([[1, 2], [3, 4]]), "aux:m": mx.nd.ones((3,))})
    with open(path, "rb") as f:
        return path, f.read()


def _refused(path, data, match):
    with open(path, "wb") as f:
        f.write(data)
    with pytest.raises(CheckpointError, match=match) as info:
        checkpoint.read_params(path)
    assert path in str(info.value)


def test_every_truncation_is_refused(tmp_path):
    path, data = _small(tmp_path)
    for n in range(len(data)):
        _refused(path, data[:n], "at byte [0-9]+: expected")


def test_bad_headers_name_the_offset(tmp_path):
    path, data = _small(tmp_path)
    _refused(path, b"\x13" + data[1:], "at byte 0: expected the NDArray list magic 0x112")
    _refused(path, data + b"\x00", "at byte %d: expected the end of the file" % len(data))
    # The names' count (after the arrays) says 1 for 2 arrays.
    names_at = data.index(b"arg:w") - 8 - 8
    bad = data[:names_at] + struct.pack("<Q", 1) + data[names_at + 8 :]
    _refused(path, bad, "at byte %d: expected 2 names" % names_at)
    # The first array's type flag (magic, stype, ndim, 2 dims, device type and id).
    flag_at = 24 + 4 + 4 + 4 + 16 + 8
    assert struct.unpack_from("<i", data, flag_at)[0] == 0
    bad = data[:flag_at] + struct.pack("<i", 99) + data[flag_at + 4 :]
    _refused(path, bad, "at byte %d: expected a type flag MXNet defines.*found 99" % flag_at)
    bad = data[:32] + struct.pack("<i", 1 << 30) + data[36:]
    _refused(path, bad, "at byte 32: expected the number of dimensions")
    bad = data[:36] + struct.pack("<q", 1 << 40) + data[44:]
    _refused(path, bad, "expected the array's data")
    bad = data[:36] + struct.pack("<q", -5) + data[44:]
    _refused(path, bad, r"at byte 36: expected dimensions .* at least 0, found \(-5, 2\)")
    bad = data[:16] + struct.pack("<Q", 1 << 62) + data[24:]
    _refused(path, bad, "at byte 16: expected a number of arrays the file can hold")
    bad = data[: names_at + 8] + struct.pack("<Q", 1 << 63) + data[names_at + 16 :]
    _refused(path, bad, "at byte %d: expected a name" % (names_at + 16))


def test_a_missing_file_is_one_error(tmp_path):
    with pytest.raises(CheckpointError, match="cannot read the parameters file"):
        checkpoint.read_params(str(tmp_path / "none.params"))


@settings(FUZZ, max_examples=300)
@given(data=st.data())
def test_fuzzed_params_give_only_checkpoint_errors(data, tmp_path):
    """Mutated V2 files (this release's), V3 ones (np shape) and the oldest layout's."""
    _, real = _small(tmp_path)
    seeds = [real, _list_file(_dense(np.ones((2, 3)), None), _dense(np.ones(1), None))]
    if NP_SHAPE:
        path = str(tmp_path / "v3.params")
        with mx.util.np_shape(True):
            mx.nd.save(path, {"s": mx.nd.array(np.array(1.0)), "w": mx.nd.ones((2, 2))})
        with open(path, "rb") as f:
            seeds.append(f.read())
    blob = bytearray(data.draw(st.sampled_from(seeds)))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(blob) - 1))
        blob[at] = data.draw(st.integers(0, 255))
    blob = bytes(blob[: data.draw(st.integers(0, len(blob)))])
    _fuzzed(blob)


@settings(FUZZ, max_examples=300)
@given(blob=st.binary(max_size=200))
def test_random_bytes_give_only_checkpoint_errors(blob):
    _fuzzed(struct.pack("<Q", 0x112) + blob)
    _fuzzed(blob)


def _fuzzed(blob):
    try:
        values, names = checkpoint.read_ndarray_list(blob, "fuzz")
    except CheckpointError:
        return
    assert all(v is None or v.nbytes <= len(blob) for v in values)
    assert len(names) in (0, len(values))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Real files of this release, made once: {"symbol", "trainer", "module": bytes}."""
    folder = tmp_path_factory.mktemp("files")
    found = {}
    for key, make in (("symbol", lambda t: _symbol(t)[0]), ("trainer", _trainer_file)):
        with open(make(folder), "rb") as f:
            found[key] = f.read()
    with open(_module_file(folder), "rb") as f:
        found["module"] = f.read()
    return found


# --- the symbol JSON -------------------------------------------------------------------------


def _symbol(tmp_path):
    prefix = str(tmp_path / "net")
    net = _net()
    net.export(prefix, 0)
    return prefix + "-symbol.json", mx.sym.load(prefix + "-symbol.json")


def test_symbol_matches_mxnet(tmp_path):
    path, sym = _symbol(tmp_path)
    ours = checkpoint.read_symbol(path)
    theirs = json.loads(sym.tojson())
    assert [(n["op"], n["name"]) for n in ours["nodes"]] == [
        (n["op"], n["name"]) for n in theirs["nodes"]
    ]
    for mine, node in zip(ours["nodes"], theirs["nodes"]):
        assert mine["attrs"] == node.get("attrs", node.get("attr", {}))
        assert mine["inputs"] == [list(e) + [0] * (3 - len(e)) for e in node["inputs"]]
    names = [ours["nodes"][i]["name"] for i in ours["arg_nodes"]]
    assert sorted(names) == sorted(sym.list_arguments() + sym.list_auxiliary_states())
    heads = [ours["nodes"][h[0]]["name"] + "_output" for h in ours["heads"]]
    assert heads == sym.list_outputs()
    assert checkpoint.symbol_version(ours) == theirs["attrs"]["mxnet_version"][1]


def test_params_of_another_graph_are_refused(tmp_path):
    path, sym = _symbol(tmp_path)
    graph = checkpoint.read_symbol(path)
    own = checkpoint.read_params(path.replace("-symbol.json", "-0000.params"))
    checkpoint.check_params(graph, own, "files", inputs=["data"])
    other = str(tmp_path / "other")
    dense = gluon.nn.Dense(2, in_units=3, prefix="other_")
    dense.initialize()
    dense.hybridize()
    dense(mx.nd.ones((1, 3)))
    dense.export(other, 0)
    with pytest.raises(CheckpointError, match="another checkpoint"):
        checkpoint.check_params(graph, checkpoint.read_params(other + "-0000.params"), "files")
    with pytest.raises(CheckpointError, match="an array for each parameter.*none for data"):
        checkpoint.check_params(graph, own, "files", inputs=[])
    del own.arg[sorted(own.arg)[0]]
    with pytest.raises(CheckpointError, match="an array for each parameter of the graph"):
        checkpoint.check_params(graph, own, "files", inputs=["data"])


def _old_form(graph, key="attr"):
    """The same graph as releases before 1.0 wrote it: "attr" (or the oldest "param"),
    2-item inputs, no version."""
    old = {"nodes": [], "arg_nodes": graph["arg_nodes"], "heads": graph["heads"]}
    for node in graph["nodes"]:
        node = dict(node)
        if "attrs" in node:
            node[key] = node.pop("attrs")
        node["inputs"] = [e[:2] for e in node["inputs"]]
        old["nodes"].append(node)
    return old


def test_an_old_form_symbol_reads_as_mxnet_loads_it(tmp_path):
    path, sym = _symbol(tmp_path)
    old = _old_form(json.loads(sym.tojson()))
    old_path = str(tmp_path / "old-symbol.json")
    with open(old_path, "w") as f:
        json.dump(old, f)
    again = mx.sym.load(old_path)  # MXNet's own upgrade of the old form
    assert again.list_arguments() == sym.list_arguments()
    ours, new = checkpoint.read_symbol(old_path), checkpoint.read_symbol(path)
    # Only the versions differ: old files have none (0), today's count an aux's updates.
    for node in new["nodes"]:
        node["inputs"] = [[e[0], e[1], 0] for e in node["inputs"]]
    assert ours["nodes"] == new["nodes"] and ours["heads"] == new["heads"]
    assert checkpoint.symbol_version(ours) is None
    with open(old_path, "w") as f:
        json.dump(_old_form(json.loads(sym.tojson()), "param"), f)
    assert checkpoint.read_symbol(old_path)["nodes"] == new["nodes"]


def test_bad_symbol_files(tmp_path):
    path = str(tmp_path / "bad-symbol.json")
    for text, match in (
        ('{"nodes": [', "at byte 11: expected JSON"),
        ('{"nodes": 3}', 'expected a graph with "nodes"'),
        ('{"nodes": [{"op": "null", "name": "x", "inputs": [[0, 0]]}], "heads": [[0,0]]}', "input"),
        ('{"nodes": [{"op": "null", "name": "x", "inputs": []}], "heads": [[1, 0]]}', "a head"),
        ('{"nodes": [{"op": "null", "name": "x", "inputs": []}]}', '"heads"'),
        ('{"nodes": [{"op": "null", "name": "x"}], "arg_nodes": ["0"], "heads": [[0, 0]]}', "arg_"),
        ("\xff", "expected JSON|UTF-8"),
    ):
        with open(path, "w", encoding="latin-1") as f:
            f.write(text)
        with pytest.raises(CheckpointError, match=match):
            checkpoint.read_symbol(path)


@FUZZ
@given(data=st.data())
def test_fuzzed_symbols_give_only_checkpoint_errors(data, files, tmp_path):
    path = str(tmp_path / "fuzz-symbol.json")
    blob = bytearray(files["symbol"])
    for _ in range(data.draw(st.integers(1, 4))):
        blob[data.draw(st.integers(0, len(blob) - 1))] = data.draw(
            st.sampled_from(b'{}[]",:0123x ')
        )
    with open(path, "wb") as f:
        f.write(bytes(blob[: data.draw(st.integers(0, len(blob)))]))
    try:
        graph = checkpoint.read_symbol(path)
    except CheckpointError:
        return
    assert all(len(e) == 3 for n in graph["nodes"] for e in n["inputs"])


# --- the optimizer states file ---------------------------------------------------------------


def _trainer_file(tmp_path):
    net = _net()
    sched = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5)
    trainer = gluon.Trainer(
        net.collect_params(), "adam", {"learning_rate": 0.01, "lr_scheduler": sched}
    )
    for _ in range(3):
        with autograd.record():
            loss = net(mx.nd.ones((2, 3, 8, 8))).sum()
        loss.backward()
        trainer.step(2)
    path = str(tmp_path / "t.states")
    trainer.save_states(path)
    return path


def _module_file(tmp_path):
    data = mx.sym.var("data")
    out = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(data, num_hidden=3, name="fc"), name="softmax")
    mod = mx.mod.Module(out)
    mod.bind([("data", (4, 5))], [("softmax_label", (4,))])
    mod.init_params()
    mod.init_optimizer(optimizer="sgd", optimizer_params={"momentum": 0.9})
    batch = mx.io.DataBatch([mx.nd.ones((4, 5))], [mx.nd.array([0, 1, 2, 0])])
    for _ in range(2):
        mod.forward(batch, is_train=True)
        mod.backward()
        mod.update()
    path = str(tmp_path / "m.states")
    mod.save_optimizer_states(path)
    return path


def _flat(state):
    if state is None:
        return []
    if isinstance(state, (tuple, list)):
        return [a for s in state for a in _flat(s)]
    return [state]


def _states_held(path):
    ours = checkpoint.read_states(path)
    with open(path, "rb") as f:
        theirs = pickle.load(f)  # MXNet's own unpickling
    states, opt = theirs if isinstance(theirs, tuple) else (theirs, None)
    assert set(ours.states) == set(states) and states
    for index, state in states.items():
        mine = _flat(ours.states[index])
        assert len(mine) == len(_flat(state))
        for a, b in zip(mine, _flat(state)):
            _same(a, b)
    return ours, opt


def test_a_trainer_states_file(tmp_path):
    ours, opt = _states_held(_trainer_file(tmp_path))
    rec = ours.optimizer
    assert rec.name == type(opt).__name__ == "Adam"
    for name in ("lr", "wd", "beta1", "beta2", "epsilon", "num_update", "_index_update_count"):
        assert rec.attrs[name] == getattr(opt, name), name
    assert rec.attrs["lr_scheduler"].attrs == vars(opt.lr_scheduler)
    arrays, found = optim_state.read_states_file(_trainer_file(tmp_path))
    assert found["kind"] == "adam" and found["lr_scheduler"]["class"] == "FactorScheduler"
    assert found["update_counts"] == opt._index_update_count


def test_a_module_states_file(tmp_path):
    ours, opt = _states_held(_module_file(tmp_path))
    assert opt is None and ours.optimizer is None
    arrays, found = optim_state.read_states_file(_module_file(tmp_path))
    assert found == {} and all(len(a) == 1 for a in arrays.values())


def test_a_pickle_of_other_classes_is_refused(tmp_path):
    path = str(tmp_path / "x.states")
    with open(path, "wb") as f:
        pickle.dump({0: subprocess.Popen}, f)
    with pytest.raises(CheckpointError, match="MXNet's classes and plain data.*subprocess.Popen"):
        checkpoint.read_states(path)


def test_shared_and_cyclic_pickles_end(tmp_path):
    """A pickle shares objects: each list holding the next one twice is 2**60 visits unless
    each object is converted once; a list holding itself is refused."""
    chain = []
    for _ in range(60):
        chain = [chain, chain]
    blob = pickle.dumps(({0: chain}, None)[0])
    got = states_from_bytes(blob, "chain").states[0]
    for _ in range(60):
        assert len(got) == 2 and got[0] is got[1]
        got = got[1]
    assert got == []
    loop = []
    loop.append(loop)
    with pytest.raises(CheckpointError, match="nested"):
        states_from_bytes(pickle.dumps({0: loop}), "loop")
    key = pickle.dumps({(1, mx.nd.ones(2)): 0})  # an NDArray in a key: an array once read
    with pytest.raises(CheckpointError, match="the Updater's states as MXNet writes them"):
        states_from_bytes(key, "key")


@FUZZ
@given(data=st.data())
def test_fuzzed_states_give_only_checkpoint_errors(data, files):
    blob = bytearray(files["trainer" if data.draw(st.booleans()) else "module"])
    for _ in range(data.draw(st.integers(1, 4))):
        blob[data.draw(st.integers(0, len(blob) - 1))] = data.draw(st.integers(0, 255))
    try:
        got = states_from_bytes(bytes(blob[: data.draw(st.integers(0, len(blob)))]), "fuzz")
    except CheckpointError:
        return
    assert isinstance(got.states, dict)


# --- no MXNet, no torch ----------------------------------------------------------------------


def test_the_reader_imports_neither_mxnet_nor_torch(tmp_path):
    prefix = str(tmp_path / "net")
    _net().export(prefix, 0)
    states = _trainer_file(tmp_path)
    script = (
        "import sys; sys.modules['mxnet'] = None; sys.modules['torch'] = None\n"
        "from mxcompat.formats import checkpoint\n"
        "from mxcompat.torch import optim_state\n"
        "p = checkpoint.read_params(sys.argv[1] + '-0000.params')\n"
        "g = checkpoint.read_symbol(sys.argv[1] + '-symbol.json')\n"
        "s, found = optim_state.read_states_file(sys.argv[2])\n"
        "print(len(p.arg), len(p.aux), len(g['nodes']), found['kind'])\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script, prefix, states],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [
        "6",
        "2",
        str(len(json.load(open(prefix + "-symbol.json"))["nodes"])),
        "adam",
    ]
