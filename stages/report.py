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
from src.claims.render import figure_list, report_tables, write_report
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
    extra, figures = report_tables(agreement, args.tables), figure_list(args.tables, args.figures)
    write_report(verdicts, config.report, extra, figures, args.markdown, args.html)
    for verdict in verdicts:
        plan = verdict["plan"] or {}
        decided = f"  (decided by {plan['trials']} trials: {plan['command']})" if plan.get("trials") else ""
        print(f"{verdict['verdict']:>13}  {verdict['id']}{decided}")


if __name__ == "__main__":
    run_stage(main)
