"""Stage aggregate: every grid run and probe -> long table, means with 95% t CIs, Fig. 1.

Writes the long-form results table, the per-point summary, DVC metrics (score at
each k per task and size), DVC plot data (plots/progressive.csv) and the PNG figure.
"""

import argparse
import json
from pathlib import Path

import pandas as pd

from src.experiment import read_results
from src.params import load_params
from src.plotting import plot_progressive
from src.stats import in_grid, results_table, summarise


def probe_curves(probe_dir: Path, tasks: list[str]) -> pd.DataFrame:
    rows = []
    for task in tasks:
        probe = json.loads((probe_dir / f"{task}.json").read_text())
        for layer in probe["layers"]:
            value = layer["scores"][probe["metric"]]
            rows.append({"task": task, "curve": "probe", "series": "probe", "size": probe["train_examples"], "k": layer["layer"], "metric": probe["metric"], "mean": value, "ci_low": value, "ci_high": value, "n": 1, "diverged": 0})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--finetune", type=Path, required=True)
    parser.add_argument("--probe", type=Path, required=True)
    parser.add_argument("--table", type=Path, required=True)
    parser.add_argument("--metrics", type=Path, required=True)
    parser.add_argument("--plot-data", type=Path, required=True)
    parser.add_argument("--figure", type=Path, required=True)
    args = parser.parse_args()

    params = load_params()
    grid = params["grid"]
    table = in_grid(results_table(read_results(args.finetune)), grid, params["recipe"], params["head"])
    expected = len(grid["tasks"]) * len(grid["sizes"]) * len(grid["ks"]) * grid["trials"]
    found = table.drop_duplicates(["task", "size", "k", "trial"]).shape[0]
    if found != expected:
        raise SystemExit(f"aggregate: found {found} finished grid runs under {args.finetune}, expected {expected}")

    # The headline metric of each task is the first one its runs report.
    headline = table.groupby("task")["metric"].first()
    finetune = summarise(table[table["metric"] == table["task"].map(headline)], ["task", "metric", "size", "k"])
    finetune = finetune.assign(curve="finetune", series="n=" + finetune["size"].astype(str))
    curves = pd.concat([finetune, probe_curves(args.probe, grid["tasks"])], ignore_index=True)
    curves = curves.sort_values("task", key=lambda t: t.map(grid["tasks"].index), kind="stable")

    for path in (args.table, args.metrics, args.plot_data, args.figure):
        path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.table, index=False)
    columns = ["task", "curve", "series", "size", "k", "metric", "mean", "ci_low", "ci_high", "n", "diverged"]
    curves[columns].round(5).to_csv(args.plot_data, index=False)
    metrics = {}
    for row in curves.itertuples():
        name = f"n{row.size}" if row.curve == "finetune" else "probe"
        metrics.setdefault(row.task, {}).setdefault(name, {})[f"k{row.k}"] = round(row.mean, 5)
    args.metrics.write_text(json.dumps(metrics, indent=2) + "\n")
    plot_progressive(curves, args.figure)
    print(finetune[["task", "size", "k", "mean", "ci_low", "ci_high", "n", "diverged"]].to_string(index=False))


if __name__ == "__main__":
    main()
