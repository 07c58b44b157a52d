"""Margins and chance levels: the estimate tests of the trained runs (trained_table)."""

from __future__ import annotations

from tools.calibrate.estimates import TRAINED, estimate_table
from tools.calibrate.nulls import EXAMPLES, NULLS, TRIALS, TWO_CONDITIONS, Null
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
}
# a chance level: condition A alone against a constant
CHANCE_NULLS = {
    "A alone, no collapse (trial + example)": NULLS["trial + example"],
    "A alone, no collapse (trial-dominated)": NULLS["trial-dominated"],
    "A alone collapses (0.2)": NULLS["A, the full model, collapses (0.2)"],
    "A alone collapses (2/3)": Null(trial_sd=0.05, example_sd=0.2, collapse_a=2 / 3),
    "A alone nearly collapses (0.15)": Null(trial_sd=0.15, example_sd=0.3, near_a=0.15),
}


def trained_table(
    reps: int, seed: int = 0, trials=TRIALS, nulls=None, n_examples=EXAMPLES, margin_reps: int | None = None
) -> list[Row]:
    """The estimate tests (ESTIMATE_TESTS) of the trained runs, as margins and chance levels test them, under
    TRAINED_NULLS (A − B) and CHANCE_NULLS (A against a constant); `nulls` picks from either."""
    rows = []
    for table, weights in ((TRAINED_NULLS, TWO_CONDITIONS), (CHANCE_NULLS, (1,))):
        names = [n for n in (nulls or table) if n in table]
        if names:
            rows += estimate_table(
                reps, seed, trials, names, (TRAINED,), n_examples, margin_reps, table, compensate=False, weights=weights
            )
    return rows
