"""The pattern registry: what is frozen, as the user said it (names, globs, regexes), and a
version that keys every cache derived from it."""

from __future__ import annotations

import contextlib
import difflib
import fnmatch
import re
import threading

from .._core.log import warn, warn_once_for

# Names for annotations only: type checkers take this block as run, Python never runs it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterator, Pattern, Union

    # A parameter name, a shell glob, or a compiled regex that must match the whole name.
    PatternLike = Union[str, Pattern[str]]

_PATTERN_TYPE = type(re.compile(""))


# --- the registry -----------------------------------------------------------------------------


class _Pattern:
    """One registered pattern: the user's object, an identity key, and a matcher."""

    __slots__ = ("source", "key", "_regex", "_exact", "literal", "gradients")

    def __init__(self, source, caller, gradients=True):
        # False: Gluon parameters it matches skip their backward too (trainer.py).  Not
        # part of the key: a pattern is registered (and unfrozen) once, with its last flag.
        self.gradients = bool(gradients)
        if isinstance(source, str):
            if not source.strip():
                raise ValueError(
                    "mxcompat.%s: an empty pattern (%r) names no parameter" % (caller, source)
                )
            _check_glob(source, caller)
            self.key = ("glob", source)
            self._exact = source
            try:
                self._regex = re.compile(fnmatch.translate(source))
            except re.error as err:  # a glob fnmatch accepts but this Python's re does not
                raise ValueError(
                    "mxcompat.%s: invalid glob %r: %s" % (caller, source, err)
                ) from None
            # No wildcard: the glob matches its own text only, so a set lookup decides.
            self.literal = not any(c in source for c in "*?[")
        elif isinstance(source, _PATTERN_TYPE):
            if not isinstance(source.pattern, str):
                raise TypeError(
                    "mxcompat.%s: %r is a bytes regex; parameter names are str, "
                    "compile a str pattern" % (caller, source)
                )
            self.key = ("regex", source.pattern, source.flags)
            self._exact = None
            self.literal = False
            self._regex = source
        else:
            hint = ""
            if isinstance(source, (list, tuple, set, frozenset)):
                hint = "; to pass several, unpack them: %s(*names)" % caller
            raise TypeError(
                "mxcompat.%s: a pattern is a parameter name, a shell-style glob or "
                "a compiled regex (re.compile), not %r of type %s%s"
                % (caller, source, type(source).__name__, hint)
            )
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
# present, up to the next ']'), or a '[' no ']' closes (group 2), or a run of other
# characters.  The lookahead takes the "!]" prefix whole (re has no atomic groups before
# Python 3.11), so "[]" and "[!]" are unclosed here as they are for fnmatch.
_GLOB_PARTS = re.compile(r"\[(?=(!?\]?))\1[^\]]*\]|(\[)|[^\[]+")


def _check_glob(text, caller):
    # fnmatch reads an unclosed '[' as a literal; no parameter name has one, so it is a typo.
    if "[" not in text:
        return
    # match() from each part's end, not a finditer() loop: on Python 3.11+ every such loop
    # leaves a small block behind (CPython's, bounded), which reads as growth in mxcompat's
    # own allocations over a run that freezes and unfreezes.  Every position starts a part.
    pos = 0
    while pos < len(text):
        part = _GLOB_PARTS.match(text, pos)
        if part.group(2):
            raise ValueError(
                "mxcompat.%s: invalid glob %r: the '[' at position %d is never "
                "closed" % (caller, text, pos)
            )
        if part.group(0).startswith("["):
            _check_ranges(text, part, caller)
        pos = part.end()


def _check_ranges(text, part, caller):
    # A range written backwards ("[z-a]") is an error for re on Python < 3.9 and an empty set
    # (a glob that can match nothing) after: a typo either way, refused the same on every
    # Python.  Read left to right as re reads the set fnmatch makes of it.
    start = part.start() + 1
    body = part.group(0)[1:-1]
    if body.startswith("!"):
        body, start = body[1:], start + 1
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            if body[i] > body[i + 2]:
                raise ValueError(
                    "mxcompat.%s: invalid glob %r: the range %r at position %d "
                    "is empty (its start comes after its end)"
                    % (caller, text, body[i : i + 3], start + i)
                )
            i += 3
        else:
            i += 1


def check_pattern(pattern, caller="freeze"):
    """Raise the ``TypeError``/``ValueError`` ``freeze(pattern)`` would, in its words (the
    CLI checks ``run --freeze`` values with it before the script starts)."""
    _Pattern(pattern, caller)


class _State:
    """The live registry.  ``patterns`` is a tuple, replaced (never changed in place) under
    ``lock``, so a reader without the lock sees one consistent tuple; ``version`` is bumped
    with every change and keys every cache derived from the registry."""

    __slots__ = ("lock", "patterns", "version", "listeners")

    def __init__(self):
        self.lock = threading.Lock()
        self.patterns = ()
        self.version = 0
        # Called (no arguments, outside the lock) after every change: what must follow a
        # change at once rather than at the next update (hot_path.py: the Trainer's gradients
        # given back, the Modules' rebind, the wrappers re-armed, in that order).
        self.listeners = []


state = _State()
# (registry version, {names: (mask, unmatched patterns, frozen indices)}).  Only the live
# version's results: a version never comes back, so keeping older ones would only hold the
# name tuples of every model matched since (a training loop that freezes and unfreezes
# between stages, a search that builds model after model).
_match_cache = (None, {})
_MATCH_CACHE_SIZE = 256  # distinct name tuples under one version (models built meanwhile)


def _parse(patterns, caller, gradients=True):
    # All or nothing: one bad pattern leaves the registry untouched.
    return [_Pattern(p, caller, gradients) for p in patterns]


def _changed():
    for listener in state.listeners:
        listener()


def _add(parsed):
    """Register ``parsed``; returns (the patterns added, the registered ones whose
    ``gradients`` flag they replaced)."""
    with state.lock:
        where = dict((p.key, i) for i, p in enumerate(state.patterns))
        patterns = list(state.patterns)
        added, replaced = [], []
        for p in parsed:
            i = where.get(p.key)
            if i is None:
                where[p.key] = len(patterns)
                patterns.append(p)
                added.append(p)
            elif patterns[i].gradients != p.gradients:
                replaced.append(patterns[i])
                patterns[i] = p
        if added or replaced:
            state.patterns = tuple(patterns)
            state.version += 1
    if added or replaced:
        _changed()
    return added, replaced


def _discard(parsed):
    keys = set(p.key for p in parsed)
    with state.lock:
        kept = tuple(p for p in state.patterns if p.key not in keys)
        changed = len(kept) != len(state.patterns)
        if changed:
            state.patterns = kept
            state.version += 1
    if changed:
        _changed()


def _snapshot():
    with state.lock:
        return state.version, state.patterns


def freeze(*patterns: PatternLike, gradients: bool = True) -> tuple[PatternLike, ...]:
    """Freeze every parameter matching one of ``patterns`` (exact names, shell-style globs,
    compiled regexes that must match the whole name).  Returns ``frozen_patterns()``.

    ``gradients=False``: the Gluon parameters they match get no gradient either, from the
    Trainer's next step on (the cost of ``grad_req='null'``, which they keep reading as
    before); their ``grad()`` reads zeros (docs/guide/freeze.md).  Freezing a registered
    pattern again sets its flag."""
    _add(_parse(patterns, "freeze", gradients))
    return frozen_patterns()


def unfreeze(*patterns: PatternLike) -> tuple[PatternLike, ...]:
    """Remove the given patterns from the registry (all of them if none are given).

    A pattern is removed as registered: ``unfreeze("fc1_weight")`` does not thaw a name that
    ``"fc1_*"`` still freezes (one ``MXCompatWarning`` says so).  Returns ``frozen_patterns()``.
    """
    if not patterns:
        with state.lock:
            changed = bool(state.patterns)
            if changed:
                state.patterns = ()
                state.version += 1
        if changed:
            _changed()
        return ()
    parsed = _parse(patterns, "unfreeze")
    _discard(parsed)
    _, remaining = _snapshot()
    for p in parsed:
        if p._exact is None:
            continue
        holders = [q for q in remaining if q.match(p._exact)]
        if holders:
            warn(
                "mxcompat.unfreeze(%r): %r is still frozen by the registered pattern(s) %s; "
                "unfreeze those to thaw it"
                % (p.source, p._exact, ", ".join(repr(q) for q in holders))
            )
    return frozen_patterns()


def is_frozen(name: str) -> bool:
    """True if the live registry freezes the parameter called ``name``."""
    if not isinstance(name, str):
        raise TypeError(
            "mxcompat.is_frozen: a parameter name is a str, not %r of type %s"
            % (name, type(name).__name__)
        )
    _, patterns = _snapshot()
    return any(p.match(name) for p in patterns)


def frozen_patterns() -> tuple[PatternLike, ...]:
    """The registered patterns, in registration order, as they were given."""
    _, patterns = _snapshot()
    return tuple(p.source for p in patterns)


@contextlib.contextmanager
def frozen(*patterns: PatternLike, gradients: bool = True) -> Iterator[tuple[PatternLike, ...]]:
    """``with frozen("fc1_*"):`` freezes inside the block only (``gradients`` as for
    ``freeze``).

    On exit the patterns this block added are removed again; patterns registered before the
    block (or by other threads meanwhile) are left as they are, with their own flag.
    """
    added, replaced = _add(_parse(patterns, "frozen", gradients))
    try:
        yield frozen_patterns()
    finally:
        _discard(added)
        if replaced:
            # Their flags back, for those still registered.
            _, now = _snapshot()
            keys = set(p.key for p in now)
            _add([p for p in replaced if p.key in keys])


def matches(names):
    """``(mask, unmatched, frozen indices)`` for a tuple of names against the live registry,
    or ``None`` when the registry is empty."""
    version, patterns = _snapshot()
    if not patterns:
        return None
    global _match_cache
    cached_version, cache = _match_cache
    if cached_version != version:
        cache = {}
        _match_cache = (version, cache)  # one assignment: readers see a consistent pair
    hit = cache.get(names)
    if hit is None:
        # Exact names (the common "freeze these 200 parameters") by set lookups, the rest
        # one by one: linear in names + patterns, not their product.
        literal = set(p._exact for p in patterns if p.literal)
        others = [p for p in patterns if not p.literal]
        given = set(names)
        mask = tuple(n in literal or any(p.match(n) for p in others) for n in names)
        unmatched = tuple(
            p
            for p in patterns
            if (p._exact not in given if p.literal else not any(p.match(n) for n in names))
        )
        if len(cache) >= _MATCH_CACHE_SIZE:
            cache.clear()
        hit = cache[names] = (mask, unmatched, tuple(i for i, m in enumerate(mask) if m))
    return hit


def skips_gradient(names):
    """For a tuple of names, which a pattern registered with ``gradients=False`` matches
    (a tuple of bools), or ``None`` when no such pattern is registered."""
    _, patterns = _snapshot()
    patterns = [p for p in patterns if not p.gradients]
    if not patterns:
        return None
    return tuple(any(p.match(n) for p in patterns) for n in names)


def warn_unmatched(unmatched, names, owner, what):
    """One warning per pattern for ``owner`` (the Module or Trainer, called ``what``),
    remembered as long as ``owner`` lives: keyed by its parameter names instead, the
    one-time keys would keep the names of every model a process ever built."""
    for p in unmatched:
        # The closest names are only computed for the one warning: this runs at every
        # update and step while the pattern matches nothing.
        warn_once_for(
            owner,
            ("freeze-unmatched", p.key),
            lambda p=p: (
                "mxcompat.freeze pattern %r matches no parameter of this %s, "
                "so it freezes nothing here (closest parameter names: %s)"
                % (p.source, what, _closest(p, names))
            ),
        )


def _closest(p, names):
    close = difflib.get_close_matches(p.text(), names, n=3, cutoff=0.3)
    return ", ".join(map(repr, close)) if close else "none"
