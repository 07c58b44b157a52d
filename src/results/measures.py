"""Tables of the per-run measurements (src/measures/, docs/measures.md).

metrics/cka.csv: each run's CKA of every layer (0 = embeddings .. L) with the same layer
of the pretrained model, on the task's eval inputs. metrics/criticality.csv: each run's
score with one layer rewound (to its pretrained or its initial value) and the drop.
metrics/head_importance.csv: each full-model run's head importance before and after
finetuning. metrics/head_importance_vs_reinit.csv: per head study, task and size, the
Spearman correlation of head importance with the measured drop from reinitialising that
head (the heads study, aggregate.head_changes), with its interval over heads where one is
calibrated at that number of heads (correlation_interval; docs/calibration.md)
and the permutation p (exact up to 8 heads). metrics/stale_measurements.csv: each measurement
that some finished runs made by other code than the finetune stages last ran (kept, as no
weights were kept to make it again: src/train/reuse.py), on how many runs, and the command
that refreshes it; empty when none is stale.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from src.artefacts.run_result import RunResult, stale_results
from src.config.schema import StudyConfig
from src.core.files import write_json_atomically
from src.results.aggregate import Tables, head_changes
from src.schemes.registry import SCHEMES, scheme_of
from src.stats.correlation import spearman_with_uncertainty

RUN_COLUMNS = ["study", "task", "size", "slug", "scheme", "k", "trial"]
MEASURE_COLUMNS = {
    "cka": [*RUN_COLUMNS, "layer", "cka"],
    "criticality": [*RUN_COLUMNS, "layer", "rewound_to", "score", "drop"],
    "head_importance": ["task", "size", "slug", "trial", "layer", "head_index", "when", "importance"],
    "stale_measurements": ["measurement", "runs", "refresh"],
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


# Deletes the results whose measurements are stale (tools/stale_runs.py), so that they train again.
REFRESH = "python -m tools.stale_runs --delete && dvc repro"


def stale_measurements(runs_dir: Path) -> pd.DataFrame:
    """Each measurement that results under `runs_dir` made by other code than their finetune
    stage last ran (stale_results), and on how many of them."""
    counts: dict[str, int] = {}
    for _, stale in stale_results(runs_dir):
        for setting in stale:
            counts[setting] = counts.get(setting, 0) + 1
    rows = [{"measurement": setting, "runs": n, "refresh": REFRESH} for setting, n in sorted(counts.items())]
    return pd.DataFrame(rows, columns=MEASURE_COLUMNS["stale_measurements"])


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
    """metrics/measures.json, a plain output beside the tables (not a DVC metric): per task and size,
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


def write_measures(
    studies: dict[str, StudyConfig], tables: Tables, folder: Path, num_layers: int, runs_dir: Path
) -> None:
    """Every measurement table (metrics/<name>.csv; the stale ones of the results under
    `runs_dir`) and metrics/measures.json."""
    measured = measure_tables(studies, tables.results, tables.headline, tables.plain_runs)
    for name, table in {**measured, "stale_measurements": stale_measurements(runs_dir)}.items():
        table.round(6).to_csv(folder / f"{name}.csv", index=False)
    write_json_atomically(folder / "measures.json", measures_metrics(measured, tables.probe, num_layers))
