"""MXNet's DataLoader workers work when they are spawned (start method spawn or forkserver).

Under ``spawn`` or ``forkserver`` (chosen with ``multiprocessing.set_start_method``, or the
default from Python 3.14 where ``dataloader_start_method`` is off) each worker is a fresh
interpreter that unpickles what MXNet hands it.  Two traps follow, on every release and
every Python (``facts.DATALOADER_DEFAULT_START_METHOD``):

* The worker imports MXNet without mxcompat, unless the script imports mxcompat at its top
  (the child re-runs the main script first) or runs under ``mxcompat run`` (the child inherits
  the environment): under pytest, ``python -c``, or with mxcompat imported by a library,
  MXNet 1.6+ dies there on NumPy 2 (``np.PZERO was removed``).  With this patch the worker's
  target (1.3's and ``DataLoaderV1``'s ``Process``) or initializer (the ``Pool`` of 1.4+)
  travels inside a ``Bootstrap``, an object of this module: a pickle names a reduced object's
  class before its arguments, so the child imports mxcompat, and so hooks ``import mxnet``,
  before it unpickles anything of MXNet (a ``Process`` pickles its target before its args, a
  ``Pool`` worker's args hold the initializer before its arguments; read in Python 3.7, 3.11,
  3.13 and 3.14's ``multiprocessing``).
* MXNet's NDArray reducer (``reduce_ndarray``, ``reduce_np_ndarray`` 1.6+) copies the array to
  ``cpu_shared`` memory and hands over the copy's file descriptor, then drops the copy.  Sent
  through a queue that is fine (``resource_sharer`` duplicates the descriptor), but while a
  process is being spawned the ``Popen`` only records the descriptor and passes it when it
  starts the child, after pickling: by then the copy is freed and its descriptor closed or
  reused ("bad value(s) in fds_to_keep", "Failed to map shared memory", "Bad file
  descriptor", a wrong array, or the worker never answering until MXNet's 120 s timeout).
  With this patch, while a process is being spawned (``get_spawning_popen()``), the copy is
  kept with that ``Popen``: alive as long as the process object, the child's own mapping of
  the same memory outlives it; nothing else is kept.

Under ``fork`` nothing is pickled and nothing changes.  A ``transform`` lambda or an
unpicklable dataset still cannot be sent to a spawned worker: pickle's own error, in the
parent, as before.  Linux only (macOS and Windows hand shared memory over by name).
"""

from __future__ import annotations

import atexit
import sys
import threading
import weakref

import wrapt

from .._core import facts
from .._core.registry import Patch, Target, record, register

PATCH = "dataloader_spawn"
DOC = (
    "DataLoader workers started with spawn or forkserver import mxcompat before MXNet and get "
    "NDArray datasets whose shared memory is still there."
)

_MODULE = "mxnet.gluon.data.dataloader"


class Bootstrap:
    """A worker's target or initializer, as it travels to a spawned child: unpickling this
    imports mxcompat before the function it carries (and so before MXNet)."""

    __slots__ = ("function",)

    def __init__(self, function):
        self.function = function

    def __call__(self, *args, **kwargs):
        return self.function(*args, **kwargs)

    def __reduce__(self):
        return (_unpickled, (self.function,))

    def __repr__(self):
        return "<mxcompat Bootstrap of %r>" % (self.function,)


def _unpickled(function):
    """A ``Bootstrap`` arriving in a spawned worker (this module was imported for it, before
    MXNet).  At the worker's exit its MXNet arrays are released while MXNet can free them."""
    if not _worker_release_registered:
        _worker_release_registered.append(True)
        atexit.register(_release_worker_arrays)
    return Bootstrap(function)


_worker_release_registered: list[bool] = []


def _release_worker_arrays():
    # A spawned worker ends with the interpreter's full finalization (a forked one with
    # os._exit): the dataset it was handed (MXNet's `_worker_dataset` global, the worker's
    # process arguments) would be freed after MXNet's library is gone, one "Exception ignored
    # in NDArrayBase.__del__" per array (seen on Python 3.13).  Registered after MXNet's own
    # exit handler, this runs before it.
    import gc
    import multiprocessing

    module = sys.modules.get(_MODULE)
    if module is not None and getattr(module, "_worker_dataset", None) is not None:
        module._worker_dataset = None
    process = multiprocessing.current_process()
    if hasattr(process, "_args"):
        process._args = ()
        process._kwargs = {}
    gc.collect()


def _carried(args, kwargs, index, name):
    """``args``/``kwargs`` of a call with its ``name`` argument (positional ``index``), when
    given, in a ``Bootstrap``."""
    if len(args) > index:
        if args[index] is not None:
            args = args[:index] + (Bootstrap(args[index]),) + args[index + 1 :]
    elif kwargs.get(name) is not None:
        kwargs = dict(kwargs)
        kwargs[name] = Bootstrap(kwargs[name])
    return args, kwargs


class SpawnReady(wrapt.ObjectProxy):
    """MXNet's dataloader module's ``multiprocessing``: its ``Process`` target and ``Pool``
    initializer travel in a ``Bootstrap``; everything else is the wrapped module's."""

    def Process(self, *args, **kwargs):  # noqa: N802  (the name MXNet calls)
        args, kwargs = _carried(args, kwargs, 1, "target")
        return Started(self.__wrapped__.Process(*args, **kwargs))

    def Pool(self, *args, **kwargs):  # noqa: N802
        args, kwargs = _carried(args, kwargs, 1, "initializer")
        pool = self.__wrapped__.Pool(*args, **kwargs)
        release_launched()  # every worker has been started
        return pool


class Started(wrapt.ObjectProxy):
    """A worker process of MXNet's (1.3, ``DataLoaderV1``) whose ``start()`` lets go of the
    shared-memory copies its child has been handed."""

    def start(self):
        try:
            return self.__wrapped__.start()
        finally:
            release_launched()


# Spawning Popen -> the cpu_shared copies whose descriptors it passes to its child: from
# the pickling of the process to the end of its launch, when the child holds its own
# descriptors (release_launched, after every start; weak keys: a launch that failed goes
# with its Popen).
_kept: weakref.WeakKeyDictionary[object, list] = weakref.WeakKeyDictionary()
_kept_lock = threading.Lock()
_release_registered: list[bool] = []


def release_launched():
    """Let go of the copies of every process whose launch has handed its descriptors over:
    its Popen has a ``sentinel`` from then on (spawn and forkserver, Python 3.7-3.14)."""
    with _kept_lock:
        for popen in [p for p in _kept.keys() if getattr(p, "sentinel", None) is not None]:
            del _kept[popen]


def _release_all():
    # At exit, while MXNet can still free arrays (this runs before MXNet's own exit handler,
    # registered earlier): copies of a launch no release followed (a worker the Pool's own
    # thread replaced) would otherwise go after MXNet's library ("Exception ignored in
    # NDArrayBase.__del__").
    with _kept_lock:
        _kept.clear()


class KeepShared:
    """MXNet's reducer of one array class, keeping the ``cpu_shared`` copy it hands over alive
    with the ``Popen`` being spawned, if any."""

    def __init__(self, reducer):
        self.__wrapped__ = reducer

    def __call__(self, data):
        from multiprocessing.context import get_spawning_popen

        popen = get_spawning_popen()
        if popen is None:
            return self.__wrapped__(data)
        release_launched()
        context = sys.modules["mxnet"].context
        # MXNet's reducer copies to cpu_shared unless the array is there already; so its
        # copy is this one, which stays referenced here.
        shared = data.as_in_context(context.Context("cpu_shared", 0))
        reduced = self.__wrapped__(shared)
        with _kept_lock:
            _kept.setdefault(popen, []).append(shared)
            if not _release_registered:
                _release_registered.append(True)
                atexit.register(_release_all)
        record(PATCH)
        return reduced


def _reducers():
    """(array class, MXNet's reducer name) of the imported release."""
    pairs = [(sys.modules["mxnet"].nd.NDArray, "reduce_ndarray")]
    mx_np = getattr(sys.modules["mxnet"], "numpy", None)
    if hasattr(sys.modules[_MODULE], "reduce_np_ndarray") and mx_np is not None:
        pairs.append((mx_np.ndarray, "reduce_np_ndarray"))
    return pairs


_replaced: dict = {}  # array class -> MXNet's reducer, while ours stands in ForkingPickler's table


def _table():
    from multiprocessing.reduction import ForkingPickler

    table = getattr(ForkingPickler, "_extra_reducers", None)
    if not isinstance(table, dict):
        raise RuntimeError("multiprocessing's ForkingPickler keeps no table of reducers here")
    return ForkingPickler, table


def _install():
    pickler, table = _table()
    module = sys.modules[_MODULE]
    for cls, name in _reducers():
        original = getattr(module, name)
        # Only MXNet's own reducer: one someone else registered is theirs.
        if table.get(cls) is original:
            pickler.register(cls, KeepShared(original))
            _replaced[cls] = original


def _uninstall():
    pickler, table = _table()
    for cls, original in list(_replaced.items()):
        ours = table.get(cls)
        if isinstance(ours, KeepShared) and ours.__wrapped__ is original:
            pickler.register(cls, original)
        del _replaced[cls]


def linux():
    """Whether this is Linux, where MXNet hands shared memory to its workers as file
    descriptors."""
    return sys.platform.startswith("linux")


register(
    Patch(
        PATCH,
        DOC,
        since=facts.DATALOADER_DEFAULT_START_METHOD,
        when=linux,
        targets=[Target(_MODULE, "multiprocessing", proxy=SpawnReady)],
        on_apply=_install,
        on_remove=_uninstall,
    )
)
