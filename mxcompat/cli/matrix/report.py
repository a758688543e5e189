"""What ``mxcompat matrix`` reports: the table, JUnit XML per env, the exit code."""

import os
from xml.sax.saxutils import escape, quoteattr

from ._common import ERROR, FAILED, PASSED, SKIPPED


def table(envs):
    # Padded columns by hand (not tabulate/rich): a dozen lines against a dependency in
    # every legacy environment.
    rows = [("env", "MXNet", "Python", "NumPy", "result", "time", "first failing line")]
    for env in envs:
        c = env.combination
        rows.append(
            (
                env.name,
                c.mxnet,
                env.python_version or c.python,
                env.numpy_version or c.numpy_version or c.numpy,
                env.result,
                "%.1f s" % (env.install_s + env.run_s) if env.started else "-",
                (env.first_failure or "") if env.result != PASSED else "",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    lines = []
    for r in rows:
        lines.append("  ".join(r[i].ljust(widths[i]) for i in range(6)) + "  " + r[6])
    return "\n".join(line.rstrip() for line in lines)


def write_junit(envs, directory):
    os.makedirs(directory, exist_ok=True)
    for env in envs:
        failures = int(env.result == FAILED)
        errors = int(env.result == ERROR)
        skipped = int(env.result == SKIPPED)
        body = ""
        message = quoteattr(env.first_failure or env.reason or "")
        output = ""
        if env.log and os.path.exists(env.log) and env.result != PASSED:
            with open(env.log, errors="replace") as f:
                output = f.read()[-20000:]
        if failures:
            body = "<failure message=%s>%s</failure>" % (message, escape(output))
        elif errors:
            body = "<error message=%s>%s</error>" % (message, escape(output))
        elif skipped:
            body = "<skipped message=%s/>" % quoteattr(env.reason or "")
        xml = (
            '<?xml version="1.0" encoding="utf-8"?>\n'
            '<testsuites><testsuite name="mxcompat-matrix" tests="1" failures="%d" '
            'errors="%d" skipped="%d" time="%.1f"><testcase classname="mxcompat.matrix" '
            'name=%s time="%.1f">%s</testcase></testsuite></testsuites>\n'
            % (
                failures,
                errors,
                skipped,
                env.install_s + env.run_s,
                quoteattr(env.name),
                env.install_s + env.run_s,
                body,
            )
        )
        with open(os.path.join(directory, env.name + ".xml"), "w") as f:
            f.write(xml)


def _exit_code(envs, strict):
    ran = [e for e in envs if e.result != SKIPPED]
    if strict and len(ran) != len(envs):
        return 1
    if not ran:
        return 1
    return 0 if all(e.result == PASSED for e in ran) else 1
