"""Side-by-side timing: interleave the two sides (A B A B …) after a warm-up and report
medians and their ratio.  On a shared, noisy machine the ratio of interleaved medians is the
figure that counts; absolute times are printed for context only.

Not pyperf: its Runner times each benchmark in its own worker processes, one benchmark's
processes after the other's (checked with pyperf 2.10: A's three workers, then B's), so the two
sides of a pair never alternate and a load change on a shared machine lands in one side; and
each worker re-runs the setup (building and binding a ResNet, seconds), where these pairs
toggle the patches between calls in one process over one model."""

import gc
import statistics
import time


def timed(func, clock=time.perf_counter):
    start = clock()
    func()
    return clock() - start


def interleave(sides, reps, warmup=2, setup=None, clock=time.perf_counter):
    """Time each ``sides[name]()`` ``reps`` times, round-robin.

    ``setup(name)`` (untimed) runs before each timed call, e.g. to patch or unpatch.
    ``clock``: wall time by default; ``time.process_time`` (the CPU time of all the
    process's threads) for microsecond-scale work on a loaded machine, where waiting for a
    core would otherwise land in one side's timing; ``time.thread_time`` (this thread's CPU)
    for a call whose queued work other threads run meanwhile.
    Returns ``{name: [seconds, ...]}``.
    """
    names = list(sides)
    for _ in range(warmup):
        for name in names:
            if setup:
                setup(name)
            sides[name]()
    times = {name: [] for name in names}
    gc_was = gc.isenabled()
    gc.disable()  # a collection landing in one side's timing would be noise, not cost
    try:
        for rep in range(reps):
            # Alternate which side goes first so neither always follows the other.
            order = names if rep % 2 == 0 else names[::-1]
            for name in order:
                if setup:
                    setup(name)
                times[name].append(timed(sides[name], clock))
    finally:
        if gc_was:
            gc.enable()
    return times


def median(values):
    return statistics.median(values)


class Table:
    """Rows of (pair, side A, side B, median A, median B, ratio B/A, target)."""

    def __init__(self):
        self.rows = []

    def add(self, pair, a_name, a_times, b_name, b_times, target=None, unit="s"):
        a, b = median(a_times), median(b_times)
        ratio = (b / a) if a else (1.0 if b == a else float("nan"))
        row = {
            "pair": pair,
            "a": a_name,
            "b": b_name,
            "median_a": a,
            "median_b": b,
            "ratio": ratio,
            "target": target,
            "unit": unit,
            "reps": len(a_times),
        }
        self.rows.append(row)
        print(self.format_row(row), flush=True)
        return row

    @staticmethod
    def _fmt(seconds, unit):
        if unit == "KB":
            return "%.1f KB" % seconds
        if unit == "MB":
            return "%.2f MB" % seconds if abs(seconds) < 10 else "%.1f MB" % seconds
        if seconds >= 1:
            return "%.3f s" % seconds
        if seconds >= 1e-3:
            return "%.2f ms" % (seconds * 1e3)
        return "%.1f us" % (seconds * 1e6)

    def format_row(self, row):
        return "%-64s | %-28s %10s | %-28s %10s | %7.3fx | %s" % (
            row["pair"][:64],
            row["a"][:28],
            self._fmt(row["median_a"], row["unit"]),
            row["b"][:28],
            self._fmt(row["median_b"], row["unit"]),
            row["ratio"],
            row["target"] or "",
        )

    def header(self):
        return "%-64s | %-28s %10s | %-28s %10s | %8s | %s" % (
            "pair",
            "A",
            "median",
            "B",
            "median",
            "B/A",
            "target",
        )

    def markdown(self):
        """The rows as a Markdown table (for docs/performance.md and RESULTS.md)."""
        lines = [
            "| pair | A | median A | B | median B | B/A | target |",
            "|---|---|---:|---|---:|---:|---|",
        ]
        for row in self.rows:
            lines.append(
                "| %s | %s | %s | %s | %s | %.3fx | %s |"
                % (
                    row["pair"].strip(),
                    row["a"],
                    self._fmt(row["median_a"], row["unit"]),
                    row["b"],
                    self._fmt(row["median_b"], row["unit"]),
                    row["ratio"],
                    row["target"] or "",
                )
            )
        return "\n".join(lines)
