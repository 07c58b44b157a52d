"""Margins and chance levels: the estimate tests of the trained runs (trained_table)."""

from __future__ import annotations

from tools.calibrate.estimates import TRAINED, estimate_table
from tools.calibrate.nulls import EXAMPLES, NULLS, SHALLOW_SHARE, TRIALS, TWO_CONDITIONS, Null
from tools.calibrate.row import Row

# A margin or a chance level tests its trained runs (src/claims/units.py trained_reading): its null is the trained
# runs' contrast at 0 or at the margin, whatever the collapses (simulate without compensation), so collapses of
# either condition, of both and near-collapses are nulls here, and the collapsing condition's trained runs are not
# raised to compensate.
TRAINED_NULLS = {
    "no collapse (trial + example)": NULLS["trial + example"],
    "no collapse (example-dominated)": NULLS["example-dominated"],
    "A, the full model, collapses (0.2)": NULLS["A, the full model, collapses (0.2)"],
    "B collapses (0.2)": NULLS["B collapses (0.2)"],
    "B collapses (2/3)": Null(trial_sd=0.05, example_sd=0.2, collapse=2 / 3),
    "both collapse (0.2)": NULLS["both collapse (0.2)"],
    "both nearly collapse (0.15)": NULLS["both nearly collapse (0.15)"],
    "collapses and near-collapses mixed": NULLS["collapses and near-collapses mixed"],
    "B degrades below the flag (0.2)": NULLS["B degrades below the flag (0.2)"],
    "B degrades below the flag (1/3)": NULLS["B degrades below the flag (1/3)"],
    "B degrades just below the check (1/3), trained runs' mean equal": NULLS["B degrades just below the check (1/3)"],
}
# a chance level: condition A alone against a constant
CHANCE_NULLS = {
    "A alone, no collapse (trial + example)": NULLS["trial + example"],
    "A alone, no collapse (trial-dominated)": NULLS["trial-dominated"],
    "A alone collapses (0.2)": NULLS["A, the full model, collapses (0.2)"],
    "A alone collapses (2/3)": Null(trial_sd=0.05, example_sd=0.2, collapse_a=2 / 3),
    "A alone nearly collapses (0.15)": Null(trial_sd=0.15, example_sd=0.3, near_a=0.15),
    "A alone degrades below the flag (1/3)": Null(trial_sd=0.05, example_sd=0.2, degrade_a=1 / 3),
    "A alone degrades just below the check (1/3), trained runs' mean at the constant": Null(
        trial_sd=0.05, example_sd=0.2, degrade_a=1 / 3, degrade_share=SHALLOW_SHARE
    ),
}
# runs that degrade just below the degradation check (evidence.DEGRADE_GAP) count as trained runs: these nulls are
# simulated with the other runs compensating, so that the trained runs' contrast (degraded ones included) is 0 or the
# margin
COMPENSATED_NULLS = {
    "B degrades just below the check (1/3), trained runs' mean equal",
    "A alone degrades just below the check (1/3), trained runs' mean at the constant",
}


def trained_table(
    reps: int, seed: int = 0, trials=TRIALS, nulls=None, n_examples=EXAMPLES, margin_reps: int | None = None
) -> list[Row]:
    """The estimate tests (ESTIMATE_TESTS) of the trained runs, as margins and chance levels test them, under
    TRAINED_NULLS (A − B) and CHANCE_NULLS (A against a constant), COMPENSATED_NULLS among them simulated with
    compensation; `nulls` picks from either."""
    rows = []
    for table, weights in ((TRAINED_NULLS, TWO_CONDITIONS), (CHANCE_NULLS, (1,))):
        for compensate in (False, True):
            names = [n for n in (nulls or table) if n in table and (n in COMPENSATED_NULLS) == compensate]
            if names:
                rows += estimate_table(
                    reps, seed, trials, names, (TRAINED,), n_examples, margin_reps, table, compensate, weights=weights
                )
    return rows
