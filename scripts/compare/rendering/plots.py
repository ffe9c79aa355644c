"""The plots: matplotlib figures of the derived data, as inline PNG (Plot objects).

Colours, line styles and labels follow data.configure(): a baseline is drawn dashed or hatched in
the colour of the backend it measures.
"""

import base64
import collections
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the non-interactive backend)

from .data import (  # noqa: E402
    BASELINES,
    DTYPE_ORDER,
    impl_colour,
    impl_label,
    impl_order,
    shape_kind,
)


class Plot:
    def __init__(self, title, png, series):
        self.title = title
        self.png = png
        self.series = series  # Number of plotted lines/bar groups: 0 means an empty plot.


def figure_png(fig):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def impl_style(impl):
    return {
        "linestyle": "--" if impl in BASELINES else "-",
        "marker": "o",
        "markersize": 3,
        "color": impl_colour(impl),
    }


def plot_lines(ax, lines):
    """Draws one line per implementation of `lines` ({impl: [(x, y), ...]}), in the report's
    order and styles; returns how many it drew."""
    for impl in sorted(lines, key=impl_order):
        points = sorted(lines[impl])
        ax.plot(
            [p[0] for p in points],
            [p[1] for p in points],
            label=impl_label(impl),
            **impl_style(impl),
        )
    return len(lines)


def plot_sweep(records, dtype, threads_list, peaks):
    fig, axes = plt.subplots(
        1, len(threads_list), figsize=(5.2 * len(threads_list), 3.8), squeeze=False, sharey=True
    )
    series = 0
    for ax, threads in zip(axes[0], threads_list):
        lines = collections.defaultdict(list)
        for r in records:
            if (
                r["kind"] == "execute"
                and r["dtype"] == dtype
                and r["threads"] == threads
                and shape_kind(r["shape"]) == "square"
                and r.get("rate_gflops")
            ):
                lines[r["impl"]].append((int(r["shape"].split("x")[0]), r["rate_gflops"]))
        series += plot_lines(ax, lines)
        peak = peaks.get((dtype, threads))
        if peak:
            ax.axhline(peak["gflops"], color="grey", linewidth=0.8, linestyle=":")
            ax.text(
                8,
                peak["gflops"],
                f" peak {peak['gflops']:.0f}",
                va="bottom",
                fontsize=7,
                color="grey",
            )
        ax.set_xscale("log", base=2)
        ax.set_xlabel("M = K = N")
        clock = "CPU time" if threads == 1 else "wall time"
        ax.set_title(
            f"{dtype}, {threads} thread{'s' if threads > 1 else ''} ({clock})", fontsize=10
        )
        ax.grid(True, alpha=0.3)
        if lines:
            ax.legend(fontsize=7)
    axes[0][0].set_ylabel("GFLOP/s")
    return Plot(f"{dtype}: GFLOP/s against size", figure_png(fig), series)


def plot_tiny(records, threads):
    tiny = [
        r
        for r in records
        if r["kind"] == "execute"
        and shape_kind(r["shape"]) == "tiny"
        and r["threads"] == threads
        and r.get("rate_seconds")
    ]
    shapes = sorted({r["shape"] for r in tiny})
    dtypes = [d for d in DTYPE_ORDER if any(r["dtype"] == d for r in tiny)]
    if not shapes:
        return Plot("tiny shapes", "", 0)
    fig, axes = plt.subplots(1, len(shapes), figsize=(4.6 * len(shapes), 3.6), squeeze=False)
    series = 0
    for ax, shape in zip(axes[0], shapes):
        impls = sorted({r["impl"] for r in tiny if r["shape"] == shape}, key=impl_order)
        width = 0.8 / max(len(impls), 1)
        for i, impl in enumerate(impls):
            xs, ys = [], []
            for j, dtype in enumerate(dtypes):
                for r in tiny:
                    if r["shape"] == shape and r["impl"] == impl and r["dtype"] == dtype:
                        xs.append(j + i * width)
                        ys.append(r["rate_seconds"] * 1e9)
            if xs:
                ax.bar(
                    xs,
                    ys,
                    width=width,
                    label=impl_label(impl),
                    color=impl_colour(impl),
                    hatch="//" if impl in BASELINES else None,
                    edgecolor="white",
                )
                series += 1
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(dtypes))], dtypes, fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("ns per call")
        ax.set_title(shape, fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    return Plot(
        f"tiny shapes: time per call, {threads} thread{'s' if threads > 1 else ''} "
        f"({'CPU' if threads == 1 else 'wall'} time)",
        figure_png(fig),
        series,
    )


def plot_scaling(records, threads_list):
    if len(threads_list) < 2:
        return Plot("thread scaling", "", 0)
    low, high = threads_list[0], threads_list[-1]
    by_key = {
        (r["impl"], r["dtype"], r["shape"], r["threads"]): r
        for r in records
        if r["kind"] == "execute" and r.get("rate_gflops")
    }
    dtypes = [d for d in DTYPE_ORDER if any(k[1] == d for k in by_key)]
    if not dtypes:  # No stable figure: nothing to draw.
        return Plot("thread scaling", "", 0)
    fig, axes = plt.subplots(
        1, len(dtypes), figsize=(3.6 * len(dtypes), 3.4), squeeze=False, sharey=True
    )
    series = 0
    for ax, dtype in zip(axes[0], dtypes):
        lines = collections.defaultdict(list)
        for (impl, d, shape, threads), r in by_key.items():
            if d != dtype or threads != high or shape_kind(shape) != "square":
                continue
            base = by_key.get((impl, d, shape, low))
            if base:
                lines[impl].append(
                    (int(shape.split("x")[0]), r["rate_gflops"] / base["rate_gflops"])
                )
        series += plot_lines(ax, lines)
        ax.axhline(high / low, color="grey", linewidth=0.8, linestyle=":")
        ax.set_xscale("log", base=2)
        ax.set_title(dtype, fontsize=10)
        ax.set_xlabel("M = K = N")
        ax.grid(True, alpha=0.3)
        if lines:
            ax.legend(fontsize=6)
    axes[0][0].set_ylabel(f"speed-up, {high} threads / {low}")
    return Plot(f"thread scaling: {high} threads against {low}", figure_png(fig), series)


def plot_accuracy(points, what, ylabel):
    """points: {(backend, dtype): [(k, value), ...]}."""
    dtypes = [d for d in DTYPE_ORDER if any(key[1] == d for key in points)]
    if not dtypes:
        return Plot(f"accuracy against K ({what})", "", 0)
    fig, axes = plt.subplots(1, len(dtypes), figsize=(3.6 * len(dtypes), 3.4), squeeze=False)
    series = 0
    for ax, dtype in zip(axes[0], dtypes):
        for (backend, d), values in sorted(
            points.items(), key=lambda kv: (impl_order(kv[0][0]), kv[0][1])
        ):
            if d != dtype or not values:
                continue
            values = sorted(values)
            ax.plot(
                [v[0] for v in values],
                [max(v[1], 1e-3) for v in values],
                ".",
                label=backend,
                color=impl_colour(backend),
                alpha=0.6,
            )
            series += 1
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("K")
        ax.set_title(dtype, fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel(ylabel)
    return Plot(f"accuracy against K: {what}", figure_png(fig), series)
