"""pytest's summary line: found in a run's output, counted, and totalled over tox envs.

The one reader of that line (``.ci/run``'s report, the benchmarks' MXNet-suite timing).  As a
program it reads the ``--result-json`` files of tox runs and prints one line per env
(its exit status, wall, setup and command time, its pytest summary; or why it was skipped), for
a failed env what failed and the end of its output, and last ``total: N passed, N failed, N
skipped``; the exit status says whether every env succeeded.

    python -m tools.pytest_summary .ci/logs/mx131.json .ci/logs/mx191.json
"""

import argparse
import json
import re
import sys

# "3 failed, 700 passed, 40 skipped, 2 warnings in 856.95s (0:14:16)", bare under -q, between
# "=" rules otherwise; "no tests ran in 0.01s" when nothing was collected.
_LINE = re.compile(
    r"^=*\s*((?:\d+ (?:passed|failed|errors?|skipped|deselected|xfailed|xpassed|warnings?)"
    r"(?:, )?)+ in [\d.]+s.*?|no tests ran.*?)\s*=*$",
    re.M,
)
_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|deselected|xfailed|xpassed|warnings?)\b")
# What a failed env shows besides its summary (-rfEs puts these lines in the short summary).
_FAILURE = re.compile(r"^(FAILED|ERROR) ", re.M)
TAIL = 60


def summary(text):
    """The last summary line in ``text`` (the output of one or more pytest runs), or None."""
    found = _LINE.findall(text)
    return found[-1].strip() if found else None


def counts(line):
    """Every count of a summary line by kind, plural: ``{"passed": 700, "warnings": 2}``."""
    out = {}
    for n, kind in _COUNT.findall(line or ""):
        kind = kind if kind.endswith("s") or kind.endswith("ed") else kind + "s"
        out[kind] = out.get(kind, 0) + int(n)
    return out


def totals(line):
    """``{"passed": n, "failed": n, "skipped": n}`` of a summary line; errors count as failed."""
    found = counts(line)
    return {
        "passed": found.get("passed", 0),
        "failed": found.get("failed", 0) + found.get("errors", 0),
        "skipped": found.get("skipped", 0),
    }


def _env_report(name, env):
    """(lines to print, counts, success) of one env of a tox result journal."""
    result = env.get("result", {})
    runs = env.get("test", [])
    output = "".join(r.get("output", "") + r.get("err", "") for r in runs)
    setup = sum(r.get("elapsed", 0) for r in env.get("setup", []))
    commands = sum(r.get("elapsed", 0) for r in runs)
    if result.get("skipped"):
        # tox --skip-missing-interpreters (.ci/run outside CI): say what was missing.
        version = ".".join(str(v) for v in env.get("python", {}).get("version_info", [])[:2])
        errors = [r.get("err", "").strip() for r in env.get("setup", []) if r.get("err")]
        why = " (%s)" % errors[-1].splitlines()[0] if errors and errors[-1] else ""
        line = "%-34s skipped: no Python %s here%s" % (name, version or "for it", why)
        return [line], totals(None), True
    line = summary(output)
    ok = bool(result.get("success"))
    lines = [
        # The wall time first: the figure a CI-time regression shows in.
        "%-34s rc=%-3s wall %4.0f s (setup %4.0f s, commands %4.0f s)  %s"
        % (
            name,
            result.get("exit_code", "?"),
            result.get("duration", setup + commands),
            setup,
            commands,
            line or "no pytest summary",
        )
    ]
    if not ok:
        failed = [x for x in output.splitlines() if _FAILURE.match(x)]
        lines.append("---- %s: what failed ----" % name)
        lines.extend(failed)
        lines.append("---- %s: last lines of its output ----" % name)
        lines.extend(output.splitlines()[-TAIL:])
    return lines, totals(line), ok


def report(journals, out=sys.stdout):
    """Print every env of the tox result journals (dicts) and the total; True if all passed."""
    total = {"passed": 0, "failed": 0, "skipped": 0}
    every_ok = True
    for journal in journals:
        for name, env in journal.get("testenvs", {}).items():
            # tox's packaging envs, and the envs of tox.ini this run did not select.
            if name.startswith(".") or "result" not in env:
                continue
            lines, found, ok = _env_report(name, env)
            every_ok = every_ok and ok
            for kind in total:
                total[kind] += found[kind]
            for line in lines:
                print(line, file=out)
    print("total: %(passed)d passed, %(failed)d failed, %(skipped)d skipped" % total, file=out)
    return every_ok


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.pytest_summary", description=__doc__)
    parser.add_argument("journals", nargs="+", help="tox --result-json files")
    args = parser.parse_args(argv)
    journals = []
    for path in args.journals:
        try:
            with open(path) as f:
                journals.append(json.load(f))
        except (OSError, ValueError) as e:
            # tox itself failed before it wrote its journal: a failure, said as such.
            print("%s: no tox result (%s)" % (path, e))
            journals.append({})
    ok = report(journals)
    return 0 if ok and all(journals) else 1


if __name__ == "__main__":
    sys.exit(main())
