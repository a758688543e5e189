"""The rule of ``mxcompat scan`` for threads: ``autograd.record()`` in code that threads run.

A thread runs a function handed to ``threading.Thread(target=...)``, to a thread pool
(``concurrent.futures.ThreadPoolExecutor``'s ``submit``/``map``,
``multiprocessing.pool.ThreadPool`` or ``multiprocessing.dummy.Pool``), the ``run`` method
of a ``threading.Thread`` subclass, and the ``forward_backward`` method of a GluonNLP or
GluonCV ``Parallelizable`` (their ``Parallel`` runs it in threads); and whatever function of
the same file those call by name.  Process pools are left alone: processes are the way out.
The whole file is read once, at its module node (a function may be defined after the line
that starts it), and only where it names both ``record`` and a thread or pool.
"""

import libcst as cst

from .base import Finding, dotted, keyword, rule

_THREAD = "threading.Thread"
_EXECUTORS = (
    "concurrent.futures.ThreadPoolExecutor",
    "concurrent.futures.thread.ThreadPoolExecutor",
)
_THREAD_POOLS = ("multiprocessing.pool.ThreadPool", "multiprocessing.dummy.Pool")
# The methods of each pool that run their first argument in the pool's threads.
_EXECUTOR_METHODS = ("submit", "map")
_POOL_METHODS = (
    "apply",
    "apply_async",
    "map",
    "map_async",
    "imap",
    "imap_unordered",
    "starmap",
    "starmap_async",
)
# GluonNLP's and GluonCV's base class, as their users import it and as their own modules do.
_PARALLELIZABLE = ("utils.Parallelizable", "utils.parallel.Parallelizable")
# A file that names none of these hands nothing to a thread.
_THREAD_WORDS = (b"Thread", b"Pool", b"Parallelizable")
_PARTIAL = "functools.partial"
_RECORD = "mxnet.autograd.record"


class _Function:
    def __init__(self, node, cls):
        self.node = node
        self.cls = cls  # the ClassDef it is a method of, or None
        self.records = []  # its own autograd.record() calls
        self.calls = []  # the functions it calls: ("name", f) or ("self", m)


class _Index(cst.CSTVisitor):
    """One walk over a file: its imports, functions, classes, pools, and thread hand-offs."""

    def __init__(self):
        super().__init__()
        self.aliases = {}  # local name -> the dotted name it was imported as
        self.functions = []
        self.classes = []  # (ClassDef, qualified base names)
        self.handoffs = []  # (the call that hands a function over, its function argument, class)
        self.pools = [{}]  # per scope: name -> "executor" | "pool" (self.X: per class, below)
        self.class_pools = {}  # (ClassDef, attr) -> kind
        self._functions = []  # the stack of _Function being walked
        self._classes = []
        self._calls = []

    # -- names ---------------------------------------------------------------------------

    def qualified(self, node):
        name = dotted(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        if head in self.aliases:
            head = self.aliases[head]
        return head + ("." + rest if rest else "")

    def visit_Import(self, node):
        for alias in node.names:
            name = dotted(alias.name)
            if alias.asname is not None:
                self.aliases[alias.asname.name.value] = name
            else:
                head = name.split(".")[0]
                self.aliases[head] = head

    def visit_ImportFrom(self, node):
        if isinstance(node.names, cst.ImportStar):
            return
        # A relative import keeps its dots: `from ..utils import Parallelizable` inside
        # GluonNLP itself is "..utils.Parallelizable".
        module = "." * len(node.relative) + (dotted(node.module) if node.module else "")
        for alias in node.names:
            name = dotted(alias.name)
            local = alias.asname.name.value if alias.asname is not None else name
            self.aliases[local] = "%s%s%s" % (module, "" if module.endswith(".") else ".", name)

    # -- scopes ---------------------------------------------------------------------------

    def visit_ClassDef(self, node):
        self.classes.append((node, [self.qualified(b.value) for b in node.bases]))
        self._classes.append(node)
        self.pools.append({})

    def leave_ClassDef(self, node):
        self._classes.pop()
        self.pools.pop()

    def visit_FunctionDef(self, node):
        # A method is a function defined right in a class's body.
        cls = self._classes[-1] if self._classes and self._direct_member(node) else None
        function = _Function(node, cls)
        self.functions.append(function)
        self._functions.append(function)
        self.pools.append({})

    def leave_FunctionDef(self, node):
        self._functions.pop()
        self.pools.pop()

    def _direct_member(self, node):
        return any(node is item for item in self._classes[-1].body.body)

    def visit_Lambda(self, node):
        self.pools.append({})

    def leave_Lambda(self, node):
        self.pools.pop()

    # -- pools and calls --------------------------------------------------------------------

    def _pool_kind(self, node):
        """'executor' or 'pool' for a thread pool made by ``node`` (a call), or a name or
        ``self.X`` bound to one, else None."""
        if isinstance(node, cst.Call):
            made = self.qualified(node.func)
            if made in _EXECUTORS:
                return "executor"
            if made in _THREAD_POOLS:
                return "pool"
            return None
        if isinstance(node, cst.Name):
            for scope in reversed(self.pools):
                if node.value in scope:
                    return scope[node.value]
            return None
        if isinstance(node, cst.Attribute) and dotted(node.value) == "self" and self._classes:
            return self.class_pools.get((self._classes[-1], node.attr.value))
        return None

    def _bind(self, target, value):
        kind = self._pool_kind(value)
        if isinstance(target, cst.Name):
            self.pools[-1][target.value] = kind
        elif isinstance(target, cst.Attribute) and dotted(target.value) == "self" and self._classes:
            self.class_pools[(self._classes[-1], target.attr.value)] = kind

    def visit_Assign(self, node):
        for target in node.targets:
            self._bind(target.target, node.value)

    def visit_WithItem(self, node):
        if node.asname is not None:
            self._bind(node.asname.name, node.item)

    def visit_Call(self, node):
        func = self.qualified(node.func)
        cls = self._classes[-1] if self._classes else None
        if func == _RECORD or (func or "").endswith("autograd.record"):
            if self._functions:
                self._functions[-1].records.append(node)
            return
        if self._functions:
            if isinstance(node.func, cst.Name):
                self._functions[-1].calls.append(("name", node.func.value))
            elif isinstance(node.func, cst.Attribute) and dotted(node.func.value) == "self":
                self._functions[-1].calls.append(("self", node.func.attr.value))
        if func == _THREAD:
            target = keyword(node, "target")
            if target is None and len(node.args) > 1 and node.args[1].keyword is None:
                target = node.args[1]  # Thread(group, target, ...)
            if target is not None:
                self.handoffs.append((node, target.value, cls))
            return
        if not (isinstance(node.func, cst.Attribute) and node.args):
            return
        if node.args[0].keyword is not None:
            return
        kind = self._pool_kind(node.func.value)
        methods = {"executor": _EXECUTOR_METHODS, "pool": _POOL_METHODS}.get(kind, ())
        if node.func.attr.value in methods:
            self.handoffs.append((node, node.args[0].value, cls))


def _resolve(index, node, cls):
    """The functions of the file that ``node`` (a function argument) names."""
    if isinstance(node, cst.Call) and index.qualified(node.func) == _PARTIAL and node.args:
        return _resolve(index, node.args[0].value, cls)
    if isinstance(node, cst.Lambda) and isinstance(node.body, cst.Call):
        return _resolve(index, node.body.func, cls)
    if isinstance(node, cst.Name):
        return [f for f in index.functions if f.cls is None and f.node.name.value == node.value]
    if isinstance(node, cst.Attribute):
        receiver = dotted(node.value)
        return [
            f
            for f in index.functions
            if f.cls is not None
            and f.node.name.value == node.attr.value
            and (receiver != "self" or f.cls is cls)
        ]
    return []


def _entries(index, ctx):
    """(function, what runs it in threads) for every thread entry point of the file."""
    for call, argument, cls in index.handoffs:
        for function in _resolve(index, argument, cls):
            yield function, "%s(...)" % ctx.code(call.func)
    for node, bases in index.classes:
        for base in bases:
            if base == _THREAD:
                method, runner = "run", "the Thread subclass %s" % node.name.value
            elif base is not None and base.endswith(_PARALLELIZABLE):
                method, runner = "forward_backward", "Parallel (GluonNLP, GluonCV)"
            else:
                continue
            for function in index.functions:
                if function.cls is node and function.node.name.value == method:
                    yield function, runner


def _recording(index, function, seen):
    """(call, the function that makes it) for each autograd.record() call ``function`` makes,
    itself or through the functions of the file it calls."""
    if function in seen:
        return []
    seen.add(function)
    found = [(call, function) for call in function.records]
    for kind, name in function.calls:
        for callee in index.functions:
            if callee.node.name.value != name:
                continue
            if (kind == "name" and callee.cls is None) or (
                kind == "self" and callee.cls is function.cls
            ):
                found.extend(_recording(index, callee, seen))
    return found


@rule(
    "MXC012",
    "autograd-record-in-threads",
    cst.Module,
    trap=("autograd_threads", "threads record autograd"),
    summary="autograd.record() in a function that threads or a thread pool run",
)
def _record_in_threads(node, ctx):
    # A second walk of the tree costs as much as the scan itself: only where both can be.
    if b"record" not in ctx.source or not any(word in ctx.source for word in _THREAD_WORDS):
        return
    index = _Index()
    node.visit(index)
    reported = set()
    for function, runner in _entries(index, ctx):
        for call, holder in _recording(index, function, set()):
            if call in reported:
                continue
            reported.add(call)
            where = "%s()," % holder.node.name.value
            if holder is not function:
                where = "%s(), called from %s()," % (
                    holder.node.name.value,
                    function.node.name.value,
                )
            yield Finding(
                "MXC012",
                "autograd.record() in %s which %s runs in threads: MXNet's autograd is not "
                "thread-safe on arrays the threads share (one model's parameters), and such "
                "runs fail at random on every 1.x release ('any container is empty (AGInfo)', "
                "heap corruption, segmentation faults; threads each on arrays of their own, "
                "such as per-device copies, do not race); mxcompat warns when it happens "
                "(patch autograd_threads) but cannot prevent it; fix: record in one thread, "
                "or use processes (one copy of the model each)" % (where, runner),
                call,
                None,
            )
