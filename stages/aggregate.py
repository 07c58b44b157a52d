"""Stage aggregate: every study's runs and the probes -> tables, DVC metrics and figures.

Tables and studies.json: src/results/aggregate.py; measures.json (the per-run measurements'
per-layer means, for `dvc metrics`): src/results/measures.py. Figures (plots/figures/<study>.png):
src/figures/studies.py, chosen by each study's scheme and modifiers; a figure with
nothing to draw is skipped and listed with the reason in figures.csv, never a crash.
Per-example eval predictions and labels: src/artefacts/predictions.py. The per-run
measurements' tables (CKA, criticality, head importance): src/results/measures.py.
"""

import argparse
from pathlib import Path

import pandas as pd

from src.artefacts.predictions import write_predictions
from src.conditions.studies import all_study_conditions
from src.core.files import write_json_atomically
from src.figures.studies import draw_figures
from src.params.load import load_config, model_limits
from src.params.stage import run_stage
from src.results.aggregate import build_tables, write_tables
from src.results.measures import measure_tables, measures_metrics

SHOWN = ["study", "task", "size", "slug", "mean", "ci_low", "ci_high", "n", "diverged", "collapsed"]


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("runs", "probe", "model", "tables", "figures", "plot-data"):
        parser.add_argument(f"--{name}", type=Path, required=True)
    parser.add_argument("--tasks", type=Path, required=True, help="the data stage's output (eval labels)")
    parser.add_argument("--predictions", type=Path, required=True, help="every run's eval predictions (npz)")
    args = parser.parse_args()

    config = load_config()
    num_layers = model_limits(args.model).num_layers
    tables = build_tables(config, all_study_conditions(config, num_layers), args.runs, args.probe, num_layers)
    for folder in (args.tables, args.figures, args.plot_data.parent, args.predictions.parent):
        folder.mkdir(parents=True, exist_ok=True)
    drawn = draw_figures(config, tables, args.figures)
    write_tables(tables, config, args.tables, args.plot_data, num_layers)
    measured = measure_tables(config.studies, tables.results, tables.headline, tables.plain_runs)
    for name, table in measured.items():
        table.round(6).to_csv(args.tables / f"{name}.csv", index=False)
    write_json_atomically(args.tables / "measures.json", measures_metrics(measured, tables.probe, num_layers))
    pd.DataFrame(drawn).to_csv(args.tables / "figures.csv", index=False)
    write_predictions(args.predictions, tables.results, args.tasks, args.probe, config.probe.tasks)
    print(tables.headline_points[SHOWN].to_string(index=False))


if __name__ == "__main__":
    run_stage(main)
