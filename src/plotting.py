"""Figures, drawn with matplotlib from the aggregated tables (never from raw runs)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: stages run without a display
import matplotlib.pyplot as plt
import pandas as pd


def plot_progressive(curves: pd.DataFrame, path: Path) -> None:
    """Paper Fig. 1: score against k per training size (solid, 95% CI band; darker = more
    data) and the probe's score at layer k (dashed), one panel per task.

    `curves` is the plot table: task, curve ("finetune"/"probe"), series, k, mean, ci_low,
    ci_high, metric, diverged.
    """
    tasks = list(dict.fromkeys(curves["task"]))  # in the order the rows come (grid order)
    fig, axes = plt.subplots(1, len(tasks), figsize=(max(6.4, 4.8 * len(tasks)), 4.2), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        rows = curves[curves["task"] == task]
        finetune = rows[rows["curve"] == "finetune"]
        sizes = sorted(finetune["size"].unique())
        for i, size in enumerate(sizes):
            line = finetune[finetune["size"] == size].sort_values("k")
            shade = plt.cm.Blues(0.45 + 0.55 * (i + 1) / len(sizes))
            diverged = int(line["diverged"].sum())
            label = f"finetune, n={size}" + (f" ({diverged} diverged runs excluded)" if diverged else "")
            ax.plot(line["k"], line["mean"], "o-", color=shade, label=label, markersize=4)
            ax.fill_between(line["k"], line["ci_low"], line["ci_high"], color=shade, alpha=0.2, linewidth=0)
        probe = rows[rows["curve"] == "probe"].sort_values("k")
        if len(probe):
            ax.plot(probe["k"], probe["mean"], "--", color="0.3", label="probe of layer k (frozen)")
        ax.set_title(task)
        ax.set_xlabel("k: pretrained encoder layers kept (0 = all reinitialised)")
        ax.set_ylabel(rows["metric"].iloc[0])
        ax.set_xticks(sorted(rows["k"].unique()))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Progressive reinitialisation: layers k+1..L reinitialised, then finetuned\n(mean and 95% t CI over trials)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
