"""A kvstore server unpickles only an optimizer from what a worker sends (every release).

``KVStore.set_optimizer`` on a ``dist`` worker pickles the optimizer and sends it to every
server as command 0; the server's controller (``KVStoreServer._controller``) hands the bytes
to ``pickle.loads``, so whoever reaches a server's port runs code there.  The patch checks
the bytes first with an unpickler that admits MXNet's optimizer and learning-rate-scheduler
classes, NumPy's scalars and dtypes, plain data and the classes the user names in
``MXCOMPAT_KVSTORE_CLASSES`` (``module:Class``, comma-separated), and nothing else.  Refused,
the command is dropped with one error on logger ``mxcompat`` naming the class, and the server
serves on; admitted, MXNet's controller loads it as before.

A server or scheduler (``DMLC_ROLE`` other than ``worker``) serves inside ``import mxnet``,
which never returns there, so the registry never applies patches in it: the pre-import action
puts a wrapper on the ``create`` that MXNet's server module calls right after defining
``KVStoreServer`` (``facts.KVSTORE_PACKAGE``), and that wrapper puts the controller's wrapper
on.  In any other process the registry applies it as usual.  Patch name ``kvstore_server``.
"""

from __future__ import annotations

import copyreg
import importlib
import io
import logging
import os
import pickle
import sys

from .._core import hooks, settings, stacking
from .._core.log import logger
from .._core.registry import Patch, Target, record, register

PATCH = "kvstore_server"
DOC = (
    "A kvstore server unpickles only MXNet's optimizers and schedulers, NumPy scalars, plain "
    "data and the classes named in MXCOMPAT_KVSTORE_CLASSES from a worker; anything else is "
    "refused with one error, and the server serves on."
)

# The command id set_optimizer sends and the controller unpickles (every release).
OPTIMIZER_COMMAND = 0
# facts.KVSTORE_PACKAGE: where KVStoreServer lives, and the module its `create` comes from.
_SERVER_MODULES = ("mxnet.kvstore_server", "mxnet.kvstore.kvstore_server")
_CREATE_MODULES = ("mxnet.kvstore", "mxnet.kvstore.base")
_MXNET_BASES = (("mxnet.optimizer", "Optimizer"), ("mxnet.lr_scheduler", "LRScheduler"))
_PLAIN = {"set": set, "frozenset": frozenset, "complex": complex, "slice": slice}


class Refused(Exception):
    """What a worker sent names a class the server does not admit."""


class _Unpickler(pickle._Unpickler):
    # The pure-Python unpickler: find_class below is its only way to a callable.

    def __init__(self, data, admitted):
        super().__init__(io.BytesIO(data))
        self.admitted = admitted  # {(module, name)} the user names
        self.classes = set()  # the classes handed out, which _reconstructor may make

    def find_class(self, module, name):
        from ..formats.states_file import _bytearray, _encode, _numpy_globals

        found = None
        if module in ("builtins", "__builtin__"):
            found = _PLAIN.get(name) or {"bytearray": _bytearray, "object": object}.get(name)
        elif module == "collections" and name == "OrderedDict":
            found = super().find_class(module, name)
        elif module in ("copyreg", "copy_reg") and name == "_reconstructor":
            found = self._reconstructor
        elif module == "_codecs" and name == "encode":
            found = _encode
        elif module.split(".")[0] == "numpy":
            found = _numpy_globals().get(name)
        elif (module, name) in self.admitted:
            found = super().find_class(module, name)
            self.classes.add(found)
        elif module.split(".")[0] == "mxnet":
            found = _mxnet_class(module, name)
            self.classes.add(found)
        if found is None:
            raise Refused("%s.%s" % (module, name))
        return found

    def _reconstructor(self, cls, base, state):
        # What protocol 0 writes for an object: only of a class find_class handed out.
        if cls not in self.classes or base is not object or state is not None:
            raise Refused(
                "%s.%s" % (getattr(cls, "__module__", "?"), getattr(cls, "__name__", cls))
            )
        return copyreg._reconstructor(cls, base, state)


def _mxnet_class(module, name):
    # An optimizer or scheduler class of MXNet's optimizer or scheduler modules.  Those are
    # the only modules imported for a name a peer sends: a server serves inside `import
    # mxnet`, before mxnet/__init__ has imported lr_scheduler (as pickle.loads would).
    # 1.3: mxnet/optimizer.py; from 1.4 a package (optimizer, contrib).
    ours = module in ("mxnet.lr_scheduler", "mxnet.optimizer") or module.startswith(
        "mxnet.optimizer."
    )
    if "." in name or not ours:
        return None
    try:
        value = vars(importlib.import_module(module)).get(name)
    except ImportError:
        return None
    for base_module, base_name in _MXNET_BASES:
        base = getattr(importlib.import_module(base_module), base_name, None)
        if isinstance(value, type) and isinstance(base, type) and issubclass(value, base):
            return value
    return None


def _admitted():
    names = set()
    for item in settings.items(settings.KVSTORE_CLASSES):
        module, _, name = item.partition(":")
        names.add((module.strip(), name.strip()))
    return names


def check(data):
    """Unpickle ``data`` (the bytes of a set_optimizer command) with the admitted classes
    only; raises ``Refused`` naming the first other class."""
    _Unpickler(bytes(data), _admitted()).load()


def _log_refused(message):
    logger.error(message)
    if not logging.getLogger().handlers:
        # MXNet configures the server's logging at its first command: before that the error
        # would go nowhere (mxcompat's logger only holds a NullHandler).
        logging.lastResort.handle(
            logger.makeRecord(logger.name, logging.ERROR, "", 0, message, (), None)
        )


def _wrap_controller(wrapped, instance, args, kwargs):
    controller = wrapped(*args, **kwargs)

    def checked(cmd_id, cmd_body, *rest):
        if cmd_id == OPTIMIZER_COMMAND:
            try:
                check(cmd_body)
            except Refused as exc:
                record(PATCH)
                _log_refused(
                    "mxcompat refused the optimizer a worker sent to this kvstore server: its "
                    "pickle names %s, which is not an MXNet optimizer or scheduler class, "
                    "NumPy's scalar or dtype, plain data, or a class named in %s "
                    "(module:Class); nothing of it ran, and the server serves on with the "
                    "optimizer it had" % (exc, settings.KVSTORE_CLASSES)
                )
                return None
            except Exception as exc:  # a peer's bytes: any failure is a refusal
                record(PATCH)
                _log_refused(
                    "mxcompat refused the optimizer a worker sent to this kvstore server: it "
                    "is not a pickle of admitted classes (%s: %s); the server serves on with the "
                    "optimizer it had" % (type(exc).__name__, str(exc)[:200])
                )
                return None
        return controller(cmd_id, cmd_body, *rest)

    return checked


_CONTROLLER_TARGETS = [
    Target(module, "KVStoreServer._controller", _wrap_controller, optional=True)
    for module in _SERVER_MODULES
]


def _wrap_create(wrapped, instance, args, kwargs):
    # On a server node MXNet's server module calls create('dist') after defining
    # KVStoreServer and before serving: the one moment its controller can be wrapped.
    if not any(
        stacking.wrapped_by(stacking.raw_attribute(server.KVStoreServer, "_controller"), PATCH)
        for server in map(sys.modules.get, _SERVER_MODULES)
        if hasattr(server, "KVStoreServer")
    ):
        stacking.install(PATCH, _CONTROLLER_TARGETS)
    return wrapped(*args, **kwargs)


def _is_server():
    # MXNet's own test (KVStore::IsWorkerNode): a node is a worker unless DMLC_ROLE says else.
    return os.environ.get("DMLC_ROLE", "worker") != "worker"


def _before_import(version):
    if not _is_server():
        return
    import wrapt

    def wrap(module):
        if "create" in vars(module):
            wrapt.wrap_function_wrapper(module, "create", _wrap_create)

    for name in _CREATE_MODULES:
        # The one of them that is a module of its own on this release (1.3-1.6:
        # mxnet/kvstore.py; 1.7+: mxnet/kvstore/base.py, as the package finishes after the
        # server has served) is imported before the server module runs.
        hooks.when_imported(name, wrap)


register(Patch(PATCH, DOC, targets=_CONTROLLER_TARGETS, before_import=_before_import))
