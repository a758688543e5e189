"""Section ``ops``: small imperative operator calls (NDArray, ``mx.np``) and a hybridized
forward, with the ``numpy2`` patch removed vs applied (its check runs on every operator
call)."""

import mxnet as mx

import mxcompat

from ._harness import interleave


def _numpy2_state(name):
    if name == "unpatched":
        mxcompat.unpatch("numpy2")
    else:
        mxcompat.patch("numpy2")


def _op_loop(body, calls):
    def run():
        for _ in range(calls):
            body()

    return run


def run(table, configs, reps):
    """Small imperative operators, whose arguments hold no NumPy scalar, with the numpy2
    patch removed vs applied (its per-call check is all that differs; on NumPy 1 it is not
    applied and both sides run the same code)."""
    from mxnet import gluon

    calls = 100
    # Short timings alternated many times: each side has 10x the usual repetitions.
    reps = 10 * reps
    x = mx.nd.ones((1, 4, 8, 8))
    cases = [
        (
            "NDArray ops (Pooling, slice, reshape), 1x4x8x8",
            lambda: (
                mx.nd.Pooling(x, kernel=(2, 2), pool_type="max"),
                mx.nd.slice(x, begin=(0, 0, 0, 0), end=(1, 2, 4, 4)),
                x.reshape((1, -1)),
            ),
        )
    ]
    if hasattr(mx, "np") and hasattr(mx, "npx"):
        a = mx.np.ones((1, 4, 8, 8))
        cases.append(
            (
                "mx.np ops (transpose, npx.pooling, sum, npx.relu)",
                lambda: (
                    mx.np.transpose(a, (0, 1, 3, 2)),
                    mx.npx.pooling(a, kernel=(2, 2), pool_type="max"),
                    mx.np.sum(a, axis=(2, 3)),
                    mx.npx.relu(a),
                ),
            )
        )
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(
            gluon.nn.Conv2D(8, 3, padding=1),
            gluon.nn.Activation("relu"),
            gluon.nn.GlobalAvgPool2D(),
            gluon.nn.Dense(10),
        )
    net.initialize(mx.init.Xavier())
    net.hybridize()
    net(x).wait_to_read()
    cases.append(("hybridized forward (conv, relu, pool, dense), 1x4x8x8", lambda: net(x)))
    applied = "numpy2" in mxcompat.patched()
    for label, body in cases:
        run = _op_loop(body, calls)
        mx.nd.waitall()
        times = interleave(
            {"unpatched": run, "patched": run},
            reps,
            setup=lambda side: (mx.nd.waitall(), _numpy2_state(side)),
        )
        mx.nd.waitall()
        per_call = dict((k, [t / calls for t in v]) for k, v in times.items())
        if not applied:
            label += " (NumPy 1: numpy2 not applied)"
        table.add(
            "%s, per iteration" % label,
            "numpy2 unpatched",
            per_call["unpatched"],
            "numpy2 patched",
            per_call["patched"],
            "<= 1.02x",
        )
        # On a loaded machine most repetitions wait for a core; the fastest of each side is
        # the uncontended cost (same samples, shown beside the medians).
        table.add(
            "  same, fastest repetition of each side",
            "numpy2 unpatched",
            [min(per_call["unpatched"])],
            "numpy2 patched",
            [min(per_call["patched"])],
            "<= 1.02x",
        )
    mxcompat.patch()
