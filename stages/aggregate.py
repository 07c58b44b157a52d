"""Stage aggregate: every study's runs and the probes -> tables, DVC metrics and figures.

Tables (metrics/): runs.csv (every run and metric, with status), points.csv (mean and
95% t CI per condition), weight_change.csv, probe.csv, permutation_correlations.csv,
heads_summary.csv; studies.json (the mean of every condition, for `dvc metrics diff`).
Figures (plots/figures/<study>.png) are chosen by each study's scheme and modifiers.
"""

import argparse
import itertools
import json
from pathlib import Path

import pandas as pd
from scipy import stats as scipy_stats

from src import plotting
from src.condition import Condition
from src.errors import run_stage
from src.experiment import read_results
from src.model import model_shape
from src.params import load_params
from src.stats import flag_collapsed, full_model_weights, plain, results_table, summarise
from src.studies import study_conditions, trained_conditions

CONDITION = ["scheme", "k", "layer", "window", "head_index", "lr_multiplier", "keep_layernorm", "intermediate_task", "epochs", "metric"]


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


def references(plain_runs: pd.DataFrame, num_layers: int) -> pd.DataFrame:
    """The full model (k = L) and scratch (k = 0) per task and size."""
    progressive = plain_runs[plain_runs["scheme"] == "progressive"]
    rows = progressive[progressive["k"].isin([0, num_layers])]
    table = summarise(rows, ["task", "size", "k"])
    return table.assign(reference=table["k"].map({num_layers: "full", 0: "scratch"}))


def permutation_correlations(runs: pd.DataFrame) -> pd.DataFrame:
    """Paper Table 1: over the same permutations (trial n = one order on every task), the
    Spearman and Pearson correlation of every pair of tasks' scores, two-sided p."""
    ok = runs[runs["status"] == "ok"]
    rows = []
    for (size, a, b) in [(s, a, b) for s, group in ok.groupby("size") for a, b in itertools.combinations(sorted(group["task"].unique()), 2)]:
        paired = ok[ok["size"] == size].pivot_table(index="trial", columns="task", values="value")[[a, b]].dropna()
        spearman = scipy_stats.spearmanr(paired[a], paired[b]) if len(paired) > 2 else (float("nan"), float("nan"))
        pearson = scipy_stats.pearsonr(paired[a], paired[b]) if len(paired) > 2 else (float("nan"), float("nan"))
        rows.append({"size": size, "task_a": a, "task_b": b, "permutations": len(paired), "spearman": spearman[0], "spearman_p": spearman[1], "pearson": pearson[0], "pearson_p": pearson[1]})
    return pd.DataFrame(rows, columns=["size", "task_a", "task_b", "permutations", "spearman", "spearman_p", "pearson", "pearson_p"])


def head_changes(heads: pd.DataFrame, plain_runs: pd.DataFrame, num_layers: int) -> pd.DataFrame:
    """Score of each head reinit minus the un-reinitialised model's (k = L), paired by
    trial (same subset and seeds), averaged over trials."""
    full = plain_runs[(plain_runs["scheme"] == "progressive") & (plain_runs["k"] == num_layers) & (plain_runs["status"] == "ok")]
    ok = heads[heads["status"] == "ok"]
    paired = ok.merge(full[["task", "size", "trial", "value"]], on=["task", "size", "trial"], suffixes=("", "_full"))
    paired = paired.assign(change=paired["value"] - paired["value_full"])
    return paired.groupby(["study", "task", "size", "layer", "head_index"])["change"].agg(change="mean", n="count").reset_index()


def heads_summary(changes: pd.DataFrame) -> pd.DataFrame:
    """Huang et al.'s per-layer and per-head tables: count, mean, std, quartiles of the change."""
    parts = []
    for by in ("layer", "head_index"):
        described = changes.groupby(["study", "task", "size", by])["change"].describe().reset_index()
        parts.append(described.rename(columns={by: "index"}).assign(by=by))
    return pd.concat(parts, ignore_index=True)


def epoch_curves(results: list[dict], metric: str) -> pd.DataFrame:
    rows = [
        {"task": r["condition"]["task"], "size": r["condition"]["size"], "k": r["condition"]["k"], "trial": r["condition"]["trial"], "epoch": e["epoch"], "quantity": quantity, "value": value, "status": r["status"]}
        for r in results
        for e in r["epoch_eval"]
        for quantity, value in (("eval_loss", e["loss"]), (metric, e["scores"][metric]))
    ]
    return summarise(pd.DataFrame(rows), ["task", "size", "k", "epoch", "quantity"])


def weight_table(results: dict[str, list[dict]]) -> pd.DataFrame:
    rows = [
        {"study": study, **r["condition"], "slug": Condition(**r["condition"]).slug, **change}
        for study, study_results in results.items()
        for r in study_results
        for change in r["weight_change"]
    ]
    return pd.DataFrame(rows)


def probe_table(probe_dir: Path, tasks: list[str]) -> pd.DataFrame:
    rows = []
    for task in tasks:
        probe = json.loads((probe_dir / f"{task}.json").read_text())
        rows += [{"task": task, "layer": layer["layer"], "metric": probe["metric"], "value": layer["scores"][probe["metric"]], "train_examples": probe["train_examples"]} for layer in probe["layers"]]
    return pd.DataFrame(rows)


def progressive_curves(points: pd.DataFrame, probe: pd.DataFrame, order: list[str]) -> pd.DataFrame:
    """Fig. 1's plot table: finetuning curves per size, and the probe of layer k (dashed)."""
    finetune = points.assign(curve="finetune", series="n=" + points["size"].astype(str))
    probes = probe.assign(curve="probe", series="probe", size=probe["train_examples"], k=probe["layer"], mean=probe["value"], ci_low=probe["value"], ci_high=probe["value"], n=1, diverged=0)
    curves = pd.concat([finetune, probes[probes["task"].isin(order)]], ignore_index=True)
    curves["k"] = curves["k"].astype(int)
    return curves.sort_values("task", key=lambda t: t.map(order.index), kind="stable")


def draw(study: str, spec: dict, own: pd.DataFrame, plain_points: pd.DataFrame, runs: pd.DataFrame, plain_runs: pd.DataFrame, refs: pd.DataFrame, results: list[dict], probe: pd.DataFrame, num_layers: int, figure: Path, tables: dict) -> None:
    """The figure of one study, chosen by its scheme and modifiers. `own`: the study's
    points, `runs` its runs; `plain_points`/`plain_runs`: unmodified conditions from any
    study (baselines)."""
    in_study = plain_points["task"].isin(spec["tasks"]) & plain_points["size"].isin(spec["sizes"]) & (plain_points["scheme"] == "progressive")
    modifiers = [f"{spec['reinit_lr_multiplier']:g}x lr on reinitialised layers" if "reinit_lr_multiplier" in spec else "", "pretrained LayerNorm kept" if spec.get("keep_layernorm") else ""]
    variant = ", ".join(filter(None, modifiers))
    if "intermediate_tasks" in spec:
        sequential = own[own["intermediate_task"].notna()]
        direct = plain_points[in_study & plain_points["k"].isin(spec["ks"])]
        matrix = pd.concat([sequential, direct.assign(intermediate_task=direct["task"])])
        plotting.plot_sequential(matrix.assign(final_task=matrix["task"]), figure)
    elif "epochs" in spec:
        plotting.plot_epochs(epoch_curves(results, own["metric"].iloc[0]), figure)
    elif spec["scheme"] == "block":
        plotting.plot_blocks(own[own["scheme"] != "progressive"], refs, figure)
    elif spec["scheme"] == "single_layer":
        plotting.plot_single_layer(own[own["scheme"] == "single_layer"], refs, figure)
    elif spec["scheme"] == "permutation":
        permuted = runs[runs["scheme"] == "permutation"]
        plotting.plot_permutation(permuted, refs, figure)
        tables["permutation_correlations"].append(permutation_correlations(permuted).assign(study=study))
    elif spec["scheme"] == "head":
        changes = head_changes(runs[runs["scheme"] == "head"], plain_runs, num_layers)
        plotting.plot_heads(changes, figure)
        tables["heads_summary"].append(heads_summary(changes))
    elif variant:
        modified = own[(own["lr_multiplier"] != 1.0) | own["keep_layernorm"].astype(bool)]
        baseline = plain_points[in_study & plain_points["k"].isin(spec["ks"])]
        both = pd.concat([baseline.assign(variant="baseline"), modified.assign(variant=variant)])
        plotting.plot_modifier(both, figure, f"{study}: progressive reinitialisation with {variant} vs without (mean and 95% t CI)")
    else:
        plotting.plot_progressive(progressive_curves(own, probe, spec["tasks"]), figure)


def summarise_weights(weights: pd.DataFrame, headline: pd.DataFrame, params: dict, num_layers: int) -> pd.DataFrame:
    """Mean weight change per (task, size, layer, sublayer) over the finished runs of the
    unmodified full model (k = L: nothing reinitialised, pure finetuning)."""
    status = headline[["study", "task", "size", "slug", "trial", "status"]]
    rows = weights.merge(status, on=["study", "task", "size", "slug", "trial"])
    rows = full_model_weights(rows[rows["status"] == "ok"], params, num_layers)
    return rows.groupby(["task", "size", "layer", "sublayer"])[["frobenius", "spectral"]].mean().reset_index()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=Path, required=True)
    parser.add_argument("--probe", type=Path, required=True)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--tables", type=Path, required=True)
    parser.add_argument("--figures", type=Path, required=True)
    parser.add_argument("--plot-data", type=Path, required=True)
    args = parser.parse_args()

    params = load_params()
    num_layers, _ = model_shape(args.model)
    results = load_results(args.runs, params, num_layers)
    runs = flag_collapsed(pd.concat([results_table(r, study) for study, r in results.items()], ignore_index=True))
    headline = runs[runs["headline"]]
    points = summarise(headline, ["study", "task", "size", "slug"], carry=tuple(CONDITION))
    plain_runs = plain(headline, params, ["task", "size", "slug", "trial"])
    refs = references(plain_runs, num_layers)
    probe = probe_table(args.probe, params["probe"]["tasks"])

    for folder in (args.tables, args.figures, args.plot_data.parent):
        folder.mkdir(parents=True, exist_ok=True)
    extra = {"permutation_correlations": [], "heads_summary": []}
    plain_points = summarise(plain_runs, ["task", "size", "slug"], carry=tuple(CONDITION))
    for study, spec in params["studies"].items():
        own = points[points["study"] == study]
        draw(study, spec, own, plain_points, headline[headline["study"] == study], plain_runs, refs, results[study], probe, num_layers, args.figures / f"{study}.png", extra)

    progressive = points[points["study"] == "progressive"]
    progressive_curves(progressive, probe, params["studies"]["progressive"]["tasks"])[
        ["task", "curve", "series", "size", "k", "metric", "mean", "ci_low", "ci_high", "n", "diverged"]
    ].round(5).to_csv(args.plot_data, index=False)
    weights = weight_table(results)
    plotting.plot_weight_change(summarise_weights(weights, headline, params, num_layers), args.figures / "weight_change.png")

    runs.to_csv(args.tables / "runs.csv", index=False)
    points.round(5).to_csv(args.tables / "points.csv", index=False)
    weights.round(6).to_csv(args.tables / "weight_change.csv", index=False)
    probe.to_csv(args.tables / "probe.csv", index=False)
    for name, parts in extra.items():
        (pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()).round(5).to_csv(args.tables / f"{name}.csv", index=False)
    metrics = {}
    for row in points.itertuples():
        metrics.setdefault(row.study, {}).setdefault(row.task, {}).setdefault(f"n{row.size}", {})[row.slug] = round(row.mean, 5)
    (args.tables / "studies.json").write_text(json.dumps(metrics, indent=2) + "\n")
    print(points[["study", "task", "size", "slug", "mean", "ci_low", "ci_high", "n", "diverged"]].to_string(index=False))


if __name__ == "__main__":
    run_stage(main)
