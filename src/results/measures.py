"""Tables of the per-run measurements (src/measures/, docs/measures.md).

metrics/cka.csv: each run's CKA of every layer (0 = embeddings .. L) with the same layer
of the pretrained model, on the task's eval inputs. metrics/criticality.csv: each run's
score with one layer rewound (to its pretrained or its initial value) and the drop.
metrics/head_importance.csv: each full-model run's head importance before and after
finetuning. metrics/head_importance_vs_reinit.csv: per head study, task and size, the
Spearman correlation of head importance with the measured drop from reinitialising that
head (the heads study, aggregate.head_changes), with its interval over heads where one is
calibrated at that number of heads (correlation_interval; docs/calibration.md)
and the permutation p (exact up to 8 heads).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from src.conditions.schemes import SCHEMES, scheme_of
from src.config.schema import StudyConfig
from src.results.aggregate import head_changes
from src.stats import hypothesis
from src.train.result import RunResult

RUN_COLUMNS = ["study", "task", "size", "slug", "scheme", "k", "trial"]
MEASURE_COLUMNS = {
    "cka": [*RUN_COLUMNS, "layer", "cka"],
    "criticality": [*RUN_COLUMNS, "layer", "rewound_to", "score", "drop"],
    "head_importance": ["task", "size", "slug", "trial", "layer", "head_index", "when", "importance"],
    "head_importance_vs_reinit": [
        "study",
        "task",
        "size",
        "when",
        "heads",
        "importance_trials",
        "reinit_trials",
        "spearman",
        "ci_low",
        "ci_high",
        "interval",
        "p_permutation",
    ],
}
BOOTSTRAP_RESAMPLES = 2000  # intervals over heads; the seed is fixed, so the table is reproducible


def _run(study: str, r: RunResult) -> dict:
    c = r.cond
    return {
        "study": study,
        "task": c.task,
        "size": c.size,
        "slug": c.slug,
        "scheme": c.scheme,
        "k": c.k,
        "trial": c.trial,
    }


def run_measures(results: dict[str, list[RunResult]]) -> dict[str, pd.DataFrame]:
    """cka, criticality and head_importance tables of every finished run that measured them."""
    ok = [(study, r) for study, rs in results.items() for r in rs if r.ok]
    cka = [{**_run(s, r), "layer": layer, "cka": v} for s, r in ok for layer, v in enumerate(r.layer_cka)]
    criticality = [{**_run(s, r), **row} for s, r in ok for row in r.criticality]
    importance = [
        {**{key: _run(s, r)[key] for key in ("task", "size", "slug", "trial")}, "layer": layer, "head_index": head}
        | {"when": when, "importance": value}
        for s, r in ok
        for when, matrix in r.head_importance.items()
        for layer, row in enumerate(matrix, start=1)
        for head, value in enumerate(row)
    ]
    tables = {"cka": cka, "criticality": criticality, "head_importance": importance}
    found = {name: pd.DataFrame(rows, columns=MEASURE_COLUMNS[name]) for name, rows in tables.items()}
    # a run that several studies report is measured once: keep it once in the head table
    found["head_importance"] = found["head_importance"].drop_duplicates(
        ["task", "size", "slug", "trial", "layer", "head_index", "when"]
    )
    return found


def percentile_interval(importance: np.ndarray, drop: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap of Spearman rho over heads. scipy.stats.bootstrap returns NaN as soon
    as one resample is degenerate (every head drawn the same: rho undefined), which with a few
    heads is most tables; those resamples are left out here instead."""
    draws = np.random.default_rng(0).integers(0, len(drop), (BOOTSTRAP_RESAMPLES, len(drop)))
    resampled = hypothesis.spearman_rows(importance[draws], drop[draws])
    finite = resampled[np.isfinite(resampled)]
    if not len(finite):
        return np.nan, np.nan
    low, high = np.percentile(finite, [50 * (1 - level), 50 * (1 + level)])
    return float(low), float(high)


def fisher_interval(importance: np.ndarray, drop: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Fisher z of Spearman rho with Bonett & Wright's (2000) standard error for it,
    sqrt((1 + rho^2 / 2) / (n - 3)). At rho = +-1 the interval is that point."""
    rho, n = hypothesis.spearman(importance, drop), len(drop)
    with np.errstate(divide="ignore"):
        z = np.arctanh(rho)
    half = scipy_stats.norm.ppf(0.5 + level / 2) * math.sqrt((1 + rho**2 / 2) / (n - 3))
    return float(np.tanh(z - half)), float(np.tanh(z + half))


# the candidate intervals of rho over heads, whose calibration src/stats/calibration.py measures and
# from which correlation_interval picks the one reported at a number of heads
CORRELATION_INTERVALS = {
    "percentile bootstrap": percentile_interval,
    "Fisher z, Bonett-Wright SE": fisher_interval,
}


# the fewest heads from which spearman_with_uncertainty reports each interval (in order of preference),
# as calibration.correlation_table measured them (docs/calibration.md; tests/test_calibration.py
# re-measures the cells)
CORRELATION_INTERVAL_FROM = {"Fisher z, Bonett-Wright SE": 5}


def correlation_interval(heads: int) -> tuple[str | None, str]:
    """The interval of rho over heads that spearman_with_uncertainty reports at `heads` heads
    (a name in CORRELATION_INTERVALS), or None and why not.

    - Fisher z with the Bonett-Wright SE covers the estimand under every design, latent rho
      and trial count from 5 heads to 72 (and 144, measured for it alone), and is the narrower
      of the two where both cover.
    - The percentile bootstrap over heads (what the table reported before) excludes 0 in 12-14%
      of tables with no relation at 5 heads (its size) and under-covers slightly at 6 (about
      0.93 where the latent rho is not 0); it covers from 12 heads.
    - At 4 heads neither covers (0.85-0.92): rho is +-1 in 1 of 12 tables even with no
      relation, and both intervals are then that point. Fewer heads were not measured."""
    methods = [m for m, fewest in CORRELATION_INTERVAL_FROM.items() if heads >= fewest]
    if methods:
        return methods[0], ""
    return None, f"none: not calibrated at {heads} heads (docs/calibration.md)"


def spearman_with_uncertainty(importance: np.ndarray, drop: np.ndarray) -> dict:
    """Spearman rho, its interval over heads where one is calibrated at this number of heads
    (correlation_interval; `interval` names the method, or says why there is none),
    and the permutation p (two-sided; every pairing up to 8 heads: hypothesis.exact_spearman_p)."""
    if len(importance) < 3 or np.ptp(importance) == 0 or np.ptp(drop) == 0:
        return {
            "spearman": np.nan,
            "ci_low": np.nan,
            "ci_high": np.nan,
            "interval": "none: fewer than 3 heads, or a constant column",
            "p_permutation": np.nan,
        }
    method, why_not = correlation_interval(len(drop))
    low, high = CORRELATION_INTERVALS[method](importance, drop) if method else (np.nan, np.nan)
    return {
        "spearman": hypothesis.spearman(importance, drop),
        "ci_low": low,
        "ci_high": high,
        "interval": method or why_not,
        "p_permutation": hypothesis.exact_spearman_p(importance, drop),
    }


def importance_vs_reinit(
    studies: dict[str, StudyConfig], headline: pd.DataFrame, plain_runs: pd.DataFrame, importance: pd.DataFrame
) -> pd.DataFrame:
    """Does the cheap gradient importance of a head predict what reinitialising it costs?
    Per head study, task and size: each head's importance (mean over the full-model runs of
    that task and size, before and after finetuning) against its reinit drop (full minus
    head-reinit score, mean over trials)."""
    rows = []
    for name, study in studies.items():
        runs = headline[(headline["study"] == name) & headline["scheme"].map(lambda v: scheme_of(v).per_head)]
        if not SCHEMES[study.scheme].per_head or not len(runs) or not len(importance):
            continue
        changes = head_changes(runs, plain_runs)
        refs = runs[["task", "size", "ref_full"]].drop_duplicates().rename(columns={"ref_full": "slug"})
        measured = importance.merge(refs, on=["task", "size", "slug"])
        for (task, size, when), group in measured.groupby(["task", "size", "when"]):
            per_head = group.groupby(["layer", "head_index"])["importance"].agg(["mean", "count"]).reset_index()
            paired = per_head.merge(changes[(changes["task"] == task) & (changes["size"] == size)])
            rows.append(
                {
                    "study": name,
                    "task": task,
                    "size": size,
                    "when": when,
                    "heads": len(paired),
                    "importance_trials": int(paired["count"].min()) if len(paired) else 0,
                    "reinit_trials": int(paired["n"].min()) if len(paired) else 0,
                    **spearman_with_uncertainty(paired["mean"].to_numpy(), -paired["change"].to_numpy()),
                }
            )
    return pd.DataFrame(rows, columns=MEASURE_COLUMNS["head_importance_vs_reinit"])


def measure_tables(
    studies: dict[str, StudyConfig],
    results: dict[str, list[RunResult]],
    headline: pd.DataFrame,
    plain_runs: pd.DataFrame,
) -> dict[str, pd.DataFrame]:
    """Every measurement table, with its header when nothing measured it."""
    tables = run_measures(results)
    tables["head_importance_vs_reinit"] = importance_vs_reinit(studies, headline, plain_runs, tables["head_importance"])
    return tables


def measures_metrics(tables: dict[str, pd.DataFrame], probe: pd.DataFrame, num_layers: int) -> dict:
    """metrics/measures.json, for `dvc metrics show/diff` and `dvc exp show`: per task and size,
    each layer's mean CKA with the pretrained model and mean criticality drop (rewound to
    pretrained) over the progressive study's full-model runs (k = L); per probed task, each
    layer's mean probe score, selectivity and MDL compression over the probe seeds; per head
    study, task and size, the importance-vs-reinit rho with its interval and p."""
    metrics: dict = {"full_model": {}, "probe": {}, "head_importance_vs_reinit": {}}

    def full(table: pd.DataFrame) -> pd.DataFrame:
        return table[(table["study"] == "progressive") & (table["k"] == num_layers)]

    criticality = tables["criticality"]
    for name, rows, column in (
        ("cka", full(tables["cka"]), "cka"),
        ("criticality_drop", full(criticality[criticality["rewound_to"] == "pretrained"]), "drop"),
    ):
        for (task, size, layer), value in rows.groupby(["task", "size", "layer"])[column].mean().items():
            by_layer = metrics["full_model"].setdefault(task, {}).setdefault(f"n{size}", {})
            by_layer.setdefault(f"layer{layer}", {})[name] = round(float(value), 5)
    means = probe.groupby(["task", "layer"])[["value", "selectivity", "compression"]].mean()
    for (task, layer), row in means.iterrows():
        metrics["probe"].setdefault(task, {})[f"layer{layer}"] = {
            "score": round(float(row["value"]), 5),
            "selectivity": round(float(row["selectivity"]), 5),
            "mdl_compression": round(float(row["compression"]), 5),
        }
    for row in tables["head_importance_vs_reinit"].itertuples():
        place = metrics["head_importance_vs_reinit"].setdefault(row.study, {}).setdefault(row.task, {})
        place.setdefault(f"n{row.size}", {})[row.when] = {
            key: round(float(getattr(row, key)), 5) for key in ("spearman", "ci_low", "ci_high", "p_permutation")
        }
    return metrics
