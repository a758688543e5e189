"""``import mxnet`` without writing and compiling every operator's Python code again.

Every release writes Python source for each of its operators while ``import mxnet`` runs and
``exec``s it (``facts.OPERATORS_GENERATED_AT_IMPORT``): ``mxnet.base._init_op_module`` (and,
from 1.6, ``_init_np_op_module`` for the ``numpy``/``npx`` namespaces) calls
``make_op_func(handle, op_name, func_name)`` for each operator, MXNet's own
``_make_ndarray_function`` or ``_make_symbol_function``, which asks its module's
``_generate_ndarray_function_code`` / ``_generate_symbol_function_code`` for the source and
the docstring (the operator's description read through the C API), ``exec``s the source and
names the function.  About 2,600 functions on 1.9.1, each compiled: more than half of the
import.  The source is the same on every import of the same ``libmxnet.so``, except one
number: the operator's handle, an address of this process written into the code as a
literal (its value a constant of the code, its length the columns of what follows it on its
line, which Python 3.11+ keeps with the code).

What the patch does: while ``mxnet.base``'s two functions run during ``import mxnet`` (wrapped
with wrapt, through the registry's ``stacking``), the generator of the ``make_op_func`` they
were given has a stand-in for the duration of the call (a plain function naming it in
``__wrapped__``, as ``stacking``'s proxies do: it is called once per operator): it hands
MXNet's own ``make_op_func`` a code object instead of the source, which MXNet's ``exec`` runs
as it would have run the source; MXNet names the function, sets its docstring and module, and
registers it, as always.  The code object comes from the cache (one stored for a handle of as
many digits, its handle literal replaced by this process's handle for that operator), or, where
the cache has none, from MXNet's own generator, compiled once as ``exec`` would have (same file
name ``<string>``, same ``__future__`` flags), and kept.  Once ``mxnet`` has imported, MXNet's
own ``_init_op_module`` and ``_init_np_op_module`` are back everywhere (``mxnet.base`` and the
modules that imported them by name), and the code objects of an import that missed any are
written to the cache (``store.py``) for the next one.

The cache is keyed by everything the generated code depends on (``_key``): the library
(real path, size, mtime and its GNU build ID, the linker's hash of its content, read at each
import; a library without one adds its inode and ctime), MXNet's version, the Python files
of MXNet that generate the code (size and mtime), Python's version and ``-O`` level,
mxcompat's version, and the list of operators the library registers.  Any doubt (no file,
another key, a file someone else could write, a damaged file, an entry that does not hold
exactly one literal equal to the handle it was made with) and that operator, or the whole
import, takes MXNet's own path: never an error, never another function.  Patch name
``operator_cache``; ``MXCOMPAT_DISABLE_PATCHES=operator_cache`` turns it off.
"""

from __future__ import annotations
import __future__

import functools
import os
import sys
import types

from ..._core import elf, facts, hooks
from ..._core.about import VERSION
from ..._core.log import logger, step_aside
from ..._core.registry import Patch, Target, is_wanted, register
from ..._core.stacking import install, restore
from . import store

PATCH = "operator_cache"

# The files of MXNet whose code writes the operators' source (relative to the package).
_SOURCES = (
    "base.py",
    "ndarray/register.py",
    "symbol/register.py",
    "ndarray_doc.py",
    "symbol_doc.py",
)
_FUTURE_FLAGS = functools.reduce(
    lambda mask, name: mask | getattr(__future__, name).compiler_flag,
    __future__.all_feature_names,
    0,
)

_session = None  # the import of mxnet in progress, or None
_last: dict = {}  # what the last one took from the cache (last_import)


def last_import():
    """What the last ``import mxnet`` of this process took from the cache: ``{"served": n,
    "made": n, "file": path}`` (``served``: functions whose code came from the file; ``made``:
    compiled from MXNet's source and written), or ``{}`` where the patch did not act."""
    return dict(_last)


_REPLACE = hasattr(types.CodeType, "replace")


def _with_consts(code, consts):
    if _REPLACE:
        return code.replace(co_consts=consts)
    # Python 3.7 has no CodeType.replace.
    return types.CodeType(
        code.co_argcount,
        code.co_kwonlyargcount,
        code.co_nlocals,
        code.co_stacksize,
        code.co_flags,
        code.co_code,
        consts,
        code.co_names,
        code.co_varnames,
        code.co_filename,
        code.co_name,
        code.co_firstlineno,
        code.co_lnotab,
        code.co_freevars,
        code.co_cellvars,
    )


def _place(code, number):
    """Where the int constant ``number`` lies in ``code``: ``(i, j)``, the index of the
    function's code among the module code's constants and of ``number`` among the
    function's; ``None`` unless it is there exactly once and nowhere else."""
    if code.co_consts.count(number):
        return None
    place = None
    for i, function in enumerate(code.co_consts):
        if type(function) is not types.CodeType:
            continue
        consts = function.co_consts
        times = consts.count(number)
        if times > 1 or (times and place) or _nested_holds(consts, number):
            return None
        if times:
            j = consts.index(number)
            if type(consts[j]) is not int:
                return None
            place = (i, j)
    return place


def _nested_holds(consts, number):
    # Whether a code object among consts holds number, at any depth (MXNet nests none).
    if types.CodeType not in set(map(type, consts)):
        return False
    return any(
        type(c) is types.CodeType
        and (c.co_consts.count(number) or _nested_holds(c.co_consts, number))
        for c in consts
    )


def _entry_key(section, op_name, func_name, number):
    # The handle's number of digits too: the code's positions table (Python 3.11+) holds the
    # column of every token after the number on its line.  The handles of one process have
    # the same length as a rule (one heap), but not always those of the next one.
    return section, op_name, func_name, len(str(number))


def _rebind(code, place, number):
    """``code`` with the constant at ``place`` (``_place``) replaced by ``number``."""
    i, j = place
    outer = list(code.co_consts)
    inner = list(outer[i].co_consts)
    inner[j] = number
    outer[i] = _with_consts(outer[i], tuple(inner))
    return _with_consts(code, tuple(outer))


def _usable(entry, func_name):
    """Whether a stored entry has the form this module writes: a module-level code object
    that defines ``func_name``, its docstring, the handle it was made with, and where that
    handle lies (``_place``)."""
    if not (type(entry) is tuple and len(entry) == 4):
        return False
    code, doc, number, place = entry
    if not (isinstance(code, types.CodeType) and type(doc) is str and type(number) is int):
        return False
    if not (type(place) is tuple and len(place) == 2 and func_name in code.co_names):
        return False
    i, j = place
    if not (type(i) is int and type(j) is int and 0 <= i < len(code.co_consts)):
        return False
    function = code.co_consts[i]
    return (
        isinstance(function, types.CodeType)
        and function.co_name == func_name
        and 0 <= j < len(function.co_consts)
        and type(function.co_consts[j]) is int
        and function.co_consts[j] == number
    )


class Session:
    """One ``import mxnet``: its key, the entries read from the cache and made meanwhile."""

    def __init__(self, base):
        library = os.path.realpath(base._LIB._name)
        names = _operator_names(base)
        self.library = os.fsencode(library)
        self.key = _key(base, library, names)
        # One file per length of this process's handles: where it varies from one process to
        # the next (a Python built without PIE: its heap, and the operators, at low
        # addresses), each length has its code, and an import reads only its own.
        digits = len(str(_handle(base, names[0]))) if names else 0
        tag = "%s-O%d-%d" % (_python_tag(), sys.flags.optimize, digits)
        self.path = store.path_for(library, tag)
        self.entries = store.read(self.path, self.library, self.key) or {}
        self.records = []  # the wrappers on mxnet.base's two functions
        self.served = 0
        self.made = 0

    def generate(self, section, flags, wrapped, args, kwargs):
        """MXNet's ``_generate_*_function_code(handle, op_name, func_name)``: the code (an
        object, which MXNet's ``exec`` runs as it runs the source) and the docstring."""
        if kwargs or len(args) != 3:
            return wrapped(*args, **kwargs)  # signature_only: MXNet's own
        try:
            served = self._serve(section, *args)
        except Exception:
            served = _failed("serve")
        if served is not None:
            return served
        source, doc = wrapped(*args, **kwargs)  # MXNet's own errors go on as they are
        try:
            return self._keep(section, flags, args, source, doc)
        except SyntaxError:
            return source, doc  # raised again by MXNet's exec, as without mxcompat
        except Exception:
            _failed("keep")
            return source, doc

    def _serve(self, section, handle, op_name, func_name):
        number = handle.value
        key = _entry_key(section, op_name, func_name, number)
        entry = self.entries.get(key)
        if entry is None:
            return None
        if not _usable(entry, func_name):
            del self.entries[key]  # made anew, and the file written again
            return None
        code = entry[0] if entry[2] == number else _rebind(entry[0], entry[3], number)
        self.served += 1
        return code, entry[1]

    def _keep(self, section, flags, args, source, doc):
        handle, op_name, func_name = args
        if type(source) is not str:
            return source, doc
        number = handle.value
        code = compile(source, "<string>", "exec", flags, True)
        place = _place(code, number)
        if type(doc) is str and place is not None:
            key = _entry_key(section, op_name, func_name, number)
            self.entries[key] = (code, doc, number, place)
            self.made += 1
        return code, doc

    def init_op_module(self, wrapped, instance, args, kwargs):
        """``mxnet.base._init_op_module`` / ``_init_np_op_module``: MXNet's own, with the
        generator of the ``make_op_func`` given served from the cache during the call."""
        make = kwargs.get("make_op_func", args[-1] if args else None)
        try:
            generator = _generator_of(make)
            if generator is not None:
                section = "%s.%s" % (make.__module__, make.__qualname__)
                flags = make.__code__.co_flags & _FUTURE_FLAGS
                stand_in = functools.partial(_stand_in, self, section, flags)
                served = install(PATCH, [Target(make.__module__, generator, proxy=stand_in)])
        except Exception:
            generator = _failed("wrap")
        if generator is None:
            return wrapped(*args, **kwargs)
        try:
            return wrapped(*args, **kwargs)
        finally:
            restore(served)

    def close(self):
        """MXNet's own functions back everywhere; the entries written if any were made."""
        # MXNet's modules import the two by name while mxnet imports (register.py,
        # library.py): those names get MXNet's own back too.
        for parent, attr, _, original, installed in self.records:
            for name, module in list(sys.modules.items()):
                namespace = getattr(module, "__dict__", {})
                if name.startswith("mxnet.") and module is not parent:
                    if namespace.get(attr) is installed:
                        setattr(module, attr, original)
        restore(self.records)
        self.records = []
        _last.update(served=self.served, made=self.made, file=self.path)
        logger.debug("operator cache: %d served, %d made (%s)", self.served, self.made, self.path)
        if self.made:
            try:
                store.write(self.path, self.library, self.key, self.entries)
            except Exception as error:
                # Only the next import's time depends on it.
                logger.debug("operator cache not written to %s: %s", self.path, error)


def _stand_in(session, section, flags, original):
    # A plain function, not a wrapt wrapper: MXNet calls it once per operator.
    @functools.wraps(original)
    def generate(*args, **kwargs):
        return session.generate(section, flags, original, args, kwargs)

    return generate


def _failed(step):
    # A bug of ours: warned once, and MXNet's own way for what is left of the import.
    step_aside(
        ("operator-cache", step),
        "mxcompat's operator cache failed ({error}); MXNet generates its operators itself",
    )
    return None


def _python_tag():
    return getattr(sys.implementation, "cache_tag", None) or "python"


def _stat(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def _operator_names(base):
    import ctypes

    names = ctypes.POINTER(ctypes.c_char_p)()
    size = ctypes.c_uint()
    base.check_call(base._LIB.MXListAllOpNames(ctypes.byref(size), ctypes.byref(names)))
    return [names[i].decode("utf-8", "replace") for i in range(size.value)]


def _handle(base, name):
    import ctypes

    handle = ctypes.c_void_p()
    base.check_call(base._LIB.NNGetOpHandle(name.encode("utf-8"), ctypes.byref(handle)))
    return handle.value or 0


def _key(base, library, names):
    """What the generated code depends on, as bytes (``store.read`` compares them)."""
    import hashlib

    st = os.stat(library)
    try:
        build_id = elf.build_id(library)
    except ValueError:
        build_id = None  # not an ELF file this reader reads (macOS): the inode and ctime
    package = os.path.dirname(os.path.abspath(base.__file__))
    libinfo = sys.modules.get("mxnet.libinfo")
    operators = hashlib.sha256("\n".join(names).encode()).hexdigest()
    key = (
        ("library", library, st.st_size, st.st_mtime_ns, build_id)
        + (() if build_id else (st.st_ino, st.st_ctime_ns)),
        ("mxnet", getattr(libinfo, "__version__", None)),
        ("sources",) + tuple((name, _stat(os.path.join(package, name))) for name in _SOURCES),
        ("python", sys.version, _python_tag(), sys.flags.optimize),
        ("mxcompat", VERSION),
        ("operators", operators),
    )
    return repr(key).encode()


def _generator_of(make):
    """The name of ``make``'s generator in its module (``_generate_ndarray_function_code``), or
    ``None`` where ``make`` is not the function every release has (a generator by name, then
    ``exec``)."""
    code = getattr(make, "__code__", None)
    module = sys.modules.get(getattr(make, "__module__", None) or "")
    if code is None or module is None or vars(module) is not getattr(make, "__globals__", None):
        return None
    names = [
        n
        for n in code.co_names
        if n.startswith("_generate_") and n.endswith("_function_code") and n in vars(module)
    ]
    return names[0] if len(names) == 1 and "exec" in code.co_names else None


def _on_base(base):
    global _session
    if _session is not None or not hasattr(base, "_init_op_module"):
        return
    _last.clear()
    if sys.flags.optimize >= 2 and not is_wanted("python_oo"):
        # Under -OO the operators' docstrings are built from the doc classes' that the
        # python_oo patch fills; without it MXNet fails to import, as it ships, and a file
        # written with it must not hide that.
        return
    try:
        session = Session(base)
    except Exception:
        logger.debug("operator cache off for this import", exc_info=True)
        return
    targets = [
        Target("mxnet.base", name, wrapper=session.init_op_module, optional=True)
        for name in ("_init_op_module", "_init_np_op_module")
    ]
    session.records = install(PATCH, targets)
    _session = session


def _on_mxnet(mx):
    global _session
    session, _session = _session, None
    if session is not None:
        session.close()


def _before_mxnet(version):
    hooks.when_imported("mxnet.base", _on_base)
    hooks.when_imported("mxnet", _on_mxnet)


register(
    Patch(
        PATCH,
        "import mxnet: the Python code MXNet writes and compiles for each operator at every "
        "import is cached (per libmxnet.so, MXNet, Python and mxcompat), then reused.",
        since=facts.OPERATORS_GENERATED_AT_IMPORT,
        before_import=_before_mxnet,
    )
)
