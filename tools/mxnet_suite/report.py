"""The verdict of a run: both sides' outcomes compared by test id, and the same results as the
README's row and the manual's section of each release.  Works on the runner's JSON as well, so
several runs of one release (its REQUIRED files, then the others) make one row."""

from . import releases

FINAL = ("passed", "xpassed", "failed", "error", "skipped", "xfailed", "crashed")
# The test a file's time budget ended in: no outcome, and neither are the tests after it.
UNFINISHED = "unfinished"


def _passed(record):
    return record is not None and record["outcome"] in ("passed", "xpassed")


def _summary(results):
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for r in results.values():
        o = r["outcome"]
        key = (
            "passed"
            if o in ("passed", "xpassed")
            else "skipped"
            if o in ("skipped", "xfailed")
            else "failed"
        )
        counts[key] += 1
    return counts


def judged(sides):
    """The two sides of one file as judged: all of it, or, when its time budget ended on a
    side, the tests both sides finished (a test one side did not reach is no difference)."""
    ref, cand = sides["reference"], sides["candidate"]
    cut = any(r["outcome"] == UNFINISHED for side in (ref, cand) for r in side.values())
    if not cut:
        return ref, cand, False
    both = [
        t
        for t in ref
        if ref[t]["outcome"] != UNFINISHED
        and cand.get(t, {}).get("outcome", UNFINISHED) != UNFINISHED
    ]
    return {t: ref[t] for t in both}, {t: cand[t] for t in both}, True


def over_budget(per_file):
    """{file: tests judged} of the files whose time budget ended on either side."""
    out = {}
    for file, sides in per_file.items():
        ref, _, cut = judged(sides)
        if cut:
            out[file] = len(ref)
    return out


def compare(per_file, allowed=None):
    """Lines of the comparison, the differences and the regressions (a reference pass that is
    no pass on the candidate, unless ``allowed`` {id: reason} lists it), and the totals."""
    allowed = allowed or {}
    lines, differences, regressions = [], [], []
    head = "%-26s %22s   %22s" % ("file", "reference p/f/s", "candidate p/f/s")
    lines += [head, "-" * len(head)]
    totals = {"reference": [0, 0, 0], "candidate": [0, 0, 0]}
    for file, sides in per_file.items():
        ref, cand, cut = judged(sides)
        cells = []
        for side, results in (("reference", ref), ("candidate", cand)):
            c = _summary(results)
            for i, k in enumerate(("passed", "failed", "skipped")):
                totals[side][i] += c[k]
            cells.append("%d/%d/%d" % (c["passed"], c["failed"], c["skipped"]))
        lines.append(
            "%-26s %22s   %22s%s" % (file, cells[0], cells[1], "  (budget ended)" if cut else "")
        )
        for tid in sorted(set(ref) | set(cand)):
            a = ref.get(tid, {"outcome": "absent", "message": ""})
            b = cand.get(tid, {"outcome": "absent", "message": ""})
            if a["outcome"] == b["outcome"]:
                continue
            regression = a["outcome"] == "passed" and b["outcome"] != "passed"
            differences.append(
                {
                    "id": tid,
                    "reference": a,
                    "candidate": b,
                    "regression": regression,
                    "numpy_change": tid in allowed,
                }
            )
            if regression and tid not in allowed:
                regressions.append(tid)
    lines.append(
        "%-26s %22s   %22s"
        % (
            "total",
            "/".join(map(str, totals["reference"])),
            "/".join(map(str, totals["candidate"])),
        )
    )
    if differences:
        lines += ["", "tests whose outcome differs (reference -> candidate):"]
        for d in differences:
            tag = " [NumPy's change: %s]" % (allowed[d["id"]],) if d["numpy_change"] else ""
            lines.append(
                "  %s: %s -> %s%s"
                % (d["id"], d["reference"]["outcome"], d["candidate"]["outcome"], tag)
            )
            for side in ("reference", "candidate"):
                msg = d[side].get("message")
                if msg and d[side]["outcome"] != "passed":
                    lines.append("      %s: %s" % (side, msg))
    flaky = [
        (tid, r["flaky"])
        for sides in per_file.values()
        for tid, r in sorted(sides["reference"].items())
        if r.get("flaky")
    ]
    if flaky:
        lines += ["", "flaky on the reference (failed, then passed when run again):"]
        lines += ["  %s: first %s" % f for f in flaky]
    return lines, differences, regressions, totals


def label(result):
    """The release, and the candidate's Python where it is not the default one (runs on
    Python 3.14/3.15 are rows of their own, never merged with 3.13's)."""
    text = result.get("versions", {}).get("candidate", "")
    python = ".".join(text.split(" ", 1)[0].split(".")[:2]) if text else ""
    if python and python != releases.CANDIDATE_PYTHON:
        return "%s on Python %s" % (result["release"], python)
    return result["release"]


def merge(results):
    """One result per release (and candidate Python) from several runs' results (a later
    run's file replaces an earlier one's); a run that could not be made is kept as it is."""
    merged = {}
    results = [_without_deselected(r) for r in results]
    for r in results:
        key = label(r)
        if "per_file" not in r:
            merged.setdefault(key, r)
            continue
        m = merged.get(key)
        if m is None or "per_file" not in m:
            merged[key] = dict(
                r,
                per_file=dict(r["per_file"]),
                runs=1,
                stacks={side: [text] for side, text in r["versions"].items()},
            )
            continue
        m["per_file"].update(r["per_file"])
        m["files"] = list(m["per_file"])
        m["elapsed_s"] += r["elapsed_s"]
        m["standins"] = _standins(m.get("standins")) | _standins(r.get("standins"))
        m["runs"] += 1
        for side, text in r["versions"].items():
            if text not in m["stacks"][side]:
                m["stacks"][side].append(text)
    order = [rel.tag for rel in releases.RELEASES]

    def rank(key):
        release = merged[key]["release"]
        return (order.index(release) if release in order else 99, key)

    return [merged[k] for k in sorted(merged, key=rank)]


def _without_deselected(result):
    """A run's result without the ids ``DESELECT`` now lists (one listed after the run)."""
    if "per_file" not in result:
        return result
    per_file = {
        file: {
            side: {t: r for t, r in records.items() if t not in releases.DESELECT}
            for side, records in sides.items()
        }
        for file, sides in result["per_file"].items()
    }
    return dict(result, per_file=per_file)


def _judge(result):
    allowed = releases.ALLOWED.get(result["release"], {})
    lines, differences, regressions, totals = compare(result["per_file"], allowed)
    return allowed, lines, differences, regressions, totals


def row(result):
    """The README's line of one release."""
    if "per_file" not in result:
        return "| %s | could not be run: %s | | | | |" % (label(result), result["error"][:200])
    allowed, _, differences, _, totals = _judge(result)
    # Every judged test is counted once in its side's passed/failed/skipped.
    runs = {side: sum(counts) for side, counts in totals.items()}
    used = [d["id"] for d in differences if d["numpy_change"]]
    stack = releases.REFERENCE_STACK.get(result["release"], {})
    fixed = [d for d in differences if _fixed_here(d, stack)]
    other = [d for d in differences if not d["numpy_change"] and d not in fixed]
    cut = over_budget(result["per_file"])
    return "| %s | %d%s | %d / %d · %d / %d | %s | %s | %d min |" % (
        label(result),
        len(result["per_file"]),
        " (%d to the budget)" % len(cut) if cut else "",
        totals["reference"][0],
        runs["reference"],
        totals["candidate"][0],
        runs["candidate"],
        _allowed_cell(used, allowed),
        "; ".join(
            [
                "`%s` %s → %s" % (d["id"], d["reference"]["outcome"], d["candidate"]["outcome"])
                for d in other[:_ROW_MAX]
            ]
            + (
                ["and %d more (the manual's section)" % (len(other) - _ROW_MAX)]
                if other[_ROW_MAX:]
                else []
            )
            + (
                [
                    "%d that fail on the reference's own stack pass here (%s)"
                    % (len(fixed), "; ".join(sorted({stack[d["id"]][0] for d in fixed})))
                ]
                if fixed
                else []
            )
        )
        or "none",
        round(result["elapsed_s"] / 60),
    )


def section(result):
    """The manual's section of one release: stacks, files, and every test that is not a plain
    pass on both sides."""
    if "per_file" not in result:
        return "### MXNet %s\n\ncould not be run: %s\n" % (result["release"], result["error"])
    _, _, differences, _, totals = _judge(result)
    stack = releases.REFERENCE_STACK.get(result["release"], {})
    per_file = result["per_file"]
    out = [
        "### MXNet %s" % label(result),
        "",
        "- reference: Python %s" % _stacks(result, "reference"),
        "- candidate: Python %s" % _stacks(result, "candidate"),
        "- files (%d): %s" % (len(per_file), ", ".join(per_file)),
        "- passed/failed/skipped: reference %s, candidate %s; %d s in %d run(s)"
        % (
            "/".join(map(str, totals["reference"])),
            "/".join(map(str, totals["candidate"])),
            result["elapsed_s"],
            result.get("runs", 1),
        ),
    ]
    cut = over_budget(per_file)
    if cut:
        out.append(
            "- time budget ended (judged on the tests both sides finished): "
            + ", ".join("%s (%d tests)" % item for item in sorted(cut.items()))
        )
    both = sorted(
        tid
        for s in per_file.values()
        for tid, x in judged(s)[0].items()
        if not _passed(x)
        and x["outcome"] not in ("skipped", "xfailed")
        and s["candidate"].get(tid, {}).get("outcome") == x["outcome"]
    )
    out.append("- failing the same way on both sides: " + (", ".join(map(_code, both)) or "none"))
    flaky = sorted(
        "%s (first: %s)" % (_code(tid), x["flaky"][:100].replace("|", "\\|"))
        for s in per_file.values()
        for tid, x in s["reference"].items()
        if x.get("flaky")
    )
    out.append("- flaky on the reference (passed when run again): " + (", ".join(flaky) or "none"))
    crashed = sorted(
        "%s (%s)" % (_code(tid), side)
        for s in per_file.values()
        for side, records in s.items()
        for tid, x in records.items()
        if x["outcome"] == "crashed"
    )
    out.append("- crashed or hung (the file resumed without it): " + (", ".join(crashed) or "none"))
    for d in differences:
        msg = d["candidate"].get("message") or d["reference"].get("message") or ""
        out.append(
            "- differs: %s %s → %s%s: %s"
            % (
                _code(d["id"]),
                d["reference"]["outcome"],
                d["candidate"]["outcome"],
                " (allowed: NumPy's change)"
                if d["numpy_change"]
                else " (fails on the reference's own stack: %s)" % stack[d["id"]][1]
                if _fixed_here(d, stack)
                else "",
                msg[:160].replace("|", "\\|"),
            )
        )
    standins = _standins(result.get("standins"))
    if standins:
        out.append("- stand-ins the test files needed: " + "; ".join(sorted(standins)))
    return "\n".join(out) + "\n"


def _standins(recorded):
    """The stand-ins of a result as a set of lines; a list of candidate files in older runs."""
    if not recorded:
        return set()
    if isinstance(recorded, set):
        return recorded
    if isinstance(recorded, dict):
        return {"%s: %s" % item for item in recorded.items()}
    return {"candidate %s: distutils.version" % f for f in recorded}


_ROW_MAX = 6  # other differences named in a row; the manual's section has them all


def _allowed_cell(used, allowed):
    """``NEP 50: `test_acc` (test_metric.py:55); NumPy 1.23: ...``: the allowed differences of a
    row by NumPy change, each test at its line."""
    by_change = {}
    for tid in sorted(used, key=lambda t: (allowed[t].line, t)):
        name = tid.split("::")[-1]
        by_change.setdefault(allowed[tid].short, []).append("`%s` (%s)" % (name, allowed[tid].line))
    return "; ".join("%s: %s" % (c, ", ".join(ts)) for c, ts in sorted(by_change.items())) or "none"


def _fixed_here(difference, stack):
    """A reference failure its own stack causes (``releases.REFERENCE_STACK``), passing on the
    candidate: a difference, said as such, never a regression."""
    return (
        difference["id"] in stack
        and difference["reference"]["outcome"] != "passed"
        and difference["candidate"]["outcome"] == "passed"
    )


def _stacks(result, side):
    """One side's versions; those of later runs too where they differ (a rebuilt env)."""
    stacks = result.get("stacks", {}).get(side) or [result["versions"][side]]
    return stacks[0] + "".join("; in a later run: %s" % text for text in stacks[1:])


def _code(text):
    return "`%s`" % text


ROW_HEAD = (
    "| release | files | passed / run: reference · candidate "
    "| allowed differences (NumPy change, test line) | other differences | time |\n"
    "|---|---|---|---|---|---|"
)


def markdown(results):
    """The README's table and the manual's sections of ``results`` (merged per release)."""
    merged = merge(results)
    return (
        "\n".join([ROW_HEAD] + [row(r) for r in merged])
        + "\n\n"
        + "\n".join(section(r) for r in merged)
    )
