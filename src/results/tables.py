"""The long-form tables every figure and claim reads: one row per run and metric, and
per-condition summaries (mean, 95% t CI, std, n, diverged and collapsed counts)."""

from __future__ import annotations

import math

import pandas as pd

from src.artefacts.evidence import plain
from src.artefacts.run_result import FALLBACK_SEPARATOR, RunResult
from src.config.schema import TrainConfig
from src.stats.intervals import mean_ci
from src.tasks.kinds import TaskKind


def summarise(table: pd.DataFrame, by: list[str], carry: tuple[str, ...] = ()) -> pd.DataFrame:
    """Mean, CI bounds, std, n, and the numbers of diverged and collapsed runs per group of a
    long table (`carry`: columns constant within a group, kept as they are).

    Only diverged runs (a training failure: non-finite loss) are left out of the mean and
    CI, and they are counted. Collapsed runs (one class predicted) are a real outcome: they
    are in the mean and CI, and counted so a reader sees how often it happens.
    """
    rows = []
    for key, group in table.groupby(by, sort=True, dropna=False):
        ok = group[group["status"] == "ok"]
        mean, half, n = mean_ci(ok["value"])
        std = float(ok["value"].std(ddof=1)) if n > 1 else math.nan
        carried = {column: group[column].iloc[0] for column in carry}
        collapsed = int(ok["collapsed"].fillna(False).astype(bool).sum()) if "collapsed" in ok else 0
        rows.append(
            {
                **dict(zip(by, key)),
                **carried,
                "mean": mean,
                "ci_low": mean - half,
                "ci_high": mean + half,
                "std": std,
                "n": n,
                "diverged": int((group["status"] != "ok").sum()),
                "collapsed": collapsed,
            }
        )
    return pd.DataFrame(rows)


def results_table(results: list[RunResult], study: str, num_layers: int) -> pd.DataFrame:
    """The long-form table of every run of `study`: one row per (condition, metric), with
    its status, whether it collapsed, the condition's slug and the slugs of its references
    (src/conditions/condition.py names both; nothing re-derives them).

    A diverged run has no scores; it still gets one row (value NaN) per metric of its
    task, so it is counted wherever its siblings are.
    """
    rows = []
    for result in results:
        condition = result.cond
        refs = {f"ref_{role}": ref.slug for role, ref in condition.references(num_layers).items()}
        share = result.majority_share
        for metric in result.scores or [result.metric]:
            value = result.scores.get(metric, math.nan)
            rows.append(
                {
                    "study": study,
                    **{key: value for key, value in result.condition.items() if key != "streams"},
                    # the seed streams as two factors: the training subset, and the random draws
                    # (reinit, head, order, dropout: one index under every design the studies offer)
                    "subset_stream": condition.stream("subset"),
                    "draws_stream": condition.stream("reinit"),
                    "slug": condition.slug,
                    "metric": metric,
                    "headline": metric == result.metric,
                    "value": value,
                    "status": result.status,
                    "majority_share": share,
                    "collapsed": TaskKind.collapsed(share),
                    "ref_full": refs["ref_full"],
                    "ref_scratch": refs["ref_scratch"],
                    "ref_baseline": refs.get("ref_baseline"),
                    "fallbacks": FALLBACK_SEPARATOR.join(result.fallbacks),
                }
            )
    return pd.DataFrame(rows)


def full_model(table: pd.DataFrame, train: TrainConfig, unique: list[str]) -> pd.DataFrame:
    """Rows of the unmodified full model (k = L: nothing reinitialised, pure finetuning),
    each once by `unique`: the conditions that are their own `full` reference."""
    return plain(table[table["slug"] == table["ref_full"]], train, unique)
