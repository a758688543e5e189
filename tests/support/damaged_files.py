"""Damaged copies of a small ``.params`` and ``-symbol.json``, made from a seed, and the loads
of them run in a fresh interpreter per batch, with or without mxcompat, so that a crash of
MXNet's C++ (SIGSEGV, abort) is seen as that file's outcome, not a dead test run.

Run as a script (``python damaged_files.py MODE params|symbol LIST RESULTS``) it loads each
file named in LIST and appends ``INDEX start`` before, ``INDEX outcome`` after each to
RESULTS, flushed: the file a crash killed is the last one started."""

import hashlib
import json
import os
import random
import re
import struct
import subprocess
import sys

V2_MAGIC = 0xF993FAC9
DATA_SHAPE = (2, 3, 8, 8)
ODD_VALUES = [
    "-1",
    "0",
    "2147483648",
    "1099511627776",
    "1e40",
    "(0, 0)",
    "(-1, -1)",
    "(100000, 100000)",
    "(3, 3, 3, 3, 3)",
    "abc",
    "",
    "None",
    "[1]",
    "((",
]


def base_params(mx, path):
    """A small ``.params``: four named arrays of four dtypes."""
    rng = __import__("numpy").random.RandomState(0)
    mx.nd.save(
        path,
        {
            "arg:w": mx.nd.array(rng.uniform(-1, 1, (3, 4)), dtype="float32"),
            "arg:b": mx.nd.array(rng.randint(0, 100, (5,)), dtype="int64"),
            "aux:h": mx.nd.array(rng.uniform(-1, 1, (2, 2, 2)), dtype="float16"),
            "aux:u": mx.nd.array(rng.randint(0, 255, (6,)), dtype="uint8"),
        },
    )


def base_symbol(mx, path):
    """A small conv net's ``-symbol.json``."""
    net = mx.sym.Convolution(mx.sym.var("data"), kernel=(3, 3), num_filter=4, name="conv")
    net = mx.sym.BatchNorm(net, name="bn")
    net = mx.sym.Activation(net, act_type="relu", name="relu")
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")
    net = mx.sym.FullyConnected(mx.sym.Flatten(net), num_hidden=5, name="fc")
    mx.sym.SoftmaxOutput(net, name="softmax").save(path)


def _size_fields(data):
    """(offset, width) of every size field of a dense V2 NDArray list: the count, each
    array's number of dimensions and dimensions, the number of names, each name's length."""
    fields = [(16, 8)]
    (count,) = struct.unpack_from("<Q", data, 16)
    at = 24
    for _ in range(count):
        at += 8  # magic, storage type
        fields.append((at, 4))
        (ndim,) = struct.unpack_from("<i", data, at)
        dims = struct.unpack_from("<%dq" % ndim, data, at + 4)
        fields += [(at + 4 + 8 * i, 8) for i in range(ndim)]
        at += 4 + 8 * ndim + 8
        (flag,) = struct.unpack_from("<i", data, at)
        size = 1
        for d in dims:
            size *= d
        at += 4 + size * {0: 4, 1: 8, 2: 2, 3: 1, 4: 4, 5: 1, 6: 8}[flag]
    fields.append((at, 8))
    at += 8
    for _ in range(count):
        fields.append((at, 8))
        (length,) = struct.unpack_from("<Q", data, at)
        at += 8 + length
    return fields


def damage_params(data, rng):
    """One damaged copy of ``data`` (a ``.params``'s bytes)."""
    kind = rng.choice(["truncate", "flip", "size", "size", "bytes"])
    if kind == "truncate":
        return data[: rng.randrange(len(data))]
    out = bytearray(data)
    if kind == "flip":
        for _ in range(rng.randint(1, 4)):
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
        return bytes(out)
    if kind == "bytes":
        at = rng.randrange(len(out))
        out[at : at + 4] = bytes(rng.randrange(256) for _ in range(4))
        return bytes(out[: len(data)])
    at, width = rng.choice(_size_fields(data))
    value = (
        rng.choice([2**31, 2**40, 2**32 - 1, 2**63])
        if width == 8
        else rng.choice([2**31, 2**32 - 1, 2**16])
    )
    out[at : at + width] = (value % 2 ** (8 * width)).to_bytes(width, "little")
    return bytes(out)


def damage_symbol(text, rng):
    """One damaged copy of ``text`` (a ``-symbol.json``)."""
    graph = json.loads(text)
    nodes = graph["nodes"]
    n = len(nodes)
    ops = [i for i, node in enumerate(nodes) if node["op"] != "null"]
    kind = rng.choice(["input", "head", "arg_nodes", "attr", "attr", "op", "text"])
    if kind == "input":
        node = nodes[rng.choice(ops)]
        entry = rng.choice(node["inputs"])
        entry[rng.choice([0, 0, 1])] = rng.choice(
            [n, n + rng.randint(1, 1000), -1, 2**31, rng.randrange(n)]
        )
    elif kind == "head":
        head = graph["heads"][0]
        head[rng.choice([0, 1])] = rng.choice([n, n + 5, -1, 3, 2**31])
    elif kind == "arg_nodes":
        args = graph["arg_nodes"]
        how = rng.choice(["replace", "drop", "add"])
        if how == "replace":
            args[rng.randrange(len(args))] = rng.choice([-1, n, n + 100, rng.randrange(n)])
        elif how == "drop":
            del args[rng.randrange(len(args))]
        else:
            args.append(rng.choice([rng.randrange(n), n + 3, -5]))
    elif kind == "attr":
        node = nodes[rng.choice(ops)]
        attrs = node.setdefault("attrs", {})
        key = rng.choice(sorted(attrs) + ["num_outputs", "__shape__"]) if attrs else "kernel"
        attrs[key] = rng.choice(ODD_VALUES + [5, None, [1, 2]])
    elif kind == "op":
        nodes[rng.choice(ops)]["op"] = rng.choice(
            ["Concat", "SliceChannel", "null", "NoSuchOp", "add_n"]
        )
    else:
        data = bytearray(text.encode())
        if rng.random() < 0.5:
            return bytes(data[: rng.randrange(len(data))])
        data[rng.randrange(len(data))] = rng.randrange(32, 127)
        return bytes(data)
    return json.dumps(graph).encode()


def make(folder, mx, seed, n_params=300, n_symbols=200):
    """The base files and their damaged copies in ``folder``: (params paths, symbol paths)."""
    rng = random.Random(seed)
    base_p, base_s = os.path.join(folder, "base.params"), os.path.join(folder, "base-symbol.json")
    base_params(mx, base_p)
    base_symbol(mx, base_s)
    data = open(base_p, "rb").read()
    text = open(base_s).read()
    params, symbols = [], []
    for i in range(n_params):
        path = os.path.join(folder, "d%03d.params" % i)
        with open(path, "wb") as f:
            f.write(damage_params(data, rng))
        params.append(path)
    for i in range(n_symbols):
        path = os.path.join(folder, "d%03d-symbol.json" % i)
        with open(path, "wb") as f:
            f.write(damage_symbol(text, rng))
        symbols.append(path)
    return params, symbols


def run(paths, kind, mode, env, batch=50, timeout=300):
    """Each file's outcome in fresh interpreters of this env, ``batch`` files each: ``loaded
    DIGEST``, ``CLASS: message`` for an exception, ``crash SIGNAL`` where the process died.
    ``mode``: "on" (mxcompat), "off" (MXNet alone), "unchecked" (mxcompat without
    ``checked_loads``: where MXNet imports only with mxcompat, NumPy 2 or Python 3.12+)."""
    if mode == "unchecked":
        env = dict(env, MXCOMPAT_DISABLE_PATCHES="checked_loads")
    outcomes = {}
    folder = os.path.dirname(paths[0])
    start = 0
    while start < len(paths):
        chunk = paths[start : start + batch]
        listing = os.path.join(folder, "list.txt")
        results = os.path.join(folder, "results.txt")
        with open(listing, "w") as f:
            f.write("\n".join(chunk))
        open(results, "w").close()
        proc = subprocess.run(
            [
                sys.executable,
                os.path.abspath(__file__),
                mode,
                kind,
                listing,
                results,
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )
        done, started = {}, None
        for line in open(results):
            index, _, outcome = line.rstrip("\n").partition(" ")
            if outcome == "start":
                started = int(index)
            else:
                done[int(index)] = outcome
        for index, outcome in done.items():
            outcomes[chunk[index]] = outcome
        if proc.returncode == 0 and len(done) == len(chunk):
            start += len(chunk)
            continue
        if started is None or started in done:
            raise AssertionError(
                "the loading process failed outside a load:\n" + proc.stderr[-3000:]
            )
        outcomes[chunk[started]] = "crash %d" % proc.returncode
        start += started + 1
    return outcomes


def _digest_params(loaded):
    h = hashlib.sha256()
    items = sorted(loaded.items()) if isinstance(loaded, dict) else enumerate(loaded)
    for name, array in items:
        value = array.asnumpy()
        h.update(repr((name, array.stype, str(value.dtype), value.shape)).encode())
        h.update(value.tobytes())
    return h.hexdigest()[:16]


def _load(mx, kind, path):
    if kind == "params":
        return _digest_params(mx.nd.load(path))
    symbol = mx.sym.load(path)
    if kind == "symbol_plain":
        return hashlib.sha256(symbol.tojson().encode()).hexdigest()[:16]
    shapes = symbol.infer_shape(data=DATA_SHAPE)
    return hashlib.sha256((symbol.tojson() + repr(shapes)).encode()).hexdigest()[:16]


def _gist(message):
    """A message's last line that is not a frame of MXNet's C++ backtrace (``[bt] (9)
    libmxnet.so(+0x2b2...)``: addresses differ from process to process), times of day out."""
    lines = [
        line.strip()
        for line in message.splitlines()
        if line.strip() and not line.strip().startswith(("[bt]", "Stack trace"))
    ]
    gist = lines[-1] if lines else ""
    return re.sub(r"\[\d\d:\d\d:\d\d\] ", "", gist)[:200]


def _main(mode, kind, listing, results):
    if mode != "off":
        import mxcompat  # noqa: F401
    import mxnet as mx

    paths = open(listing).read().split("\n")
    with open(results, "a") as out:
        for index, path in enumerate(paths):
            out.write("%d start\n" % index)
            out.flush()
            try:
                outcome = "loaded " + _load(mx, kind, path)
            except Exception as exc:  # the outcome is the class and its message's gist
                outcome = "%s: %s" % (type(exc).__name__, _gist(str(exc)))
            out.write("%d %s\n" % (index, outcome))
            out.flush()


if __name__ == "__main__":
    _main(*sys.argv[1:5])
