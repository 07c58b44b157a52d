"""Stage report: each claim of the seed studies, checked against this run's tables.

Writes metrics/report.md, a standalone metrics/report.html (figures inlined) and the
probe-versus-finetune agreement table (metrics/agreement.csv). Every
verdict is computed by src/claims.py from the aggregated tables; a family that was
not run is reported as "not run".
"""

import argparse
from pathlib import Path

import pandas as pd

from src import claims
from src.errors import run_stage
from src.model import model_shape
from src.params import load_params
from src.stats import full_model_weights, plain


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tables", type=Path, required=True)
    parser.add_argument("--figures", type=Path, required=True)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--markdown", type=Path, required=True)
    parser.add_argument("--html", type=Path, required=True)
    parser.add_argument("--agreement", type=Path, required=True, help="probe vs finetune agreement table (CSV)")
    args = parser.parse_args()

    params = load_params()
    num_layers, _ = model_shape(args.model)
    runs = pd.read_csv(args.tables / "runs.csv")
    # The claims are about unmodified conditions; modified ones have figures of their own.
    headline = plain(runs[runs["headline"]], params, ["task", "size", "slug", "trial"])
    weights = full_model_weights(pd.read_csv(args.tables / "weight_change.csv"), params, num_layers)
    probe = pd.read_csv(args.tables / "probe.csv")

    verdicts = claims.all_claims(headline, probe, weights, num_layers)
    figures = [(png.stem.replace("_", " "), png) for png in sorted(args.figures.glob("*.png"))]
    agreement = claims.agreement(headline, probe, num_layers)
    agreement.to_csv(args.agreement, index=False)
    claims.write_report(verdicts, agreement, figures, args.markdown, args.html)
    for verdict in verdicts:
        print(f"{verdict['verdict']:>13}  {verdict['id']}: {verdict['statistic']}")


if __name__ == "__main__":
    run_stage(main)
