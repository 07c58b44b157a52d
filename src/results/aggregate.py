"""Every study's runs and the probes -> the tables the figures and the report read.

Tables (metrics/): runs.csv (every run and metric, with status, collapse and the slugs
of its references), points.csv (mean and 95% t CI of every metric per condition, with
diverged and collapsed counts), weight_change.csv, layer_change.csv (the full model's
per-layer change by step), probe.csv, permutation_correlations.csv (Table 1 and its
control), heads_summary.csv; headline.json (the full model's and scratch's scores at the
focus task and size, for `dvc metrics` and `dvc exp show`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from src.artefacts.evidence import EvidenceTables, plain
from src.artefacts.probe_result import ProbeResult
from src.artefacts.run_result import FALLBACK_SEPARATOR, RunResult, read_results
from src.conditions.condition import Condition
from src.conditions.studies import trained_conditions
from src.config.schema import Config, TrainConfig
from src.core.files import write_json_atomically
from src.results.tables import full_model, results_table, summarise
from src.schemes.registry import SCHEMES
from src.stats import hypothesis
from src.stats.components import COMPONENT_COLUMNS, crossed_components
from src.stats.intervals import mean_ci

PLOT_COLUMNS = [
    "task",
    "curve",
    "series",
    "size",
    "k",
    "metric",
    "mean",
    "ci_low",
    "ci_high",
    "n",
    "diverged",
    "collapsed",
]
SHOWN = [
    "study",
    "task",
    "size",
    "slug",
    "mean",
    "ci_low",
    "ci_high",
    "n",
    "diverged",
    "collapsed",
]  # the stage's printout
CONDITION = [
    "scheme",
    "k",
    "layer",
    "window",
    "head_index",
    "removal",
    "removed",
    "lr_multiplier",
    "keep_layernorm",
    "intermediate_task",
    "intermediate_size",
    "intermediate_epochs",
    "epochs",
]


def load_results(runs_dir: Path, reported: dict[str, list[Condition]], num_layers: int) -> dict[str, list[RunResult]]:
    """Every study's results, one per condition it reports. A condition whose training
    run another study (or condition) trained gets that run's result under its own
    condition. An incomplete study is refused: a figure from part of a grid would look
    finished."""
    by_run = {}
    for study in reported:
        found = {r.cond: r for r in read_results(runs_dir / study)}
        expected = trained_conditions(reported, study, num_layers)
        if found.keys() != set(expected):
            raise SystemExit(
                f"aggregate: studies.{study} has {len(found)} finished runs under {runs_dir / study}, expected "
                f"{len(expected)}"
            )
        by_run.update({condition.training_run(num_layers): result for condition, result in found.items()})
    return {
        study: [replace(by_run[c.training_run(num_layers)], condition=c.as_dict()) for c in conditions]
        for study, conditions in reported.items()
    }


def reference_points(plain_runs: pd.DataFrame) -> pd.DataFrame:
    """The full model and scratch (each condition's `full` / `scratch` reference) per task and size."""
    parts = [
        summarise(plain_runs[plain_runs["slug"] == plain_runs[f"ref_{role}"]], ["task", "size"]).assign(reference=role)
        for role in ("full", "scratch")
    ]
    return pd.concat(parts, ignore_index=True)


CORRELATION_COLUMNS = [
    "runs",
    "size",
    "task_a",
    "task_b",
    "trials",
    "spearman",
    "spearman_p_exact",
    "pearson",
    "pearson_p_exact",
]
# The columns of the tables only some studies fill: written with their header when no such
# study ran, so every table the stage declares is a readable CSV.
EXTRA_TABLE_COLUMNS = {
    "permutation_correlations": [*CORRELATION_COLUMNS, "study"],
    "variance_components": ["study", "task", "size", "slug", "runs", *COMPONENT_COLUMNS],
    "heads_summary": [
        "study",
        "task",
        "size",
        "index",
        "count",
        "mean",
        "std",
        "min",
        "25%",
        "50%",
        "75%",
        "max",
        "by",
    ],
}


def cross_task_correlations(runs: pd.DataFrame, what: str) -> pd.DataFrame:
    """Over the same trials, the Spearman and Pearson correlation of every pair of tasks'
    scores, with exact permutation p (every pairing up to 8 trials)."""
    ok = runs[runs["status"] == "ok"]
    rows = []
    for size, a, b in [
        (s, a, b)
        for s, group in ok.groupby("size")
        for a, b in itertools.combinations(sorted(group["task"].unique()), 2)
    ]:
        paired = ok[ok["size"] == size].pivot_table(index="trial", columns="task", values="value")[[a, b]].dropna()
        x, y = paired[a].to_numpy(), paired[b].to_numpy()
        spearman = hypothesis.spearman(x, y) if len(paired) > 2 else float("nan")
        pearson = (
            float(scipy_stats.pearsonr(x, y).statistic) if len(paired) > 2 and np.ptp(x) and np.ptp(y) else float("nan")
        )
        rows.append(
            {
                "runs": what,
                "size": size,
                "task_a": a,
                "task_b": b,
                "trials": len(paired),
                "spearman": spearman,
                "spearman_p_exact": hypothesis.exact_permutation_p(x, y, "spearman"),
                "pearson": pearson,
                "pearson_p_exact": hypothesis.exact_permutation_p(x, y, "pearson"),
            }
        )
    return pd.DataFrame(rows, columns=CORRELATION_COLUMNS)


def permutation_correlations(permuted: pd.DataFrame, plain_runs: pd.DataFrame) -> pd.DataFrame:
    """Paper Table 1 and its control. Permutation trial n uses one layer order on every
    task, but it also shares the head's initial weights, dropout masks and batch order
    across tasks (all drawn from (seed, trial)). The control correlates the unpermuted full
    model's runs by trial the same way: what it shows, the permutation did not cause."""
    full = plain_runs[
        (plain_runs["slug"] == plain_runs["ref_full"])
        & plain_runs["task"].isin(permuted["task"])
        & plain_runs["size"].isin(permuted["size"])
    ]
    return pd.concat(
        [
            cross_task_correlations(permuted, "permuted (Table 1)"),
            cross_task_correlations(full, "unpermuted full model (control)"),
        ],
        ignore_index=True,
    )


def head_changes(heads: pd.DataFrame, plain_runs: pd.DataFrame) -> pd.DataFrame:
    """Score of each head reinit minus its `full` reference's (nothing reinitialised), paired
    by trial (same subset and seeds), averaged over trials."""
    full = plain_runs[(plain_runs["slug"] == plain_runs["ref_full"]) & (plain_runs["status"] == "ok")]
    ok = heads[heads["status"] == "ok"]
    paired = ok.merge(
        full[["task", "size", "trial", "slug", "value"]].rename(columns={"slug": "ref_full"}),
        on=["task", "size", "trial", "ref_full"],
        suffixes=("", "_full"),
    )
    paired = paired.assign(change=paired["value"] - paired["value_full"])
    return (
        paired.groupby(["study", "task", "size", "layer", "head_index"])["change"]
        .agg(change="mean", n="count")
        .reset_index()
    )


def heads_summary(changes: pd.DataFrame) -> pd.DataFrame:
    """Huang et al.'s per-layer and per-head tables: count, mean, std, quartiles of the change."""
    parts = []
    for by in ("layer", "head_index"):
        described = changes.groupby(["study", "task", "size", by])["change"].describe().reset_index()
        parts.append(described.rename(columns={by: "index"}).assign(by=by))
    return pd.concat(parts, ignore_index=True)[EXTRA_TABLE_COLUMNS["heads_summary"]]


def _heads_summary(runs: pd.DataFrame, plain_runs: pd.DataFrame) -> pd.DataFrame | None:
    changes = head_changes(runs, plain_runs)
    return heads_summary(changes) if len(changes) else None


# The tables a scheme's studies add (Scheme.tables): (study name, the study's runs of the
# scheme's variants, plain runs) -> its rows, or None for none.
SCHEME_TABLES = {
    "permutation_correlations": lambda study, runs, plain_runs: permutation_correlations(runs, plain_runs).assign(
        study=study
    ),
    "heads_summary": lambda study, runs, plain_runs: _heads_summary(runs, plain_runs),
}


def variance_components(runs: pd.DataFrame) -> pd.DataFrame:
    """Per condition of a crossed seed_design study: how much of its spread comes from the
    training subset and how much from the random draws (src/stats/components.py). A condition
    with a run that did not finish has an incomplete table: its components are left empty."""
    rows = []
    for (task, size, slug), group in runs.groupby(["task", "size", "slug"], sort=True):
        cells = group.rename(columns={"subset_stream": "subset", "draws_stream": "draws"})
        complete = (cells["status"] == "ok").all()
        found = crossed_components(cells[["subset", "draws", "value"]]) if complete else {}
        rows.append({"task": task, "size": size, "slug": slug, "runs": len(group), **found})
    return pd.DataFrame(rows, columns=EXTRA_TABLE_COLUMNS["variance_components"][1:])


def epoch_curves(results: list[RunResult]) -> pd.DataFrame:
    """Eval loss and each run's headline metric after every epoch: a study on tasks of different
    metrics (Tamkin et al. App. D: SST-2 and QNLI accuracy, CoLA MCC) gives each task its own."""
    rows = [
        {
            "task": r.cond.task,
            "size": r.cond.size,
            "k": r.cond.k,
            "trial": r.cond.trial,
            "epoch": e["epoch"],
            "quantity": quantity,
            "value": value,
            "status": r.status,
        }
        for r in results
        for e in r.epoch_eval
        for quantity, value in (("eval_loss", e["loss"]), (r.metric, e["scores"][r.metric]))
    ]
    columns = ["task", "size", "k", "trial", "epoch", "quantity", "value", "status"]  # none: nothing to draw
    return summarise(pd.DataFrame(rows, columns=columns), ["task", "size", "k", "epoch", "quantity"])


def step_loss_curves(results: list[RunResult], series) -> pd.DataFrame:
    """Every finished run's per-step training loss, averaged over trials at each step, per
    (task, size, series(condition)): the loss-against-steps figures (Huang et al. Figs. 1 and 4)."""
    rows = [
        {"task": c.task, "size": c.size, "series": series(c), "step": step, "loss": float(loss)}
        for r in results
        if r.ok
        for c in [r.cond]
        for step, loss in enumerate(r.step_loss_values(), start=1)
    ]
    if not rows:
        return pd.DataFrame(columns=["task", "size", "series", "step", "loss", "ci_low", "ci_high", "n"])
    table = pd.DataFrame(rows).groupby(["task", "size", "series", "step"], sort=False)["loss"]
    curves = table.agg(loss="mean", half=lambda losses: mean_ci(losses)[1], n="count").reset_index()
    return curves.assign(ci_low=curves["loss"] - curves["half"], ci_high=curves["loss"] + curves["half"]).drop(
        columns="half"
    )


def weight_table(results: dict[str, list[RunResult]], num_layers: int) -> pd.DataFrame:
    rows = [
        {
            "study": study,
            **r.condition,
            "slug": c.slug,
            "ref_full": c.references(num_layers)["full"].slug,
            "status": r.status,
            **change,
        }
        for study, study_results in results.items()
        for r in study_results
        for c in [r.cond]
        for change in r.weight_change
    ]
    return pd.DataFrame(rows)


def layer_change_table(results: dict[str, list[RunResult]], train: TrainConfig, num_layers: int) -> pd.DataFrame:
    """The full model's per-layer weight change after steps 1, 2, 4, ... (finished runs only),
    each (task, size, trial) once: the weight-change claims compare sizes at equal steps."""
    rows = [
        {
            "study": study,
            **r.condition,
            "slug": c.slug,
            "ref_full": c.references(num_layers)["full"].slug,
            "status": r.status,
            "steps": r.steps,
            "step": record["step"],
            "layer": layer,
            "frobenius": value,
        }
        for study, study_results in results.items()
        for r in study_results
        for c in [r.cond]
        for record in r.layer_change_by_step
        for layer, value in enumerate(record["frobenius"], start=1)
    ]
    columns = ["task", "size", "trial", "steps", "step", "layer", "frobenius"]
    if not rows:
        return pd.DataFrame(columns=columns)
    table = pd.DataFrame(rows)
    table = full_model(table[table["status"] == "ok"], train, ["task", "size", "trial", "step", "layer"])
    return table[columns].sort_values(columns[:6]).reset_index(drop=True)


PROBE_COLUMNS = [
    "task",
    "layer",
    "seed",
    "metric",
    "value",
    "control",
    "selectivity",
    "codelength_bits",
    "uniform_bits",
    "compression",
    "pooling",
    "train_examples",
    "fallbacks",
]


def probe_table(probe_dir: Path, tasks: Sequence[str]) -> pd.DataFrame:
    """One row per task, layer and probe seed: the task score (`value`, the headline metric),
    the control task's score, selectivity = value - control, and the online codelength with
    compression = uniform / online bits (NaN where there is no online code: regression)."""
    rows = []
    for task in tasks:
        probe = ProbeResult.read(probe_dir / f"{task}.json")
        metric, uniform = probe.metric, probe.uniform_bits
        for layer in probe.layers:
            value, control, online = layer.scores[metric], layer.control_scores[metric], layer.codelength_bits
            rows.append(
                {
                    "task": task,
                    "layer": layer.layer,
                    "seed": layer.seed,
                    "metric": metric,
                    "value": value,
                    "control": control,
                    "selectivity": value - control,
                    "codelength_bits": online,
                    "uniform_bits": uniform,
                    "compression": uniform / online if online and uniform is not None else None,
                    "pooling": probe.pooling,
                    "train_examples": probe.train_examples,
                    "fallbacks": FALLBACK_SEPARATOR.join(probe.fallbacks),
                }
            )
    return pd.DataFrame(rows, columns=PROBE_COLUMNS).astype({"codelength_bits": float, "compression": float})


def progressive_curves(points: pd.DataFrame, probe: pd.DataFrame, order: list[str]) -> pd.DataFrame:
    """Fig. 1's plot table: finetuning curves per size, and the probe of layer k (dashed) with
    its 95% t interval over probe seeds."""
    finetune = points.assign(curve="finetune", series="n=" + points["size"].astype(str))
    seeds = summarise(probe.assign(status="ok"), ["task", "layer"], carry=("metric", "train_examples"))
    probes = seeds.assign(curve="probe", series="probe", size=seeds["train_examples"], k=seeds["layer"])
    curves = pd.concat([finetune, probes[probes["task"].isin(order)]], ignore_index=True)
    curves["k"] = curves["k"].astype(int)
    return curves.sort_values("task", key=lambda t: t.map(order.index), kind="stable")


def summarise_weights(weights: pd.DataFrame, train: TrainConfig) -> pd.DataFrame:
    """Mean Frobenius norm of the weight change per (task, size, layer, sublayer), with its
    95% t CI and n, over the finished runs of the unmodified full model (k = L: nothing
    reinitialised, pure finetuning)."""
    rows = full_model(weights[weights["status"] == "ok"], train, ["task", "size", "trial", "layer", "sublayer"])
    return summarise(rows.assign(value=rows["frobenius"]), ["task", "size", "layer", "sublayer"])


def headline_metrics(references: pd.DataFrame, task: str, size: int) -> dict:
    """metrics/headline.json, a handful of numbers for `dvc metrics show/diff` and `dvc exp show`
    at default width: at the focus task and size (focus.json names them), the full model's mean
    score, the from-scratch model's and their difference (the papers' premise: pretraining
    helps); null where no study ran that reference there. Trials and every condition's mean
    and CI are in points.csv: each key here is a column of `dvc exp show`."""
    at = references[(references["task"] == task) & (references["size"] == size)].set_index("reference")

    def mean(role):
        return round(float(at.at[role, "mean"]), 5) if role in at.index else None

    full, scratch = mean("full"), mean("scratch")
    gap = round(full - scratch, 5) if full is not None and scratch is not None else None
    return {"full": full, "scratch": scratch, "full_minus_scratch": gap}


def extra_tables(config_studies: dict, headline: pd.DataFrame, plain_runs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The tables of the schemes that have some (Scheme.tables: Table 1 and its control of
    permutation studies, the heads summaries of head studies) and the variance components of
    crossed seed designs, with their header when no such study ran, so every table the stage
    declares is a readable CSV."""
    parts: dict[str, list[pd.DataFrame]] = {name: [] for name in EXTRA_TABLE_COLUMNS}
    for name, study in config_studies.items():
        runs = headline[headline["study"] == name]
        scheme = SCHEMES[study.scheme]
        own = runs[runs["scheme"].isin(scheme.variants)]
        for table in scheme.tables:
            found = SCHEME_TABLES[table](name, own, plain_runs)
            if found is not None:
                parts[table].append(found)
        if study.seed_design is not None:
            parts["variance_components"].append(variance_components(runs).assign(study=name))
    return {
        name: pd.concat(found, ignore_index=True) if found else pd.DataFrame(columns=EXTRA_TABLE_COLUMNS[name])
        for name, found in parts.items()
    }


@dataclass(frozen=True)
class Tables:
    """Every study's results and the tables built from them (what figures and files are made of)."""

    results: dict[str, list[RunResult]]
    runs: pd.DataFrame  # every run and metric (runs.csv)
    points: pd.DataFrame  # every condition and metric (points.csv)
    plain_runs: pd.DataFrame  # headline runs of unmodified conditions, each once
    plain_points: pd.DataFrame
    references: pd.DataFrame  # full and scratch per task and size
    probe: pd.DataFrame
    weights: pd.DataFrame

    @property
    def headline(self) -> pd.DataFrame:
        return self.runs[self.runs["headline"]]

    @property
    def headline_points(self) -> pd.DataFrame:
        return self.points[self.points["headline"]]


def build_tables(
    config: Config, reported: dict[str, list[Condition]], runs_dir: Path, probe_dir: Path, num_layers: int
) -> Tables:
    results = load_results(runs_dir, reported, num_layers)
    runs = pd.concat([results_table(r, study, num_layers) for study, r in results.items()], ignore_index=True)
    # every metric a task declares is summarised; figures and claims use the headline one
    carry = (*CONDITION, "headline", "ref_full", "ref_scratch", "ref_baseline")
    points = summarise(runs, ["study", "task", "size", "slug", "metric"], carry=carry)
    plain_runs = plain(runs[runs["headline"]], config.train, ["task", "size", "slug", "trial"])
    plain_points = summarise(plain_runs, ["task", "size", "slug"], carry=(*CONDITION, "metric"))
    probe = probe_table(probe_dir, config.probe.tasks)
    return Tables(
        results,
        runs,
        points,
        plain_runs,
        plain_points,
        reference_points(plain_runs),
        probe,
        weight_table(results, num_layers),
    )


def write_tables(tables: Tables, config: Config, folder: Path, plot_data: Path, num_layers: int) -> None:
    """The CSV tables, headline.json and Fig. 1's DVC plot data."""
    t = tables
    for place in (folder, plot_data.parent):
        place.mkdir(parents=True, exist_ok=True)
    progressive = t.headline_points[t.headline_points["study"] == "progressive"]
    curves = progressive_curves(progressive, t.probe, list(config.studies["progressive"].tasks))
    curves[PLOT_COLUMNS].round(5).to_csv(plot_data, index=False)
    t.points.round(5).to_csv(folder / "points.csv", index=False)
    EvidenceTables(t.runs, t.probe, t.weights, layer_change_table(t.results, config.train, num_layers)).write(folder)
    for name, table in extra_tables(config.studies, t.headline, t.plain_runs).items():
        table.round(5).to_csv(folder / f"{name}.csv", index=False)
    write_json_atomically(folder / "headline.json", headline_metrics(t.references, config.task, config.size))
