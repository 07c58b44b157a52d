"""The table of Rows as printed: a row's line (markdown_row) with the decidable() verdict of the design it measures
(decidable_row), a printed line read back (row_from_markdown) and the summary tables drawn from them
(estimate_summary, `--summarise`)."""

from __future__ import annotations

import math

from src.stats.validity import decidable
from tools.calibrate.curves import CURVE_DIFFERENCES
from tools.calibrate.estimates import ESTIMATORS, TRAINED, PowerRow
from tools.calibrate.nulls import NULLS, Null
from tools.calibrate.row import ALPHA, HOLM_LEVEL, Row, shown, targets_missed
from tools.calibrate.trained import CHANCE_NULLS, TRAINED_NULLS


def test_type_of(row: Row) -> str:
    """The decidable() test type a row of the table measures."""
    if row.test.startswith("Welch"):
        return "welch"
    if row.test.startswith("Spearman rho >"):
        return "spearman-margin"
    if row.test.split(", crossed")[0] in CURVE_DIFFERENCES:
        return "bootstrap-difference"
    if row.test in ("k90", "Spearman rho vs probe", "max(curve) − max(probe)", "k90(probe) − k90(curve)"):
        return "bootstrap"
    return {"one-sided": "one-sided", "equivalence": "equivalence", "beyond": "beyond"}.get(
        row.test.split(" ")[0], "difference"
    )


def decidable_row(row: Row) -> tuple[bool, str]:
    """decidable() for the design a row of the table measures."""
    return decidable(test_type_of(row), row.trials, design=row.design)


HEADER = (
    f"| estimator | test | null | T | reps | size at {ALPHA} | size at {HOLM_LEVEL:.5f} | coverage | "
    "half-width / oracle | undefined | refused | decidable | targets missed |\n" + "|---" * 13 + "|"
)


def markdown_row(row: Row) -> str:
    """A table line; "targets missed" applies 2 Monte Carlo SEs of slack to size and coverage."""
    return (
        f"| {row.estimator} | {row.test} | {row.null} | {row.trials} | {row.reps * row.tails:,} | {shown(row.size)} | "
        f"{shown(row.size_holm, '.5f')} | {shown(row.coverage)} | {shown(row.half_width, '.2f')} | "
        f"{shown(row.undefined, '.2f')} | {shown(row.refused, '.2f')} | {'yes' if decidable_row(row)[0] else 'no'} | "
        f"{targets_missed(row) if row.estimator in ('new', TRAINED) else f'({row.estimator})'} |"
    )


def row_from_markdown(line: str) -> Row:
    """A Row from a line markdown_row printed (the estimate and Welch tables), so that the summary tables can be
    drawn from a run's printed output (`--summarise`)."""
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    estimator, test, null, trials, reps, size, size_holm, coverage, half, undefined, refused = cells[:11]

    def number(text: str) -> float:
        return math.nan if text == "–" else float(text)

    two_sided_null = {**NULLS, **TRAINED_NULLS}.get(null, Null(0, 0)).symmetric and null not in CHANCE_NULLS
    tails = 2 if test.startswith("one-sided") and two_sided_null else 1
    return Row(
        test,
        null,
        int(trials),
        int(reps.replace(",", "")) // tails,
        number(size),
        number(coverage),
        number(half),
        number(undefined),
        estimator,
        size_holm=number(size_holm),
        refused=number(refused),
        tails=tails,
    )


def estimate_summary(rows: list[Row]) -> str:
    """Two markdown tables of the estimate tests: per null and T, every test's size at ALPHA and HOLM_LEVEL by the
    estimator the claims use ("new"; TRAINED for trained_table's rows alone), with its coverage, half-width / oracle,
    refused share and the targets missed (2 Monte Carlo SEs of slack); then the one-sided test's size by each
    estimator measured (not for the trained runs' tables)."""
    cells = {(r.estimator, r.test.split(" ")[0], r.null, r.trials): r for r in rows}
    kinds = ("one-sided", "difference", "equivalence", "beyond")
    order = list(dict.fromkeys([*NULLS, *TRAINED_NULLS, *CHANCE_NULLS]))
    cases = sorted({(r.null, r.trials) for r in rows}, key=lambda c: (order.index(c[0]), c[1]))
    tested = "new" if any(r.estimator == "new" for r in rows) else TRAINED  # the trained runs' tables alone
    levels = f"{ALPHA} / {HOLM_LEVEL:.5f}"
    lines = [
        f"| null | T | reps | one-sided, size at {levels} | two-sided | TOST at the margin | p_beyond at the margin | "
        "coverage | half-width / oracle | refused | targets missed |",
        "|---" * 11 + "|",
    ]
    for null, trials in cases:
        new = [cells.get((tested, kind, null, trials)) for kind in kinds]
        one_sided, difference = new[0], new[1]
        if one_sided is None:
            continue
        assert difference is not None, "an estimate table measures the difference beside the one-sided test"
        sizes = [f"{shown(r.size)} / {shown(r.size_holm, '.5f')}" if r else "–" for r in new]
        missed = sorted({m for r in new if r for m in targets_missed(r).split(", ") if m != "–"})
        reps = "/".join(f"{r.reps * r.tails:,}" for r in (one_sided, new[2]) if r)
        lines.append(
            f"| {null} | {trials} | {reps} | {' | '.join(sizes)} | {shown(difference.coverage)} | "
            f"{shown(difference.half_width, '.2f')} | {shown(one_sided.refused, '.2f')} | {', '.join(missed) or '–'} |"
        )
    if tested == TRAINED:
        return "\n".join(lines)
    measured = [m for m in ESTIMATORS if any(r.estimator == m for r in rows)]
    lines += [
        "",
        f"| null | T | reps | {' | '.join(f'{m}: size at {levels} (≤ 95% CP bound at Holm)' for m in measured)} |",
        "|---" * (3 + len(measured)) + "|",
    ]
    for null, trials in cases:
        by = [cells.get((m, "one-sided", null, trials)) for m in measured]
        sizes = [
            f"{shown(r.size)} / {shown(r.size_holm, '.5f')} (≤ {shown(r.holm_upper(), '.5f')})" if r else "–"
            for r in by
        ]
        reps = next((f"{r.reps * r.tails:,}" for r in by if r), "–")
        lines.append(f"| {null} | {trials} | {reps} | {' | '.join(sizes)} |")
    return "\n".join(lines)


def power_markdown(rows: list[PowerRow]) -> str:
    """The power table: per null, T and true contrast, each estimator's rejection rate of the one-sided test at
    ALPHA, then at HOLM_LEVEL, with the largest Monte Carlo SE of a rate (sqrt(0.25 / reps))."""
    estimators = list(rows[0].rates) if rows else []
    columns = [f"{m} at {level}" for level in (ALPHA, f"{HOLM_LEVEL:.5f}") for m in estimators]
    lines = [
        f"| null | T | true A − B | reps (MC SE ≤) | {' | '.join(columns)} |",
        "|---" * (4 + len(columns)) + "|",
    ]
    for r in rows:
        rates = [shown(r.rates[m][i]) for i in (0, 1) for m in estimators]
        lines.append(
            f"| {r.null} | {r.trials} | {r.effect:.2f} | {r.reps:,} ({math.sqrt(0.25 / r.reps):.3f}) | "
            f"{' | '.join(rates)} |"
        )
    return "\n".join(lines)
