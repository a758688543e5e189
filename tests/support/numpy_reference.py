"""MXNet computations whose results must not depend on the NumPy or Python version.

``compute()`` runs, on the installed MXNet, NDArray <-> NumPy conversion for every dtype the
release has, ``mx.nd`` (and ``mx.np`` from 1.6) arithmetic with NumPy and Python scalars and
arrays, a few steps of Gluon training (DataLoader over NumPy data, split_and_load,
clip_global_norm, SGD and Adam, hybridized or not), ``Module.fit``/``score``/``predict``,
every metric, save/load of parameters and checkpoints, recordio packing and ``while_loop``; every
result becomes a NumPy array (values, dtype names and type names as strings).

``tests/patches/test_numpy_reference.py`` runs it in-process (mxcompat patched) and, as the
reference, in a fresh process of the reference environment (``reference_env``) that never
imports mxcompat::

    python -m tests.support.numpy_reference OUT.npz     (in the checkout's root)

Nothing is stored: the last bits of a training step depend on the CPU (see
``reference_env``).  Code here runs on Python 3.7 and NumPy 1.14 too.
"""

import os
import sys
import tempfile
from collections import OrderedDict

from . import models


class Recorder:
    """Collects named results as NumPy arrays; exceptions become ``error:<Type>`` strings."""

    def __init__(self, np, mx):
        self.np = np
        self.mx = mx
        self.out = OrderedDict()

    def value(self, key, value):
        np, mx = self.np, self.mx
        assert key not in self.out, key
        if (
            isinstance(value, (list, tuple))
            and value
            and all(isinstance(v, mx.nd.NDArray) for v in value)
        ):
            for i, v in enumerate(value):
                self.value("%s[%d]" % (key, i), v)
            return
        if isinstance(value, mx.nd.NDArray):
            self.out[key + ":type"] = np.array(type(value).__name__)
            self.out[key + ":dtype"] = np.array(np.dtype(value.dtype).name)
            value = value.asnumpy()
        elif isinstance(value, np.ndarray):
            self.out[key + ":type"] = np.array("numpy.ndarray")
            self.out[key + ":dtype"] = np.array(value.dtype.name)
        elif isinstance(value, (bytes, bytearray)):
            value = np.frombuffer(bytes(value), dtype=np.uint8)
        elif isinstance(value, str):
            value = np.array(value)
        elif isinstance(value, np.generic):
            # A NumPy scalar: its type matters (np.float64 vs np.float32).  Named by dtype:
            # NumPy 2 renamed the class np.bool_ to np.bool.
            self.out[key + ":type"] = np.array("numpy." + value.dtype.name)
        else:
            self.out[key + ":type"] = np.array(type(value).__module__ + "." + type(value).__name__)
        self.out[key] = np.array(value)

    def run(self, key, fn):
        try:
            result = fn()
        except Exception as e:  # noqa: BLE001  (the error type is part of the result)
            self.out[key] = self.np.array("error:" + type(e).__name__)
            return None
        self.value(key, result)
        return result


def _values(np, dtype):
    # In-range values only: float -> int casts of out-of-range values are undefined.
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return np.array([True, False, True, True, False, False], dtype=dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        low = 0 if dt.kind == "u" else max(int(info.min), -100)
        return np.array([[0, 1, 2], [min(int(info.max), 100), low, 7]], dtype=dt)
    return np.array([[-1.5, 0.0, 0.1], [2.5, 1000.0, -0.0]], dtype=dt)


def _dtypes(np, mx):
    from mxnet.ndarray.ndarray import _DTYPE_NP_TO_MX

    names = []
    for key in _DTYPE_NP_TO_MX:
        if isinstance(key, type):  # skip None and the bfloat16 record dtype
            names.append(np.dtype(key).name)
    return names


def conversions(rec, np, mx):
    for name in _dtypes(np, mx):
        src = _values(np, name)
        k = "convert/%s/" % name
        rec.run(k + "nd.array(src)", lambda: mx.nd.array(src))
        rec.run(k + "nd.array(src,dtype)", lambda: mx.nd.array(src, dtype=name))
        rec.run(k + "nd.array(list,dtype)", lambda: mx.nd.array(src.tolist(), dtype=name))
        rec.run(k + "asscalar", lambda: mx.nd.array(src[:1].reshape(-1)[:1], dtype=name).asscalar())
        rec.run(k + "astype(float32)", lambda: mx.nd.array(src, dtype=name).astype("float32"))
        rec.run(k + "from float32", lambda: mx.nd.array(src.astype("float32")).astype(name))
        rec.run(k + "zeros", lambda: mx.nd.zeros((2, 2), dtype=name))
        rec.run(k + "setitem numpy", lambda: _setitem(mx, name, src))
        if hasattr(mx, "np") and hasattr(mx.np, "array"):
            rec.run(k + "np.array(src)", lambda: mx.np.array(src))
            rec.run(k + "np.array(src,dtype)", lambda: mx.np.array(src, dtype=name))


def _setitem(mx, name, src):
    x = mx.nd.zeros(src.shape, dtype=name)
    x[:] = src
    return x


SCALARS = [
    ("np.float32(2.5)", lambda np: np.float32(2.5)),
    ("np.float32(0.1)", lambda np: np.float32(0.1)),
    ("np.float64(1.25)", lambda np: np.float64(1.25)),
    ("np.float16(0.5)", lambda np: np.float16(0.5)),
    ("np.int64(3)", lambda np: np.int64(3)),
    ("np.int32(2)", lambda np: np.int32(2)),
    ("np.uint8(7)", lambda np: np.uint8(7)),
    ("np.bool_(True)", lambda np: np.bool_(True)),
    ("2.5", lambda np: 2.5),
    ("3", lambda np: 3),
]

OPS = [
    ("x+s", lambda x, s: x + s),
    ("s+x", lambda x, s: s + x),
    ("x-s", lambda x, s: x - s),
    ("s-x", lambda x, s: s - x),
    ("x*s", lambda x, s: x * s),
    ("s*x", lambda x, s: s * x),
    ("x/s", lambda x, s: x / s),
    ("s/x", lambda x, s: s / x),
    ("x**s", lambda x, s: x**s),
    ("x>s", lambda x, s: x > s),
    ("x==s", lambda x, s: x == s),
]


def _inplace(x, s):
    y = x.copy()
    y += s
    y *= s
    return y


def arithmetic(rec, np, mx):
    frontends = [("nd", mx.nd)]
    if hasattr(mx, "np") and hasattr(mx.np, "array"):
        frontends.append(("np", mx.np))
    for front, mod in frontends:
        for dtype in ("float32", "float64", "float16", "int32", "int64", "uint8"):
            base = _values(np, dtype)
            if np.dtype(dtype).kind == "f":
                base = np.array([[1.5, 2.25, 3.0], [0.5, 4.0, 1.0]], dtype=dtype)
            else:
                base = np.array([[1, 2, 3], [4, 5, 6]], dtype=dtype)
            for sname, make in SCALARS:
                for oname, op in OPS:
                    x = mod.array(base, dtype=dtype)
                    s = make(np)
                    if oname == "x/s" and np.dtype(dtype).kind != "f" and abs(float(s)) < 1:
                        continue  # the scalar becomes an integer 0: SIGFPE in libmxnet
                    rec.run("arith/%s/%s/%s/%s" % (front, dtype, sname, oname), lambda: op(x, s))
                x = mod.array(base, dtype=dtype)
                s = make(np)
                rec.run("arith/%s/%s/%s/inplace" % (front, dtype, sname), lambda: _inplace(x, s))
            # NumPy arrays on either side.
            other = np.array([[2.0, 0.5, 1.0], [1.0, 2.0, 4.0]], dtype=np.float32)
            x = mod.array(base, dtype=dtype)
            rec.run("arith/%s/%s/x+onp" % (front, dtype), lambda: x + other)
            rec.run("arith/%s/%s/onp+x" % (front, dtype), lambda: other + x)
            rec.run("arith/%s/%s/onp*x" % (front, dtype), lambda: other * x)
    # Parameters built from NumPy scalars and shapes (NEP 51 reprs must not reach the core).
    x = mx.nd.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    i1, i2 = np.int64(1), np.int64(3)
    rec.run("param/slice", lambda: x[i1:i2])
    rec.run("param/index", lambda: x[i1])
    rec.run("param/reshape", lambda: x.reshape((np.int64(4), np.int64(3))))
    rec.run("param/nd.reshape", lambda: mx.nd.reshape(x, shape=(np.int64(2), np.int64(6))))
    rec.run("param/ones", lambda: mx.nd.ones((np.int64(2), 3)))
    rec.run("param/transpose", lambda: mx.nd.transpose(x, axes=(np.int64(1), np.int64(0))))
    rec.run("param/slice_axis", lambda: mx.nd.slice_axis(x, axis=np.int64(1), begin=i1, end=i2))
    rec.run("param/sum axis", lambda: mx.nd.sum(x, axis=(np.int64(0),)))
    rec.run("param/tile", lambda: mx.nd.tile(x, reps=(np.int64(2), np.int32(1))))
    rec.run("param/clip", lambda: mx.nd.clip(x, np.float32(0.1), np.float64(5.5)))
    rec.run("param/take", lambda: mx.nd.take(x, mx.nd.array(np.array([2, 0]))))
    rec.run(
        "param/sym.var shape", lambda: str(mx.sym.var("v", shape=(np.int64(2), 3)).infer_shape()[1])
    )
    if hasattr(mx, "npx"):

        def np_params():
            mx.npx.set_np()
            try:
                y = mx.np.array(np.arange(12, dtype=np.float32).reshape(3, 4))
                return [
                    mx.np.sum(y, axis=(np.int64(0),)).as_nd_ndarray(),
                    mx.np.reshape(y, (np.int64(4), 3)).as_nd_ndarray(),
                    mx.np.transpose(y, axes=(np.int64(1), np.int64(0))).as_nd_ndarray(),
                ]
            finally:
                mx.npx.reset_np()

        rec.run("param/np ops", np_params)


def _set_params(np, mx, params):
    for i, p in enumerate(params.values()):
        shape = p.shape
        size = int(np.prod(shape))
        value = (np.sin(np.arange(size) + i) * 0.3).reshape(shape).astype(np.float32)
        p.set_data(mx.nd.array(value))


def _net(mx, hybrid):
    return models.dense_net((4, 5, 3), "relu", prefix="net_", init=mx.init.Zero(), hybridize=hybrid)


def _data(np):
    x = (np.cos(np.arange(32 * 4)) * 2.0).reshape(32, 4).astype(np.float32)
    y = (np.arange(32) % 3).astype(np.float32)
    return x, y


def gluon_training(rec, np, mx):
    from mxnet import autograd, gluon

    x, y = _data(np)
    for hybrid in (False, True):
        for opt, opt_params in (
            ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4}),
            ("adam", {"learning_rate": 0.01}),
        ):
            k = "gluon/%s/%s/" % ("hybrid" if hybrid else "imperative", opt)
            net = _net(mx, hybrid)
            params = net.collect_params()
            _set_params(np, mx, params)
            trainer = gluon.Trainer(params, opt, dict(opt_params))
            loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
            loader = gluon.data.DataLoader(
                gluon.data.ArrayDataset(x, y), batch_size=8, shuffle=False
            )
            acc = mx.metric.Accuracy()
            ce = mx.metric.CrossEntropy()
            for step, (data, label) in enumerate(loader):
                datas = gluon.utils.split_and_load(data, [mx.cpu(0), mx.cpu(0)])
                labels = gluon.utils.split_and_load(label, [mx.cpu(0), mx.cpu(0)])
                with autograd.record():
                    outs = [net(d) for d in datas]
                    losses = [loss_fn(o, lab) for o, lab in zip(outs, labels)]
                for lab in losses:
                    lab.backward()
                grads = [p.grad() for p in params.values()]
                norm = gluon.utils.clip_global_norm(grads, 0.5)
                trainer.step(8)
                rec.value(k + "loss%d" % step, mx.nd.concat(*losses, dim=0))
                rec.value(k + "norm%d" % step, norm)
                for o, lab in zip(outs, labels):
                    acc.update([lab], [mx.nd.softmax(o)])
                    ce.update([lab], [mx.nd.softmax(o)])
                if step == 2:
                    break
            for i, p in enumerate(params.values()):
                rec.value(k + "param%d" % i, p.data())
            rec.value(k + "acc", acc.get()[1])
            rec.value(k + "ce", ce.get()[1])
            # Uneven split of a NumPy batch (NumPy ints in the split points).
            rec.run(
                k + "split_data",
                lambda: gluon.utils.split_data(mx.nd.array(x[:7]), 3, even_split=False),
            )


def module_fit(rec, np, mx, tmp):
    x, y = _data(np)
    sym = models.mlp_symbol(5, 3, "relu", "softmax", activation_name="relu1")
    arg_params = OrderedDict()
    shapes = dict(zip(sym.list_arguments(), sym.infer_shape(data=(8, 4))[0]))
    for i, name in enumerate(sorted(shapes)):
        if name in ("data", "softmax_label"):
            continue
        size = int(np.prod(shapes[name]))
        arg_params[name] = mx.nd.array(
            (np.sin(np.arange(size) * 0.7 + i) * 0.3).reshape(shapes[name]).astype(np.float32)
        )
    it = mx.io.NDArrayIter(x, y, batch_size=8, shuffle=False)
    mod = mx.mod.Module(sym, context=mx.cpu())
    seen = []

    def on_batch(param):
        seen.append([float(v) for _, v in param.eval_metric.get_name_value()])

    mod.fit(
        it,
        num_epoch=2,
        optimizer="sgd",
        optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
        arg_params=arg_params,
        aux_params={},
        eval_metric=["acc", "ce"],
        batch_end_callback=on_batch,
    )
    rec.value("module/batch metrics", np.array(seen, dtype=np.float64))
    args, _ = mod.get_params()
    for name in sorted(args):
        rec.value("module/param/" + name, args[name])
    score = mod.score(it, ["acc", "ce", "mse", "mae", "rmse"])
    for name, value in score:
        rec.value("module/score/" + name, value)
    rec.value("module/predict", mod.predict(it))
    # Checkpoint round trip; the file bytes are MXNet's own format.
    prefix = os.path.join(tmp, "mod")
    mod.save_checkpoint(prefix, 2)
    with open(prefix + "-0002.params", "rb") as f:
        rec.value("module/checkpoint bytes", f.read())
    sym2, args2, auxs2 = mx.model.load_checkpoint(prefix, 2)
    for name in sorted(args2):
        rec.value("module/loaded/" + name, args2[name])
    rec.value("module/loaded symbol args", " ".join(sym2.list_arguments()))


def save_load(rec, np, mx, tmp):
    arrays = OrderedDict()
    for name in _dtypes(np, mx):
        arrays[name] = mx.nd.array(_values(np, name), dtype=name)
    fname = os.path.join(tmp, "arrays.nd")
    mx.nd.save(fname, arrays)
    with open(fname, "rb") as f:
        rec.value("save/nd.save bytes", f.read())
    loaded = mx.nd.load(fname)
    for name in sorted(loaded):
        rec.value("save/nd.load/" + name, loaded[name])
    net = _net(mx, False)
    _set_params(np, mx, net.collect_params())
    pname = os.path.join(tmp, "net.params")
    net.save_parameters(pname)
    with open(pname, "rb") as f:
        rec.value("save/save_parameters bytes", f.read())
    net2 = _net(mx, False)
    net2.load_parameters(pname)
    for i, p in enumerate(net2.collect_params().values()):
        rec.value("save/load_parameters/%d" % i, p.data())


def metrics(rec, np, mx):
    labels = [mx.nd.array([0, 1, 2, 1]), mx.nd.array([2, 2, 0, 1]), mx.nd.array([1, 0, 0, 2])]
    probs = []
    for i in range(3):
        p = np.abs(np.sin(np.arange(12) * (i + 1.3))).reshape(4, 3).astype(np.float32) + 0.05
        probs.append(mx.nd.array(p / p.sum(axis=1, keepdims=True)))
    reg_pred = [mx.nd.array(np.cos(np.arange(4) + i).astype(np.float32)) for i in range(3)]
    bin_labels = [mx.nd.array([0, 1, 1, 0]), mx.nd.array([1, 1, 0, 0]), mx.nd.array([1, 0, 1, 1])]
    bin_probs = [
        mx.nd.array(np.stack([1 - q, q], axis=1).astype(np.float32))
        for q in (
            np.array([0.2, 0.7, 0.4, 0.1]),
            np.array([0.9, 0.6, 0.3, 0.2]),
            np.array([0.55, 0.45, 0.8, 0.35]),
        )
    ]
    cases = [
        ("acc", lambda: mx.metric.Accuracy(), labels, probs),
        ("top2", lambda: mx.metric.TopKAccuracy(top_k=2), labels, probs),
        ("ce", lambda: mx.metric.CrossEntropy(), labels, probs),
        ("nll", lambda: mx.metric.NegativeLogLikelihood(), labels, probs),
        ("perplexity", lambda: mx.metric.Perplexity(ignore_label=None), labels, probs),
        ("mae", lambda: mx.metric.MAE(), labels, reg_pred),
        ("mse", lambda: mx.metric.MSE(), labels, reg_pred),
        ("rmse", lambda: mx.metric.RMSE(), labels, reg_pred),
        ("pearson", lambda: mx.metric.PearsonCorrelation(), labels, reg_pred),
        ("f1", lambda: mx.metric.F1(), bin_labels, bin_probs),
        ("mcc", lambda: mx.metric.MCC(), bin_labels, bin_probs),
        ("loss", lambda: mx.metric.Loss(), labels, reg_pred),
        ("custom", lambda: mx.metric.np(lambda lab, p: np.abs(lab - p).mean()), labels, reg_pred),
    ]
    for name, make, ls, ps in cases:

        def run(make=make, ls=ls, ps=ps):
            m = make()
            values = []
            for lab, p in zip(ls, ps):
                m.update([lab], [p])
                values.append(m.get()[1])
            return values

        try:
            values = run()
        except Exception as e:  # noqa: BLE001
            rec.value("metric/" + name, "error:" + type(e).__name__)
            continue
        rec.value("metric/" + name, np.array(values, dtype=np.float64))
        rec.value("metric/%s:last" % name, values[-1])


def data_io(rec, np, mx):
    x, y = _data(np)
    it = mx.io.NDArrayIter(x[:10], y[:10], batch_size=4, last_batch_handle="pad")
    for i, batch in enumerate(it):
        rec.value("io/pad/batch%d/data" % i, batch.data[0])
        rec.value("io/pad/batch%d/pad" % i, batch.pad)
    header = mx.recordio.IRHeader(0, np.array([1.5, 2.0, 3.25]), 7, 0)
    rec.run("io/recordio pack array label", lambda: mx.recordio.pack(header, b"payload"))
    rec.run(
        "io/recordio pack scalar label",
        lambda: mx.recordio.pack(mx.recordio.IRHeader(0, np.float32(4.0), 8, 0), b"p"),
    )
    packed = (
        mx.recordio.pack(header, b"payload")
        if "error" not in str(rec.out["io/recordio pack array label"])
        else None
    )
    if packed is not None:
        h, s = mx.recordio.unpack(packed)
        rec.value("io/recordio unpack label", h.label)
        rec.value("io/recordio unpack flag", h.flag)
    csr = mx.nd.sparse.csr_matrix(
        (np.array([1.0, 2.0, 3.0], dtype=np.float32), np.array([0, 2, 1]), np.array([0, 2, 2, 3])),
        shape=(3, 3),
    )
    rec.value("io/csr dense", csr.tostype("default"))
    rec.value("io/csr indices", csr.indices)
    rsp = mx.nd.sparse.row_sparse_array(
        (np.ones((2, 3), dtype=np.float32), np.array([0, 2])), shape=(4, 3)
    )
    rec.value("io/row_sparse dense", rsp.tostype("default"))
    rec.run("io/one_hot", lambda: mx.nd.one_hot(mx.nd.array(np.array([0, 2, 1])), 3))


def control_flow(rec, np, mx):
    """``while_loop`` with ``max_iterations`` given as a NumPy array, as MXNet documents (it
    converts it with ``int()`` itself), for ``mx.nd`` and ``mx.sym``."""

    # The limit ends every loop: output rows past the last step would be undefined memory.
    def cond(i, s):
        return i < 100

    def body(i, s):
        return [i * 2], [i + 1, s + i]

    limits = [
        ("int", lambda: 6),
        ("array[1]", lambda: np.array([6])),
        ("array[1,1]", lambda: np.array([[2]], dtype=np.int32)),
        ("array[1] float", lambda: np.array([3.7])),
        ("array 0-d", lambda: np.array(6)),
    ]
    for name, limit in limits:

        def nd_loop(limit=limit):
            outs, states = mx.nd.contrib.while_loop(
                cond, body, [mx.nd.array([0]), mx.nd.array([1])], max_iterations=limit()
            )
            return list(outs) + list(states)

        def sym_loop(limit=limit):
            outs, states = mx.sym.contrib.while_loop(
                cond, body, [mx.sym.var("i"), mx.sym.var("s")], max_iterations=limit()
            )
            exe = mx.sym.Group(list(outs) + list(states)).bind(
                mx.cpu(), {"i": mx.nd.array([0]), "s": mx.nd.array([1])}
            )
            return exe.forward()

        rec.run("control/nd while_loop/" + name, nd_loop)
        rec.run("control/sym while_loop/" + name, sym_loop)


def compute():
    import mxnet as mx
    import numpy as np

    rec = Recorder(np, mx)
    # The checkpoints it writes and reads back, gone once their arrays are recorded.
    with tempfile.TemporaryDirectory(prefix="mxcompat-ref-") as tmp:
        conversions(rec, np, mx)
        arithmetic(rec, np, mx)
        gluon_training(rec, np, mx)
        module_fit(rec, np, mx, tmp)
        save_load(rec, np, mx, tmp)
        metrics(rec, np, mx)
        data_io(rec, np, mx)
        control_flow(rec, np, mx)
    return rec.out


def save(path, results):
    """Write ``results`` (name -> array) as five arrays of one compressed ``.npz``: one entry
    per result would cost a zip header each (4,800 results)."""
    import numpy as np

    keys = list(results)
    arrays = [np.asarray(results[k]) for k in keys]  # tobytes() is C order
    blobs = [a.tobytes() for a in arrays]
    np.savez_compressed(
        path,
        keys=np.array(keys),
        dtypes=np.array([a.dtype.str for a in arrays]),
        shapes=np.array([",".join(str(d) for d in a.shape) for a in arrays]),
        offsets=np.cumsum([0] + [len(b) for b in blobs]).astype(np.int64),
        blob=np.frombuffer(b"".join(blobs), dtype=np.uint8),
    )


def load(path):
    """The results ``save`` wrote, as name -> array."""
    import numpy as np

    with np.load(path, allow_pickle=False) as data:
        keys, dtypes, shapes = data["keys"], data["dtypes"], data["shapes"]
        offsets, blob = data["offsets"], data["blob"].tobytes()
    out = OrderedDict()
    for i, key in enumerate(keys):
        shape = tuple(int(d) for d in str(shapes[i]).split(",") if d)
        raw = blob[offsets[i] : offsets[i + 1]]
        out[str(key)] = np.frombuffer(raw, dtype=np.dtype(str(dtypes[i]))).reshape(shape).copy()
    return out


def main(argv):
    """Write plain MXNet's results (mxcompat is never imported here) to ``argv[0]``."""
    import mxnet as mx
    import numpy as np

    assert "mxcompat" not in sys.modules, "the reference must be MXNet as it ships"
    out = compute()
    out["__env__"] = np.array(
        "mxnet %s, numpy %s, python %s" % (mx.__version__, np.__version__, sys.version.split()[0])
    )
    save(argv[0], out)


if __name__ == "__main__":
    main(sys.argv[1:])
