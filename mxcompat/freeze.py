"""A global frozen-parameter registry that every MXNet update path honours, bit for bit.

MXNet 1.x's only native way to keep a weight fixed is ``Module(..., fixed_param_names=...)``
at construction; zeroing its gradient is not enough (weight decay and momentum still move
it).  ``freeze`` registers names once, for every Module, BucketingModule, SequentialModule,
FeedForward and Gluon ``Trainer``::

    mxcompat.freeze("kw", "resnetv10_stage1_*", re.compile(r"fc\\d_bias"))
    mxcompat.unfreeze("kw")
    with mxcompat.frozen("fc1_*"):
        mod.fit(...)

Patterns.  A string is an exact parameter name or a shell-style glob (``fnmatch``: ``*``,
``?``, ``[seq]``, case-sensitive).  A compiled regex must match the *whole* name
(``re.fullmatch``; write ``.*conv.*`` for a substring), so a pattern never freezes more than
it says.  The registry is global and thread-safe, and it is read at every bind, update and
step, never cached at patch time.

Frozen before ``Module.bind`` (training binds only).  For that bind, the frozen names join the
module's ``fixed_param_names``, so MXNet gives them ``grad_req='null'``: no gradient buffer
and no weight gradient, the cost of native ``fixed_param_names``.  MXNet's own ``grad_req``
rules are then applied unchanged:

- ``grad_req`` a string: frozen parameters get ``'null'``, like fixed ones;
- a dict: MXNet gives fixed parameters ``'null'`` and then applies the user's dict, so a name
  the dict sets explicitly keeps the user's ``grad_req``;
- a list or tuple: MXNet ignores ``fixed_param_names``; the list decides.

In the last two cases a frozen parameter can still get a gradient buffer: the update skip
below keeps it frozen all the same.  One exception, because frozen means what the user froze
and nothing more: on the oneDNN (MKLDNN) builds from MXNet 1.7, FullyConnected's backward skips
the *bias* gradient when the weight's ``grad_req`` is ``'null'`` (``_compat.
ONEDNN_FC_NULL_WEIGHT_SKIPS_BIAS``), so on a Module with a CPU context a frozen FC weight whose
bias gets a gradient keeps its gradient buffer and is frozen by the update skip instead (the
rule is ``onednn_fc_bias.null_would_stop_bias``; a bias frozen too but given a gradient by a
``grad_req`` dict counts, so it trains correctly once unfrozen).  freeze does this whether or
not the ``onednn_fc_bias`` patch is active: that patch is about MXNet's own
``fixed_param_names``, whose plain-MXNet behaviour it can give back; the registry has no such
behaviour to give back, and stopping a bias nobody froze would be a silent wrong result.
(On MKLDNN builds this holds whatever ``MXNET_MKLDNN_ENABLED`` says: MXNet reads it once, and
the update skip is exact either way, at the cost of one weight gradient.)

Frozen after bind, or after ``init_optimizer``: ``model._update_params`` and
``_update_params_on_kvstore`` (patched in ``mxnet.model`` and in ``mxnet.module.module``, which
imports its own references) see the frozen entries' gradients as ``None``, which is MXNet's
own "fixed parameter" skip: the optimizer is never called for them (no weight decay, no
momentum, no optimizer state touched) and they are neither pushed to nor pulled from a
kvstore.  The lists keep their length, so the optimizer-state index MXNet derives from a
parameter's position (``index * num_device + device``) stays the same for every other one.
With a distributed kvstore every worker must freeze the same names (``dist_sync`` waits for
every worker's push of a key).

Unfrozen again, a parameter trains from the next update, unless it was frozen when its Module
was bound: MXNet then allocated no gradient for it, and one ``MXCompatWarning`` says how to
rebind.  A pattern that matches no parameter of a Module or Trainer that updates while the
registry is in use gets one ``MXCompatWarning`` naming it and the closest names.

``MXCOMPAT_FREEZE=kw,stage1_*`` (what ``mxcompat run --freeze`` sets) freezes those patterns
when mxcompat is imported; an invalid one is skipped with one ``MXCompatWarning``.

Gluon: ``Trainer.step``/``update``/``allreduce_grads`` skip every parameter whose
``Parameter.name`` is frozen, the same way (an update-time ``grad_req == 'null'`` view of the
parameter at its own index; the parameter's ``grad_req`` is not touched).  ``frozen_report`` counts frozen and trainable parameters and elements of a Module
or a Block, and prints like sockeye's parameter log.
"""
import contextlib
import difflib
import fnmatch
import inspect
import os
import pprint
import re
import threading
import weakref

from ._log import warn, warn_once
from .onednn_fc_bias import null_would_stop_bias, registry_bind
from . import _patching
from ._patching import Patch, Target, register
from ._util import bind_arguments

_PATTERN_TYPE = type(re.compile(""))


# --- the registry -----------------------------------------------------------------------------

class _Pattern(object):
    """One registered pattern: the user's object, an identity key, and a matcher."""

    __slots__ = ("source", "key", "_regex", "_exact")

    def __init__(self, source, caller):
        if isinstance(source, str):
            if not source.strip():
                raise ValueError("mxcompat.%s: an empty pattern (%r) names no parameter"
                                 % (caller, source))
            _check_glob(source, caller)
            self.key = ("glob", source)
            self._exact = source
            self._regex = re.compile(fnmatch.translate(source))
        elif isinstance(source, _PATTERN_TYPE):
            if not isinstance(source.pattern, str):
                raise TypeError("mxcompat.%s: %r is a bytes regex; parameter names are str, "
                                "compile a str pattern" % (caller, source))
            self.key = ("regex", source.pattern, source.flags)
            self._exact = None
            self._regex = source
        else:
            hint = ""
            if isinstance(source, (list, tuple, set, frozenset)):
                hint = "; to pass several, unpack them: %s(*names)" % caller
            raise TypeError("mxcompat.%s: a pattern is a parameter name, a shell-style glob or "
                            "a compiled regex (re.compile), not %r of type %s%s"
                            % (caller, source, type(source).__name__, hint))
        self.source = source

    def match(self, name):
        if self._exact is not None:
            # The glob's regex ends in \Z: match() anchors both ends.
            return name == self._exact or self._regex.match(name) is not None
        return self._regex.fullmatch(name) is not None

    def text(self):
        return self.source if self._exact is not None else self.source.pattern

    def __repr__(self):
        return repr(self.source)


# A glob read left to right as fnmatch reads it: a set ('[', then '!' and a first ']' if
# present, up to the next ']'), or a '[' no ']' closes (group 1), or a run of other
# characters.  The lookahead takes the "!]" prefix whole (re has no atomic groups before
# Python 3.11), so "[]" and "[!]" are unclosed here as they are for fnmatch.
_GLOB_PARTS = re.compile(r"\[(?=(!?\]?))\1[^\]]*\]|(\[)|[^\[]+")


def _check_glob(text, caller):
    # fnmatch reads an unclosed '[' as a literal; no parameter name has one, so it is a typo.
    for part in _GLOB_PARTS.finditer(text):
        if part.group(2):
            raise ValueError("mxcompat.%s: invalid glob %r: the '[' at position %d is never "
                             "closed" % (caller, text, part.start()))


_lock = threading.Lock()
_patterns = []          # _Pattern, in registration order
_version = [0]          # bumped on every change; keys the match cache
_match_cache = {}       # (version, names) -> (mask, unmatched patterns)


def _parse(patterns, caller):
    # All or nothing: one bad pattern leaves the registry untouched.
    return [_Pattern(p, caller) for p in patterns]


def _add(parsed):
    with _lock:
        keys = set(p.key for p in _patterns)
        added = []
        for p in parsed:
            if p.key not in keys:
                keys.add(p.key)
                _patterns.append(p)
                added.append(p)
        if added:
            _version[0] += 1
        return added


def _discard(parsed):
    keys = set(p.key for p in parsed)
    with _lock:
        kept = [p for p in _patterns if p.key not in keys]
        if len(kept) != len(_patterns):
            _patterns[:] = kept
            _version[0] += 1


def _snapshot():
    with _lock:
        return _version[0], tuple(_patterns)


def freeze(*patterns):
    """Freeze every parameter matching one of ``patterns`` (exact names, shell-style globs,
    compiled regexes that must match the whole name).  Returns ``frozen_patterns()``."""
    _add(_parse(patterns, "freeze"))
    return frozen_patterns()


def unfreeze(*patterns):
    """Remove the given patterns from the registry (all of them if none are given).

    A pattern is removed as registered: ``unfreeze("fc1_weight")`` does not thaw a name that
    ``"fc1_*"`` still freezes (one ``MXCompatWarning`` says so).  Returns ``frozen_patterns()``.
    """
    if not patterns:
        with _lock:
            if _patterns:
                del _patterns[:]
                _version[0] += 1
        return ()
    parsed = _parse(patterns, "unfreeze")
    _discard(parsed)
    _, remaining = _snapshot()
    for p in parsed:
        if p._exact is None:
            continue
        holders = [q for q in remaining if q.match(p._exact)]
        if holders:
            warn("mxcompat.unfreeze(%r): %r is still frozen by the registered pattern(s) %s; "
                 "unfreeze those to thaw it" % (p.source, p._exact,
                                               ", ".join(repr(q) for q in holders)))
    return frozen_patterns()


def is_frozen(name):
    """True if the live registry freezes the parameter called ``name``."""
    if not isinstance(name, str):
        raise TypeError("mxcompat.is_frozen: a parameter name is a str, not %r of type %s"
                        % (name, type(name).__name__))
    _, patterns = _snapshot()
    return any(p.match(name) for p in patterns)


def frozen_patterns():
    """The registered patterns, in registration order, as they were given."""
    _, patterns = _snapshot()
    return tuple(p.source for p in patterns)


@contextlib.contextmanager
def frozen(*patterns):
    """``with frozen("fc1_*"):`` freezes inside the block only.

    On exit the patterns this block added are removed again; patterns registered before the
    block (or by other threads meanwhile) are left as they are.
    """
    added = _add(_parse(patterns, "frozen"))
    try:
        yield frozen_patterns()
    finally:
        _discard(added)


def _matches(names):
    """``(mask, unmatched, frozen indices)`` for a tuple of names against the live registry,
    or ``None`` when the registry is empty."""
    version, patterns = _snapshot()
    if not patterns:
        return None
    key = (version, names)
    hit = _match_cache.get(key)
    if hit is None:
        mask = tuple(any(p.match(n) for p in patterns) for n in names)
        unmatched = tuple(p for p in patterns if not any(p.match(n) for n in names))
        if len(_match_cache) > 256:
            _match_cache.clear()
        hit = _match_cache[key] = (mask, unmatched, tuple(i for i, m in enumerate(mask) if m))
    return hit


def _warn_unmatched(unmatched, names, owner):
    for p in unmatched:
        # The closest names are only computed for the one warning: this runs at every
        # update and step while the pattern matches nothing.
        warn_once(("freeze-unmatched", p.key, owner, names),
                  lambda p=p: "mxcompat.freeze pattern %r matches no parameter of this %s, so "
                              "it freezes nothing here (closest parameter names: %s)"
                              % (p.source, owner, _closest(p, names)))


def _closest(p, names):
    close = difflib.get_close_matches(p.text(), names, n=3, cutoff=0.3)
    return ", ".join(map(repr, close)) if close else "none"


# --- update time: MXNet's own "fixed parameter" skip ----------------------------------------

_local = threading.local()   # .depth: nesting of container updates


def _masked_grads(names, grads):
    """``grads`` with the frozen entries' gradients replaced by ``None``, or ``None`` if
    nothing is to be skipped."""
    if names is None or grads is None:
        return None
    found = _matches(tuple(names))
    if found is None:
        return None
    out = None
    count = len(grads)
    # Only the frozen positions are visited: with a frozen backbone bound without gradients
    # they all hold None already, and nothing is copied.
    for i in found[2]:
        if i < count:
            grad_list = grads[i]
            if grad_list is not None and len(grad_list) and grad_list[0] is not None:
                if out is None:
                    out = list(grads)
                # Same length: MXNet tests grad_list[0] and zips it with the weights.
                out[i] = [None] * len(grad_list)
    return out


def _positions(wrapped):
    """Where ``grad_arrays`` and ``param_names`` come in a call of ``wrapped`` (the same
    signatures in every release, read once rather than bound per call)."""
    pos = _positions_cache.get(wrapped)
    if pos is None:
        params = list(inspect.signature(wrapped).parameters)
        pos = _positions_cache[wrapped] = (params.index("grad_arrays"),
                                           params.index("param_names"))
    return pos


_positions_cache = {}


def _wrap_update_fn(wrapped, instance, args, kwargs):
    # _update_params(param_arrays, grad_arrays, updater, num_device, kvstore, param_names),
    # _update_params_on_kvstore(_nccl)(param_arrays, grad_arrays, kvstore, param_names).
    if not _patterns:
        return wrapped(*args, **kwargs)
    grads_at, names_at = _positions(wrapped)
    grads = args[grads_at] if len(args) > grads_at else kwargs.get("grad_arrays")
    names = args[names_at] if len(args) > names_at else kwargs.get("param_names")
    state = getattr(_local, "state", None)
    clean = state.clean if state is not None else None
    if (clean is not None and clean[0] == _version[0] and clean[1] is grads
            and clean[2] is names):
        # This module's last update found nothing to mask for the same lists and registry
        # (identity, never ==: these are lists of NDArrays).
        return wrapped(*args, **kwargs)
    masked = _masked_grads(names, grads)
    if masked is None:
        if state is not None:
            state.clean = (_version[0], grads, names)
        return wrapped(*args, **kwargs)
    if len(args) > grads_at:
        args = args[:grads_at] + (masked,) + args[grads_at + 1:]
    else:
        kwargs = dict(kwargs, grad_arrays=masked)
    return wrapped(*args, **kwargs)


# --- Module: bind and update ------------------------------------------------------------------

class _BindState(object):
    __slots__ = ("frozen_at_bind", "warned", "checked", "clean")

    def __init__(self, frozen_at_bind):
        self.frozen_at_bind = frozen_at_bind   # registry names bound with grad_req 'null'
        self.warned = set()
        self.checked = None                    # registry version last checked for thaws
        # (registry version, grad list, name list) of the last update that had nothing to
        # mask (every frozen parameter bound without a gradient): the next one with the same
        # objects skips the scan.  The lists are the executor group's, which this state
        # does not outlive (it dies with its module).
        self.clean = None


_bind_states = weakref.WeakKeyDictionary()
_bind_lock = threading.Lock()


def _wrap_module_bind(wrapped, instance, args, kwargs):
    bound = bind_arguments(wrapped, args, kwargs)
    if instance.binded and not bound.arguments.get("force_rebind", False):
        return wrapped(*args, **kwargs)     # MXNet ignores the call (and says so)
    user_fixed = list(instance._fixed_param_names or [])
    frozen_now = []
    if bound.arguments.get("for_training", True):
        found = _matches(tuple(instance._param_names))
        if found is not None:
            frozen_now = [n for n, f in zip(instance._param_names, found[0])
                          if f and n not in user_fixed]
    with _bind_lock:
        _bind_states.pop(instance, None)
    if not frozen_now:
        return wrapped(*args, **kwargs)
    # Frozen names whose 'null' would stop a bias gradient stay off 'null' (the update skip
    # holds them).  The user's own fixed names are left to MXNet, or to the onednn_fc_bias
    # patch stacked below, which is told which names are the registry's.
    keep = null_would_stop_bias(instance._symbol, user_fixed + frozen_now, instance._context,
                                bound.arguments.get("grad_req", "write"))
    added = [n for n in frozen_now if n not in keep]
    instance._fixed_param_names = user_fixed + added
    try:
        with registry_bind(added):
            result = wrapped(*args, **kwargs)
    finally:
        # The registry stays the source of truth: a later bind reads it again.
        instance._fixed_param_names = user_fixed
    # Frozen at bind means bound without a gradient: a grad_req list or dict may have given
    # a frozen parameter one anyway, and then unfreezing it needs no rebind.
    group = instance._exec_group
    no_grad = set()
    if group is not None and group.grad_arrays is not None:
        no_grad = set(n for n, g in zip(group.param_names, group.grad_arrays) if g[0] is None)
    state = _BindState(set(n for n in frozen_now if n in no_grad))
    with _bind_lock:
        shared_module = bound.arguments.get("shared_module")
        shared = _bind_states.get(shared_module) if shared_module is not None else None
        if shared is not None:
            # A BucketingModule's buckets share their parameters: one warning for all.
            state.warned = shared.warned
        _bind_states[instance] = state
    return result


def _warn_thawed(state):
    # Names thaw only when the registry changes: check once per registry version, not at
    # every update (is_frozen over every frozen name is O(names x patterns)).
    version = _version[0]
    if state.checked == version:
        return
    state.checked = version
    thawed = sorted(n for n in state.frozen_at_bind if n not in state.warned and not is_frozen(n))
    if not thawed:
        return
    state.warned.update(thawed)
    warn("parameter(s) %s were frozen when this Module was bound, so MXNet allocated no "
         "gradient for them and they stay fixed although they are unfrozen now. To train them, "
         "rebind (weights and optimizer states are kept): mod.get_params(); "
         "mod.bind(data_shapes=mod.data_shapes, label_shapes=mod.label_shapes, "
         "force_rebind=True)" % ", ".join(map(repr, thawed)))


def _module_param_names(module):
    if hasattr(module, "_modules") and isinstance(module._modules, list):     # Sequential
        names = []
        for sub in module._modules:
            names.extend(n for n in _module_param_names(sub) if n not in names)
        return names
    buckets = getattr(module, "_buckets", None)
    if isinstance(buckets, dict):                                            # Bucketing
        names = []
        for sub in buckets.values():
            names.extend(n for n in _module_param_names(sub) if n not in names)
        return names
    return list(getattr(module, "_param_names", None) or [])


_checked = weakref.WeakKeyDictionary()   # Module -> registry version its patterns were checked


def _check_module_patterns(module, once_per_version=False):
    if getattr(_local, "depth", 0) or not _patterns:
        return
    version = _version[0]
    if once_per_version and _checked.get(module) == version:
        return
    names = tuple(_module_param_names(module))
    found = _matches(names)
    if found is not None and found[1]:
        _warn_unmatched(found[1], names, type(module).__name__)
    if once_per_version:
        _checked[module] = version


def _wrap_module_update(wrapped, instance, args, kwargs):
    state = _bind_states.get(instance)
    if not _patterns and state is None:
        return wrapped(*args, **kwargs)
    # A Module's parameter names never change: its patterns are checked once per registry
    # state (the warning is once anyway), not at every update.
    _check_module_patterns(instance, once_per_version=True)
    if state is not None:
        _warn_thawed(state)
    # Nested (in a container's update): the container checked all its parameters already.
    _local.depth = getattr(_local, "depth", 0) + 1
    outer, _local.state = getattr(_local, "state", None), state
    try:
        return wrapped(*args, **kwargs)
    finally:
        _local.depth -= 1
        _local.state = outer


def _warm(module):
    """Do, untimed, the work a Module's first update after a registry change does once (the
    benchmarks change the registry between the sides they interleave; a training loop sets
    it once)."""
    _check_module_patterns(module, once_per_version=True)
    state = _bind_states.get(module)
    group = getattr(module, "_exec_group", None)
    if state is None or group is None:
        return
    _warn_thawed(state)
    grads, names = group.grad_arrays, group.param_names
    if _masked_grads(names, grads) is None:
        state.clean = (_version[0], grads, names)


def _wrap_container_update(wrapped, instance, args, kwargs):
    if not _patterns:
        return wrapped(*args, **kwargs)
    _check_module_patterns(instance)
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        return wrapped(*args, **kwargs)
    finally:
        _local.depth -= 1


# --- Gluon Trainer ----------------------------------------------------------------------------

class _FrozenView(object):
    """A Parameter as the Trainer's update loops see it while frozen: ``grad_req`` reads
    'null' (their skip), everything else is the parameter's.  Its position in
    ``Trainer._params`` is kept, so the optimizer and kvstore indices do not move."""

    grad_req = "null"

    def __init__(self, param):
        object.__setattr__(self, "_param", param)

    def __getattr__(self, attr):
        return getattr(self._param, attr)

    def __setattr__(self, attr, value):
        setattr(self._param, attr, value)


_trainer_cache = weakref.WeakKeyDictionary()   # Trainer -> (version, params, length, found)


def _trainer_matches(trainer, params):
    """``_matches`` of the trainer's parameter names plus the names, computed once per
    registry state and parameter list rather than at every step."""
    version = _version[0]
    cached = _trainer_cache.get(trainer)
    if (cached is not None and cached[0] == version and cached[1] is params
            and cached[2] == len(params)):
        return cached[3]
    names = tuple(p.name for p in params)
    found = _matches(names)
    if found is not None:
        found = found + (names,)
    _trainer_cache[trainer] = (version, params, len(params), found)
    return found


def _wrap_trainer(check):
    def wrapper(wrapped, instance, args, kwargs):
        if not _patterns:
            return wrapped(*args, **kwargs)
        params = instance._params
        found = _trainer_matches(instance, params)
        if found is None:
            return wrapped(*args, **kwargs)
        mask, unmatched, _, names = found
        if check and unmatched:
            _warn_unmatched(unmatched, names, "gluon.Trainer")
        if not any(mask):
            return wrapped(*args, **kwargs)
        instance._params = [_FrozenView(p) if m else p for p, m in zip(params, mask)]
        try:
            return wrapped(*args, **kwargs)
        finally:
            instance._params = params
    return wrapper


# --- the report -------------------------------------------------------------------------------

class FrozenReport(object):
    """Frozen and trainable parameters of a Module or a Gluon Block.

    ``frozen``/``trainable``: names; ``frozen_params``/``trainable_params``: their counts;
    ``frozen_elements``/``trainable_elements``: their sizes summed.  ``str(report)`` prints
    like sockeye's parameter log.  A parameter whose shape is not inferred yet counts 0
    elements.
    """

    def __init__(self, entries, statistics=()):
        # entries: (name, shape, dtype name, frozen), in the owner's order; statistics: the
        # same for BatchNorm's running mean/variance (aux states), which no optimizer updates.
        self.entries = tuple(entries)
        self.statistics = tuple(e[0] for e in statistics)
        self.frozen_statistics = tuple(e[0] for e in statistics if e[3])
        self.moving_statistics = tuple(e[0] for e in statistics if not e[3])
        self.frozen = tuple(e[0] for e in self.entries if e[3])
        self.trainable = tuple(e[0] for e in self.entries if not e[3])
        self.frozen_params = len(self.frozen)
        self.trainable_params = len(self.trainable)
        self.frozen_elements = sum(_size(e[1]) for e in self.entries if e[3])
        self.trainable_elements = sum(_size(e[1]) for e in self.entries if not e[3])
        self.total_elements = self.frozen_elements + self.trainable_elements

    def __str__(self):
        total = self.total_elements

        def pct(n):
            return 100.0 * n / total if total else 0.0

        def described(frozen):
            return ["%s [%s, %s]" % (n, tuple(s), d) for n, s, d, f in self.entries
                    if f == frozen]

        return ("# of parameters: %d | trainable: %d (%.2f%%) | fixed: %d (%.2f%%)\n"
                "Trainable parameters:\n%s\nFixed parameters:\n%s%s"
                % (total, self.trainable_elements, pct(self.trainable_elements),
                   self.frozen_elements, pct(self.frozen_elements),
                   pprint.pformat(described(False)), pprint.pformat(described(True)),
                   self._statistics_line()))

    def _statistics_line(self):
        if not self.statistics:
            return ""
        return ("\nStatistics (BatchNorm running mean/variance): %d | moving: %d | fixed: %d%s"
                % (len(self.statistics), len(self.moving_statistics),
                   len(self.frozen_statistics),
                   (" %s" % pprint.pformat(list(self.frozen_statistics))
                    if self.frozen_statistics else "")))

    def __repr__(self):
        stats = ""
        if self.statistics:
            stats = ", statistics=%d moving/%d fixed" % (len(self.moving_statistics),
                                                         len(self.frozen_statistics))
        return ("FrozenReport(frozen=%d params/%d elements, trainable=%d params/%d elements%s)"
                % (self.frozen_params, self.frozen_elements, self.trainable_params,
                   self.trainable_elements, stats))


def _size(shape):
    size = 1
    for dim in shape:
        size *= int(dim)
    return size


def _dtype_name(dtype):
    try:
        import numpy as np
        return np.dtype(dtype).name
    except Exception:  # pylint: disable=broad-except
        return str(dtype)


def _statistic_frozen(name):
    # A statistic holds still only while the frozen_statistics patch is on.
    return "frozen_statistics" in _patching._active and is_frozen(name)


def _merged(parts):
    merged, seen = [], set()
    for entries in parts:
        for entry in entries:
            if entry[0] not in seen:
                seen.add(entry[0])
                merged.append(entry)
    return merged


def _module_entries(module):
    """``(parameter entries, statistic entries)`` of a Module, Bucketing or SequentialModule."""
    if isinstance(getattr(module, "_modules", None), list):                  # Sequential
        parts = [_module_entries(sub) for sub in module._modules]
        return _merged(p[0] for p in parts), _merged(p[1] for p in parts)
    if isinstance(getattr(module, "_buckets", None), dict):                  # Bucketing
        current = getattr(module, "_curr_module", None)
        if current is None:
            raise ValueError("mxcompat.frozen_report: bind the BucketingModule first; its "
                             "parameters are unknown before")
        return _module_entries(current)
    group = getattr(module, "_exec_group", None)
    if getattr(module, "binded", False) and group is not None:
        arrays = dict(zip(group.param_names, (a[0] for a in group.param_arrays)))
        auxs = dict(zip(group.aux_names, (a[0] for a in group.aux_arrays)))
        null = set(n for n, req in getattr(group, "grad_req", {}).items() if req == "null")
    elif getattr(module, "params_initialized", False) and module._arg_params is not None:
        arrays, auxs, null = module._arg_params, module._aux_params or {}, set()
    else:
        raise ValueError("mxcompat.frozen_report: bind the %s or initialise its parameters "
                         "first; their shapes are unknown before" % type(module).__name__)
    fixed = set(getattr(module, "_fixed_param_names", None) or []) | null
    params = [(n, tuple(arrays[n].shape), _dtype_name(arrays[n].dtype),
               n in fixed or is_frozen(n))
              for n in getattr(module, "_param_names", arrays) if n in arrays]
    stats = [(n, tuple(auxs[n].shape), _dtype_name(auxs[n].dtype), _statistic_frozen(n))
             for n in getattr(module, "_aux_names", auxs) if n in auxs]
    return params, stats


def _param_entries(params):
    """``(parameter entries, statistic entries)`` of Gluon Parameters: a statistic is one
    that is not differentiable (BatchNorm's running mean/variance)."""
    entries, stats = [], []
    for p in params:
        if not p._differentiable:
            stats.append((p.name, tuple(p.shape or ()), _dtype_name(p.dtype),
                          _statistic_frozen(p.name)))
        else:
            entries.append((p.name, tuple(p.shape or ()), _dtype_name(p.dtype),
                            p.grad_req == "null" or is_frozen(p.name)))
    return entries, stats


def frozen_report(obj):
    """Count the frozen and trainable parameters (and elements) of ``obj``: a bound or
    initialised Module (also Bucketing/SequentialModule), a Gluon Block, a Trainer, or a
    ParameterDict.  Frozen means: matched by the registry, a fixed parameter, or
    ``grad_req == 'null'``.  BatchNorm's running statistics are counted apart
    (``statistics``, ``frozen_statistics``, ``moving_statistics``): held when the registry
    matches them.  ``print(frozen_report(net))`` prints like sockeye."""
    import mxnet as mx
    if isinstance(obj, mx.module.BaseModule):
        return FrozenReport(*_module_entries(obj))
    if isinstance(obj, mx.gluon.Block):
        return FrozenReport(*_param_entries(obj.collect_params().values()))
    if isinstance(obj, mx.gluon.Trainer):
        return FrozenReport(*_param_entries(obj._params))
    if isinstance(obj, (mx.gluon.ParameterDict, dict)):
        return FrozenReport(*_param_entries(obj.values()))
    raise TypeError("mxcompat.frozen_report: expected a Module or a Gluon Block (or a Trainer "
                    "or ParameterDict), not %s" % type(obj).__name__)


# --- the environment ----------------------------------------------------------------------------

ENV_FREEZE = "MXCOMPAT_FREEZE"


def _freeze_from_env():
    # Comma-separated names and globs; importing mxcompat must not fail on a bad one.
    for item in os.environ.get(ENV_FREEZE, "").split(","):
        item = item.strip()
        if item:
            try:
                freeze(item)
            except (TypeError, ValueError) as exc:
                warn("%s: %s; that pattern is ignored" % (ENV_FREEZE, exc))


_freeze_from_env()


# --- the patch --------------------------------------------------------------------------------

PATCH = register(Patch(
    "freeze",
    "The mxcompat.freeze registry: frozen parameters are never updated, on every path.",
    targets=[
        Target("mxnet.model", "_update_params", _wrap_update_fn),
        Target("mxnet.model", "_update_params_on_kvstore", _wrap_update_fn),
        Target("mxnet.model", "_update_params_on_kvstore_nccl", _wrap_update_fn,
               optional=True),
        # module.py imports its own references to these (see MXNET_VERSIONS.md).
        Target("mxnet.module.module", "_update_params", _wrap_update_fn),
        Target("mxnet.module.module", "_update_params_on_kvstore", _wrap_update_fn),
        Target("mxnet.module.module", "Module.bind", _wrap_module_bind),
        Target("mxnet.module.module", "Module.update", _wrap_module_update),
        Target("mxnet.module.bucketing_module", "BucketingModule.update",
               _wrap_container_update),
        Target("mxnet.module.sequential_module", "SequentialModule.update",
               _wrap_container_update),
        Target("mxnet.gluon.trainer", "Trainer._allreduce_grads", _wrap_trainer(False)),
        Target("mxnet.gluon.trainer", "Trainer._update", _wrap_trainer(True)),
    ],
))
