"""Stage report: each claim of the seed studies, tested against this run's tables.

Writes metrics/report.md, a standalone metrics/report.html (figures inlined) and the
probe-versus-finetune agreement table (metrics/agreement.csv). Every verdict comes from
the claims registry (src/claims/registry.py) by the rule in src/claims/verdicts.py, with
its test, estimate, CI, p (raw or Holm), n, and, when undecided, the trials that would
decide it; a claim without its runs names the `dvc exp run -S …` command that adds them.
"""

import argparse
from pathlib import Path

import pandas as pd

from src.artefacts.predictions import Predictions, read_predictions
from src.claims.agreement import agreement_table
from src.claims.evidence import Evidence
from src.claims.render import figure_list, report_tables, write_report
from src.claims.verdicts import judge_claims
from src.config.schema import Config
from src.params.load import load_config, model_limits
from src.params.stage import run_stage
from src.results.tables import plain


def load_evidence(tables: Path, predictions: Predictions, num_layers: int, config: Config) -> Evidence:
    """Every headline run once (modified conditions too: App. D-F and Huang et al. compare them
    with the plain run), marked `plain` where the condition is unmodified."""
    runs = pd.read_csv(tables / "runs.csv")
    headline = runs[runs["headline"]].drop_duplicates(["task", "size", "slug", "trial"])
    unmodified = plain(headline, config.train, ["task", "size", "slug", "trial"])
    return Evidence(
        headline.assign(plain=headline.index.isin(unmodified.index)),
        predictions.runs,
        predictions.labels,
        pd.read_csv(tables / "probe.csv"),
        pd.read_csv(tables / "weight_change.csv"),
        pd.read_csv(tables / "layer_change.csv"),
        num_layers,
        config.report,
        dict(config.studies),
        config.data,
        config.train,
        predictions.probes,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("tables", "predictions", "figures", "model", "markdown", "html"):
        parser.add_argument(f"--{name}", type=Path, required=True)
    parser.add_argument("--agreement", type=Path, required=True, help="probe vs finetune agreement table (CSV)")
    args = parser.parse_args()

    config = load_config()
    evidence = load_evidence(
        args.tables, read_predictions(args.predictions), model_limits(args.model).num_layers, config
    )
    verdicts, _ = judge_claims(evidence)
    agreement = agreement_table(evidence)
    agreement.to_csv(args.agreement, index=False)
    extra, figures = report_tables(agreement, args.tables, config.report), figure_list(args.tables, args.figures)
    write_report(verdicts, config.report, extra, figures, args.markdown, args.html)
    for verdict in verdicts:
        plan = verdict["plan"] or {}
        decided = f"  (decided by {plan['trials']} trials: {plan['command']})" if plan.get("trials") else ""
        print(f"{verdict['verdict']:>13}  {verdict['id']}{decided}")


if __name__ == "__main__":
    run_stage(main)
