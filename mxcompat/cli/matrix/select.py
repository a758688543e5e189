"""Which combinations a ``mxcompat matrix`` run takes (``--mxnet``, ``--python``, ...)."""

from ..._core import versions
from .._usage import UsageError


def _csv(text):
    return [v.strip() for v in (text or "").split(",") if v.strip()]


_release_matches = versions.release_matches


def select(args):
    combos = list(versions.COMBINATIONS)
    known = [c.name for c in combos]
    for name in args.env:
        if name not in known:
            raise UsageError("--env %s: no such combination (see mxcompat matrix --list)" % name)
    if args.env:
        combos = [c for c in combos if c.name in args.env]
    if args.mxnet:
        wanted = _csv(args.mxnet)
        bad = [
            w
            for w in wanted
            if not any(_release_matches(w, c.mxnet) for c in versions.COMBINATIONS)
        ]
        if bad:
            raise UsageError(
                "--mxnet: no supported combination has MXNet %s (there are: %s)"
                % (", ".join(bad), ", ".join(sorted(set(c.mxnet for c in versions.COMBINATIONS))))
            )
        combos = [c for c in combos if any(_release_matches(w, c.mxnet) for w in wanted)]
    if args.python:
        combos = [c for c in combos if c.python in _csv(args.python)]
    if args.numpy:
        combos = [c for c in combos if c.latest == (args.numpy == "latest")]
    if args.modern:
        combos = [c for c in combos if c.modern]
    if not combos:
        raise UsageError(
            "no supported combination matches the selection (see mxcompat matrix --list)"
        )
    return combos
