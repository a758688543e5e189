"""``fixed_param_names=['fc1_weight']`` fixes the weight only: its FullyConnected bias trains.

On the oneDNN (MKLDNN) builds from MXNet 1.7 (the 1.7.0.post2, 1.8.0.post0 and 1.9.1 pip
wheels), FullyConnected's backward skips the *bias* gradient when the weight's ``grad_req`` is
``'null'`` (``facts.ONEDNN_FC_NULL_WEIGHT_SKIPS_BIAS``).  A Module's ``fixed_param_names``
gives that ``'null'``, so plain MXNet silently keeps ``fc1_bias`` fixed too.

With this patch, ``Module.bind`` leaves such a weight off ``'null'`` when its bias gets a
gradient (a bias fixed too stops nothing that trains, and keeps MXNet's ``'null'``): the
weight keeps its gradient buffer (one weight gradient of memory and compute), and its
entry in the executor group's ``grad_arrays`` is set to ``None``, which is how MXNet itself
marks a fixed parameter, so MXNet's own update loop skips it (no optimizer call, no
kvstore push or pull): the weight stays fixed bit for bit and the bias trains.  Only names
MXNet would have given ``'null'`` are touched (a ``grad_req`` list ignores
``fixed_param_names`` in MXNet, and an explicit ``grad_req`` dict entry wins, as there).
``Module.reshape`` (also ``forward`` with a new batch shape) rebuilds ``grad_arrays``, so
the entry is set again after it.

CPU contexts only: a Module whose contexts are all GPUs runs no oneDNN kernels and gets
MXNet's ``'null'`` (no extra gradient memory).  The patch applies on every MKLDNN build from
1.7 whatever ``MXNET_MKLDNN_ENABLED`` says: MXNet reads that variable once, at its first
operator, so the environment at bind time may not be what MXNet runs with, and the hold is
exact either way.  Patch name ``onednn_fc_bias``; ``MXCOMPAT_DISABLE_PATCHES=onednn_fc_bias``
gives MXNet's behaviour back for ``fixed_param_names``.  A Module bound while the patch was
active keeps the hold after ``unpatch`` until it is reshaped: rebind it
(``force_rebind=True``) to get MXNet's own ``'null'``.

``mxcompat.freeze`` uses the same rule (``null_would_stop_bias``) for the names it freezes,
whether or not this patch is active: the registry only ever fixes what was frozen.  The patch
is declared in ``mxcompat/patches/onednn_fc_bias.py``.
"""

import contextlib
import json
import threading
import weakref

from .._core import facts
from .._core.log import logger
from .._core.registry import record
from .._core.util import bind_arguments

PATCH = "onednn_fc_bias"  # the patch these wrappers serve (mxcompat/patches/onednn_fc_bias.py)


def affected_build():
    """Whether the imported mxnet is a release and build whose oneDNN FullyConnected stops
    the bias of a weight with grad_req 'null'."""
    return facts.since(facts.ONEDNN_FC_NULL_WEIGHT_SKIPS_BIAS) and facts.has_mkldnn()


def runs_onednn_on(contexts):
    """Whether any of ``contexts`` would run oneDNN's kernels: every non-GPU context (CPU,
    pinned or shared CPU memory).  A GPU executor uses MXNet's own FullyConnected."""
    return any(ctx.device_type != "gpu" for ctx in contexts)


def _fc_inputs(symbol):
    """``(weight, bias)`` for each FullyConnected with a bias: each a variable's name, or
    ``None`` for a computed input."""
    nodes = json.loads(symbol.tojson())["nodes"]

    def variable(entry):
        node = nodes[entry[0]]
        return node["name"] if node.get("op") == "null" else None

    return [
        (variable(node["inputs"][1]), variable(node["inputs"][2]))
        for node in nodes
        if node.get("op") == "FullyConnected" and len(node.get("inputs") or ()) >= 3
    ]


def null_would_stop_bias(symbol, fixed, contexts, grad_req="write"):
    """The names in ``fixed`` that MXNet would bind with grad_req 'null' although that
    silently stops the gradient of a FullyConnected bias MXNet binds with one (oneDNN, CPU
    contexts, MXNet >= 1.7 MKLDNN builds).  Empty wherever that cannot happen.

    A bias with a gradient trains, or will once mxcompat.unfreeze'd: it counts whoever holds
    it fixed now."""
    if (
        not fixed
        or isinstance(grad_req, (list, tuple))
        or grad_req == "null"
        or not runs_onednn_on(contexts)
        or not affected_build()
    ):
        # A grad_req list ignores fixed names, and with 'null' everywhere nothing trains.
        return frozenset()
    # MXNet's rule: a fixed name gets 'null' unless the user's dict names it; any other
    # parameter gets the string grad_req (a dict: 'write'), or its dict entry.
    explicit = grad_req if isinstance(grad_req, dict) else {}
    default = grad_req if isinstance(grad_req, str) else "write"
    nulled = set(n for n in fixed if n not in explicit)

    def has_gradient(bias):
        if bias is None:
            return True  # computed: its gradient flows on to what it was computed from
        return explicit.get(bias, "null" if bias in nulled else default) != "null"

    return frozenset(
        weight for weight, bias in _fc_inputs(symbol) if weight in nulled and has_gradient(bias)
    )


# --- the patch's wrappers ------------------------------------------------------------------

_local = threading.local()  # .added: freeze's names in fixed_param_names, for one bind


@contextlib.contextmanager
def registry_bind(added):
    """Around the inner ``Module.bind`` call of ``mxcompat.freeze`` (stacked above this
    patch): ``added`` are the names it put into ``fixed_param_names`` for this bind.  Those
    are freeze's to decide (and to thaw); this patch corrects the user's own fixed names."""
    previous = getattr(_local, "added", None)
    _local.added = frozenset(added)
    try:
        yield
    finally:
        _local.added = previous


# Module -> (its executor group, the weights held by a None gradient entry in it).
_held = weakref.WeakKeyDictionary()


def _hold(group, names):
    # MXNet's own mark of a fixed parameter: no gradient in the group, so its update loops
    # (with or without a kvstore) skip it.  The executors keep the buffer the bias needs.
    for i, name in enumerate(group.param_names):
        if name in names:
            group.grad_arrays[i] = [None] * len(group.grad_arrays[i])


def wrap_bind(wrapped, instance, args, kwargs):
    fixed = instance._fixed_param_names
    if not fixed:
        return wrapped(*args, **kwargs)
    bound = bind_arguments(wrapped, args, kwargs)
    if instance.binded and not bound.arguments.get("force_rebind", False):
        return wrapped(*args, **kwargs)  # MXNet ignores the call (and says so)
    _held.pop(instance, None)
    keep = frozenset()
    if bound.arguments.get("for_training", True):
        keep = null_would_stop_bias(
            instance._symbol, fixed, instance._context, bound.arguments.get("grad_req", "write")
        )
        keep -= getattr(_local, "added", None) or frozenset()
    if not keep:
        return wrapped(*args, **kwargs)
    instance._fixed_param_names = [n for n in fixed if n not in keep]
    try:
        result = wrapped(*args, **kwargs)
    finally:
        instance._fixed_param_names = fixed
    group = instance._exec_group
    _hold(group, keep)
    _held[instance] = (group, keep)
    record(PATCH)
    logger.debug(
        "%s: %s keep their gradient buffer so their FullyConnected bias trains; "
        "held fixed by MXNet's own update skip",
        PATCH,
        ", ".join(sorted(keep)),
    )
    return result


def wrap_reshape(wrapped, instance, args, kwargs):
    result = wrapped(*args, **kwargs)
    held = _held.get(instance)
    if held is not None and held[0] is instance._exec_group:
        _hold(*held)
    return result
