"""Gluon ``Parameter`` internals: arrays placed into a Parameter as its data without a copy.

Gluon has no public way to make existing NDArrays a Parameter's data (``set_data`` copies,
``initialize`` allocates), so both directions go through ``Parameter._init_impl`` (the same in
MXNet 1.3.1 ... 1.9.1) with arrays already where they belong, once per conversion and
contexts: the other parameters on the same contexts get the fields it set.
"""

from .._core import facts
from .._core.conversion import import_mxnet
from . import ndarray_c_api


class _Placed:
    """The ``data`` of ``Parameter._init_impl(data, ctx_list)`` when the arrays are already
    where they belong: its ``copyto`` hands back the next of them instead of a copy.
    ``_init_impl`` (the same in 1.3.1 ... 1.9.1) copies ``data`` to each context of
    ``ctx_list`` in that list's order."""

    __slots__ = ("_arrays",)

    def __init__(self, arrays):
        self._arrays = iter(arrays)

    def copyto(self, ctx):
        return next(self._arrays)


class _Placement:
    """One conversion's arrays placed into Parameters: ``install`` each, then ``finish``
    marks every gradient for autograd in one ``autograd.mark_variables`` call."""

    def __init__(self):
        self._reader = ndarray_c_api.reader()
        # What finish() marks: data arrays, their gradients, the grad_req of each.
        self._variables, self._gradients, self._reqs = [], [], []
        self._made = {}  # ids of contexts -> (_ctx_list, _ctx_map) as _init_impl made them
        # From 1.5 Parameter.dtype is a property whose setter casts the data; before, a plain
        # attribute.  Either way only the record is wanted here: the arrays already have it.
        self._dtype_field = "_dtype" if facts.since(facts.PARAMETER_DTYPE_PROPERTY) else "dtype"

    def install(self, param, arrays, contexts=None, grads=None):
        """Make ``arrays`` (one per context) the data of ``param`` as Gluon's own
        ``_init_impl`` does, without copying.  Gradient buffers are reused when given, else
        allocated unfilled (``ndarray_c_api``)."""
        self.install_all(((param, arrays, contexts, grads),))

    def install_all(self, items):
        """``install(param, arrays, contexts, grads)`` for each of ``items``, what each
        install needs looked up once (a conversion installs every parameter: ResNet-50 320).

        The first parameter on some contexts goes through Gluon's own ``_init_impl``; the
        others get the context list and map it made (the same for equal contexts; Gluon only
        reads the map, and hands the list out in ``list_ctx``, so each parameter gets its own
        list) and their arrays: ``_init_impl`` sets nothing else, the same in 1.3.1 ...
        1.9.1, and its call costs six times setting them (1.0 against 0.16 us a parameter,
        measured on MXNet 1.9.1)."""
        reader = self._reader
        read, unallocated = reader.read, reader.unallocated
        dtype_field, made = self._dtype_field, self._made
        variables, gradients, reqs = self._variables, self._gradients, self._reqs
        for param, arrays, contexts, grads in items:
            shape, dtype, first_ctx = read(arrays[0])
            if contexts is None:
                contexts = [first_ctx] if len(arrays) == 1 else reader.contexts(arrays)
            param._shape = shape
            setattr(param, dtype_field, dtype)
            req = param._grad_req  # what the grad_req property reads
            # Gluon's own gradients (zeros) where they are needed: 'add' accumulates into
            # them, and a sparse gradient needs its stype.  Else mxcompat's (reused, or
            # unfilled).
            own_grads = req != "null" and (
                grads is not None
                or (req == "write" and getattr(param, "_grad_stype", "default") == "default")
            )
            if not own_grads and req != "null":
                param._init_impl(_Placed(arrays), contexts)  # with Gluon's own gradients
            else:
                # By identity (Context hashes in Python): equal contexts that are other
                # objects only cost another _init_impl.  The fields kept hold the contexts.
                key = id(contexts[0]) if len(contexts) == 1 else tuple(map(id, contexts))
                fields = made.get(key)
                if fields is None:
                    made[key] = _init_without_grads(param, arrays, contexts)
                else:
                    param._ctx_list = list(fields[0])
                    param._ctx_map = fields[1]
                    param._data = list(arrays)
                    param._grad = None
            param._deferred_init = ()
            if own_grads:
                if grads is None:
                    grads = [unallocated(shape, dtype, c) for c in contexts]
                else:
                    grads = list(grads)
                param._grad = grads
                variables.extend(param._data)
                gradients.extend(grads)
                reqs.extend([req] * len(grads))

    def finish(self):
        """One ``autograd.mark_variables`` call for every gradient installed."""
        if not self._variables:
            return
        variables, gradients, reqs = self._variables, self._gradients, self._reqs
        self._variables, self._gradients, self._reqs = [], [], []
        if len(set(reqs)) == 1:  # one name for all: MXNet maps it once, not per array
            reqs = reqs[0]
        import_mxnet().autograd.mark_variables(variables, gradients, reqs)


def _init_without_grads(param, arrays, contexts):
    """``param._init_impl`` with ``arrays`` on ``contexts``, its gradients left cleared;
    ``(_ctx_list, _ctx_map)`` as it made them."""
    # _init_impl ends with _init_grad, which for grad_req 'null' only clears the gradients:
    # the private field says 'null' for the call (the grad_req property's setter would
    # detach the data or allocate).
    req = param._grad_req
    param._grad_req = "null"
    try:
        param._init_impl(_Placed(arrays), contexts)  # it makes its own list of them
    finally:
        param._grad_req = req
    return list(param._ctx_list), param._ctx_map


def _reset_trainer_kvstore(param):
    # Parameter.set_data does the same: a kvstore that updates holds its own copy.
    trainer = getattr(param, "_trainer", None)
    if (
        trainer is not None
        and getattr(trainer, "_kv_initialized", False)
        and getattr(trainer, "_update_on_kvstore", False)
    ):
        trainer._reset_kvstore()


def _grads_fit(param, arrays):
    grads = param._grad
    if not grads or len(grads) != len(arrays):
        return None
    for g, a in zip(grads, arrays):
        if g.shape != a.shape or g.context != a.context or g.dtype != a.dtype:
            return None
    return grads
