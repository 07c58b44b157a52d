"""Figures, drawn with matplotlib from the aggregated tables (never from raw runs).

A marker is drawn at every measured point and a line joins the measured points in order,
whatever the grid (ks [0, 3, 6, 9, 12] get one line and one band). Every interval is the
mean's 95% t interval over trials (src/stats/intervals.py), and each title says so. Bands
stay inside the metric's range; a point with no measured neighbour with enough trials gets
an error bar instead of a band; a mean of fewer than MIN_TRIALS_FOR_BAND trials gets
neither but a note: at n = 2 the t interval is ±12.7 standard errors, wider than any score.
Collapsed runs (one class predicted) are in the means and counted in the legends;
diverged runs (non-finite loss) are left out and counted.

Fit for print: each figure is saved as a PNG and an SVG, its title wrapped inside the canvas,
its colours from PALETTE (colour-blind safe), and the means it draws as lines kept as its
DVC plot data (plot_data).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from textwrap import wrap
from weakref import WeakKeyDictionary

import matplotlib

matplotlib.use("Agg")  # headless: stages run without a display
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.text import Text
from scipy.stats import gaussian_kde

from src.stats.intervals import mean_ci

MIN_TRIALS_FOR_BAND = 3
MIN_RUNS_FOR_DENSITY = 10  # the permutation figure's density of finished runs
# Where a quantity can lie: bands are clipped to it.
VALUE_RANGE = {
    "accuracy": (0.0, 1.0),
    "f1": (0.0, 1.0),
    "mcc": (-1.0, 1.0),
    "pearson": (-1.0, 1.0),
    "spearman": (-1.0, 1.0),
    "eval_loss": (0.0, np.inf),
    "frobenius": (0.0, np.inf),
}


# Okabe & Ito's palette ("Color Universal Design", 2008): its colours stay distinct under the common
# colour-vision deficiencies. Its yellow (#F0E442) is left out: too pale for a line on white.
BLUE, ORANGE, GREEN, PURPLE, SKY, VERMILLION, BLACK = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#000000",
)
PALETTE = (BLUE, ORANGE, GREEN, PURPLE, SKY, VERMILLION, BLACK)
# a series beyond the palette's length repeats a colour with the next marker
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
LINE_STYLES = ("-", "--", ":", "-.")  # the same for lines drawn without markers (one point per step)
# heatmaps: ColorBrewer's diverging red-blue, readable under the common colour-vision deficiencies
DIVERGING = "RdBu"
DPI = 120  # the PNG's; the SVG beside it is vector


def series_colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def series_marker(i: int) -> str:
    return MARKERS[i // len(PALETTE) % len(MARKERS)]


# Where a figure is saved: one path or several (its PNG and its SVG), each in the format its suffix names.
Paths = Path | Sequence[Path]


# Each axis's mean lines as drawn (x, mean, ci_low, ci_high, n, series), until _finish writes them as the
# figure's DVC plot data.
_DRAWN: WeakKeyDictionary = WeakKeyDictionary()


class NothingToDraw(ValueError):
    """A figure has no rows: aggregate skips it and lists it as not run, with this reason."""


def runs_of(flags) -> list[np.ndarray]:
    """Positions of the maximal runs of True in `flags`: the points one band may span."""
    flags = np.asarray(flags, dtype=bool)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], flags.astype(int), [0]])))
    return [np.arange(start, stop) for start, stop in zip(edges[::2], edges[1::2])]


def _band(ax, x, low, high, n, colour, value_range=(-np.inf, np.inf)) -> bool:
    """Draw the 95% CI over the measured points (sorted by x) with n >= MIN_TRIALS_FOR_BAND,
    clipped to the value range: a band over each run of such neighbours, an error bar at a
    point alone; return whether any point had too few trials for either."""
    x, low, high, n = (np.asarray(v, dtype=float) for v in (x, low, high, n))
    enough = (n >= MIN_TRIALS_FOR_BAND) & np.isfinite(low) & np.isfinite(high)
    low, high = np.clip(low, *value_range), np.clip(high, *value_range)
    for idx in runs_of(enough):
        if len(idx) > 1:
            ax.fill_between(x[idx], low[idx], high[idx], color=colour, alpha=0.2, linewidth=0)
        else:
            ax.vlines(x[idx], low[idx], high[idx], color=colour, alpha=0.5, linewidth=3)
    return bool((n < MIN_TRIALS_FOR_BAND).any())


def _measured_line(ax, x, y, colour, label, style="-", marker="o", **kwargs) -> None:
    """Markers at every measured point, one line through them in order of x."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    order = np.argsort(x, kind="stable")
    ax.plot(x[order], y[order], style, marker=marker, color=colour, label=label, **kwargs)


def size_styles(sizes) -> dict[int, tuple[str, str]]:
    """(colour, marker) per training size, smallest first, the same in every panel of a figure."""
    return {size: (series_colour(i), series_marker(i)) for i, size in enumerate(sorted(set(sizes)))}


def plot_progressive(curves: pd.DataFrame, path: Paths) -> list[str]:
    """Paper Fig. 1: score against k per training size (solid, 95% CI band; a colour and
    marker per size) and the probe's score at layer k (dashed), one panel per task.

    `curves` is the plot table: task, curve ("finetune"/"probe"), series, k, mean, ci_low,
    ci_high, metric, diverged.
    """
    tasks = list(dict.fromkeys(curves["task"]))  # in the order the rows come (grid order)
    styles = size_styles(curves.loc[curves["curve"] == "finetune", "size"])
    fig, axes = plt.subplots(1, len(tasks), figsize=(max(6.4, 4.8 * len(tasks)), 4.2), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        rows = curves[curves["task"] == task]
        finetune = rows[rows["curve"] == "finetune"]
        for size in sorted(finetune["size"].unique()):
            shade, marker = styles[size]
            _line_with_band(
                ax, finetune[finetune["size"] == size], "k", f"finetune on {size} examples", shade, marker=marker
            )
        probe = rows[rows["curve"] == "probe"]
        if len(probe):
            seeds = int(probe["n"].min())
            examples = ", ".join(str(int(size)) for size in sorted(probe["size"].unique()))
            label = f"probe of layer k (frozen; trained on {examples} examples, {seeds} seeds)"
            _line_with_band(ax, probe, "k", label, BLACK, style="--")
        ax.set_title(task)
        ax.set_xlabel("k: pretrained encoder layers kept (0 = all reinitialised)")
        ax.set_ylabel(rows["metric"].iloc[0])
        ax.set_xticks(sorted(rows["k"].unique()))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return _finish(
        fig,
        path,
        "Progressive reinitialisation: layers k+1..L reinitialised, then finetuned\n(mean and 95% t CI over trials; "
        "probe: over seeds)",
    )


# Figures below share these helpers; each returns every text it shows (titles, tick
# labels, legend entries, annotations) so tests can read the figure without a display.

REFERENCES = {
    "full": ("all layers pretrained (k=L)", GREEN),
    "scratch": ("all layers reinitialised (k=0)", VERMILLION),
}
K_LABEL = "k: pretrained encoder layers kept (0 = all reinitialised)"


_THIN = f" (no band where n < {MIN_TRIALS_FOR_BAND} trials)"


def _range(rows: pd.DataFrame) -> tuple[float, float]:
    """Where the rows' metric can lie (unbounded for a metric VALUE_RANGE does not name)."""
    return VALUE_RANGE.get(rows["metric"].iloc[0], (-np.inf, np.inf))


def _require(table: pd.DataFrame, figure: str) -> None:
    if table.empty:
        raise NothingToDraw(f"no rows to plot for {figure}")


def _excluded(rows: pd.DataFrame) -> str:
    """Legend suffix counting the diverged runs left out of a mean and the collapsed runs kept in it."""
    diverged = int(rows["diverged"].sum()) if "diverged" in rows else 0
    collapsed = int(rows["collapsed"].sum()) if "collapsed" in rows else 0
    parts = [
        f"{diverged} diverged run{'s' if diverged != 1 else ''} excluded" if diverged else "",
        f"{collapsed} collapsed run{'s' if collapsed != 1 else ''} included" if collapsed else "",
    ]
    return f" ({'; '.join(filter(None, parts))})" if any(parts) else ""


def _groups(table: pd.DataFrame) -> list[tuple[str, int, pd.DataFrame]]:
    """(task, size, rows) for each (task, training size), in the order the rows come."""
    keys = dict.fromkeys(zip(table["task"], table["size"]))
    return [(task, size, table[(table["task"] == task) & (table["size"] == size)]) for task, size in keys]


def _panels(table: pd.DataFrame, columns: int = 3) -> tuple[plt.Figure, list]:
    """A figure with one axis per (task, size), wrapped `columns` to a row: (fig, [(ax, task, size, rows)])."""
    groups = _groups(table)
    ncols = min(len(groups), columns)
    nrows = -(-len(groups) // ncols)
    # at least 9 inches wide: the two-line suptitles must fit above a single panel
    fig, axes = plt.subplots(nrows, ncols, figsize=(max(9.0, 4.8 * ncols), 3.9 * nrows), squeeze=False)
    for ax in axes.flat[len(groups) :]:
        ax.set_visible(False)
    return fig, [(ax, *group) for ax, group in zip(axes.flat, groups)]


def _label(ax, task: str, size: int, xlabel: str, ylabel: str) -> None:
    ax.set_title(f"{task}, {size} training examples", fontsize=9)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)


def _line_with_band(
    ax,
    rows: pd.DataFrame,
    x: str,
    label: str,
    colour,
    quantity: str | None = None,
    marker: str = "o",
    style: str = "-",
) -> None:
    """Means over `x`, one line through the measured points, with their 95% t CI as a band
    (clipped to the quantity's range; none where n is too small, and the legend says so);
    the line's numbers are kept for the figure's DVC plot data (_finish)."""
    rows = rows.sort_values(x)
    quantity = quantity or (rows["metric"].iloc[0] if "metric" in rows and len(rows) else "")
    thin = _band(
        ax, rows[x], rows["ci_low"], rows["ci_high"], rows["n"], colour, VALUE_RANGE.get(quantity, (-np.inf, np.inf))
    )
    shown = label + _excluded(rows) + (_THIN if thin else "")
    _measured_line(ax, rows[x], rows["mean"], colour, shown, style, marker, markersize=4)
    _keep(ax, rows, x, label)


def _keep(ax, rows: pd.DataFrame, x: str, series: str) -> None:
    """Keep the means the axis draws over `x` (with their CI and n) for the figure's plot data."""
    _DRAWN.setdefault(ax, []).append(
        rows[[x, "mean", "ci_low", "ci_high", "n"]].rename(columns={x: "x"}).assign(series=series)
    )


def _errorbar(ax, x, mean, low, high, n=None, value_range=(-np.inf, np.inf), **style) -> None:
    """Means with their 95% CI as error bars, clipped to the value range; a point with fewer
    than MIN_TRIALS_FOR_BAND trials (or a NaN bound) is drawn bare."""
    mean, low, high = (np.atleast_1d(np.asarray(v, dtype=float)) for v in (mean, low, high))
    low, high = np.clip(low, *value_range), np.clip(high, *value_range)
    if n is not None:
        thin = np.atleast_1d(np.asarray(n, dtype=float)) < MIN_TRIALS_FOR_BAND
        low, high = np.where(thin, mean, low), np.where(thin, mean, high)
    yerr = np.array([mean - low, high - mean], dtype=float)
    ax.errorbar(x, mean, yerr=yerr, fmt="o", capsize=3, markersize=5, **style)


def _references(ax, references: pd.DataFrame, task: str, size: int) -> None:
    """Dashed lines at the all-pretrained and from-scratch means with a light band: their
    95% t CI over trials (a NaN band is left out)."""
    rows = references[(references["task"] == task) & (references["size"] == size)]
    for ref in rows.itertuples():
        name, colour = REFERENCES[ref.reference]
        low, high = ref.ci_low, ref.ci_high
        ax.axhline(ref.mean, linestyle="--", linewidth=1, color=colour, label=f"{name}, n={int(ref.n)}")
        if np.isfinite(low) and np.isfinite(high):
            ax.axhspan(low, high, color=colour, alpha=0.12, linewidth=0)


def _heatmap(ax, colour: np.ndarray, texts: np.ndarray, limit: float, rows: list, columns: list):
    """Cells coloured on a diverging scale symmetric about 0 (NaN = blank), each annotated with its text."""
    image = ax.imshow(colour, cmap=DIVERGING, vmin=-limit, vmax=limit, aspect="auto")
    ax.patch.set(hatch="//", edgecolor="0.85")  # NaN cells are transparent: hatched, unlike a white 0
    for (i, j), text in np.ndenumerate(texts):
        if text:  # white on the darkest cells so the number stays readable
            ax.text(
                j,
                i,
                text,
                ha="center",
                va="center",
                fontsize=7,
                color="white" if abs(colour[i, j]) > 0.6 * limit else "black",
            )
    ax.set_xticks(range(len(columns)), columns)
    ax.set_yticks(range(len(rows)), rows)
    return image


def _symmetric_limit(values) -> float:
    """Largest |value| for a colour scale centred at 0 (1 when all are 0 or NaN, so the scale is defined)."""
    values = np.asarray(values, dtype=float)
    return float(np.abs(values[np.isfinite(values)]).max(initial=0)) or 1.0


def _fit_title(fig: plt.Figure, title: str) -> None:
    """The suptitle, each line wrapped at words until it fits the canvas's width."""
    text = fig.suptitle(title, fontsize=9)
    room = 0.96 * fig.bbox.width
    lines = title.split("\n")
    longest = max(map(len, lines))
    while text.get_window_extent().width > room and longest > 20:
        longest = int(longest * 0.9)
        text.set_text("\n".join(part for line in lines for part in wrap(line, longest)))


def plot_data(fig: plt.Figure) -> pd.DataFrame:
    """Every mean line the figure draws, one row per point: its panel (the axis's title and
    y label), x label, series (the legend's name), x, mean, 95% t CI and n."""
    parts = [
        drawn.assign(panel=" · ".join(filter(None, [ax.get_title(), ax.get_ylabel()])), x_label=ax.get_xlabel())
        for ax in fig.axes
        for drawn in _DRAWN.get(ax, [])
    ]
    columns = ["panel", "x_label", "series", "x", "mean", "ci_low", "ci_high", "n"]
    return pd.concat(parts, ignore_index=True)[columns].round(5) if parts else pd.DataFrame(columns=columns)


def _finish(fig: plt.Figure, path: Paths, title: str) -> list[str]:
    """Title the figure inside its canvas and save it to each path, in the format its suffix
    names: a PNG for the report and docs, an SVG for print, a CSV of its mean lines for DVC
    (plot_data; none written where it draws none). Return every text it shows."""
    _fit_title(fig, title)
    fig.tight_layout()
    for each in [path] if isinstance(path, Path) else path:
        if each.suffix == ".csv":
            data = plot_data(fig)
            if len(data):
                data.to_csv(each, index=False)
            else:
                each.unlink(missing_ok=True)
            continue
        # no timestamp and fixed ids in an SVG: an unchanged figure is unchanged bytes
        metadata = {"Date": None} if each.suffix == ".svg" else {}
        with plt.rc_context({"svg.hashsalt": "figures"}):
            fig.savefig(each, dpi=DPI, metadata=metadata)
    texts = [t.get_text() for t in fig.findobj(Text) if t.get_text()]
    plt.close(fig)
    return texts


def plot_blocks(points: pd.DataFrame, references: pd.DataFrame, path: Paths) -> list[str]:
    """Paper Fig. 2: score against the position of a window of consecutive layers that is
    reinitialised (or is the only part kept pretrained), with the all-pretrained and
    from-scratch scores as dashed references. One panel per (task, size)."""
    _require(points, "block reinitialisation (Fig. 2)")
    schemes = {
        "block_reinit": ("reinitialise window", BLUE),
        "block_preserve": ("preserve window only", ORANGE),
    }
    fig, panels = _panels(points)
    for ax, task, size, rows in panels:
        for scheme, (label, colour) in schemes.items():
            if (rows["scheme"] == scheme).any():
                _line_with_band(ax, rows[rows["scheme"] == scheme], "layer", label, colour)
        _references(ax, references, task, size)
        windows = rows.drop_duplicates("layer").sort_values("layer")
        ax.set_xticks(
            windows["layer"],
            [f"{int(first)}-{int(first + width - 1)}" for first, width in zip(windows["layer"], windows["window"])],
        )
        _label(ax, task, size, "window of layers (first-last)", rows["metric"].iloc[0])
    return _finish(
        fig,
        path,
        "Block reinitialisation: a window of layers reinitialised, or only it kept pretrained, then finetuned\n(mean "
        "and 95% t CI over trials; dashed: references, band = their 95% t CI)",
    )


def plot_single_layer(points: pd.DataFrame, references: pd.DataFrame, path: Paths) -> list[str]:
    """Paper App. C Fig. 5: score when only layer l is reinitialised, for each l, with the
    all-pretrained and from-scratch references. One panel per (task, size)."""
    _require(points, "single-layer reinitialisation (App. C)")
    fig, panels = _panels(points)
    for ax, task, size, rows in panels:
        rows = rows.sort_values("layer")
        thin = bool((rows["n"] < MIN_TRIALS_FOR_BAND).any())
        _errorbar(
            ax,
            rows["layer"],
            rows["mean"],
            rows["ci_low"],
            rows["ci_high"],
            rows["n"],
            _range(rows),
            color=BLUE,
            label="only this layer reinitialised" + _excluded(rows) + (_THIN.replace("band", "bar") if thin else ""),
        )
        _keep(ax, rows, "layer", "only this layer reinitialised")
        _references(ax, references, task, size)
        ax.set_xticks(rows["layer"])
        _label(ax, task, size, "reinitialised layer", rows["metric"].iloc[0])
    return _finish(
        fig,
        path,
        "Single-layer reinitialisation, then finetuning\n(mean and 95% t CI over trials; dashed: references, band = "
        "their 95% t CI)",
    )


def plot_permutation(runs: pd.DataFrame, references: pd.DataFrame, path: Paths) -> list[str]:
    """Paper Fig. 3: score of each run whose pretrained layers were shuffled before
    finetuning (jittered points), their density (left, from MIN_RUNS_FOR_DENSITY finished runs:
    a density of a few points is their jitter), mean and 95% t CI (right), and the
    original-order and from-scratch references with their 95% t CI. One panel per (task, size)."""
    _require(runs, "layer permutation (Fig. 3)")
    rng = np.random.default_rng(0)  # same jitter on every redraw
    fig, panels = _panels(runs)
    for ax, task, size, rows in panels:
        finished = rows[rows["status"] == "ok"]
        ok = finished["value"].to_numpy(dtype=float)
        collapsed = (
            finished["collapsed"].fillna(False).to_numpy(dtype=bool)
            if "collapsed" in finished
            else np.zeros(len(ok), dtype=bool)
        )
        diverged = int((rows["status"] != "ok").sum())
        label = (
            f"permuted-layer runs ({len(ok)} finished"
            + (f"; {diverged} diverged, not plotted" if diverged else "")
            + ")"
        )
        jitter = rng.uniform(-0.06, 0.06, len(ok))
        ax.scatter(jitter[~collapsed], ok[~collapsed], s=14, color=BLUE, alpha=0.7, label=label)
        if collapsed.any():  # hollow: predicted one class for the whole eval set (kept in the mean)
            ax.scatter(
                jitter[collapsed],
                ok[collapsed],
                s=14,
                facecolors="none",
                edgecolors=BLUE,
                label=f"of which collapsed to one class: {int(collapsed.sum())} (hollow; in the mean)",
            )
        if len(ok) >= MIN_RUNS_FOR_DENSITY and len(np.unique(ok)) >= 2:  # a KDE needs runs and spread
            ys = np.linspace(ok.min() - np.ptp(ok) * 0.3, ok.max() + np.ptp(ok) * 0.3, 200)
            density = gaussian_kde(ok)(ys)
            ax.fill_betweenx(
                ys,
                -0.15 - 0.4 * density / density.max(),
                -0.15,
                color=BLUE,
                alpha=0.25,
                linewidth=0,
                label="density of ok runs (KDE)",
            )
        if len(ok):
            mean, half, n = mean_ci(ok)
            _errorbar(
                ax,
                0.25,
                mean,
                mean - half,
                mean + half,
                n,
                _range(rows),
                color=BLACK,
                label="mean, 95% t CI" + (_THIN.replace("band", "bar") if n < MIN_TRIALS_FOR_BAND else ""),
            )
        _references(ax, references, task, size)
        ax.set_xlim(-0.7, 0.5)
        ax.set_xticks([])
        _label(ax, task, size, "", rows["metric"].iloc[0])
    return _finish(
        fig,
        path,
        "Layer permutation: pretrained encoder layers shuffled, then finetuned\n(points: runs; bar: mean and 95% t "
        "CI over trials; dashed: references, band = their 95% t CI)",
    )


def plot_runs_at_smallest_size(runs: pd.DataFrame, path: Paths) -> list[str]:
    """Paper Fig. 4 (App. B): every progressive run at each task's smallest training size,
    one jittered point per run at its k, and the mean over the finished runs (dotted).
    Diverged runs are not plotted and are counted; collapsed runs are hollow and in the mean."""
    _require(runs, "every run at the smallest size (Fig. 4)")
    smallest = runs.groupby("task")["size"].transform("min")
    runs = runs[runs["size"] == smallest]
    rng = np.random.default_rng(0)  # same jitter on every redraw
    fig, panels = _panels(runs)
    for ax, task, size, rows in panels:
        finished = rows[rows["status"] == "ok"].sort_values("k")
        collapsed = finished["collapsed"].fillna(False).astype(bool).to_numpy()
        x = finished["k"].to_numpy(dtype=float) + rng.uniform(-0.15, 0.15, len(finished))
        diverged = int((rows["status"] != "ok").sum())
        label = f"one run ({len(finished)} finished" + (f"; {diverged} diverged, not plotted" if diverged else "") + ")"
        ax.scatter(x[~collapsed], finished["value"][~collapsed], s=10, color=BLUE, alpha=0.6, label=label)
        if collapsed.any():
            ax.scatter(
                x[collapsed],
                finished["value"][collapsed],
                s=10,
                facecolors="none",
                edgecolors=BLUE,
                label=f"of which collapsed to one class: {int(collapsed.sum())} (hollow; in the mean)",
            )
        means = _means(finished, "value", ["k"])
        _line_with_band(ax, means, "k", "mean over runs, 95% t CI", BLACK, rows["metric"].iloc[0], style=":")
        ax.set_xticks(sorted(rows["k"].unique()))
        _label(ax, task, size, K_LABEL, rows["metric"].iloc[0])
    return _finish(
        fig,
        path,
        "Progressive reinitialisation, every run at the smallest training size (paper Fig. 4)\n(points: runs, "
        "jittered in x; dotted: their mean, band: its 95% t CI over trials)",
    )


def plot_step_losses(curves: pd.DataFrame, path: Paths, title: str) -> list[str]:
    """Huang et al. Figs. 1 and 4: training loss against finetuning steps, one line per
    series (a k, or an intermediate task), the mean over trials at each step with its 95% t
    CI as a band, both as a running mean over a twentieth of the steps (one step of a small
    batch is noisy). One panel per (task, size)."""
    _require(curves, title)
    fig, panels = _panels(curves)
    for ax, task, size, rows in panels:
        for i, name in enumerate(dict.fromkeys(rows["series"])):
            line = rows[rows["series"] == name].sort_values("step")
            window = max(1, len(line) // 20)
            smooth = line[["loss", "ci_low", "ci_high"]].rolling(window, min_periods=1).mean()
            trials = int(line["n"].max())
            _line_with_band(
                ax,
                line.assign(mean=smooth["loss"], ci_low=smooth["ci_low"], ci_high=smooth["ci_high"]),
                "step",
                f"{name} ({trials} trial{'s' if trials != 1 else ''})",
                series_colour(i),
                "eval_loss",
                marker="",
                style=LINE_STYLES[i // len(PALETTE) % len(LINE_STYLES)],
            )
        _label(ax, task, size, "finetuning step", "training loss")
    return _finish(
        fig,
        path,
        f"{title}\n(mean and 95% t CI over trials at each step, n = trials in the legend; running mean over 1/20 of "
        "the steps)",
    )


REMOVAL_PATTERNS = {
    "top": ("top layers removed", BLUE),
    "bottom": ("bottom layers removed", ORANGE),
    "alternate": ("alternate layers removed (from the top)", PURPLE),
}


def plot_remove(points: pd.DataFrame, references: pd.DataFrame, path: Paths) -> list[str]:
    """Huang et al. 6.2 / Sajjad et al. 2020: score against the number of encoder layers
    deleted before finetuning, one line per removal pattern (top, bottom, alternate), each
    listed set as its own point named by its layers, with the full model (nothing removed)
    and from-scratch references dashed. One panel per (task, size)."""
    _require(points, "layer removal")
    points = points.assign(layers_removed=points["removed"].map(len))
    fig, panels = _panels(points)
    for ax, task, size, rows in panels:
        for pattern, (label, colour) in REMOVAL_PATTERNS.items():
            if (rows["removal"] == pattern).any():
                _line_with_band(ax, rows[rows["removal"] == pattern], "layers_removed", label, colour)
        for row in rows[rows["removal"] == "listed"].itertuples():
            name = "layers " + ", ".join(map(str, row.removed)) + " removed"
            _errorbar(
                ax,
                [row.layers_removed],
                row.mean,
                row.ci_low,
                row.ci_high,
                row.n,
                VALUE_RANGE.get(row.metric, (-np.inf, np.inf)),
                color=BLACK,
                label=None,
            )
            ax.annotate(name + _excluded(rows.loc[[row.Index]]), (row.layers_removed, row.mean), fontsize=7)
        _references(ax, references, task, size)
        ax.set_xticks(sorted(rows["layers_removed"].unique()))
        _label(ax, task, size, "encoder layers removed", rows["metric"].iloc[0])
    return _finish(
        fig,
        path,
        "Layer removal: encoder layers deleted, the shallower model finetuned\n(mean and 95% t CI over trials; "
        "dashed: references, band = their 95% t CI)",
    )


def plot_heads(
    changes: pd.DataFrame,
    references: pd.DataFrame,
    path: Paths,
    layers: Sequence[int] = (),
    heads: Sequence[int] = (),
) -> list[str]:
    """Attention-head reinitialisation (Huang et al.): change in mean score against the
    un-reinitialised baseline, layers × heads, a cell for every (layer, head) the study ran
    (`layers`, `heads`; blank and hatched where no run finished). One panel per (task, size).

    The colour scale ends at ± the half-width of the baseline's 95% t CI over trials, so a
    change within the baseline's own noise stays pale; beyond it the colour saturates (the
    cell's number says how far). Without that interval (fewer than 2 baseline trials) the
    scale is the largest |change| and the colourbar says it is not tied to the noise."""
    _require(changes, "attention-head reinitialisation")
    fig, panels = _panels(changes)
    for ax, task, size, rows in panels:
        grid = rows.pivot(index="layer", columns="head_index", values="change")
        grid = grid.reindex(index=sorted(set(grid.index) | set(layers)), columns=sorted(set(grid.columns) | set(heads)))
        colour = grid.to_numpy(dtype=float)
        texts = np.vectorize(lambda v: f"{v:+.3f}" if np.isfinite(v) else "", otypes=[object])(colour)
        half, label = _baseline_noise(references, task, size)
        limit = half or _symmetric_limit(colour)
        image = _heatmap(ax, colour, texts, limit, list(grid.index), list(grid.columns))
        bar = fig.colorbar(image, ax=ax, extend="both" if half else "neither")
        bar.set_label(label, fontsize=7)
        ax.set_title(f"{task}, {size} training examples (≥{int(rows['n'].min())} runs per cell)", fontsize=9)
        ax.set_xlabel("reinitialised attention head")
        ax.set_ylabel("layer")
    return _finish(
        fig,
        path,
        "Attention-head reinitialisation: mean score minus the un-reinitialised baseline's\n(colour scale: ± the "
        "half-width of the baseline's 95% t CI over trials)",
    )


def _baseline_noise(references: pd.DataFrame, task: str, size: int) -> tuple[float | None, str]:
    """(half-width of the all-pretrained baseline's 95% t CI, the colourbar's label saying what the scale is)."""
    full = references[(references["task"] == task) & (references["size"] == size) & (references["reference"] == "full")]
    half = float((full["ci_high"] - full["ci_low"]).iloc[0] / 2) if len(full) else np.nan
    if np.isfinite(half) and half > 0:
        return half, f"change in mean score; scale ends at ± {half:.3f},\nthe baseline's 95% t CI half-width"
    return None, "change in mean score; the baseline has no 95% t CI:\nscale = largest |change|, not its noise"


def plot_modifier(points: pd.DataFrame, path: Paths, title: str) -> list[str]:
    """App. E/F: score against k for each variant of the recipe (e.g. a larger learning rate
    on the reinitialised layers), 95% CI bands. One panel per (task, size)."""
    _require(points, title)
    colours = {variant: series_colour(i) for i, variant in enumerate(dict.fromkeys(points["variant"]))}  # every panel
    fig, panels = _panels(points)
    for ax, task, size, rows in panels:
        for variant, colour in colours.items():
            if (rows["variant"] == variant).any():
                _line_with_band(ax, rows[rows["variant"] == variant], "k", variant, colour)
        ax.set_xticks(sorted(rows["k"].unique()))
        _label(ax, task, size, K_LABEL, rows["metric"].iloc[0])
    return _finish(fig, path, title)


def plot_epochs(curves: pd.DataFrame, path: Paths) -> list[str]:
    """App. D: eval loss and the metric over finetuning epochs, one line per k with 95% CI
    bands; one row of panels per (task, size) (a task reporting several metrics gets a column each)."""
    _require(curves, "training curves (App. D)")
    groups = _groups(curves)
    quantities = [
        ["eval_loss", *(q for q in dict.fromkeys(rows["quantity"]) if q != "eval_loss")] for _, _, rows in groups
    ]
    ncols = max(map(len, quantities))
    fig, axes = plt.subplots(len(groups), ncols, figsize=(4.8 * ncols, 3.4 * len(groups)), squeeze=False)
    for axis_row, (task, size, rows), names in zip(axes, groups, quantities):
        ks = sorted(rows["k"].unique())
        for ax, quantity in zip(axis_row, names):
            for i, k in enumerate(ks):
                line = rows[(rows["quantity"] == quantity) & (rows["k"] == k)]
                _line_with_band(ax, line, "epoch", f"k={k}", series_colour(i), quantity, series_marker(i))
            ax.set_xticks(sorted(rows["epoch"].unique()))
            _label(ax, task, size, "epoch", "eval loss" if quantity == "eval_loss" else quantity)
        for ax in axis_row[len(names) :]:
            ax.set_visible(False)
    return _finish(fig, path, "Training curves per k (mean and 95% t CI over trials)")


def plot_weight_change(table: pd.DataFrame, path: Paths) -> list[str]:
    """Seed study 003 Fig. 3: Frobenius norm (the paper's L2 distance, the norm the claim
    later_layers_move_more tests) of the finetuning change of each layer's 'output' weight
    against layer, one line per training size (the same colour and marker in every panel):
    mean over runs with its 95% t CI as a band; top raw, bottom min-max normalised per line
    (the band scaled with its mean). One column per task.

    `table`: task, size, layer, sublayer, mean, ci_low, ci_high, n (the Frobenius norm's)."""
    output = table[table["sublayer"] == "output"]
    _require(output, "weight change (output sublayer)")
    tasks = list(dict.fromkeys(output["task"]))
    styles = size_styles(output["size"])
    fig, axes = plt.subplots(2, len(tasks), figsize=(max(6.4, 4.8 * len(tasks)), 6.6), squeeze=False, sharex="col")
    for (raw_ax, normalised_ax), task in zip(axes.T, tasks):
        rows = output[output["task"] == task]
        for size in sorted(rows["size"].unique()):
            line = rows[rows["size"] == size].sort_values("layer")
            colour, marker = styles[size]
            label = f"{size} training examples, n={int(line['n'].min())}"
            _line_with_band(raw_ax, line, "layer", label, colour, "frobenius", marker)
            low, spread = line["mean"].min(), np.ptp(line["mean"].to_numpy(dtype=float))
            scaled = line.assign(  # a flat line -> 0
                **{
                    column: (line[column] - low) / spread if spread > 0 else 0.0
                    for column in ("mean", "ci_low", "ci_high")
                }
            )
            _line_with_band(normalised_ax, scaled, "layer", label, colour, marker=marker)
        raw_ax.set_title(task, fontsize=9)
        raw_ax.set_ylabel("‖ΔW_output‖_F (raw)")
        raw_ax.legend(fontsize=7)
        normalised_ax.set_title(task, fontsize=9)
        normalised_ax.set_ylabel("min-max normalised per line")
        normalised_ax.set_xlabel("layer")
        normalised_ax.set_xticks(sorted(rows["layer"].unique()))
        for ax in (raw_ax, normalised_ax):
            ax.grid(alpha=0.3)
    return _finish(
        fig,
        path,
        "Weight change in finetuning: Frobenius norm of the output sublayer's ΔW per layer, the norm "
        "later_layers_move_more tests\n(mean and 95% t CI over trials, n in the legend; raw numbers, every sublayer, "
        "Frobenius and spectral: see the table)",
    )


def plot_sequential(matrix: pd.DataFrame, path: Paths) -> list[str]:
    """Huang et al. Fig. 2: score on each final task after finetuning on an intermediate
    task first (diagonal = direct finetuning); cells annotated with mean [95% CI], coloured
    by the gain over the row's direct finetuning."""
    _require(matrix, "sequential finetuning")
    finals = list(dict.fromkeys(matrix["final_task"]))
    columns = list(dict.fromkeys([*finals, *matrix["intermediate_task"]]))  # finals first: the diagonal is the diagonal
    means = matrix.pivot(index="final_task", columns="intermediate_task", values="mean").reindex(
        index=finals, columns=columns
    )
    direct = np.array([means.at[task, task] for task in finals])
    texts = np.full(means.shape, "", dtype=object)
    for cell in matrix.itertuples():
        ci = (
            f"\n[{cell.ci_low:.2f}, {cell.ci_high:.2f}]"
            if np.isfinite(cell.ci_low) and np.isfinite(cell.ci_high)
            else ""
        )
        texts[finals.index(cell.final_task), columns.index(cell.intermediate_task)] = f"{cell.mean:.3f}{ci}"
    gain = means.to_numpy(dtype=float) - direct[:, None]
    metrics = matrix.groupby("final_task", sort=False)["metric"].first()
    fig, ax = plt.subplots(
        figsize=(max(6.4, 2.0 + 1.3 * len(columns)), 1.6 + 0.9 * len(finals))
    )  # wide enough for the title
    image = _heatmap(
        ax, gain, texts, _symmetric_limit(gain), [f"{task}\n({metrics[task]})" for task in finals], columns
    )
    fig.colorbar(image, ax=ax, label="gain over direct finetuning")
    ax.tick_params(axis="x", labelrotation=30)
    ax.set_xlabel("intermediate task (diagonal: direct finetuning)")
    ax.set_ylabel("final task (metric)")
    return _finish(
        fig,
        path,
        "Sequential finetuning: intermediate task, then final task\n(cell: mean [95% t CI] over trials; colour: gain "
        "over the row's direct finetuning)",
    )


def _means(table: pd.DataFrame, value: str, by: list[str]) -> pd.DataFrame:
    """Mean of `value` over trials per group of `by`, with its 95% t CI and n."""
    rows = []
    for key, group in table.groupby(by):
        mean, half, n = mean_ci(group[value])
        rows.append({**dict(zip(by, key)), "mean": mean, "ci_low": mean - half, "ci_high": mean + half, "n": n})
    return pd.DataFrame(rows, columns=[*by, "mean", "ci_low", "ci_high", "n"])


def _changed_rewinds(criticality: pd.DataFrame) -> pd.DataFrame:
    """The rewinds to a layer's start of finetuning whose weights differ from the pretrained
    layer's (measures/criticality.py gives the others the pretrained rewind's score), with every
    rewind to pretrained."""
    run = ["task", "size", "k", "trial", "layer"]
    pretrained = criticality[criticality["rewound_to"] == "pretrained"]
    initial = criticality[criticality["rewound_to"] == "initial"].merge(
        pretrained[[*run, "drop"]], on=run, how="left", suffixes=("", "_pretrained")
    )
    changed = initial[initial["drop"] != initial["drop_pretrained"]].drop(columns="drop_pretrained")
    return pd.concat([pretrained, changed], ignore_index=True)


REWOUND_TO = {"pretrained": ("rewound to pretrained", "-"), "initial": ("rewound to its start", "--")}


def plot_representation(cka: pd.DataFrame, weights: pd.DataFrame, criticality: pd.DataFrame, path: Paths) -> list[str]:
    """Per layer and k, one row per (task, size): CKA of each layer with the pretrained
    model's (0 = embeddings), ‖ΔW‖ of the layer (Frobenius over its six weight matrices),
    and the score drop with the layer rewound to its pretrained value (solid) and to its
    value at the start of finetuning (dashed, drawn only where that differs). Means over
    trials with their 95% t CI as bands; n per k in the first panel's legend."""
    _require(cka, "representation (CKA per layer)")
    groups = _groups(cka)
    fig, axes = plt.subplots(len(groups), 3, figsize=(13.5, 3.6 * len(groups)), squeeze=False)
    ks = sorted(cka["k"].dropna().unique())
    style = {k: (series_colour(i), series_marker(i)) for i, k in enumerate(ks)}
    rewinds = _changed_rewinds(criticality) if len(criticality) else criticality
    for (cka_ax, weight_ax, critical_ax), (task, size, rows) in zip(axes, groups):

        def at(table):  # an empty table may have no columns (no run recorded a weight change)
            return table[(table["task"] == task) & (table["size"] == size)] if len(table) else table

        for k, line in _means(rows, "cka", ["k", "layer"]).groupby("k"):
            _line_with_band(
                cka_ax, line, "layer", f"k={int(k)}, n={int(line['n'].min())}", *style[k][:1], "cka", style[k][1]
            )
        if len(weights):
            per_run = (
                at(weights).groupby(["k", "trial", "layer"])["frobenius"].apply(lambda f: float(np.sqrt((f**2).sum())))
            )
            for k, line in _means(per_run.reset_index(), "frobenius", ["k", "layer"]).groupby("k"):
                colour, marker = style.get(k, (BLACK, "o"))
                _line_with_band(weight_ax, line, "layer", f"k={int(k)}", colour, "frobenius", marker)
        for (k, target), line in _means(at(rewinds), "drop", ["k", "rewound_to", "layer"]).groupby(["k", "rewound_to"]):
            colour, marker = style.get(k, (BLACK, "o"))
            name, dash = REWOUND_TO[str(target)]
            _line_with_band(critical_ax, line, "layer", f"k={int(k)}, {name}", colour, "drop", marker, dash)
        critical_ax.axhline(0, color=BLACK, linewidth=0.6)
        for ax, ylabel in (
            (cka_ax, "CKA with the pretrained layer"),
            (weight_ax, "‖ΔW‖ (Frobenius, 6 matrices)"),
            (critical_ax, "score drop, layer rewound"),
        ):
            ax.set_title(f"{task}, {size} training examples", fontsize=9)
            ax.set_xlabel("layer")
            ax.set_ylabel(ylabel)
            ax.grid(alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=7)
        if at(criticality).empty:
            critical_ax.text(0.5, 0.5, "not measured (train.criticality)", ha="center", transform=critical_ax.transAxes)
    dashed = "; to its start, where different: dashed" if (rewinds["rewound_to"] == "initial").any() else ""
    return _finish(
        fig,
        path,
        "What finetuning changed per layer, per k (mean and 95% t CI over trials): representation (linear CKA, "
        "unbiased HSIC, on the eval inputs), weights,\nand reliance on the change (rewound to pretrained: solid"
        f"{dashed})",
    )
