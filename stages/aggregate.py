"""Stage aggregate: every study's runs and the probes -> tables, DVC metrics and figures.

Tables and studies.json: src/results/aggregate.py. Figures (plots/figures/<study>.png):
src/figures/studies.py, chosen by each study's scheme and modifiers; a figure with
nothing to draw is skipped and listed with the reason in figures.csv, never a crash.
Per-example eval predictions and labels: src/results/predictions.py.
"""

import argparse
from pathlib import Path

import pandas as pd

from src.conditions.studies import all_study_conditions
from src.config.load import load_config, model_limits
from src.figures import plots
from src.figures.studies import StudyTables, draw_study
from src.results import aggregate as agg
from src.results.predictions import write_predictions
from src.results.tables import plain, results_table, summarise
from src.stage import run_stage


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("runs", "probe", "model", "tables", "figures", "plot-data"):
        parser.add_argument(f"--{name}", type=Path, required=True)
    parser.add_argument("--tasks", type=Path, required=True, help="the data stage's output (eval labels)")
    parser.add_argument(
        "--predictions", type=Path, required=True, help="npz of every run's eval predictions and the eval labels"
    )
    args = parser.parse_args()

    config = load_config()
    num_layers = model_limits(args.model).num_layers
    results = agg.load_results(args.runs, all_study_conditions(config, num_layers), num_layers)
    runs = pd.concat([results_table(r, study, num_layers) for study, r in results.items()], ignore_index=True)
    headline = runs[runs["headline"]]
    # every metric a task declares is summarised; figures and claims use the headline one
    points = summarise(
        runs,
        ["study", "task", "size", "slug", "metric"],
        carry=(*agg.CONDITION, "headline", "ref_full", "ref_scratch", "ref_baseline"),
    )
    headline_points = points[points["headline"]]
    plain_runs = plain(headline, config.train, ["task", "size", "slug", "trial"])
    plain_points = summarise(plain_runs, ["task", "size", "slug"], carry=(*agg.CONDITION, "metric"))
    refs, probe = agg.reference_points(plain_runs), agg.probe_table(args.probe, config.probe.tasks)
    for folder in (args.tables, args.figures, args.plot_data.parent, args.predictions.parent):
        folder.mkdir(parents=True, exist_ok=True)

    drawn, weights = [], agg.weight_table(results, num_layers)
    figures = {
        name: (
            lambda path, name=name, study=study: draw_study(
                study,
                StudyTables(
                    headline_points[headline_points["study"] == name],
                    headline[headline["study"] == name],
                    plain_points,
                    plain_runs,
                    refs,
                    results[name],
                    probe,
                ),
                path,
            )
        )
        for name, study in config.studies.items()
    }
    empty_weights = pd.DataFrame(columns=["task", "size", "layer", "sublayer", "spectral"])
    figures["weight_change"] = lambda path: plots.plot_weight_change(
        agg.summarise_weights(weights, config.train) if len(weights) else empty_weights, path
    )
    for name, draw in figures.items():
        try:
            draw(args.figures / f"{name}.png")
            drawn.append({"figure": name, "status": "drawn"})
        except plots.NothingToDraw as reason:
            (args.figures / f"{name}.png").unlink(missing_ok=True)
            drawn.append({"figure": name, "status": f"not run: {reason}"})

    progressive = headline_points[headline_points["study"] == "progressive"]
    agg.progressive_curves(progressive, probe, list(config.studies["progressive"].tasks))[agg.PLOT_COLUMNS].round(
        5
    ).to_csv(args.plot_data, index=False)
    runs.to_csv(args.tables / "runs.csv", index=False)
    points.round(5).to_csv(args.tables / "points.csv", index=False)
    weights.round(6).to_csv(args.tables / "weight_change.csv", index=False)
    agg.layer_change_table(results, config.train, num_layers).to_csv(args.tables / "layer_change.csv", index=False)
    probe.to_csv(args.tables / "probe.csv", index=False)
    pd.DataFrame(drawn).to_csv(args.tables / "figures.csv", index=False)
    write_predictions(args.predictions, results, args.tasks)
    for name, table in agg.extra_tables(config.studies, headline, plain_runs).items():
        table.round(5).to_csv(args.tables / f"{name}.csv", index=False)
    agg.studies_metrics(points, args.tables / "studies.json")
    print(
        headline_points[
            ["study", "task", "size", "slug", "mean", "ci_low", "ci_high", "n", "diverged", "collapsed"]
        ].to_string(index=False)
    )


if __name__ == "__main__":
    run_stage(main)
