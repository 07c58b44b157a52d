"""Stage report: each claim of the seed studies, tested against this run's tables.

Writes metrics/report.md, a standalone metrics/report.html (figures inlined), the
probe-versus-finetune agreement table (metrics/agreement.csv) and the tally of verdicts
(metrics/verdicts.json, for `dvc metrics` and `dvc exp show`). Every verdict comes from
the claims registry (src/claims/registry.py) by the rule in src/claims/verdicts.py, with
its test, estimate, CI, p (raw or Holm), n, and, when undecided, the chance that N trials
decide it (src/claims/planner.py); a claim without its runs names the `dvc exp run -S …` command that adds them.
The evidence it reads: src/artefacts/evidence.py.
"""

import argparse
import subprocess
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from src import __version__
from src.artefacts.base_model import BaseModelRecord
from src.artefacts.evidence import read_evidence
from src.claims.agreement import agreement_table
from src.claims.evidence import Evidence
from src.claims.planner import plan_text
from src.claims.render import figure_list, report_tables, write_report
from src.claims.summary import NOT_STATED, PAPERS_LAYERS, WhatRan, confounded, failed_run_names, headline
from src.claims.summary import verdict_tally as tally_by_verdict
from src.claims.training import CONFOUNDED
from src.claims.verdicts import judge_claims
from src.core.files import write_json_atomically, write_text_atomically
from src.params.load import load_config
from src.params.stage import run_stage


def verdict_tally(texts: Iterable[str]) -> dict[str, int]:
    """The tally of verdicts (`texts`: each claim's Verdict.text) keyed as metric names (no spaces) for
    metrics/verdicts.json."""
    return {name.replace(" ", "_"): count for name, count in tally_by_verdict(texts).items()}


def checkout_commit() -> str | None:
    """The checkout's HEAD (short hash) that the report names; None without git or outside a checkout."""
    try:
        found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return found.stdout.strip() or None if found.returncode == 0 else None


def model_text(base: BaseModelRecord) -> str:
    """The model that ran: where from, its type, depth and width, and what it was trained for."""
    source = base.source if base.name in base.source else f"{base.name}, {base.source}"  # a local folder names it
    shape = f"{base.model_type}, {base.num_layers} layers, hidden {base.hidden_size}, {base.num_heads} heads"
    return f"{source}; {shape}; trained for: {base.trained_for or NOT_STATED}"


def model_scope(base: BaseModelRecord) -> str:
    """The model as a verdict's scope names it: its name as params.yaml gave it, its type and depth, and on a
    depth other than the papers' that their layer numbers are read as the same fractions of it."""
    scaled = (
        "" if base.num_layers == PAPERS_LAYERS else f"; the papers' layers scaled by {base.num_layers}/{PAPERS_LAYERS}"
    )
    return f"{base.name} ({base.model_type}, {base.num_layers} layers{scaled})"


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("tables", "predictions", "figures", "model", "markdown", "html"):
        parser.add_argument(f"--{name}", type=Path, required=True)
    parser.add_argument("--agreement", type=Path, required=True, help="probe vs finetune agreement table (CSV)")
    parser.add_argument("--verdicts", type=Path, required=True, help="how many claims got each verdict (JSON)")
    args = parser.parse_args()

    config, base = load_config(), BaseModelRecord.read(args.model)
    evidence = replace(
        read_evidence(Evidence, args.tables, args.predictions, base.num_layers, config), num_heads=base.num_heads
    )
    verdicts, _ = judge_claims(evidence)
    agreement = agreement_table(evidence)
    write_text_atomically(args.agreement, agreement.to_csv(index=False))
    extra, figures = report_tables(agreement, args.tables, config.report), figure_list(args.tables, args.figures)
    conditions = evidence.conditions(plain=None)
    ran = WhatRan(
        model_text(base),
        model_scope(base),
        dict(config.studies),
        sum(len(c.finished()) for c in conditions),
        sum(c.diverged for c in conditions),
        checkout_commit(),
        __version__,
        headline(evidence, config.task, config.size),
        evidence.fallback_counts(),
        failed_run_names(conditions),
    )
    write_report(verdicts, config.report, ran, extra, figures, args.markdown, args.html)
    write_json_atomically(args.verdicts, verdict_tally(v.text for v in verdicts))
    for verdict in verdicts:
        plan = verdict.plan
        decided = f"  ({plan_text(plan)})" if plan is not None and plan_text(plan) else ""
        text = verdict.text + (f", {CONFOUNDED}" if confounded(verdict) else "")
        print(f"{text:>13}  {verdict.id}{decided}")


if __name__ == "__main__":
    run_stage(main)
