"""The runner of ``mxcompat check``: each registered scenario in a temporary folder, its
outcome (ok, failed, skipped) and the report."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import traceback
import warnings

from ..._core import facts, settings
from ..._core.versions import running, stack_line

OK, FAIL, SKIP = "ok", "failed", "skipped"
_MARKS = {OK: "\u2713", FAIL: "\u2717", SKIP: "-"}


class Skip(Exception):
    """The check does not apply to this MXNet (the message says why)."""


_checks = []


def check(name, title):
    def register(func):
        _checks.append((name, title, func))
        return func

    return register


def _versions(mx):
    import numpy  # noqa: F401  (reported whether or not mxnet imported it)
    import wrapt  # noqa: F401

    stack = running()
    info = dict((n, stack[n]) for n in ("mxcompat", "python", "numpy", "wrapt", "mxnet"))
    info["mxnet_features"] = None
    if mx is not None:
        info["mxnet_features"] = facts.build_features()
    return info


def run_checks():
    import mxcompat  # noqa: F401  (patches land when mxnet is imported below)

    results = []
    # The check's output is its report: keep MXNet's import-time DeprecationWarnings and the
    # C++ "Subgraph backend MKLDNN is activated" lines out of it.
    os.environ.setdefault("MXNET_SUBGRAPH_VERBOSE", "0")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import mxnet as mx
    except Exception as exc:
        results.append(
            {
                "name": "import",
                "title": "import mxnet",
                "status": FAIL,
                "detail": "%s: %s" % (type(exc).__name__, exc),
                "seconds": 0.0,
            }
        )
        return results, _versions(None)
    if not facts.is_supported(facts.parse_version(mx.__version__)):
        results.append(
            {
                "name": "version",
                "title": "supported MXNet",
                "status": FAIL,
                "detail": "mxnet %s is outside %s" % (mx.__version__, facts.SUPPORTED),
                "seconds": 0.0,
            }
        )
        return results, _versions(mx)
    for name, title, func in _checks:
        tmp = tempfile.mkdtemp(prefix="mxcompat-check-")
        start = time.time()
        try:
            detail, status = func(mx, tmp), OK
        except Skip as skip:
            detail, status = str(skip), SKIP
        except Exception as exc:
            detail, status = "%s: %s" % (type(exc).__name__, exc), FAIL
            if settings.flag(settings.CHECK_TRACEBACK):
                traceback.print_exc()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        results.append(
            {
                "name": name,
                "title": title,
                "status": status,
                "detail": detail,
                "seconds": round(time.time() - start, 3),
            }
        )
    return results, _versions(mx)


def _mark(status, out):
    mark = _MARKS[status]
    try:
        mark.encode(getattr(out, "encoding", None) or "ascii")
    except (LookupError, UnicodeEncodeError):
        # A terminal whose encoding has no check marks (a Latin-1 locale): plain letters.
        mark = {OK: "+", FAIL: "x", SKIP: "-"}[status]
    return mark


def _print_line(r, out):
    mark = _mark(r["status"], out)
    width = max(len(name) for name, _, _ in _checks)
    text = "%s %-*s %-66s %6.2f s" % (mark, width, r["name"], r["title"], r["seconds"])
    if r["status"] != OK:
        text += "\n      %s: %s" % (r["status"], r["detail"])
    elif r["detail"]:
        text += "\n      %s" % r["detail"]
    out.write(text + "\n")


def report(as_json: bool = False) -> int:
    """Run every check and print the results (as JSON with ``as_json``); the exit status."""
    out = sys.stdout
    results, versions = run_checks()
    failed = [r for r in results if r["status"] == FAIL]
    if as_json:
        json.dump({"results": results, "versions": versions, "ok": not failed}, out, indent=2)
        out.write("\n")
    else:
        for r in results:
            _print_line(r, out)
        feats = versions["mxnet_features"]
        mxnet = "%s (%s)" % (
            versions["mxnet"],
            ", ".join(feats) if feats else "build features unknown",
        )
        names = ("mxnet", "Python", "NumPy", "wrapt", "mxcompat")
        out.write(stack_line(dict(versions, mxnet=mxnet), names) + "\n")
        out.write(
            "%d passed, %d failed, %d skipped\n"
            % (
                sum(r["status"] == OK for r in results),
                len(failed),
                sum(r["status"] == SKIP for r in results),
            )
        )
    return 1 if failed else 0
