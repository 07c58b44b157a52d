"""The statistics on edge designs, each against the verdict docs/claims.md ("Edge designs") documents: a condition
whose every run collapsed, a condition whose runs carry two fingerprints, a study some of whose runs failed to
train."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from src.artefacts.run_result import result_path
from src.claims.summary import FAILED_NAMED, WhatRan, what_ran_lines
from src.claims.verdicts import judge_claims
from src.conditions.studies import all_study_conditions
from src.params.load import validate
from src.results.aggregate import load_results
from src.results.tables import results_table
from tests.fake_evidence import RISING, Builder, L, render
from tests.support import grid_params, stub_result


def verdict(evidence, claim: str):
    (found,) = [v for v in judge_claims(evidence, plan=False)[0] if v.id == claim]
    return found


def scratch_always_collapsed(trials: int) -> Builder:
    """The progressive curve at one task and size, where scratch (k = 0) collapsed onto one class in every trial
    (it scores that class's share, 0.5) and every other k trained."""
    b = Builder()
    for trial in range(trials):
        for k, value in enumerate(RISING):
            collapsed = k == 0
            b.add(
                f"k{k}",
                0.5 if collapsed else value + 0.01 * (trial % 3),
                trial=trial,
                k=k,
                collapsed=collapsed,
                majority_share=1.0 if collapsed else 0.5,
            )
    return b


@pytest.mark.parametrize("trials, expected", [(3, "inconclusive"), (6, "supported")])
def test_a_condition_whose_every_run_collapsed_is_decided_by_its_collapse_rate_alone(tmp_path, trials, expected):
    # Every scratch run collapsed, so no trial trained in both conditions: the hurdle's trained part has nothing to
    # test (p = 1) and the collapse rates decide alone. T of T discordant trials give the exact one-sided p 2^-T,
    # tested at alpha / 2 where it can reach alpha: at 3 trials 1/8 never can (inconclusive), at 6 it is 1/64
    # (supported here on the collapse rates, with no estimate of the trained runs' contrast).
    v = verdict(scratch_always_collapsed(trials).evidence(), "full_beats_scratch")
    (judged,) = v.units
    unit = judged.unit
    assert v.text == expected
    assert unit.n == trials and not unit.refused and np.isnan(unit.estimate)
    assert f"{trials} collapsed run(s) counted in the collapse rates" in unit.notes
    assert f"0 of {trials} trials trained in both (the estimate's)" in unit.notes
    scratch = unit.collapse["k0"]
    assert (scratch.collapsed, scratch.runs, unit.collapse[f"k{L}"].collapsed) == (trials, trials, 0)
    assert unit.p_for == (1.0 if trials == 3 else pytest.approx(2 * 0.5**trials))
    # the report renders it: the collapse rate beside the verdict, no interval to print for the trained runs
    render(scratch_always_collapsed(trials).evidence(), tmp_path)


def test_a_condition_whose_runs_carry_two_fingerprints_is_read_as_one_condition(tmp_path):
    # A finetune stage keeps a run only where its fingerprint is current or made by a recipe declared equivalent
    # (EQUIVALENT_RECIPES, guarded by the golden runs), and retrains every other before the report runs; a study
    # folder can so hold trials of one condition that carry the fingerprints of two recipes (and one trial's
    # fingerprint differs from another's by design: it holds the trial). The aggregate reads every trial, whatever
    # its fingerprint, and the runs table, so every verdict, is the same as with one.
    params = grid_params()
    params["studies"] = {
        "progressive": {"scheme": "progressive", "tasks": ["rt_sentiment"], "sizes": [8], "ks": [0, 4], "trials": 3}
    }
    config = validate(params)
    reported = all_study_conditions(config, L)
    tables = {}
    for recipes in (("a",), ("a", "b")):
        runs = tmp_path / "-".join(recipes)
        for i, condition in enumerate(reported["progressive"]):
            recipe = recipes[i % len(recipes)]
            result = stub_result(condition.as_dict(), scores={"accuracy": 0.6 + 0.01 * i}, fingerprint=f"{recipe}{i}")
            replace(result, training_fingerprint=f"{recipe}{i}-training").write(
                result_path(runs / "progressive", condition)
            )
        results = load_results(runs, reported, L)
        assert len({r.fingerprint[0] for r in results["progressive"]}) == len(recipes)
        tables[recipes] = results_table(results["progressive"], "progressive", L)
    assert len(tables[("a",)]) == len(reported["progressive"]) == 6
    pd.testing.assert_frame_equal(tables[("a",)], tables[("a", "b")])


def test_a_study_some_of_whose_runs_failed_to_train_says_what_is_missing_and_decides_the_rest(tmp_path):
    # A run whose loss became non-finite is recorded as diverged: the report leaves it out of every test, counts it
    # on its first screen and in each unit that would have read it, and decides each claim on the runs that trained.
    b = Builder().curve(RISING, trials=4, spread=0.005)
    b.rows = [r for r in b.rows if not (r["trial"] == 3 and r["slug"] == "k0")]
    b.add("k0", 0.0, trial=3, k=0, status="diverged")
    v = verdict(b.evidence(), "full_beats_scratch")
    (judged,) = v.units
    assert judged.unit.n == 3 and "1 diverged run(s) left out" in judged.unit.notes
    trained = Builder().curve(RISING, trials=3, spread=0.005)  # the same design without the failed trial
    (alone,) = verdict(trained.evidence(), "full_beats_scratch").units
    assert v.text == "supported" and judged.unit.estimate == pytest.approx(alone.unit.estimate)
    report = render(b.evidence(), tmp_path)
    assert (
        f"**Runs read**: {len(b.rows) - 1} finished, 1 failed (non-finite loss, left out: sst2 n=500 k0 trial 3)."
        in report
    )


def test_the_first_screen_names_the_first_failed_runs_and_counts_the_others():
    failed = tuple(f"sst2 n=500 k{k} trial 0" for k in range(FAILED_NAMED + 2))
    ran = WhatRan("tiny", "tiny (bert, 4 layers)", {}, 10, len(failed), failed=failed)
    (line,) = [line for line in what_ran_lines(ran) if line.startswith("**Runs read**")]
    named = ", ".join(failed[:FAILED_NAMED])
    assert line == f"**Runs read**: 10 finished, {len(failed)} failed (non-finite loss, left out: {named} and 2 more)."
