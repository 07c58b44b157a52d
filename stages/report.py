"""Stage report: each claim of the seed studies, tested against this run's tables.

Writes metrics/report.md, a standalone metrics/report.html (figures inlined) and the
probe-versus-finetune agreement table (metrics/agreement.csv). Every verdict comes from
the claims registry (src/claims/registry.py) with its test, estimate, CI, Holm-adjusted
p or margin, n, and, when inconclusive, the trials that would decide it.
"""

import argparse
from pathlib import Path

import pandas as pd

from src.claims import registry as claims
from src.claims.render import write_report
from src.config.load import load_config, model_limits
from src.config.schema import Config
from src.results.predictions import read_predictions
from src.results.tables import plain
from src.stage import run_stage


def load_evidence(tables: Path, predictions: Path, num_layers: int, config: Config) -> claims.Evidence:
    runs = pd.read_csv(tables / "runs.csv")
    # The claims are about unmodified conditions; modified ones have figures of their own.
    headline = plain(runs[runs["headline"]], config.train, ["task", "size", "slug", "trial"])
    by_run, labels = read_predictions(predictions)
    return claims.Evidence(
        headline,
        by_run,
        labels,
        pd.read_csv(tables / "probe.csv"),
        pd.read_csv(tables / "layer_change.csv"),
        num_layers,
        config.report,
    )


def collapse_rates(points: pd.DataFrame) -> pd.DataFrame:
    """Per condition with a collapsed run: how many of its finished runs predicted one class."""
    headline = points[points["headline"] & (points["collapsed"] > 0)]
    return headline.assign(collapse_rate=headline["collapsed"] / headline["n"])[
        ["study", "task", "size", "slug", "n", "collapsed", "collapse_rate", "mean"]
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("tables", "predictions", "figures", "model", "markdown", "html"):
        parser.add_argument(f"--{name}", type=Path, required=True)
    parser.add_argument("--agreement", type=Path, required=True, help="probe vs finetune agreement table (CSV)")
    args = parser.parse_args()

    config = load_config()
    evidence = load_evidence(args.tables, args.predictions, model_limits(args.model).num_layers, config)
    verdicts, _ = claims.judge_claims(evidence)
    agreement = claims.agreement_table(evidence)
    agreement.to_csv(args.agreement, index=False)
    points = pd.read_csv(args.tables / "points.csv")
    every_metric = points[~points["headline"].astype(bool)]
    table1 = pd.read_csv(args.tables / "permutation_correlations.csv")
    extra = [
        ("Probing vs finetuning agreement", agreement.round(4)),
        (
            "Table 1: cross-task correlation over the same permutations, and its control (unpermuted runs by trial)"
            + ("" if len(table1) else ": no rows (no permutation study ran)"),
            table1,
        ),
        ("Collapsed runs (one class predicted; kept in every mean)", collapse_rates(points)),
    ]
    if len(every_metric):
        extra.append(
            (
                "Other metrics the tasks declare (headline metric in the tables above)",
                every_metric[["study", "task", "size", "slug", "metric", "mean", "ci_low", "ci_high", "n"]],
            )
        )
    figures = [
        (row.figure.replace("_", " "), args.figures / f"{row.figure}.png" if row.status == "drawn" else row.status)
        for row in pd.read_csv(args.tables / "figures.csv").itertuples()
    ]
    write_report(verdicts, config.report, extra, figures, args.markdown, args.html)
    for verdict in verdicts:
        plan = verdict["plan"] or {}
        print(
            f"{verdict['verdict']:>13}  {verdict['id']}"
            + (f"  (decided by {plan['trials']} trials: {plan['command']})" if plan.get("trials") else "")
        )


if __name__ == "__main__":
    run_stage(main)
