"""``mxcompat scan [PATH ...]``: find the legacy MXNet traps a codebase's source shows, before
running it, and rewrite those whose fix is certain (``--fix``, ``--diff`` to preview).

One line per finding, ``path:line:col: MXC### message`` (the rule, what happens on which
releases, what mxcompat does about it, the clean fix), then a summary per rule and per file.
Exit 0 when nothing is found, 1 when something is (or a file does not parse), 2 on a usage
error.  Needs libcst, a concrete syntax tree that keeps every byte of formatting:
``pip install 'mxcompat[scan]'``.
"""

from __future__ import annotations

import argparse
import collections
import difflib
import json
import os
import sys

from .._usage import UsageError

INSTALL_HINT = "pip install 'mxcompat[scan]' (or pip install libcst)"
# --fix applies every certain fix, then scans again: a fix inside a fixed node (a call inside
# a renamed call) lands on the next round, so one --fix run leaves nothing a second would do.
_FIX_ROUNDS = 5


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "scan",
        help="find (and --fix) the legacy MXNet traps in Python source: mxcompat scan --help",
        description="Find the legacy MXNet traps in Python source (and fix the certain ones).",
    )
    parser.add_argument(
        "paths",
        nargs="*",
        default=["."],
        metavar="PATH",
        help="files or folders (default: the current folder)",
    )
    parser.add_argument(
        "--select",
        metavar="CODES",
        default="",
        help="only these rule codes, comma-separated (e.g. MXC001,MXC005)",
    )
    parser.add_argument(
        "--ignore", metavar="CODES", default="", help="skip these rule codes, comma-separated"
    )
    parser.add_argument(
        "--fix", action="store_true", help="rewrite the findings whose fix is certain, in place"
    )
    parser.add_argument(
        "--diff",
        action="store_true",
        help="print what --fix would change as a diff; change nothing",
    )
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")
    parser.add_argument("--rules", action="store_true", help="list the rules and exit")
    return parser


def _codes(text, known):
    codes = [c.strip().upper() for c in text.split(",") if c.strip()]
    unknown = [c for c in codes if c not in known]
    if unknown:
        raise UsageError(
            "unknown rule code(s) %s; the rules are %s"
            % (", ".join(unknown), ", ".join(sorted(known)))
        )
    return codes


def _import_rules():
    """The engine and the rules, or ``None`` without libcst."""
    try:
        from . import engine, rules
    except ImportError as exc:
        if "libcst" not in str(exc):
            raise
        return None
    return engine, rules


def main(args: argparse.Namespace) -> int:
    imported = _import_rules()
    if imported is None:
        sys.stderr.write("mxcompat scan: needs libcst: %s\n" % INSTALL_HINT)
        return 2
    engine, rules = imported
    if args.rules:
        for r in rules.RULES:
            sys.stdout.write(
                "%s  %-26s %s%s\n" % (r.code, r.name, r.summary, " (fixable)" if r.fixable else "")
            )
        return 0
    if args.fix and args.diff:
        raise UsageError("--fix and --diff: choose one (--diff previews what --fix writes)")
    select = _codes(args.select, rules.BY_CODE)
    ignore = _codes(args.ignore, rules.BY_CODE)
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        raise UsageError("no such file or folder: %s" % ", ".join(missing))
    selected = [r for r in rules.RULES if (not select or r.code in select) and r.code not in ignore]
    results = [
        _settle(engine, r, selected, args)
        for r in engine.scan_paths(args.paths, selected, fix=args.fix or args.diff)
    ]
    findings = [f for r in results for f in r.findings]
    errors = [r for r in results if r.error is not None]
    out = sys.stdout
    if args.json:
        json.dump(
            {
                "findings": [f._asdict() for f in findings],
                "errors": [
                    {
                        "path": r.path,
                        "line": r.error[0],
                        "column": r.error[1],
                        "message": r.error[2],
                    }
                    for r in errors
                ],
                "files": len(results),
                "summary": _counts(findings),
            },
            out,
            indent=2,
        )
        out.write("\n")
    else:
        # --diff shows the change itself, as ruff's does; the summary says what it holds.
        for f in [] if args.diff else findings:
            out.write(
                "%s:%d:%d: %s %s%s\n"
                % (
                    f.path,
                    f.line,
                    f.column,
                    f.code,
                    f.message,
                    " [fixed]" if args.fix and f.fixable else "",
                )
            )
        for r in errors:
            out.write(
                "%s:%s:%s: does not parse: %s\n"
                % (r.path, r.error[0] or 1, r.error[1] or 1, r.error[2])
            )
        _summary(out, results, findings, errors, args)
    remaining = [f for f in findings if not (args.fix and f.fixable)]
    return 1 if remaining or errors or (args.diff and any(r.new_source for r in results)) else 0


def _settle(engine, result, selected, args):
    """Write (--fix) or show (--diff) the fixed file; the findings stay those of the file as
    it was, so the report says what was fixed."""
    if result.new_source is None:
        return result
    new = result.new_source
    for _ in range(_FIX_ROUNDS):
        again = engine.scan_source(new, result.path, selected, fix=True)
        if again.new_source is None:
            break
        new = again.new_source
    if args.diff:
        old_text = result.source.decode("utf-8", "replace").splitlines(True)
        new_text = new.decode("utf-8", "replace").splitlines(True)
        sys.stdout.writelines(difflib.unified_diff(old_text, new_text, result.path, result.path))
    else:
        with open(result.path, "wb") as f:
            f.write(new)
    return result._replace(new_source=new)


def _counts(findings):
    per_rule = collections.Counter(f.code for f in findings)
    per_file = collections.Counter(f.path for f in findings)
    return {"per_rule": dict(sorted(per_rule.items())), "per_file": dict(sorted(per_file.items()))}


def _summary(out, results, findings, errors, args):
    counts = _counts(findings)
    if findings:
        out.write("\nper rule:\n")
        for code, n in counts["per_rule"].items():
            out.write("  %s  %4d\n" % (code, n))
        out.write("per file:\n")
        for path, n in counts["per_file"].items():
            out.write("  %4d  %s\n" % (n, path))
    fixable = sum(f.fixable for f in findings)
    out.write(
        "%d finding(s) in %d of %d file(s)%s%s\n"
        % (
            len(findings),
            len(counts["per_file"]),
            len(results),
            ("; %d fixed" if args.fix else "; %d fixable with --fix") % fixable if fixable else "",
            "; %d file(s) do not parse" % len(errors) if errors else "",
        )
    )
