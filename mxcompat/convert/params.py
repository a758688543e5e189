"""Gluon ``Parameter`` internals: arrays placed into a Parameter as its data without a copy.

Gluon has no public way to make existing NDArrays a Parameter's data (``set_data`` copies,
``initialize`` allocates), so both directions go through ``Parameter._init_impl`` (the same in
MXNet 1.3.1 ... 1.9.1) with arrays already where they belong.
"""

from .._core import facts
from . import ndarray_c_api
from ._common import _mx


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
        self._marks = []
        # From 1.5 Parameter.dtype is a property whose setter casts the data; before, a plain
        # attribute.  Either way only the record is wanted here: the arrays already have it.
        self._dtype_field = "_dtype" if facts.since(facts.PARAMETER_DTYPE_PROPERTY) else "dtype"

    def install(self, param, arrays, contexts=None, grads=None):
        """Make ``arrays`` (one per context) the data of ``param`` through Gluon's own
        ``_init_impl``, without copying.  Gradient buffers are reused when given, else
        allocated unfilled (``ndarray_c_api``)."""
        reader = self._reader
        shape, dtype, first_ctx = reader.read(arrays[0])
        if contexts is None:
            contexts = [first_ctx] if len(arrays) == 1 else reader.contexts(arrays)
        param._shape = shape
        setattr(param, self._dtype_field, dtype)
        req = param.grad_req
        # Gluon's own gradients (zeros) where they are needed: 'add' accumulates into them,
        # and a sparse gradient needs its stype.  Else mxcompat's (reused, or unfilled).
        own_grads = req != "null" and (
            grads is not None
            or (req == "write" and getattr(param, "_grad_stype", "default") == "default")
        )
        # _init_impl ends with _init_grad, which for grad_req 'null' only clears the
        # gradients: with mxcompat's own to come, the private field says 'null' for the call
        # (the grad_req property's setter would detach the data or allocate).
        if own_grads:
            param._grad_req = "null"
        try:
            param._init_impl(_Placed(arrays), contexts)  # it makes its own list of them
        finally:
            if own_grads:
                param._grad_req = req
        param._deferred_init = ()
        if not own_grads:
            return
        param._grad = (
            [reader.unallocated(shape, dtype, c) for c in contexts]
            if grads is None
            else list(grads)
        )
        self._marks.append((param._data, param._grad, req))

    def finish(self):
        """One ``autograd.mark_variables`` call for every gradient installed."""
        if not self._marks:
            return
        variables, gradients, reqs = [], [], []
        for arrays, grads, req in self._marks:
            variables.extend(arrays)
            gradients.extend(grads)
            reqs.extend([req] * len(arrays))
        self._marks = []
        if len(set(reqs)) == 1:  # one name for all: MXNet maps it once, not per array
            reqs = reqs[0]
        _mx().autograd.mark_variables(variables, gradients, reqs)


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
