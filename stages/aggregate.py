"""Stage aggregate: every study's runs and the probes -> tables, DVC metrics and figures.

Tables and headline.json (the DVC metric): src/results/aggregate.py; the per-run
measurements' tables (CKA, criticality, head importance) and measures.json, their per-layer
means: src/results/measures.py. Figures (plots/figures/<study>.png; the same as an SVG for
print in plots/vector/, the means each draws as DVC plot data in plots/data/):
src/figures/studies.py, chosen by each study's scheme and modifiers; a figure with
nothing to draw is skipped and listed with the reason in figures.csv, never a crash.
Per-example eval predictions and labels: src/artefacts/predictions.py.
"""

import argparse
from pathlib import Path

from src.artefacts.predictions import write_predictions
from src.conditions.studies import all_study_conditions
from src.figures.studies import draw_figures
from src.params.load import load_config, model_limits
from src.params.stage import run_stage
from src.results.aggregate import SHOWN, build_tables, write_tables
from src.results.measures import write_measures


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("runs", "probe", "model", "tables", "figures", "vector-figures", "figure-data", "plot-data"):
        parser.add_argument(f"--{name}", type=Path, required=True)
    parser.add_argument("--tasks", type=Path, required=True, help="the data stage's output (eval labels)")
    parser.add_argument("--predictions", type=Path, required=True, help="every run's eval predictions (npz)")
    args = parser.parse_args()

    config = load_config()
    num_layers = model_limits(args.model).num_layers
    tables = build_tables(config, all_study_conditions(config, num_layers), args.runs, args.probe, num_layers)
    draw_figures(config, tables, args.figures, args.vector_figures, args.figure_data, args.tables / "figures.csv")
    write_tables(tables, config, args.tables, args.plot_data, num_layers)
    write_measures(config.studies, tables, args.tables, num_layers, args.runs)
    write_predictions(args.predictions, tables.results, args.tasks, args.probe, config.probe.tasks)
    print(tables.headline_points[SHOWN].to_string(index=False))


if __name__ == "__main__":
    run_stage(main)
