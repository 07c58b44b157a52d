"""Stage aggregate: every study's runs and the probes -> tables, DVC metrics and figures.

Tables (metrics/): runs.csv (every run and metric, with status, collapse and the slugs
of its references), points.csv (mean and 95% t CI of every metric per condition, with
diverged and collapsed counts), weight_change.csv, layer_change.csv (the full model's
per-layer change by step), probe.csv, permutation_correlations.csv (Table 1 and its
control), heads_summary.csv, figures.csv (each figure drawn, or why not); studies.json
(the mean of every condition, for `dvc metrics diff`). Per-example eval predictions of
every run and the eval labels go to one npz for the report's bootstraps. Figures
(plots/figures/<study>.png) are chosen by each study's scheme and modifiers; a figure
with nothing to draw is skipped and listed with the reason, never a crash.
"""

import argparse
import itertools
import json
from pathlib import Path

import pandas as pd
from scipy import stats as scipy_stats

import numpy as np

from src import data, inference, plotting
from src.condition import Condition
from src.errors import run_stage
from src.experiment import json_safe, read_results
from src.metrics import decode_predictions
from src.model import model_shape
from src.params import load_params
from src.stats import full_model, plain, results_table, summarise
from src.studies import study_conditions, trained_conditions

CONDITION = ["scheme", "k", "layer", "window", "head_index", "lr_multiplier", "keep_layernorm", "intermediate_task", "epochs"]


def load_results(runs_dir: Path, params: dict, num_layers: int) -> dict[str, list[dict]]:
    """Every study's results, one per condition it reports. A condition whose training
    run another study (or condition) trained gets that run's result under its own
    condition. An incomplete study is refused: a figure from part of a grid would look
    finished."""
    by_run = {}
    for study in params["studies"]:
        found = {Condition(**r["condition"]): r for r in read_results(runs_dir / study)}
        expected = trained_conditions(params, study, num_layers)
        if found.keys() != set(expected):
            raise SystemExit(f"aggregate: studies.{study} has {len(found)} finished runs under {runs_dir / study}, expected {len(expected)}")
        by_run.update({condition.training_run(num_layers): result for condition, result in found.items()})
    return {
        study: [{**by_run[c.training_run(num_layers)], "condition": c.as_dict()} for c in study_conditions(params, study, num_layers)]
        for study in params["studies"]
    }


def reference_points(plain_runs: pd.DataFrame) -> pd.DataFrame:
    """The full model and scratch (each condition's `full` / `scratch` reference) per task and size."""
    parts = [summarise(plain_runs[plain_runs["slug"] == plain_runs[f"ref_{role}"]], ["task", "size"]).assign(reference=role) for role in ("full", "scratch")]
    return pd.concat(parts, ignore_index=True)


CORRELATION_COLUMNS = ["runs", "size", "task_a", "task_b", "trials", "spearman", "spearman_p_exact", "pearson", "pearson_p_exact"]
# The columns of the tables only some studies fill: written with their header when no such
# study ran, so every table the stage declares is a readable CSV.
EXTRA_TABLE_COLUMNS = {
    "permutation_correlations": [*CORRELATION_COLUMNS, "study"],
    "heads_summary": ["study", "task", "size", "index", "count", "mean", "std", "min", "25%", "50%", "75%", "max", "by"],
}


def cross_task_correlations(runs: pd.DataFrame, what: str) -> pd.DataFrame:
    """Over the same trials, the Spearman and Pearson correlation of every pair of tasks'
    scores, with exact permutation p (every pairing up to 8 trials)."""
    ok = runs[runs["status"] == "ok"]
    rows = []
    for (size, a, b) in [(s, a, b) for s, group in ok.groupby("size") for a, b in itertools.combinations(sorted(group["task"].unique()), 2)]:
        paired = ok[ok["size"] == size].pivot_table(index="trial", columns="task", values="value")[[a, b]].dropna()
        x, y = paired[a].to_numpy(), paired[b].to_numpy()
        spearman = inference.spearman(x, y) if len(paired) > 2 else float("nan")
        pearson = float(scipy_stats.pearsonr(x, y).statistic) if len(paired) > 2 and np.ptp(x) and np.ptp(y) else float("nan")
        rows.append({"runs": what, "size": size, "task_a": a, "task_b": b, "trials": len(paired), "spearman": spearman, "spearman_p_exact": inference.exact_permutation_p(x, y, "spearman"), "pearson": pearson, "pearson_p_exact": inference.exact_permutation_p(x, y, "pearson")})
    return pd.DataFrame(rows, columns=CORRELATION_COLUMNS)


def permutation_correlations(permuted: pd.DataFrame, plain_runs: pd.DataFrame) -> pd.DataFrame:
    """Paper Table 1 and its control. Permutation trial n uses one layer order on every
    task, but it also shares the head's initial weights, dropout masks and batch order
    across tasks (all drawn from (seed, trial)). The control correlates the unpermuted full
    model's runs by trial the same way: what it shows, the permutation did not cause."""
    full = plain_runs[(plain_runs["slug"] == plain_runs["ref_full"]) & plain_runs["task"].isin(permuted["task"]) & plain_runs["size"].isin(permuted["size"])]
    return pd.concat([cross_task_correlations(permuted, "permuted (Table 1)"), cross_task_correlations(full, "unpermuted full model (control)")], ignore_index=True)


def head_changes(heads: pd.DataFrame, plain_runs: pd.DataFrame) -> pd.DataFrame:
    """Score of each head reinit minus its `full` reference's (nothing reinitialised), paired
    by trial (same subset and seeds), averaged over trials."""
    full = plain_runs[(plain_runs["slug"] == plain_runs["ref_full"]) & (plain_runs["status"] == "ok")]
    ok = heads[heads["status"] == "ok"]
    paired = ok.merge(full[["task", "size", "trial", "slug", "value"]].rename(columns={"slug": "ref_full"}), on=["task", "size", "trial", "ref_full"], suffixes=("", "_full"))
    paired = paired.assign(change=paired["value"] - paired["value_full"])
    return paired.groupby(["study", "task", "size", "layer", "head_index"])["change"].agg(change="mean", n="count").reset_index()


def heads_summary(changes: pd.DataFrame) -> pd.DataFrame:
    """Huang et al.'s per-layer and per-head tables: count, mean, std, quartiles of the change."""
    parts = []
    for by in ("layer", "head_index"):
        described = changes.groupby(["study", "task", "size", by])["change"].describe().reset_index()
        parts.append(described.rename(columns={by: "index"}).assign(by=by))
    return pd.concat(parts, ignore_index=True)[EXTRA_TABLE_COLUMNS["heads_summary"]]


def epoch_curves(results: list[dict], metric: str) -> pd.DataFrame:
    rows = [
        {"task": r["condition"]["task"], "size": r["condition"]["size"], "k": r["condition"]["k"], "trial": r["condition"]["trial"], "epoch": e["epoch"], "quantity": quantity, "value": value, "status": r["status"]}
        for r in results
        for e in r["epoch_eval"]
        for quantity, value in (("eval_loss", e["loss"]), (metric, e["scores"][metric]))
    ]
    return summarise(pd.DataFrame(rows), ["task", "size", "k", "epoch", "quantity"])


def weight_table(results: dict[str, list[dict]], num_layers: int) -> pd.DataFrame:
    rows = [
        {"study": study, **r["condition"], "slug": c.slug, "ref_full": c.references(num_layers)["full"].slug, "status": r["status"], **change}
        for study, study_results in results.items()
        for r in study_results
        for c in [Condition(**r["condition"])]
        for change in r["weight_change"]
    ]
    return pd.DataFrame(rows)


def layer_change_table(results: dict[str, list[dict]], params: dict, num_layers: int) -> pd.DataFrame:
    """The full model's per-layer weight change after steps 1, 2, 4, ... (finished runs only),
    each (task, size, trial) once: the weight-change claims compare sizes at equal steps."""
    rows = [
        {"study": study, **r["condition"], "slug": c.slug, "ref_full": c.references(num_layers)["full"].slug, "status": r["status"], "steps": r.get("steps"), "step": record["step"], "layer": layer, "frobenius": value}
        for study, study_results in results.items()
        for r in study_results
        for c in [Condition(**r["condition"])]
        for record in r.get("layer_change_by_step", [])
        for layer, value in enumerate(record["frobenius"], start=1)
    ]
    columns = ["task", "size", "trial", "steps", "step", "layer", "frobenius"]
    if not rows:
        return pd.DataFrame(columns=columns)
    table = pd.DataFrame(rows)
    table = full_model(table[table["status"] == "ok"], params, ["task", "size", "trial", "step", "layer"])
    return table[columns].sort_values(columns[:6]).reset_index(drop=True)


def predictions_arrays(results: dict[str, list[dict]], tasks_dir: Path) -> dict[str, np.ndarray]:
    """Every run's eval predictions, keyed task|size|slug|trial, and each task's eval labels
    (labels|task): what the report's paired multi-bootstrap resamples."""
    arrays = {}
    for study_results in results.values():
        for r in study_results:
            c = Condition(**r["condition"])
            if r.get("predictions"):
                arrays[f"{c.task}|{c.size}|{c.slug}|{c.trial}"] = decode_predictions(r["predictions"])
    for task in sorted({key.split("|")[0] for key in arrays}):
        arrays[f"labels|{task}"] = data.load_split(tasks_dir / task / "tokens.npz", "eval").labels
    return arrays


def probe_table(probe_dir: Path, tasks: list[str]) -> pd.DataFrame:
    rows = []
    for task in tasks:
        probe = json.loads((probe_dir / f"{task}.json").read_text())
        rows += [{"task": task, "layer": layer["layer"], "metric": probe["metric"], "value": layer["scores"][probe["metric"]], "train_examples": probe["train_examples"]} for layer in probe["layers"]]
    return pd.DataFrame(rows, columns=["task", "layer", "metric", "value", "train_examples"])


def progressive_curves(points: pd.DataFrame, probe: pd.DataFrame, order: list[str]) -> pd.DataFrame:
    """Fig. 1's plot table: finetuning curves per size, and the probe of layer k (dashed)."""
    finetune = points.assign(curve="finetune", series="n=" + points["size"].astype(str))
    probes = probe.assign(curve="probe", series="probe", size=probe["train_examples"], k=probe["layer"], mean=probe["value"], ci_low=probe["value"], ci_high=probe["value"], n=1, diverged=0, collapsed=0)
    curves = pd.concat([finetune, probes[probes["task"].isin(order)]], ignore_index=True)
    curves["k"] = curves["k"].astype(int)
    return curves.sort_values("task", key=lambda t: t.map(order.index), kind="stable")


def draw(study: str, spec: dict, own: pd.DataFrame, plain_points: pd.DataFrame, runs: pd.DataFrame, plain_runs: pd.DataFrame, refs: pd.DataFrame, results: list[dict], probe: pd.DataFrame, figure: Path, tables: dict) -> None:
    """The figure of one study, chosen by its scheme and modifiers. `own`: the study's
    headline points, `runs` its runs; `plain_points`/`plain_runs`: unmodified conditions
    from any study, where each condition's references are found by slug."""
    modifiers = [f"{spec['reinit_lr_multiplier']:g}x lr on reinitialised layers" if "reinit_lr_multiplier" in spec else "", "pretrained LayerNorm kept" if spec.get("keep_layernorm") else ""]
    variant = ", ".join(filter(None, modifiers))
    modified = own[own["ref_baseline"].notna()]
    baseline = plain_points.merge(modified[["task", "size", "ref_baseline"]].drop_duplicates().rename(columns={"ref_baseline": "slug"}), on=["task", "size", "slug"])
    if "intermediate_tasks" in spec:
        matrix = pd.concat([modified, baseline.assign(intermediate_task=baseline["task"])])
        plotting.plot_sequential(matrix.assign(final_task=matrix["task"]), figure)
    elif "epochs" in spec:
        plotting.plot_epochs(epoch_curves(results, own["metric"].iloc[0] if len(own) else ""), figure)
    elif spec["scheme"] == "block":
        plotting.plot_blocks(own[own["scheme"] != "progressive"], refs, figure)
    elif spec["scheme"] == "single_layer":
        plotting.plot_single_layer(own[own["scheme"] == "single_layer"], refs, figure)
    elif spec["scheme"] == "permutation":
        permuted = runs[runs["scheme"] == "permutation"]
        tables["permutation_correlations"].append(permutation_correlations(permuted, plain_runs).assign(study=study))
        plotting.plot_permutation(permuted, refs, figure)
    elif spec["scheme"] == "head":
        changes = head_changes(runs[runs["scheme"] == "head"], plain_runs)
        if len(changes):
            tables["heads_summary"].append(heads_summary(changes))
        plotting.plot_heads(changes, figure)
    elif variant:
        both = pd.concat([baseline.assign(variant="baseline"), modified.assign(variant=variant)])
        plotting.plot_modifier(both, figure, f"{study}: progressive reinitialisation with {variant} vs without (mean and 95% t CI)")
    else:
        plotting.plot_progressive(progressive_curves(own, probe, spec["tasks"]), figure)


def summarise_weights(weights: pd.DataFrame, params: dict) -> pd.DataFrame:
    """Mean weight change per (task, size, layer, sublayer) over the finished runs of the
    unmodified full model (k = L: nothing reinitialised, pure finetuning)."""
    rows = full_model(weights[weights["status"] == "ok"], params, ["task", "size", "trial", "layer", "sublayer"])
    return rows.groupby(["task", "size", "layer", "sublayer"])[["frobenius", "spectral"]].mean().reset_index()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=Path, required=True)
    parser.add_argument("--probe", type=Path, required=True)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--tasks", type=Path, required=True, help="the data stage's output (eval labels)")
    parser.add_argument("--tables", type=Path, required=True)
    parser.add_argument("--figures", type=Path, required=True)
    parser.add_argument("--plot-data", type=Path, required=True)
    parser.add_argument("--predictions", type=Path, required=True, help="npz of every run's eval predictions and the eval labels")
    args = parser.parse_args()

    params = load_params()
    num_layers, _ = model_shape(args.model)
    results = load_results(args.runs, params, num_layers)
    runs = pd.concat([results_table(r, study, num_layers) for study, r in results.items()], ignore_index=True)
    headline = runs[runs["headline"]]
    # every metric a task declares is summarised; figures and claims use the headline one
    points = summarise(runs, ["study", "task", "size", "slug", "metric"], carry=(*CONDITION, "headline", "ref_full", "ref_scratch", "ref_baseline"))
    headline_points = points[points["headline"]]
    plain_runs = plain(headline, params, ["task", "size", "slug", "trial"])
    refs = reference_points(plain_runs)
    probe = probe_table(args.probe, params["probe"]["tasks"])

    for folder in (args.tables, args.figures, args.plot_data.parent, args.predictions.parent):
        folder.mkdir(parents=True, exist_ok=True)
    extra = {name: [] for name in EXTRA_TABLE_COLUMNS}
    plain_points = summarise(plain_runs, ["task", "size", "slug"], carry=(*CONDITION, "metric"))
    drawn = []
    for study, spec in params["studies"].items():
        own = headline_points[headline_points["study"] == study]
        try:
            draw(study, spec, own, plain_points, headline[headline["study"] == study], plain_runs, refs, results[study], probe, args.figures / f"{study}.png", extra)
            drawn.append({"figure": study, "status": "drawn"})
        except plotting.NothingToDraw as reason:
            (args.figures / f"{study}.png").unlink(missing_ok=True)
            drawn.append({"figure": study, "status": f"not run: {reason}"})

    progressive = headline_points[headline_points["study"] == "progressive"]
    progressive_curves(progressive, probe, params["studies"]["progressive"]["tasks"])[
        ["task", "curve", "series", "size", "k", "metric", "mean", "ci_low", "ci_high", "n", "diverged", "collapsed"]
    ].round(5).to_csv(args.plot_data, index=False)
    weights = weight_table(results, num_layers)
    try:
        plotting.plot_weight_change(summarise_weights(weights, params) if len(weights) else pd.DataFrame(columns=["task", "size", "layer", "sublayer", "spectral"]), args.figures / "weight_change.png")
        drawn.append({"figure": "weight_change", "status": "drawn"})
    except plotting.NothingToDraw as reason:
        (args.figures / "weight_change.png").unlink(missing_ok=True)
        drawn.append({"figure": "weight_change", "status": f"not run: {reason}"})

    runs.to_csv(args.tables / "runs.csv", index=False)
    points.round(5).to_csv(args.tables / "points.csv", index=False)
    weights.round(6).to_csv(args.tables / "weight_change.csv", index=False)
    layer_change_table(results, params, num_layers).to_csv(args.tables / "layer_change.csv", index=False)
    probe.to_csv(args.tables / "probe.csv", index=False)
    pd.DataFrame(drawn).to_csv(args.tables / "figures.csv", index=False)
    np.savez_compressed(args.predictions, **predictions_arrays(results, args.tasks))
    for name, parts in extra.items():
        (pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=EXTRA_TABLE_COLUMNS[name])).round(5).to_csv(args.tables / f"{name}.csv", index=False)
    metrics = {}
    for row in points.itertuples():
        key = row.slug if row.headline else f"{row.slug}.{row.metric}"
        metrics.setdefault(row.study, {}).setdefault(row.task, {}).setdefault(f"n{row.size}", {})[key] = round(row.mean, 5)
    (args.tables / "studies.json").write_text(json.dumps(json_safe(metrics), indent=2, allow_nan=False) + "\n")  # no finished run: null
    print(headline_points[["study", "task", "size", "slug", "mean", "ci_low", "ci_high", "n", "diverged", "collapsed"]].to_string(index=False))


if __name__ == "__main__":
    run_stage(main)
