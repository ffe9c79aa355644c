"""When a speed figure can be shown as a library's speed: the rule, its margins and the load meter.

A figure is the median of its repetitions. It is stable when
  - it has at least MIN_REPETITIONS repetitions,
  - they agree: (max - min) / median <= SPREAD_MARGIN, and
  - the machine was quiet while it was measured: the other processes' CPU use (every process but
    mm-bench and its children, the runtime drivers) stayed within the cores the benchmark left
    free plus LOAD_MARGIN_CORES, and CPU time stolen by the hypervisor stayed under
    STEAL_MARGIN_CORES.
collect.py measures an unstable figure again (a bounded number of times, within a time budget);
the renderer shows the first stable attempt, or, when none is, the figure flagged unstable with
every attempt's spread and load, never as the library's speed. docs/benchmarks.md states the rule.
"""

import os
import pathlib
import time

MIN_REPETITIONS = 3
SPREAD_MARGIN = 0.15
LOAD_MARGIN_CORES = 0.25
STEAL_MARGIN_CORES = 0.1


def spread(values):
    """(max - min) / median of `values` (None for none, or a median of 0)."""
    if not values:
        return None
    ordered = sorted(values)
    median = ordered[len(ordered) // 2]
    if len(ordered) % 2 == 0:
        median = (ordered[len(ordered) // 2 - 1] + median) / 2
    return (ordered[-1] - ordered[0]) / median if median > 0 else None


def judge(repetitions, load, threads, cpus):
    """Why a figure from `repetitions` (seconds each) measured under `load` (a LoadMeter interval:
    other_cores, steal_cores; None when unknown) at `threads` threads on `cpus` CPUs cannot be
    shown as the library's speed: a list of reasons, empty when it is stable."""
    reasons = []
    if len(repetitions) < MIN_REPETITIONS:
        reasons.append(
            f"{len(repetitions)} repetition(s): fewer than {MIN_REPETITIONS}, spread unknown"
        )
    else:
        s = spread(repetitions)
        if s is None or s > SPREAD_MARGIN:
            shown = "?" if s is None else f"{100 * s:.0f} %"
            reasons.append(
                f"repetitions disagree: max - min is {shown} of the median "
                f"(margin {100 * SPREAD_MARGIN:.0f} %)"
            )
    if load is None:
        reasons.append("the machine's load was not measured")
    else:
        free = max(cpus - threads, 0)
        if load["other_cores"] > free + LOAD_MARGIN_CORES:
            reasons.append(
                f"measured under load: other processes used {load['other_cores']:.2f} cores "
                f"(allowed: the {free} free + {LOAD_MARGIN_CORES})"
            )
        if load.get("steal_cores", 0) > STEAL_MARGIN_CORES:
            reasons.append(
                f"{load['steal_cores']:.2f} cores of CPU time stolen by the hypervisor "
                f"(allowed: {STEAL_MARGIN_CORES})"
            )
    return reasons


def _machine_jiffies():
    """(busy, steal) jiffies of the whole machine from /proc/stat's cpu line."""
    fields = [int(v) for v in pathlib.Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    steal = fields[7] if len(fields) > 7 else 0
    # guest and guest_nice (fields 8, 9) are already counted in user and nice.
    return sum(fields[:8]) - idle - steal, steal


def _process_table():
    """pid -> (parent pid, utime + stime + cutime + cstime in jiffies), from /proc/*/stat."""
    table = {}
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue
        fields = text.rsplit(")", 1)[1].split()
        table[int(entry.name)] = (int(fields[1]), sum(int(v) for v in fields[11:15]))
    return table


def _tree_jiffies(root):
    """CPU jiffies of `root` and its descendants (the runtime drivers mm-bench starts)."""
    table = _process_table()
    total, pending = 0, [root]
    children = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    while pending:
        pid = pending.pop()
        total += table.get(pid, (0, 0))[1]
        pending += children.get(pid, [])
    return total


class LoadMeter:
    """The machine's load while something ran, less the load of one process tree (mm-bench's).

    sample() at the start of a measurement and after each; interval() says, for the time since
    the sample before the last (stretched back to at least WINDOW seconds: /proc counts CPU time
    in ticks of 10 ms, too coarse for a 20 ms benchmark alone), how many cores the other processes
    kept busy, how many were stolen, and the 1-minute load average before and after.
    """

    WINDOW = 0.5

    def __init__(self, pid):
        self.pid = pid
        self.hertz = os.sysconf("SC_CLK_TCK")
        self.samples = []

    def sample(self):
        busy, steal = _machine_jiffies()
        now = (time.monotonic(), busy, steal, _tree_jiffies(self.pid), os.getloadavg()[0])
        self.samples.append(now)
        # Only what a window can reach back to is kept.
        while len(self.samples) > 2 and self.samples[1][0] <= now[0] - self.WINDOW:
            self.samples.pop(0)

    def interval(self):
        if len(self.samples) < 2:
            return None
        last = self.samples[-1]
        first = self.samples[-2]
        for s in reversed(self.samples[:-1]):
            first = s
            if s[0] <= last[0] - self.WINDOW:
                break
        (t0, busy0, steal0, own0, avg0), (t1, busy1, steal1, own1, avg1) = first, last
        wall = max(t1 - t0, 1e-6)
        other = max(busy1 - busy0 - (own1 - own0), 0) / self.hertz / wall
        return {
            "seconds": round(wall, 3),
            "other_cores": round(other, 3),
            "steal_cores": round((steal1 - steal0) / self.hertz / wall, 3),
            "loadavg": [avg0, avg1],
        }
