"""The command, `python -m tools.calibrate`: it measures the tables asked for (--tables), one cell at a time, and
prints each cell's lines as they are measured, after a comment that dates the output and quotes the command."""

from __future__ import annotations

import argparse
import datetime
import shlex
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import tools.calibrate
from src.claims.evidence import Evidence
from src.core.errors import UserError
from tools.calibrate.crossed import crossed_table
from tools.calibrate.curves import CROSSED_CURVE_DESIGNS, CROSSED_CURVE_NULLS, crossed_curve_table, curve_table
from tools.calibrate.estimates import ESTIMATORS, estimate_table, power_table, slope_table
from tools.calibrate.heads import (
    CORRELATION_HEADER,
    HEAD_DESIGNS,
    HEADS,
    PERMUTATION,
    correlation_markdown_row,
    correlation_table,
)
from tools.calibrate.hurdle import (
    HURDLE_ALTERNATIVES,
    HURDLE_CONTRASTS,
    HURDLE_HEADER,
    HURDLE_NULLS,
    hurdle_markdown_row,
    hurdle_table,
)
from tools.calibrate.nulls import EXAMPLES, NULLS, TRIALS
from tools.calibrate.run_null import REPORT_NULL, REPORT_NULLS, common_levels, read_run_evidence
from tools.calibrate.spearman_margin import spearman_margin_table
from tools.calibrate.table import HEADER, estimate_summary, markdown_row, power_markdown, row_from_markdown
from tools.calibrate.trained import CHANCE_NULLS, TRAINED_NULLS, trained_table
from tools.calibrate.training_check import TRAINING_HEADER, training_check_table, training_markdown_row
from tools.calibrate.welch import welch_table
from tools.calibrate.whole_report import whole_report_markdown, whole_report_table


@dataclass(frozen=True)
class Options:
    """The command line, parsed (parser() documents each option)."""

    reps: int
    margin_reps: int | None
    estimators: list[str]
    power_reps: int
    examples: int
    trials: list[int]
    nulls: list[str] | None
    hurdle_contrasts: list[str]
    crossed_reps: int
    curve_reps: int
    resamples: int
    corr_reps: int
    corr_heads: list[int]
    corr_methods: list[str] | None
    tables: list[str]
    report_reps: int
    report_null: str
    jobs: int
    run_metrics: Path
    run_predictions: Path
    run_model: Path
    run_params: Path
    seed: int
    summarise: list[str] | None


def printed(lines: Iterable[str]) -> None:
    """Print one cell's lines at once, flushed: a long run shows each cell as it is measured."""
    print("\n".join(lines), flush=True)


def estimates(o: Options) -> None:
    print(HEADER, flush=True)
    for name in [n for n in (o.nulls or NULLS) if n in NULLS]:
        for n_trials in o.trials:
            rows = estimate_table(
                o.reps, o.seed, (n_trials,), (name,), o.estimators, n_examples=o.examples, margin_reps=o.margin_reps
            )
            printed(markdown_row(row) for row in rows)


def slope(o: Options) -> None:
    print(HEADER, flush=True)
    printed(markdown_row(row) for row in slope_table(o.reps, o.seed, o.trials))


def power(o: Options) -> None:
    printed([power_markdown(power_table(o.power_reps, o.seed, o.trials))])


def trained(o: Options) -> None:
    print(HEADER, flush=True)
    for name in [n for n in (o.nulls or [*TRAINED_NULLS, *CHANCE_NULLS]) if n in TRAINED_NULLS or n in CHANCE_NULLS]:
        for n_trials in o.trials:
            rows = trained_table(o.reps, o.seed, (n_trials,), (name,), o.examples, o.margin_reps)
            printed(markdown_row(row) for row in rows)


def hurdle(o: Options) -> None:
    print(HURDLE_HEADER, flush=True)
    for contrast in o.hurdle_contrasts:
        for name in (*HURDLE_NULLS, *HURDLE_ALTERNATIVES):
            for n_trials in o.trials:
                null, alternative = ([name], []) if name in HURDLE_NULLS else ([], [name])
                rows = hurdle_table(o.reps, o.seed, (n_trials,), null, alternative, contrast)
                printed(hurdle_markdown_row(row) for row in rows)


def welch(o: Options) -> None:
    print(HEADER, flush=True)
    printed(markdown_row(row) for row in welch_table(o.reps, o.seed, o.trials))


def spearman_margin(o: Options) -> None:
    print(HEADER, flush=True)
    printed(markdown_row(row) for row in spearman_margin_table(o.reps, o.seed))


def curves(o: Options) -> None:
    """The curve statistics at every T of TRIALS (--trials picks the estimate tests' T only), then the accuracy
    contrast of a crossed seed_design."""
    print(HEADER, flush=True)
    for n_trials in TRIALS:
        printed(markdown_row(row) for row in curve_table(o.curve_reps, o.resamples, o.seed, (n_trials,)))
    printed(markdown_row(row) for row in crossed_table(o.crossed_reps, o.seed))


def crossed_curves(o: Options) -> None:
    print(HEADER, flush=True)
    for name in CROSSED_CURVE_NULLS:
        for design in CROSSED_CURVE_DESIGNS:
            rows = crossed_curve_table(o.curve_reps, o.resamples, o.seed, (design,), (name,), old=True)
            printed(markdown_row(row) for row in rows)


def training_check(o: Options) -> None:
    print(TRAINING_HEADER, flush=True)
    printed(training_markdown_row(row) for row in training_check_table(o.reps, o.seed))


def correlation(o: Options) -> None:
    print(CORRELATION_HEADER, flush=True)
    for heads in o.corr_heads:
        for name in HEAD_DESIGNS:
            rows = correlation_table(o.corr_reps, (heads,), o.seed, o.corr_methods, (name,))
            printed(correlation_markdown_row(row) for row in rows)


# every table but the whole report, which reads a finished run, in the order they are printed
SIMULATED: dict[str, Callable[[Options], None]] = {
    "estimates": estimates,
    "power": power,
    "slope": slope,
    "trained": trained,
    "hurdle": hurdle,
    "welch": welch,
    "spearman-margin": spearman_margin,
    "curves": curves,
    "crossed-curves": crossed_curves,
    "training-check": training_check,
    "correlation": correlation,
}
TABLES = (*SIMULATED, "whole-report")


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tools.calibrate", description=(tools.calibrate.__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument("--reps", type=int, default=50_000, help="replicates per cell (estimate tests and Welch)")
    parser.add_argument(
        "--margin-reps",
        type=int,
        help="replicates per cell of the tests at the margin (TOST, p_beyond; default --reps)",
    )
    parser.add_argument(
        "--estimators", nargs="+", choices=ESTIMATORS, default=list(ESTIMATORS), help="estimators (estimate tests)"
    )
    parser.add_argument("--power-reps", type=int, default=10_000, help="replicates per cell (power)")
    parser.add_argument("--examples", type=int, default=EXAMPLES, help="eval examples (estimate tests)")
    parser.add_argument("--trials", type=int, nargs="+", default=list(TRIALS), help="trials (estimate tests, power)")
    parser.add_argument(
        "--nulls",
        nargs="+",
        choices=list(dict.fromkeys([*NULLS, *TRAINED_NULLS, *CHANCE_NULLS])),
        help="nulls of the estimate tests (NULLS) or of the trained runs' (TRAINED_NULLS, CHANCE_NULLS); default all",
    )
    parser.add_argument(
        "--hurdle-contrasts",
        nargs="+",
        choices=list(HURDLE_CONTRASTS),
        default=list(HURDLE_CONTRASTS),
        help="the contrasts the hurdle table measures (default both)",
    )
    parser.add_argument("--crossed-reps", type=int, default=2000, help="replicates per cell (crossed seed_design)")
    parser.add_argument("--curve-reps", type=int, default=400, help="replicates per cell (curve statistics)")
    parser.add_argument("--resamples", type=int, default=200, help="bootstrap draws (curves)")
    parser.add_argument("--corr-reps", type=int, default=2000, help="replicates per cell (importance vs reinit)")
    parser.add_argument("--corr-heads", type=int, nargs="+", default=list(HEADS), help="numbers of heads measured")
    parser.add_argument(
        "--corr-methods", nargs="+", help=f"the intervals (measures.CORRELATION_INTERVALS) and {PERMUTATION!r} measured"
    )
    parser.add_argument(
        "--tables",
        nargs="+",
        choices=TABLES,
        default=list(SIMULATED),
        help="which tables to measure (default all but whole-report)",
    )
    parser.add_argument("--report-reps", type=int, default=200, help="replicates of the whole report (whole-report)")
    parser.add_argument(
        "--report-null",
        choices=list(REPORT_NULLS),
        default=REPORT_NULL,
        help="the global null (latent SDs, collapse rates) the whole report's replicates take",
    )
    parser.add_argument("--jobs", type=int, default=1, help="processes judging the whole report's replicates")
    run = parser.add_argument_group("the finished run whose design the whole report's replicates keep")
    run.add_argument("--run-metrics", type=Path, default=Path("metrics"), help="its metrics/ folder")
    run.add_argument("--run-predictions", type=Path, default=Path("data/predictions.npz"), help="its predictions store")
    run.add_argument("--run-model", type=Path, default=Path("data/model"), help="its prepared model (base.json)")
    run.add_argument("--run-params", type=Path, default=Path("params.yaml"), help="its params.yaml")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--summarise", nargs="+", metavar="FILE", help="print the summary of estimate tables printed before, and stop"
    )
    return parser


def summary(files: list[str]) -> str:
    """The summary tables of the estimate-table lines printed before, in `files`."""
    text = "".join(Path(f).read_text() for f in files)
    lines = [line for line in text.splitlines() if line.startswith("| ") and "| estimator |" not in line]
    return estimate_summary([row_from_markdown(line) for line in lines])


def finished_run(o: Options) -> tuple[Evidence, dict[tuple[str, str], float]]:
    """The finished run whose design the whole report's replicates keep, and its common levels; bad input exits
    with one line."""
    if o.report_reps < 1 or o.jobs < 1:
        sys.exit(f"error: --report-reps {o.report_reps}, --jobs {o.jobs}: each must be at least 1")
    try:
        evidence = read_run_evidence(o.run_metrics, o.run_predictions, o.run_model, o.run_params)
        return evidence, common_levels(evidence)
    except UserError as error:
        sys.exit(f"error: {error}")


def main(argv: list[str] | None = None) -> None:
    o = Options(**vars(parser().parse_args(argv)))
    if o.summarise:
        print(summary(o.summarise))
        return
    run = finished_run(o) if "whole-report" in o.tables else None  # before any compute
    command = shlex.join(argv if argv is not None else sys.argv[1:])  # quoted, so it can be rerun as printed
    print(f"<!-- {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC: python -m tools.calibrate {command} -->")
    for name, measure in SIMULATED.items():
        if name in o.tables:
            measure(o)
    if run is not None:
        evidence, levels = run
        result = whole_report_table(evidence, levels, o.report_reps, o.seed, o.report_null, o.jobs)
        printed([whole_report_markdown(result, evidence.settings.alpha)])


if __name__ == "__main__":
    main()
