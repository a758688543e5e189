"""``mxcompat patches``: every patch, what it fixes, whether it applies here and is active."""

from __future__ import annotations

import argparse
import json
import sys

from .._core import facts, registry, traps, versions


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "patches",
        help="list every patch: what it fixes, whether it applies here, whether it is active",
    )
    parser.add_argument("--json", action="store_true", help="print the list as JSON")
    return parser


def main(args: argparse.Namespace) -> int:
    table = _patch_table()
    out = sys.stdout
    if args.json:
        json.dump(table, out, indent=2)
        out.write("\n")
    else:
        width = max(len(r["name"]) for r in table["patches"])
        out.write("%-*s  applies  active  traps  fixes\n" % (width, "patch"))
        for r in table["patches"]:
            line = "%-*s  %-7s  %-6s  %-5d  %s" % (
                width,
                r["name"],
                "yes" if r["applies"] else "no",
                "yes" if r["active"] else "no",
                len(r["traps"]),
                r["fixes"],
            )
            out.write(line.rstrip() + "\n")  # no description under python -OO
        names = ("mxnet", "Python", "NumPy", "mxcompat")
        out.write(versions.stack_line(table["versions"], names) + "\n")
    if table["error"]:
        sys.stderr.write("mxcompat patches: %s, so no patch applies\n" % table["error"])
        return 1
    return 0


def _patch_table():
    """Every patch with what it fixes, whether it applies to this MXNet, Python and NumPy,
    and whether it is active, after importing mxnet here (as a program would)."""
    import warnings

    error = None
    mx = None
    try:
        # MXNet 1.6+ warns about NumPy aliases at import; that is not what is asked here.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import mxnet as mx
    except Exception as exc:  # whatever it is, said as the command's error
        error = "cannot import mxnet: %s: %s" % (type(exc).__name__, exc)
    version = facts.parse_version(getattr(mx, "__version__", ""))
    supported = version is not None and facts.is_supported(version)
    active = registry.patched()
    rows = []
    for name in registry.names():
        patch = registry.get(name)
        rows.append(
            {
                "name": name,
                "fixes": " ".join((patch.doc or "").split()),
                # As the registry decides: the supported range, then the patch's own rules
                # (MXNet release, Python and NumPy version).
                "applies": bool(supported and patch.applies_to(version)),
                "active": name in active,
                # The legacy traps it handles, from the one list (docs/troubleshooting.md).
                "traps": [t.symptom for t in traps.for_patch(name)],
            }
        )
    stack = versions.running()
    stack = dict((name, stack[name]) for name in ("mxcompat", "mxnet", "python", "numpy"))
    documented = [t.symptom for t in traps.for_patch(None)]
    return {"patches": rows, "documented": documented, "versions": stack, "error": error}
