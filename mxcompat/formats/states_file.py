"""The optimizer states file (``Module.save_optimizer_states``, ``Trainer.save_states``) read
without MXNet: a pickle of the Updater's states dict, or of ``(states, optimizer)`` when the
optimizer was dumped with them (a Trainer's always).  Its NDArrays pickle as their bytes in
MXNet's per-array layout (``checkpoint.read_ndarray``); the optimizer and its scheduler as
their attributes.  The Unpickler maps MXNet's classes to records and refuses every other
class but plain data's: reading a file runs nothing of MXNet's, or anyone's."""

from __future__ import annotations

import importlib
import io
import pickle

import numpy as np

from .ndarray_file import _error, read_ndarray


class Record:
    """An object of one of MXNet's classes, as the pickle holds it: ``module`` and ``name`` of
    its class, the ``args`` it was made with and its ``state`` (its ``__dict__``, or for an
    NDArray ``{"handle": its bytes}``)."""

    module = name = ""

    def __new__(cls, *args, **kwargs):
        self = object.__new__(cls)
        self.args, self.state = args, None
        return self

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        self.state = state

    def __repr__(self):
        return "Record(%s.%s)" % (self.module, self.name)


def _record_class(module, name):
    return type(name, (Record,), {"module": module, "name": name})


def _bytearray(*args):
    # Only from bytes (what pickle writes): bytearray(10**12) would allocate.
    if not args or isinstance(args[0], int):
        raise pickle.UnpicklingError("bytearray from a number")
    return bytearray(*args)


def _numpy_globals():
    # NumPy's scalars and dtypes (an optimizer's setting may be one), not its arrays: an
    # array's pickle names its own shape, which a corrupted file would make any size.
    try:
        multiarray = importlib.import_module("numpy._core.multiarray")
    except ImportError:  # NumPy 1.x
        multiarray = importlib.import_module("numpy.core.multiarray")
    found = {"dtype": np.dtype, "scalar": multiarray.scalar}
    # A Parameter's dtype given as NumPy's class (dtype=numpy.float32), which MXNet 1.0-1.2
    # pickle with the optimizer's parameter dictionary: read as the dtype it names, never the
    # class (calling it would build an array).
    found.update((name, np.dtype(name.rstrip("_"))) for name in SCALAR_TYPES)
    return found


SCALAR_TYPES = (
    "float16",
    "float32",
    "float64",
    "uint8",
    "int8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "bool_",  # NumPy 1's name of the class; NumPy 2's is bool
    "bool",
)


_BUILTINS = {"set": set, "frozenset": frozenset, "complex": complex, "slice": slice}


NDARRAY_CLASSES = ("NDArray", "RowSparseNDArray", "CSRNDArray", "ndarray")


class _Unpickler(pickle._Unpickler):
    # The pure-Python unpickler: its memo is a dict (the C one's is an array a corrupted
    # index would grow), and find_class below is the only way to a callable.

    def __init__(self, data):
        self.stream = io.BytesIO(data)
        super().__init__(self.stream)
        self.numpy = _numpy_globals()

    def find_class(self, module, name):
        if module == "mxnet" or module.startswith("mxnet."):
            return _record_class(module, name)
        if module in ("builtins", "__builtin__") and name in _BUILTINS:
            return _BUILTINS[name]
        if module in ("builtins", "__builtin__") and name == "bytearray":
            return _bytearray
        if module == "collections" and name == "OrderedDict":
            return dict
        if module == "copyreg" and name == "_reconstructor":
            return _reconstructor
        if module == "_codecs" and name == "encode":
            return _encode
        if module.split(".")[0] == "numpy" and name in self.numpy:
            return self.numpy[name]
        raise _Refused("%s.%s" % (module, name))


class _Refused(Exception):
    pass


def _reconstructor(cls, base, state):
    if not (isinstance(cls, type) and issubclass(cls, Record)):
        raise pickle.UnpicklingError("not an MXNet object")
    return cls()


def _encode(text, encoding="utf-8"):
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1", "utf-8"):
        raise pickle.UnpicklingError("not a string")
    return text.encode(encoding)


def _plain(value, where, done=None):
    """The unpickled value with every NDArray as a numpy array (None for an empty one).
    ``done``: what is converted already, by id (a pickle shares objects: a chain of lists
    each holding the next twice would otherwise take 2**depth steps)."""
    done = {} if done is None else done
    if id(value) in done:
        return done[id(value)]
    if isinstance(value, Record):
        if value.name in NDARRAY_CLASSES:
            out = _ndarray(value.state, where)
        else:
            state = {} if value.state is None else _plain(value.state, where, done)
            out = OptimizerRecord(value.module, value.name, state)
    elif isinstance(value, dict):
        out = {_plain(k, where, done): _plain(v, where, done) for k, v in value.items()}
    elif isinstance(value, list):
        out = [_plain(v, where, done) for v in value]
    elif isinstance(value, tuple):
        out = tuple(_plain(v, where, done) for v in value)
    else:
        return value
    done[id(value)] = out
    return out


def _ndarray(state, where):
    # NDArray.__getstate__: {"handle": its bytes in the per-array layout, or None}.
    if not isinstance(state, dict) or "handle" not in state:
        raise _error(where, None, 'an NDArray\'s state {"handle": bytes}', type(state).__name__)
    raw = state["handle"]
    if raw is None:
        return None
    if not isinstance(raw, (bytes, bytearray)):
        raise _error(where, None, "an NDArray's bytes", type(raw).__name__)
    array, end = read_ndarray(bytes(raw), 0, where + " (an NDArray in the pickle)")
    if end != len(raw):
        raise _error(where, None, "an NDArray's bytes, no more", "%d more" % (len(raw) - end))
    return array


class OptimizerRecord:
    """An object of MXNet's classes other than the NDArray (an optimizer, a scheduler) as
    plain values: its class (``module``, ``name``) and its attributes (``attrs``)."""

    def __init__(self, module, name, attrs):
        self.module, self.name = module, name
        self.attrs = attrs if isinstance(attrs, dict) else {"state": attrs}

    def __repr__(self):
        return "OptimizerRecord(%s.%s)" % (self.module, self.name)


class States:
    """A states file: ``states`` ({index: value}: numpy arrays, tuples of them, None, as the
    Updater held them) and ``optimizer`` (an ``OptimizerRecord``, or None when the file holds
    the states alone: ``Module.save_optimizer_states``)."""

    def __init__(self, states, optimizer):
        self.states, self.optimizer = states, optimizer


def states_from_bytes(data, path):
    """``read_states`` for the bytes of a states file (``path``: for the messages)."""
    unpickler = _Unpickler(data)
    try:
        loaded = unpickler.load()
    except _Refused as exc:
        raise _error(
            path, unpickler.stream.tell(), "MXNet's classes and plain data", "the class %s" % exc
        ) from None
    except (Exception, RecursionError) as exc:
        raise _error(
            path,
            unpickler.stream.tell(),
            "a pickle of MXNet's optimizer states",
            "%s: %s" % (type(exc).__name__, str(exc)[:200]),
        ) from None
    if unpickler.stream.tell() != len(data):
        raise _error(path, unpickler.stream.tell(), "the end of the pickle", "more bytes")
    # The Updater's own test (set_states): a pair is (states, optimizer).
    if isinstance(loaded, tuple) and len(loaded) == 2:
        states, opt = loaded
    else:
        states, opt = loaded, None
    try:
        states, opt = _plain(states, path), _plain(opt, path)
    except RecursionError:
        raise _error(path, None, "states nested as MXNet writes them") from None
    except TypeError as exc:  # an NDArray inside a key: unhashable once an array
        raise _error(path, None, "the Updater's states as MXNet writes them", exc) from None
    if not isinstance(states, dict) or not (opt is None or isinstance(opt, OptimizerRecord)):
        raise _error(path, None, "the Updater's states (a dict), or (states, optimizer)")
    return States(states, opt)
