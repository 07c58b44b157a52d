"""Tests of intent for the claims registry, on hand-built evidence where the truth is known (not
the live params.yaml): a planted effect is supported and its reverse contradicted; a missing
study is "not run" with a `-S` command that the schema accepts; a contradicting unit is
counted even where the full-vs-scratch gap is unresolved, and that gap is needed for support;
existential claims use Holm, universal ones the intersection-union test; a bootstrap gives no
verdict (and no interval) below its minimum trials or above the declared undefined share;
probe-vs-finetuning claims need several probe seeds; weight change is read at the end of
training; every claim in the registry gets a row in the rendered report."""

import math
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats
from statsmodels.stats.multitest import multipletests

from src.claims.claim import PAPERS, PROGRESSIVE, Shared, interval_text, number
from src.claims.evidence import Evidence
from src.claims.planner import plan_text
from src.claims.registry import BY_ID, CLAIMS
from src.claims.render import inline_html, report_tables, unit_rows
from src.claims.summary import SHOWN, VERDICTS
from src.claims.units import COLLAPSE_LABEL, ONE_PROBE_SEED, TRAINED_NOTE, Refusal, Refused, Unit
from src.claims.verdicts import (
    CONDITION_MODIFIERS,
    NO_VERDICT,
    NOT_RUN,
    RULE,
    Judged,
    Verdict,
    error_bounds,
    holm_families,
    judge_claims,
    matching_study,
    robust_statuses,
    scope_of,
)
from src.conditions.studies import all_study_conditions
from src.config.schema import StudyConfig
from src.params.load import read_params, validate
from src.schemes.registry import MODIFIERS as SCHEME_MODIFIERS
from src.stats.curves import first_reaching
from src.stats.hypothesis import Bootstrap, Estimate
from tests.fake_evidence import (
    CONFIG,
    RISING,
    SETTINGS,
    Builder,
    H,
    L,
    probe_evidence,
    probe_table,
    render,
)
from tests.support import REPO, exp_run_params, grid_params


def verdicts(evidence, plan: bool = False) -> dict[str, Verdict]:
    """Every claim's verdict; with `plan`, the planner's Plan too (its simulations double the call's time, so only
    the tests of the planner ask for it)."""
    return {v.id: v for v in judge_claims(evidence, plan=plan)[0]}


def units_of(verdict: Verdict) -> list[Unit]:
    """The units the claim's builders made (each judged unit's, its interval the one its test for reads)."""
    return [judged.unit for judged in verdict.units]


# --- claims glue, against hand-worked cases ------------------------------------------------------------------


def test_first_reaching_by_hand():
    assert first_reaching([0.5, 0.9, 0.91, 0.92, 0.93]) == 1
    assert first_reaching([0.5, 0.52, 0.55, 0.60, 0.90]) == 4
    assert math.isnan(first_reaching([0.5, 0.5, 0.4]))


# --- verdict rules ------------------------------------------------------------------------------------------------


def test_a_planted_effect_is_supported_and_its_reverse_contradicted():
    v = verdicts(Builder().curve(RISING, trials=6).evidence())
    assert v["full_beats_scratch"].text == "supported"
    (unit,) = units_of(v["full_beats_scratch"])
    assert unit.estimate == pytest.approx(0.40, abs=0.02) and unit.n == 6 and unit.p_for < 0.05
    assert v["later_reinit_costs_less"].text == "supported"
    (slope,) = units_of(v["later_reinit_costs_less"])  # the OLS slope over k, as a contrast of the k's
    assert slope.estimate == pytest.approx(np.polyfit(range(L + 1), RISING, 1)[0], abs=0.005)
    v = verdicts(Builder().curve(RISING[::-1], trials=6).evidence())
    assert v["full_beats_scratch"].text == "contradicted"
    assert v["later_reinit_costs_less"].text == "contradicted"


def test_one_trial_cannot_decide_a_wide_interval_is_inconclusive_and_the_planner_names_the_trials():
    one = verdicts(Builder().curve(RISING, trials=1).evidence(), plan=True)["full_beats_scratch"]
    assert one.text == NO_VERDICT and units_of(one)[0].refused.reason.startswith("the design cannot decide at T = 1:")
    assert math.isnan(units_of(one)[0].p_for) and math.isnan(units_of(one)[0].interval[0])
    assert one.plan.trials == 3  # no SD to plan from: the trials from which the design decides
    v = verdicts(Builder().curve([0.5, 0.5, 0.5, 0.5, 0.56], trials=3, spread=0.08).evidence(), plan=True)[
        "full_beats_scratch"
    ]
    assert units_of(v)[0].estimate > 0 and v.text == "inconclusive"
    # the chance that N trials decide it, at the smallest N reaching 0.5 and report.power; the command runs the
    # larger, and says the runs it adds (the curve's 5 conditions at one size)
    (few, few_for, few_against), (n, p_for, p_against) = v.plan.chances
    assert 3 < few < n and 0.5 <= few_for + few_against < SETTINGS.power <= p_for + p_against
    assert v.plan.trials == n and v.plan.runs == 5 * (n - 3)
    assert v.plan.command == f"dvc exp run -S studies.progressive.trials={n}"
    assert f"{n} trials decide it with probability {p_for + p_against:.2f}" in plan_text(v.plan)
    # trials per size: the whole mapping comes back, the blocking unit's size raised, the others kept
    per_size = replace(CONFIG.studies["progressive"], trials={500: 3, 64: 7})
    b = Builder().curve([0.5, 0.5, 0.5, 0.5, 0.56], trials=3, spread=0.08)
    v = verdicts(b.evidence(studies={"progressive": per_size}), plan=True)["full_beats_scratch"]
    n = v.plan.trials
    assert v.plan.command == f"dvc exp run -S 'studies.progressive.trials={{500: {n}, 64: 7}}'"


def test_a_summary_cell_names_a_few_units_per_planner_reason_not_every_head():
    from src.claims.render import NAMED_UNITS, by_text

    heads = [f"rt_sentiment n=128 layer {layer} head {head}" for layer in (1, 2) for head in range(12)]
    reasons = [f"{unit}: no variance estimate (fewer than 2 trials)" for unit in heads[:20]]
    reasons += [f"{unit}: no number of trials decides it" for unit in heads[20:]]
    cell = by_text(reasons)
    assert cell == (
        f"{', '.join(heads[:NAMED_UNITS])} and {20 - NAMED_UNITS} more: no variance estimate (fewer than 2 trials); "
        f"{', '.join(heads[20:23])} and 1 more: no number of trials decides it"
    )
    assert by_text(["sst2 n=500: 4–9 (point 6)"]) == "sst2 n=500: 4–9 (point 6)"


def crossed_study(design: tuple[int, int], task: str = "sst2") -> Builder:
    """A progressive curve over a crossed seed_design whose full-vs-scratch gap depends on the
    training subset (trial t: subset t // draws): -0.02, +0.10, +0.22 over three subsets."""
    b = Builder()
    subsets, draws = design
    for t in range(subsets * draws):
        shift = 0.06 * (t // draws - 1) + 0.005 * (t % draws)
        for k, value in enumerate([0.70 - shift, 0.72, 0.75, 0.78, 0.80 + shift]):
            b.add(f"k{k}", value, trial=t, k=k, task=task)
    return b


def crossed_with_a_collapse():
    """crossed_study((3, 3)) whose scratch run of trial 4 nearly collapsed (majority share 0.95)."""
    b = crossed_study((3, 3))
    b.rows = [r for r in b.rows if not (r["slug"] == "k0" and r["trial"] == 4)]
    b.add("k0", 0.5, trial=4, k=0, majority_share=0.95)
    return b.evidence(studies={"progressive": replace(CONFIG.studies["progressive"], seed_design=(3, 3), trials=9)})


def test_a_crossed_seed_designs_contrast_gives_no_verdict_where_one_of_its_runs_collapsed():
    # every run trained: the crossed test of the runs (all of them trained) decides; one scratch run (nearly)
    # collapsed: no verdict, since the crossed test needs every subset x draw cell and the exact test of
    # collapses takes trials as independent (a refusal is never a wrong verdict)
    crossed = {"progressive": replace(CONFIG.studies["progressive"], seed_design=(3, 3), trials=9)}
    (trained,) = units_of(verdicts(crossed_study((3, 3)).evidence(studies=crossed))["full_beats_scratch"])
    assert not trained.refused and trained.n == 9
    v = verdicts(crossed_with_a_collapse())["full_beats_scratch"]
    (unit,) = units_of(v)
    assert unit.refused.reason.startswith("(nearly) collapsed runs in a crossed seed_design (1 of 9 trials)")
    assert v.text == NO_VERDICT and unit.collapse["k0"].collapsed == 1


def test_a_crossed_seed_design_is_read_by_paired_contrasts_and_refused_by_tests_of_independent_trials():
    """The 9 runs of 3 subsets x 3 draws are not 9 independent trials: the contrast's variance is
    the crossed one (3 subsets, not 9 trials, carry the subset effect), so a gap that depends on
    the subset is not shown, and the slope over k, a contrast, is read the same way; 2 subsets are refused (1 df
    for the subset effect, measured to under-cover)."""
    crossed = replace(CONFIG.studies["progressive"], seed_design=(3, 3), trials=9)
    independent = verdicts(crossed_study((3, 3)).evidence(), plan=True)
    v = verdicts(crossed_study((3, 3)).evidence(studies={"progressive": crossed}), plan=True)
    (unit,) = units_of(v["full_beats_scratch"])
    (naive,) = units_of(independent["full_beats_scratch"])
    assert unit.estimate == pytest.approx(naive.estimate) and unit.n == 9
    assert unit.result.se > 1.5 * naive.result.se and unit.result.df < 4  # the subset effect on 2 df
    assert independent["full_beats_scratch"].text == "supported"
    assert v["full_beats_scratch"].text == "inconclusive"
    assert "crossed seed_design: 3 subsets x 3 draws" in unit.notes
    n = v["full_beats_scratch"].plan.trials  # more trials means more subsets and draws (trials = their product)
    (command,) = re.findall(
        r"seed_design=\{subsets: (\d+), seeds: (\d+)\}' -S studies.progressive.trials=(\d+)",
        v["full_beats_scratch"].plan.command,
    )
    subsets, draws, trials = map(int, command)
    assert trials == subsets * draws >= n and abs(subsets - draws) <= 1
    (slope,) = units_of(v["later_reinit_costs_less"])  # the slope over k is a contrast: read by the crossed variance
    assert slope.refused is None and "crossed seed_design: 3 subsets x 3 draws" in slope.notes
    two = replace(crossed, seed_design=(2, 3), trials=6)
    (unit,) = units_of(
        verdicts(crossed_study((2, 3)).evidence(studies={"progressive": two}), plan=True)["full_beats_scratch"]
    )
    assert unit.refused.reason.startswith("the design cannot decide with a crossed seed_design of 2 subsets x 3 draws")


EARLY = [0.50, 0.78, 0.79, 0.795, 0.80]  # reaches 90% of its gain at k = 1, its steepest step k = 1
LATE = [0.50, 0.52, 0.55, 0.60, 0.80]  # at k = 4, its steepest step k = 4


def crossed_curves(design: tuple[int, int], late_subsets) -> Builder:
    """Progressive curves at n=500 and n=100 over a crossed seed_design: at n=500 every subset's curve
    is EARLY; at n=100 the curves of the subsets in `late_subsets` are LATE, the others EARLY."""
    b = Builder()
    subsets, draws = design
    for t in range(subsets * draws):
        for size, curve in ((500, EARLY), (100, LATE if t // draws in late_subsets else EARLY)):
            for k, value in enumerate(curve):
                b.add(f"k{k}", value + 0.005 * ((t + k) % 3 - 1), size=size, trial=t, k=k)
    return b


def test_a_crossed_seed_designs_curve_differences_resample_subsets_and_draws():
    """A difference of curve statistics between two sizes on a crossed seed_design gets a verdict:
    its draws resample the subsets and the draws (calibrated from 4 of each). A later k90 at the small
    size in every subset is supported; one in 1 of 4 subsets is not shown, since about 1 in 3 draws
    of the 4 subsets leaves that subset out, although the same 16 runs taken as independent trials
    would support it (16 trials rarely all miss it). 3 subsets are refused (measured to under-cover
    as the draws grow), and the planner asks for 4 of each; 2 are refused too."""
    crossed = {"progressive": replace(CONFIG.studies["progressive"], seed_design=(4, 4), trials=16)}
    v = verdicts(crossed_curves((4, 4), late_subsets=(0, 1, 2, 3)).evidence(studies=crossed), plan=True)
    for claim in ("k90_grows_as_data_shrinks", "drop_point_shifts_with_data_size"):
        (unit,) = units_of(v[claim])
        assert not unit.refused and unit.reads_seed_design and unit.n == 16
        assert v[claim].text == "supported", (claim, unit.p_for)
    (unit,) = units_of(v["k90_grows_as_data_shrinks"])
    assert "crossed seed_design: 4 subsets x 4 draws" in unit.notes
    one_late = crossed_curves((4, 4), late_subsets=(3,))
    (unit,) = units_of(verdicts(one_late.evidence(studies=crossed), plan=True)["k90_grows_as_data_shrinks"])
    (naive,) = units_of(verdicts(one_late.evidence(), plan=True)["k90_grows_as_data_shrinks"])
    assert unit.estimate == naive.estimate == 3
    assert not unit.refused and unit.p_for > 0.2 and unit.interval[0] <= 0
    assert naive.p_for < 0.05 and naive.interval[0] > 0
    three = {"progressive": replace(CONFIG.studies["progressive"], seed_design=(3, 3), trials=9)}
    v = verdicts(crossed_curves((3, 3), (0, 1, 2)).evidence(studies=three), plan=True)["k90_grows_as_data_shrinks"]
    (unit,) = units_of(v)
    assert unit.refused.reason.startswith("the design cannot decide with a crossed seed_design of 3 subsets x 3 draws")
    assert "-S 'studies.progressive.seed_design={subsets: 4, seeds: 4}' -S studies.progressive.trials=16" in (
        v.plan.command
    )
    two = {"progressive": replace(CONFIG.studies["progressive"], seed_design=(2, 5), trials=10)}
    (unit,) = units_of(
        verdicts(crossed_curves((2, 5), (1,)).evidence(studies=two), plan=True)["k90_grows_as_data_shrinks"]
    )
    assert unit.refused.reason.startswith("the design cannot decide with a crossed seed_design of 2 subsets x 5 draws")


def test_a_difference_of_curve_statistics_is_refused_where_a_curve_holds_a_collapsed_or_degraded_run():
    # the small size's curve is later in every trial (supported); one of its runs collapsed (by flag) or degraded
    # (a majority share 0.3 above the curves' median run), and the bootstrap of k90 then gives no verdict
    def later_at_100(flagged: dict) -> dict:
        b = Builder()
        for t in range(4):
            for size, curve in ((500, EARLY), (100, LATE)):
                for k, value in enumerate(curve):
                    share = flagged.get("majority_share", 0.5) if (size, t, k) == (100, 3, 4) else 0.5
                    extra = {"collapsed": True} if flagged.get("collapsed") and (size, t, k) == (100, 3, 4) else {}
                    b.add(
                        f"k{k}",
                        value + 0.005 * ((t + k) % 3 - 1),
                        size=size,
                        trial=t,
                        k=k,
                        majority_share=share,
                        **extra,
                    )
        return verdicts(b.evidence())

    assert later_at_100({})["k90_grows_as_data_shrinks"].text == "supported"
    for flagged in ({"collapsed": True}, {"majority_share": 0.8}):
        v = later_at_100(flagged)
        for claim in ("k90_grows_as_data_shrinks", "drop_point_shifts_with_data_size"):
            (unit,) = units_of(v[claim])
            assert unit.refused.kind is Refusal.COLLAPSED_CURVE and v[claim].text != "supported"
            assert "(1 of 20, 0 of 20 runs)" in unit.refused.reason  # the smaller size first


def permutation_study(permuted: float, curve=RISING, trials=6):
    b = Builder().curve(curve, trials=trials, spread=0.002)
    for t in range(trials):
        b.add("permutation", permuted + 0.002 * (t % 3 - 1), trial=t, scheme="permutation", study="permutation")
    return b


def test_a_contradicting_unit_counts_even_where_the_gap_is_unresolved():
    # a task at chance (full = scratch): no gap. A permuted model far above both contradicts
    # "closer to scratch"; a gate that dropped such units would print "inconclusive".
    v = verdicts(permutation_study(0.9, curve=[0.5] * (L + 1)).evidence())
    assert v["full_beats_scratch"].text != "supported"
    assert v["permuted_closer_to_scratch"].text == "contradicted"


def test_without_the_gap_a_claim_that_needs_it_is_not_supported():
    v = verdicts(permutation_study(0.2, curve=[0.5] * (L + 1)).evidence())["permuted_closer_to_scratch"]
    (judged,) = v.units
    assert judged.status == "for" and v.text == "inconclusive"
    v = verdicts(permutation_study(0.55).evidence())  # with the gap: supported, and the main claim too
    assert v["permuted_closer_to_scratch"].text == "supported"
    assert v["permutation_lowers_accuracy"].text == "supported"


def test_supported_at_every_unit_is_an_intersection_union_test_with_the_largest_p():
    b = Builder().curve(RISING, trials=6).curve([0.5, 0.6, 0.7, 0.75, 0.8], trials=6, task="qnli")
    v = verdicts(b.evidence())["full_beats_scratch"]
    assert v.text == "supported" and v.p == max(u.p_for for u in units_of(v))


def test_a_robustness_reading_takes_holm_again_within_each_papers_family():
    """A unit of 004 with p 0.02, alone in its paper's family, is "for" under each reading; ten units of 001 beside
    it would push it past α in one family across the report (11 × 0.02)."""

    def judged(claim: str, p_for: float, p_against: float) -> Judged:
        unit = Unit(claim, claim, "test", 0.1, (0.0, 1.0), 3, p_for, p_against, test_type="one-sided")
        return Judged(unit, math.nan, "unresolved")

    units = {claim.id: [] for claim in CLAIMS}
    units["some_intermediate_task_beats_direct"] = [judged("some_intermediate_task_beats_direct", 0.02, 0.9)]
    units["full_beats_scratch"] = [judged("full_beats_scratch", 0.01, 0.5) for _ in range(10)]
    for reading in robust_statuses(units, SETTINGS.alpha).values():
        assert reading[units["some_intermediate_task_beats_direct"][0]] == "for"
        assert {reading[u] for u in units["full_beats_scratch"]} == {"for"}


def test_an_existential_claim_is_supported_by_one_unit_after_holm():
    b = Builder().curve(RISING, trials=6)
    for t in range(6):
        for inter, gain in (("qnli", 0.09), ("cola", 0.0)):
            b.add(
                f"k{L}_after_{inter}",
                RISING[-1] + gain + 0.002 * (t % 3 - 1),
                trial=t,
                k=L,
                intermediate_task=inter,
                ref_baseline=f"k{L}",
                plain=False,
                study="sequential",
            )
    v = verdicts(b.evidence())["some_intermediate_task_beats_direct"]
    assert v.text == "supported" and v.p == min(u.adjusted for u in v.units)
    assert sorted(u.status for u in v.units) == ["for", "unresolved"]


def test_each_papers_holm_family_is_one_one_sided_test_per_unit_of_its_claims():
    # against for universal claims, for for existential ones; refused units stay out; Holm within each paper only
    b = permutation_study(0.55, curve=RISING[::-1])  # small p against, and small p for (existential)
    verdict_list, _ = judge_claims(b.evidence())
    family = [
        (v.claim.paper, u, u.unit.p_against if v.claim.every else u.unit.p_for)
        for v in verdict_list
        for u in v.units
        if not u.unit.refused
    ]
    tested = {paper for paper, _, p in family if np.isfinite(p)}
    assert tested == set(PAPERS), tested  # the scenario tests claims of every paper
    for paper in PAPERS:
        mine = [(u, p) for of, u, p in family if of == paper and np.isfinite(p)]
        expected = multipletests([p for _, p in mine], method="holm")[1]
        assert [u.adjusted for u, _ in mine] == pytest.approx(list(expected)), paper
    assert len(family) == sum(len(units_of(v)) for v in verdict_list) - sum(
        u.refused is not None for v in verdict_list for u in units_of(v)
    )
    assert holm_families(verdict_list) == {paper: sum(of == paper for of, _, _ in family) for paper in PAPERS}


def single_layer_study(drops: dict, trials: int, spread: float, task="sst2"):
    b = Builder().curve(RISING, trials=trials, task=task)
    for layer, drop in drops.items():
        for t in range(trials):
            b.add(
                f"single{layer}",
                RISING[-1] - drop + spread * (t % 3 - 1),
                task=task,
                trial=t,
                scheme="single_layer",
                layer=layer,
                study="single_layer",
            )
    return b


def test_equivalence_within_the_margin_is_supported_and_a_large_drop_contradicts():
    v = verdicts(single_layer_study({2: 0.0}, trials=12, spread=0.0005).evidence(single_layer_margin=0.03))
    assert v["single_layer_barely_matters"].text == "supported"
    v = verdicts(single_layer_study({2: 0.2}, trials=12, spread=0.001).evidence())
    assert v["single_layer_barely_matters"].text == "contradicted"


def test_the_papers_exception_layer_1_on_cola_is_tested_as_a_drop():
    b = single_layer_study({1: 0.2, 2: 0.0}, trials=12, spread=0.0005, task="cola")
    v = verdicts(b.evidence(single_layer_margin=0.03))["single_layer_barely_matters"]
    assert v.text == "supported"
    assert any("exception" in u.test for u in units_of(v))


def test_a_small_mean_with_a_wide_interval_does_not_show_that_a_layer_barely_matters():
    v = verdicts(single_layer_study({2: 0.005}, trials=3, spread=0.06).evidence())["single_layer_barely_matters"]
    (unit,) = units_of(v)
    assert abs(unit.estimate) < SETTINGS.single_layer_margin and v.text == "inconclusive"


# --- refusals: bootstrap validity, undefined draws, probe noise, exact tests ---------------------------------------


def test_a_bootstrap_below_its_calibrated_trials_gives_no_verdict_no_interval_and_no_p(tmp_path):
    # a bootstrap difference of k90 is calibrated from 3 trials (calibration.decidable): at 2 the
    # design cannot decide; at 3 it does, and not where a curve holds a collapsed run
    b = Builder().curve(RISING, trials=2).curve(RISING, trials=2, size=100)
    v = verdicts(b.evidence())["k90_grows_as_data_shrinks"]
    (unit,) = units_of(v)
    assert v.text == NO_VERDICT and math.isnan(unit.interval[0]) and math.isnan(unit.p_for)
    assert unit.refused.reason.startswith("the design cannot decide at T = 2:")
    md = render(b.evidence(), tmp_path)
    assert re.search(
        r"\| k90_grows_as_data_shrinks \| [^|]+ \| [^|]+ \| [^|]+ \| — \(the design cannot decide at T = 2", md
    )
    three = Builder().curve(RISING, trials=3).curve(RISING, trials=3, size=100)
    (unit,) = units_of(verdicts(three.evidence())["k90_grows_as_data_shrinks"])
    assert not unit.refused and math.isfinite(unit.p_for)
    three.rows[0]["collapsed"] = True  # k0 at n=500 collapsed in 1 of its 3 runs
    (unit,) = units_of(verdicts(three.evidence())["k90_grows_as_data_shrinks"])
    assert unit.refused.kind is Refusal.COLLAPSED_CURVE


def test_a_bootstrap_with_too_many_undefined_draws_gives_no_verdict():
    # a curve whose full-vs-scratch gain is ~0: k90 is undefined in about half the draws
    flat = [0.5, 0.5, 0.5, 0.5, 0.5]
    b = Builder().curve(flat, trials=12, spread=0.02).curve(RISING, trials=12, size=100)
    v = verdicts(b.evidence())["k90_grows_as_data_shrinks"]
    (judged,) = v.units
    unit = judged.unit
    assert "bootstrap draws undefined" in unit.refused.reason and judged.status == NO_VERDICT
    # the claim is inconclusive, not "no verdict": its gap at n=500 (a flat curve) is unresolved too
    assert v.text == "inconclusive"
    assert any(note.startswith("undefined draws") for note in unit.notes)
    assert verdicts(b.evidence(max_undefined_share=0.99))["k90_grows_as_data_shrinks"].units[0].unit.refused is None


def test_one_probe_seed_gives_no_verdict_several_seeds_are_resampled():
    b = Builder().curve(RISING, trials=12)
    one = verdicts(b.evidence(probe=probe_table([[0.6, 0.61, 0.6, 0.62, 0.9]])))["probes_do_not_predict_finetuning"]
    assert one.text == NO_VERDICT and units_of(one)[0].refused == Refused(Refusal.ONE_PROBE_SEED, ONE_PROBE_SEED)
    # probes that gain at the top layers while finetuning gains at the first: the gain centres lie 1.9 layers apart,
    # a difference the finetuning trials and the probe seeds (Welch) show from their spread, where a correlation of
    # the two rising curves (ρ = 1) could not
    late = [[0.5, 0.5, 0.5, 0.6 + 0.01 * s, 0.9] for s in range(4)]
    several = verdicts(b.evidence(probe=probe_table(late)))["probes_do_not_predict_finetuning"]
    (unit,) = units_of(several)
    assert unit.estimate == pytest.approx(1.875 - 3.74, abs=0.03) and several.text == "supported"
    assert any(note.startswith("Welch over 12 finetuning trials and 4 probe seeds") for note in unit.notes)
    # the probe's gain arriving where finetuning's does is the claim's negation: the test against it rejects
    alike = [[v + 0.002 * s for v in RISING] for s in range(4)]
    negation = verdicts(b.evidence(probe=probe_table(alike)))["probes_do_not_predict_finetuning"]
    assert negation.text != "supported" and units_of(negation)[0].p_against < SETTINGS.alpha


def test_a_probe_and_a_finetuning_curve_resample_their_shared_eval_set_jointly():
    """A probe whose seeds made exactly the predictions of the finetuning runs' trials: its draws
    equal the curve's (the same eval-set draw b for both, and equal scores at every seed), so a
    statistic of the two curves has no eval noise left from the set they share; without the
    probes' predictions, only the seeds are resampled."""
    b = Builder().curve(RISING, trials=3, spread=0.0)
    seeds = np.stack([[b.predictions[("sst2", 500, f"k{k}", t)] for k in range(L + 1)] for t in range(3)])
    probe = probe_table([RISING] * 3).assign(metric="accuracy")
    shared = Shared(replace(b.evidence(probe=probe), probe_predictions={"sst2": seeds}))
    curve, probe_curve = shared.curves[("sst2", 500)], shared.probes["sst2"]
    assert probe_curve.eval_resampled and probe_curve.seeds == 3
    assert curve.draws.std(axis=0).max() > 0.005  # the eval set's noise is in both
    np.testing.assert_allclose(probe_curve.draws, curve.draws)
    seeds_only = Shared(b.evidence(probe=probe)).probes["sst2"]
    assert (
        not seeds_only.eval_resampled and np.ptp(seeds_only.draws, axis=0).max() == 0
    )  # identical seeds: nothing to resample


def test_a_contrast_of_probe_layers_is_paired_by_probe_seed_and_decides_from_three_seeds():
    """The top layers' probe drop is a paired contrast with the seeds as trials (an estimate test,
    calibrated from 3 trials), not a percentile bootstrap the design cannot decide."""
    b = Builder().curve(RISING, trials=3)
    falling_top = [0.6, 0.7, 0.8, 0.75, 0.7]  # layer L-2 = 2 beats layer L = 4 by 0.1 at every seed
    v = verdicts(probe_evidence(b, falling_top, seeds=3))["top_two_layers_hurt_probing"]
    (unit,) = units_of(v)
    assert unit.n == 3 and unit.estimate == pytest.approx(0.1) and "paired by probe seed" in unit.test
    assert v.text == "supported" and unit.p_for < 0.05
    # a drop of 0.01 at every seed is within the eval set's noise (200 examples): the seeds agreeing
    # exactly says nothing about the examples they share
    small = verdicts(probe_evidence(b, [0.6, 0.7, 0.8, 0.8, 0.79], seeds=3))["top_two_layers_hurt_probing"]
    assert small.text == "inconclusive" and units_of(small)[0].interval[0] < 0
    # contradicted after Holm: on the seeds' df (T - 1), 3 seeds cannot reach the report's Holm level; 5 seeds
    # and a rise of 0.2 do
    v = verdicts(probe_evidence(b, [0.6, 0.7, 0.6, 0.75, 0.8], seeds=5))["top_two_layers_hurt_probing"]
    assert v.text == "contradicted"
    one = verdicts(probe_evidence(b, falling_top, seeds=1))["top_two_layers_hurt_probing"]
    assert one.text == NO_VERDICT and units_of(one)[0].refused == Refused(Refusal.ONE_PROBE_SEED, ONE_PROBE_SEED)


def permuted_pairs(trials: int, qnli_of) -> Builder:
    """Permutation runs on sst2 and qnli, qnli's score at trial t = qnli_of(sst2's)."""
    b = Builder()
    for t in range(trials):
        score = 0.5 + 0.4 * ((t * 7) % trials) / trials
        b.add("permutation", score, trial=t, scheme="permutation", study="permutation")
        b.add("permutation", qnli_of(score, t), task="qnli", trial=t, scheme="permutation", study="permutation")
    return b


def test_relatively_high_correlations_are_tested_against_the_registrys_margin_not_zero():
    """Table 1's "relatively high": ρ above the registry's RELATIVELY_HIGH, by its simulated null at the margin,
    which holds its size from validity's "spearman-margin" floor; below that the unit is refused, the exact p of
    ρ > 0 in its notes."""
    from src.claims.families.permutation import RELATIVELY_HIGH
    from src.stats.validity import MIN_TRIALS

    (unit,) = units_of(verdicts(permuted_pairs(3, lambda s, t: s + 0.01).evidence())["permutation_affects_tasks_alike"])
    assert unit.refused.reason.startswith("the design cannot decide at T = 3: the test of a Spearman rho")
    assert f"needs >= {MIN_TRIALS['spearman-margin'][0]}" in unit.refused.reason
    assert any(note.startswith("exact permutation p of ρ > 0") for note in unit.notes)
    high = permuted_pairs(30, lambda s, t: s + 0.02 * ((t * 5) % 3))
    v = verdicts(high.evidence())["permutation_affects_tasks_alike"]
    assert units_of(v)[0].estimate > 0.9 and v.text == "supported"
    # a correlation clearly above 0 but not "relatively high" is not supported (ρ > 0 would be)
    moderate = permuted_pairs(30, lambda s, t: 0.3 * s + 0.25 * ((t * 11) % 7) / 7)
    v = verdicts(moderate.evidence())["permutation_affects_tasks_alike"]
    (unit,) = units_of(v)
    assert 0 < unit.estimate < RELATIVELY_HIGH and v.text != "supported"
    assert unit.margin == RELATIVELY_HIGH


# --- weight change at the end of training ---------------------------------------------------------------------------


def test_weight_change_is_read_at_the_end_of_training_and_equal_steps_is_secondary():
    weights, steps = [], []
    for size, total_steps in ((64, 40), (256, 96)):  # the same change per step at both sizes
        for trial in range(4):
            for layer in range(1, L + 1):
                end = total_steps * layer * (1 + 0.01 * trial)
                weights.append(
                    {"task": "sst2", "size": size, "slug": f"k{L}", "trial": trial, "layer": layer}
                    | {"sublayer": "output", "status": "ok", "frobenius": end}
                )
                steps += [
                    {"task": "sst2", "size": size, "trial": trial, "steps": total_steps, "step": s, "layer": layer}
                    | {"frobenius": s * layer * (1 + 0.01 * trial)}
                    for s in (1, 2, 4, 8, 16, 32, 64)
                    if s <= total_steps
                ]
    b = Builder().curve(RISING, trials=4, size=64).curve(RISING, trials=4, size=256)
    v = verdicts(b.evidence(weight_change=pd.DataFrame(weights), layer_change=pd.DataFrame(steps)))
    assert v["more_data_moves_weights_more"].text == "supported"
    assert v["later_layers_move_more"].text == "supported"
    assert v["weight_change_grows_more_in_later_layers_with_more_data"].text == "supported"
    secondary = v["more_data_moves_weights_more_at_equal_steps"]
    assert units_of(secondary)[0].estimate == pytest.approx(0.0, abs=1e-9) and secondary.text == "inconclusive"
    assert BY_ID["more_data_moves_weights_more_at_equal_steps"].secondary


# --- not run: the command that adds the runs ------------------------------------------------------------------------


def not_run_params(command: str, params: dict, folder: Path) -> dict:
    """`params` after a "not run" row's command, as `dvc exp run` applies it and the pipeline reads it (YAML 1.2); a
    row that is no command leaves `params` as they are."""
    if not command.startswith("dvc exp run "):
        return params
    return read_params(exp_run_params(command, params, folder))


def test_a_missing_study_is_not_run_with_a_command_the_schema_accepts(tmp_path):
    studies = {"progressive": CONFIG.studies["progressive"]}
    v = verdicts(Builder().curve(RISING, trials=3).evidence(studies=studies))
    lr = v["lr_multiplier_does_not_help"]
    assert lr.text == NOT_RUN
    assert "-S '+studies.lr_multiplier={scheme: progressive, ks: [0, 3], reinit_lr_multiplier: 5" in lr.needs
    cola = v["cola_near_linear_drop"].needs
    assert "studies.progressive.tasks=[rt_sentiment, cola]" in cola and "data.tasks=[" in cola
    assert "glue_dir" not in cola  # GLUE from the hub, as data.glue_dir empty reads it
    for claim in v.values():
        if claim.text == NOT_RUN:
            validate(not_run_params(claim.needs, grid_params(), tmp_path))  # ParamsError on a refused key or value


def test_a_condition_is_read_from_the_runs_table_it_is_asked_of_with_every_row_counted():
    from src.claims.evidence import common_trials, scores_of, studies_of

    b = Builder().add("k6", 0.9, trial=0).add("k6", 0.8, trial=1).add("k6", math.nan, trial=2, status="diverged")
    b.add("k6", 0.9, trial=0, study="epochs", collapsed=True)  # the same run, a row in a second study
    b.add("k0", 0.7, trial=0).add("k0", 0.6, trial=1, collapsed=True).add("k0", 0.5, trial=2)
    ev = b.evidence()
    assert common_trials(ev, "sst2", 500, ["k6", "k0"]) == (
        [0, 1],
        ["1 diverged run(s) left out", "2 collapsed run(s) kept"],  # k6 trial 0's second row and k0 trial 1
    )
    assert scores_of(ev, "sst2", 500, "k0", [1, 0])[1].tolist() == [0.6, 0.7]
    assert studies_of(ev, "sst2", 500, ["k6"]) == ("epochs", "progressive") and ev.metric("sst2") == "accuracy"
    assert common_trials(ev, "sst2", 128, ["k6"]) == ([], [])  # no such condition
    # a new runs table is read anew, never from the index of the one before
    ev.runs = ev.runs.assign(value=ev.runs["value"] + 0.01)
    assert scores_of(ev, "sst2", 500, "k0", [0])[1].tolist() == [pytest.approx(0.71)]
    assert common_trials(replace(ev, runs=ev.runs.iloc[:0]), "sst2", 500, ["k0"]) == ([], [])


def test_every_claim_is_not_run_without_rows_and_the_registry_is_large_and_unique():
    assert {claim.text for claim in verdicts(Builder().evidence()).values()} == {NOT_RUN}
    assert len(CLAIMS) >= 25 and len(BY_ID) == len(CLAIMS)
    assert {c.source.split()[0] for c in CLAIMS} == {"001", "003", "004"}


def test_a_study_the_command_adds_runs_on_the_progressive_studys_task_not_the_first_data_task():
    progressive = StudyConfig(name="progressive", scheme="progressive", tasks=("subjectivity",), sizes=(8,), trials=3)
    v = verdicts(Builder().curve(RISING, trials=3).evidence(studies={"progressive": progressive}))
    assert CONFIG.data.tasks[0] != "subjectivity"
    assert "-S '+studies.permutation={scheme: permutation, tasks: [subjectivity], sizes: [8]" in (
        v["permutation_lowers_accuracy"].needs
    )


def test_an_existing_study_is_extended_not_added():
    blocks = StudyConfig(name="blocks", scheme="block", window=3, tasks=("rt_sentiment",), sizes=(8,), trials=2)
    v = verdicts(Builder().curve(RISING, trials=3).evidence(studies={**dict(CONFIG.studies), "blocks": blocks}))
    assert (
        v["useful_layers_differ_by_task"].needs == "dvc exp run -S 'studies.blocks.tasks=[rt_sentiment, subjectivity]'"
    )


def test_a_study_with_a_crossed_seed_design_or_an_intermediate_size_matches_the_plain_need_it_runs():
    """The modifiers a claim's Need must match are the registry's that make a condition of their own: a
    progressive study with a crossed seed_design and an intermediate size still supplies the plain curve."""
    assert set(CONDITION_MODIFIERS) < set(SCHEME_MODIFIERS)
    crossed = replace(CONFIG.studies["progressive"], seed_design=(3, 3), trials=9, intermediate_size=64)
    evidence = Builder().curve(RISING, trials=3).evidence(studies={"progressive": crossed})
    assert matching_study(evidence.studies, PROGRESSIVE, evidence, ["sst2"]) is crossed


# --- the report ---------------------------------------------------------------------------------------------


def test_the_report_lists_every_claim_its_test_p_family_and_declared_inputs(tmp_path):
    md = render(Builder().curve([0.5, 0.5, 0.5, 0.5, 0.56], trials=3, spread=0.08).evidence(), tmp_path)
    claims_section = md.split("<strong>Claims in detail")[1].split("<strong>Tests, per unit")[0]
    for claim in CLAIMS:
        assert f"({claim.id})" in claims_section
    assert "dvc exp run -S studies.progressive.trials=" in md
    assert "the Holm families, one per paper: 001 Tamkin et al. 2020: " in md and "; 004 Huang, Lin & Zhou: " in md
    assert "| report.modifier_margin | 0.02 |" in md and "before the runs" not in md
    assert "heads: not run: no rows to plot" in md and "base64," in (tmp_path / "r.html").read_text()


def test_the_report_opens_with_what_ran_the_tally_each_studys_verdicts_and_one_row_per_claim(tmp_path):
    """The first screen: what ran, the tally; per study what is supported here and what is not (each with its
    scope: model, tasks, sizes, trials, and its effect), what is undecided and why, what did not run and its command;
    then the details: the design, one row per claim with the deciding unit's effect and its figure, the rule."""
    evidence = block_preserve_study(0.8, 0.6, trials=1).evidence()  # blocks at 1 trial: no verdict
    v = verdicts(evidence, plan=True)
    md = render(evidence, tmp_path)
    first, rest = md.split("## Details")
    assert RULE[:80] not in first and RULE[:80] in rest and "<strong>Tests, per unit</strong>" in rest
    assert "tiny-bert" in first and "`abc1234`" in first and "**progressive**: progressive (ks [0, 6])" in rest
    tally = {name: sum(x.text == name for x in v.values()) for name in VERDICTS}
    assert ", ".join(f"**{n}** {SHOWN.get(name, name)}" for name, n in tally.items()) in first
    # few_layers_suffice_with_plenty_of_data and all_reinit_at_chance are outside their papers' scope here (n=500,
    # sst2): not run; middle_layers_help_sst2_not_qnli (003 §7) is supported
    assert "**3** supported here, **2** not supported here, **1** inconclusive, **1** no verdict" in first
    assert tally["supported"] and tally["contradicted"] and tally["not run"] and tally[NO_VERDICT]
    tamkin = first.split("**Tamkin et al. 2020**")[1].split("**Singh & Giovanardi**")[0]
    scope = "tiny-bert (bert, 4 layers); sst2 n=500; 6 trials"
    assert f"- **Supported here**: [full_beats_scratch](#claim-full_beats_scratch) ({scope}). Effect: " in tamkin
    assert "eplicated" not in first and "ontradicted" not in first
    (refused,) = units_of(v["early_layers_help_most"])
    assert v["early_layers_help_most"].text == NO_VERDICT and refused.refused
    why = refused.refused.reason
    assert f"- **No verdict**: [early_layers_help_most](#claim-early_layers_help_most): {why}. Effect: " in tamkin
    lr = v["lr_multiplier_does_not_help"]
    assert "[lr_multiplier_does_not_help](#claim-lr_multiplier_does_not_help), " in tamkin
    assert f": needs `{lr.needs}`" in tamkin
    huang = first.split("**Huang, Lin & Zhou**")[1]
    assert f"- **Not supported here**: [reinit_curve_not_monotone](#claim-reinit_curve_not_monotone) ({scope})" in huang
    plan = v["reinit_curve_change_not_constant"].plan
    changing = "[reinit_curve_change_not_constant](#claim-reinit_curve_change_not_constant)"
    assert f"- **Inconclusive**: {changing}: {plan_text(plan)}. Effect: " in huang and plan.command in huang
    claims = rest.split("<strong>Claims, one row each")[1]
    for claim in CLAIMS:
        assert f'<a id="claim-{claim.id}"></a>{claim.hypothesis}' in claims
    rows = {
        re.match(r'\| <a id="claim-(\w+)"', line)[1]: line for line in claims.splitlines() if line.startswith("| <a")
    }
    papers = [claim for claim in CLAIMS if claim.paper_value]  # the paper's own number beside the effect
    assert len(papers) >= 9 and all(f"; paper: {claim.paper_value} |" in rows[claim.id] for claim in papers)
    (gap,) = units_of(v["full_beats_scratch"])
    rates = ", ".join(f"{slug} 0/6 [0.00, 0.46]" for slug in gap.collapse)  # each condition's, exact 95%
    assert (
        f"| supported here ({scope}); survives the trial-only t and the collapse reading; {COLLAPSE_LABEL}: "
        f"sst2 n=500: {rates} | {number(gap.estimate)} {interval_text(gap)} at sst2 n=500; {gap.test}; "
        "paper: not stated |" in rows["full_beats_scratch"]
    )
    assert COLLAPSE_LABEL not in rows["reinit_curve_change_not_constant"]  # undecided: no rates beside it
    # an existential claim contradicted by intersection-union: the unit with the largest p against decides
    units = units_of(v["reinit_curve_not_monotone"])
    deciding = max(units, key=lambda u: u.p_against)
    assert (
        f"{number(deciding.estimate)} {interval_text(deciding)} at {deciding.name} (the deciding unit of 4)"
        in rows["reinit_curve_not_monotone"]
    )
    assert rows["full_beats_scratch"].endswith("| [progressive](progressive.png) |")
    assert rows["early_layers_help_most"].endswith(
        "| no verdict | — (no unit gives a verdict); paper: not stated |  |"
    )  # no blocks figure


def test_a_verdicts_scope_is_the_tasks_sizes_and_trials_its_units_read():
    """Every (task, size) a unit reads (Unit.reads, else its key), and its trials (Unit.n): an exact test's points
    are not trials."""

    def judged(n, reads=(), key=(), raw=False) -> Judged:
        return Judged(Unit("c", "u", "t", 0.0, (0.0, 1.0), n, reads=reads, key=key, raw=raw), math.nan, "for")

    units = [
        judged(3, reads=(("sst2", 5000), ("sst2", 500)), key=("sst2", 5000)),
        judged((4, 5), reads=(("qnli", 500),)),
        judged(3, key=("cola", 128)),
        judged(10, reads=(("qnli", 500),), raw=True),
    ]
    assert scope_of(units).text() == "cola n=128; qnli n=500; sst2 n=500, 5000; 3–5 trials"
    assert scope_of(units[:1]).text() == "sst2 n=500, 5000; 3 trials"


def test_the_first_screen_bounds_the_chance_of_a_wrong_verdict_per_paper_from_the_design(tmp_path):
    """Per paper: α for its Holm family plus α per intersection-union verdict the design can reach; probe curves
    from one probe seed are refused by the design, so the probes' claims add nothing; from 3 seeds their per-trial
    curve statistics decide from 3 trials, so they do."""
    three = verdicts(probe_evidence(Builder().curve(RISING, trials=3), [0.6, 0.7, 0.8, 0.75, 0.7], seeds=3))
    (reachable,) = [b for b in error_bounds(list(three.values()), SETTINGS.alpha) if b.paper == "003"]
    assert {"probe_needs_more_layers", "probe_peaks_lower_than_finetuning"} <= set(reachable.iut)
    evidence = probe_evidence(Builder().curve(RISING, trials=3), [0.6, 0.7, 0.8, 0.75, 0.7], seeds=1)
    v = verdicts(evidence)
    assert all(u.unit.refused.kind is Refusal.ONE_PROBE_SEED for u in v["probe_needs_more_layers"].units)
    bounds = {b.paper: b for b in error_bounds(list(v.values()), SETTINGS.alpha)}
    assert {paper: set(b.iut) for paper, b in bounds.items()} == {
        "001": {"full_beats_scratch", "few_layers_suffice_with_plenty_of_data"},
        "003": {"top_two_layers_negligible_in_finetuning", "middle_layers_help_sst2_not_qnli"},
        "004": {"later_reinit_costs_less", "reinit_curve_not_monotone", "all_reinit_at_chance"}
        | {"reinit_curve_change_not_constant"},
    }
    assert all(b.holm for b in bounds.values())
    assert [b.bound for b in bounds.values()] == pytest.approx([0.15, 0.15, 0.25])
    first = render(evidence, tmp_path).split("## Details")[0]
    assert "Tamkin et al. 2020 at most **0.15** (α = 0.05 for its Holm family + α for each of its 2 " in first
    assert "Huang, Lin & Zhou at most **0.25**" in first and "A union bound from the design, not a measurement" in first


@pytest.mark.parametrize(
    "claim, name, modifiers",
    [
        ("some_intermediate_task_beats_direct", "sequential", {"intermediate_task": "qnli"}),
        ("some_intermediate_task_beats_direct", "after_qnli", {"intermediate_task": "qnli"}),
        ("epochs_beyond_3_do_not_help_with_plenty_of_data", "epochs_small", {"epochs": 6}),
        ("epochs_beyond_3_do_not_help_with_plenty_of_data", "longer", {"epochs": 6}),
    ],
)
def test_a_claims_figure_is_the_one_drawn_for_the_study_that_supplied_its_runs(tmp_path, claim, name, modifiers):
    """Each study's figure is drawn under the study's name (src/figures/studies.py), whatever the name; the plain
    progressive study reports the same units (their baselines) and sorts first, yet is not the one that shows them."""
    builder = Builder().curve(RISING, trials=3)
    for t in range(3):
        builder.add(
            f"k{L}_{name}",
            RISING[-1] + 0.002 * t,
            trial=t,
            k=L,
            ref_baseline=f"k{L}",
            plain=False,
            study=name,
            **modifiers,
        )
    study = StudyConfig(
        name=name,
        scheme="progressive",
        ks=(L,),
        tasks=("sst2",),
        sizes=(500,),
        trials=3,
        **({"intermediate_tasks": ("qnli",)} if "intermediate_task" in modifiers else modifiers),
    )
    evidence = builder.evidence(studies={"progressive": CONFIG.studies["progressive"], name: study})
    assert verdicts(evidence)[claim].units
    png = tmp_path / f"{name}.png"
    png.write_bytes(b"\x89PNG fake")
    md = render(evidence, tmp_path, figures=[("progressive", tmp_path / "progressive.png"), (name, png)])
    (row,) = [line for line in md.splitlines() if line.startswith(f'| <a id="claim-{claim}"')]
    assert row.endswith(f"| [{name}]({name}.png) |")


def test_the_html_report_renders_the_markdown_it_shares_and_anchors_every_claim(tmp_path):
    render(Builder().curve(RISING, trials=3).evidence(), tmp_path)
    page = (tmp_path / "r.html").read_text()
    for claim in CLAIMS:
        assert f"<tr id='claim-{claim.id}'>" in page
    text = re.sub(r"<code>.*?</code>", "", page, flags=re.S)  # a command's own quotes and stars stay verbatim
    assert "**" not in text and "`" not in text and "<strong>supported</strong>" in page
    assert "<a href='#figure-progressive'>progressive</a>" in page and "<figure id='figure-progressive'>" in page
    assert inline_html("a `x*y*` **b** *c* [d](#e) <f>") == (
        "a <code>x*y*</code> <strong>b</strong> <em>c</em> <a href='#e'>d</a> &lt;f&gt;"
    )


def test_table_1_says_when_its_exact_p_cannot_reach_alpha(tmp_path):
    pd.DataFrame(
        columns=["study", "task", "size", "slug", "metric", "headline", "collapsed", "n", "mean", "ci_low", "ci_high"]
    ).to_csv(tmp_path / "points.csv", index=False)
    pd.DataFrame(
        {"runs": ["permuted (Table 1)"], "trials": [4], "spearman": [0.2], "spearman_p_exact": [0.917]}
    ).to_csv(tmp_path / "permutation_correlations.csv", index=False)
    pd.DataFrame({"study": ["heads"], "spearman": [0.4], "ci_low": [-0.5], "ci_high": [0.9]}).to_csv(
        tmp_path / "head_importance_vs_reinit.csv", index=False
    )
    pd.DataFrame(columns=["study", "slug", "share_subset"]).to_csv(tmp_path / "variance_components.csv", index=False)
    pd.DataFrame(columns=["measurement", "runs", "refresh"]).to_csv(tmp_path / "stale_measurements.csv", index=False)
    runs = pd.DataFrame(
        {
            "study": "progressive",
            "task": "cola",
            "size": 500,
            "slug": ["k0", "k0", "k0", "k6", "k6", "k6"],
            "trial": [0, 1, 2, 0, 1, 2],
            "headline": True,
            "status": "ok",
            "collapsed": [True, False, False, False, False, False],
            "majority_share": [1.0, 0.93, 0.6, 0.89, 0.7, 0.7],
        }
    )
    runs.to_csv(tmp_path / "runs.csv", index=False)
    tables = dict(report_tables(pd.DataFrame(), tmp_path, SETTINGS))
    (collapses,) = [table for title, table in tables.items() if title.startswith("(Nearly) collapsed runs")]
    # the rule the tests read: a share of 0.9 or more (0.93) counts with the collapsed run; 0.89 does not
    assert collapses[["slug", "n", "collapsed", "nearly_collapsed"]].values.tolist() == [["k0", 3, 1, 2]]
    titles = list(tables)
    assert any("at N = 4 trials the smallest p is 2/N! = 0.0833, so it cannot reach 0.05" in t for t in titles)
    # the measures beyond the studies: shown where a run measured them (no crossed design ran here)
    assert any(t.startswith("Head importance (Michel et al. 2019") for t in titles)
    assert not any(t.startswith("Variance components") for t in titles)


def test_a_collapsed_run_counts_in_the_hurdles_rate_part_is_reported_as_an_outcome_and_in_robustness():
    b = Builder().curve(RISING, trials=4)
    b.add("k0", 0.5, trial=4, k=0, collapsed=True).add(f"k{L}", 0.9, trial=4, k=L)
    b.add("k0", 0.55, trial=5, k=0, majority_share=0.93).add(f"k{L}", 0.9, trial=5, k=L, majority_share=0.5)
    (unit,) = units_of(verdicts(b.evidence())["full_beats_scratch"])
    # full − scratch > 0 is a hurdle: every run counts in one part. The collapsed (flag) and nearly collapsed (share
    # 0.93) runs count in the collapse rates (2 of 6 scratch runs, none of the full model's: McNemar one-sided 1/4,
    # which 2 discordant trials cannot bring below α), the 4 trials where neither collapsed in the trained runs'
    # contrast, which is the unit's estimate and, the rates unable to reach α, its test
    score = pd.DataFrame(b.rows).set_index(["slug", "trial"])["value"]
    differences = np.array([score[(f"k{L}", t)] - score[("k0", t)] for t in range(6)])
    assert unit.n == 6 and not unit.refused and unit.estimate == pytest.approx(differences[:4].mean())
    assert "1 collapsed run(s) counted in the collapse rates" in unit.notes
    assert "4 of 6 trials trained in both (the estimate's)" in unit.notes
    (without,) = units_of(verdicts(Builder().curve(RISING, trials=4).evidence())["full_beats_scratch"])
    assert unit.hurdle.rate == pytest.approx((0.25, 1.0)) and unit.hurdle.trained == pytest.approx(
        without.hurdle.trained
    )
    assert not unit.hurdle.rate_counts and unit.p_for == pytest.approx(without.hurdle.trained[0])
    # the collapse is also an outcome of its own
    scratch, full = unit.collapse["k0"], unit.collapse[f"k{L}"]
    assert (scratch.collapsed, scratch.runs, full.collapsed) == (2, 6, 0)
    assert scratch.interval == pytest.approx(stats.binomtest(2, 6).proportion_ci(method="exact"))
    assert unit.collapse_comparison.p == pytest.approx(0.5)  # McNemar exact: 2 of 2 discordant trials
    # the robustness readings: the trial-only t over all 6 trials, and the 4 trials without a collapse alone,
    # exactly the trained part of the same runs without trials 4 and 5
    trial_only = stats.ttest_1samp(differences, 0, alternative="greater").pvalue
    assert unit.robustness.trial_only[0] == pytest.approx(trial_only)
    assert unit.robustness.other_reading == "collapsed excluded"
    assert unit.robustness.other == pytest.approx(without.hurdle.trained)
    assert without.n == 4 and without.hurdle.rate == (1.0, 1.0)
    b = Builder().curve(RISING, trials=4)
    b.rows = [r for r in b.rows if not (r["trial"] == 3 and r["slug"] == "k0")]
    b.add("k0", 0.0, trial=3, k=0, status="diverged")
    (unit,) = units_of(verdicts(b.evidence())["full_beats_scratch"])
    assert unit.n == 3 and "1 diverged run(s) left out" in unit.notes


def test_a_run_degraded_below_the_near_collapse_flag_counts_in_the_collapse_rates_not_in_the_trained_runs():
    b = Builder()
    for trial in range(4):  # the full model trains in every trial, scratch in 3; its 4th run degrades to 0.85
        b.add(f"k{L}", 0.9 + 0.01 * trial, trial=trial, k=L, majority_share=0.52)
        b.add(
            "k0",
            0.6 if trial == 3 else 0.7 + 0.01 * trial,
            trial=trial,
            k=0,
            majority_share=0.85 if trial == 3 else 0.5,
        )
    (unit,) = units_of(verdicts(b.evidence())["full_beats_scratch"])
    # 0.85 is below the 0.90 flag but 0.34 above the unit's median share (0.51): a mixture, counted as an outcome
    assert unit.collapse["k0"].collapsed == 1 and unit.collapse[f"k{L}"].collapsed == 0
    assert "1 degraded run(s) (one class for at least 0.06 more" in " ".join(unit.notes)
    assert unit.result.n == 3 and unit.estimate == pytest.approx(0.2)
    assert "3 of 4 trials trained in both (the estimate's)" in unit.notes
    # the collapse outcome as typed data on the verdict, for the summary to print beside it
    outcomes = {(o.unit, o.slug): o.rate for o in verdicts(b.evidence())["full_beats_scratch"].collapse_rates}
    assert (outcomes[("sst2 n=500", "k0")].collapsed, outcomes[("sst2 n=500", f"k{L}")].collapsed) == (1, 0)


def test_a_condition_collapsing_in_2_of_3_trials_is_decided_by_the_collapse_rates_not_a_t_on_the_mixture():
    b = Builder().curve(RISING, trials=1)
    for trial in (1, 2):  # scratch collapses in trials 1 and 2 (one class: it scores the positive share, 0.5)
        for k, value in enumerate(RISING):
            b.add(f"k{k}", 0.5 if k == 0 else value, trial=trial, k=k, collapsed=k == 0)
    verdict = verdicts(b.evidence())["full_beats_scratch"]
    (judged,) = verdict.units
    unit = judged.unit
    # a t on the mixture (every run's score, collapsed or not) finds the full model ahead (raw one-sided p < 0.05)
    assert unit.robustness.trial_only[0] < 0.05
    # the hurdle: one trial trained in both cannot test the trained runs, and 2 of 2 discordant trials give the rate
    # part one-sided p 1/4, which 3 trials can never bring below α (1/8 at best): nothing decides at 3 trials
    assert unit.p_for == 1.0 and unit.p_against == 1.0 and not unit.refused
    assert unit.hurdle.rate[0] == pytest.approx(0.25) and np.isnan(unit.hurdle.trained[0])
    assert judged.status != "supported" and verdict.text == "inconclusive"
    assert "the trained runs' contrast has no test" in unit.interval_note


def test_a_second_difference_whose_middle_condition_collapsed_in_every_trial_is_a_hurdle_not_a_t_on_the_mixture():
    b = Builder().curve(RISING, trials=3)
    b.rows = [r for r in b.rows if r["slug"] != "k2"]
    for trial in range(3):  # k = 2 collapses in every trial: each trial's step from k=1 to 2 drops, to 3 jumps
        b.add("k2", 0.5, trial=trial, k=2, collapsed=True)
    verdict = verdicts(b.evidence())["reinit_curve_change_not_constant"]
    (judged,) = [u for u in verdict.units if u.unit.name == "sst2 n=500 steps at k=1,2 grow"]
    unit = judged.unit
    # the trials agree on the mixture's second difference (+0.55 each, ±0.02): its t over 3 trials is tiny
    assert unit.robustness.trial_only[0] < 1e-3
    # the hurdle: no trial trained in all three conditions, and the exact permutation of one collapse per trial
    # over 3 conditions gives the middle every time with probability (1/3)^3: Bonferroni 2/27, not below α
    assert unit.hurdle.rate[0] == pytest.approx(1 / 27) and np.isnan(unit.hurdle.trained[0])
    assert unit.p_for == pytest.approx(2 / 27) and judged.status != "for"
    assert "0 of 3 trials trained in all 3 (the estimate's)" in unit.notes
    assert verdict.text != "supported"


def top_two_with_a_collapse(trials: int) -> Builder:
    """The top two layers alike (0.9) in `trials` trials, and one more trial where k = L−2 collapses (0.5)."""
    flat_top = [0.5, 0.7, 0.9, 0.9, 0.9]
    b = Builder().curve(flat_top, trials=trials, spread=0.0)
    b.add(f"k{L - 2}", 0.5, trial=trials, k=L - 2, collapsed=True).add(f"k{L}", 0.9, trial=trials, k=L)
    for k in (0, 1, L - 1):
        b.add(f"k{k}", flat_top[k], trial=trials, k=k)
    return b


def test_a_margin_contrast_tests_its_trained_runs_and_reports_the_collapses_and_every_run_beside():
    # over all runs the top two layers' contrast is +0.08 (0.4 / 5), beyond the margin; over the 4 trials that
    # trained in both it is 0
    verdict = verdicts(top_two_with_a_collapse(4).evidence())["top_two_layers_negligible_in_finetuning"]
    (unit,) = units_of(verdict)
    assert unit.n == 5 and unit.estimate == pytest.approx(0.0) and unit.result.n == 4
    assert TRAINED_NOTE in unit.notes and "4 of 5 trials trained in both" in unit.notes
    assert "1 collapsed run(s) counted in the collapse rates" in unit.notes
    assert unit.collapse[f"k{L - 2}"].collapsed == 1 and unit.collapse_comparison.p == pytest.approx(1.0)
    # the mean over all runs, the paper's estimand, is the robustness reading beside: it is not within the margin
    assert unit.robustness.other_reading == "all runs" and unit.robustness.other[0] > 0.5
    notes = render_rows(verdict)
    assert f"{COLLAPSE_LABEL}: k{L} 0/5 [0.00, 0.52], k{L - 2} 1/5 [0.01, 0.72]; " in notes
    assert "all runs p for" in notes


def test_a_decided_verdict_says_which_robustness_reading_it_does_not_survive(tmp_path):
    # 12 trials alike and one where k = L−2 collapsed: the trained runs support "negligible"; over all runs (the
    # collapse reading beside a trained-runs test) the contrast is +0.03, and the claim is inconclusive there
    evidence = top_two_with_a_collapse(12).evidence()
    verdict = verdicts(evidence)["top_two_layers_negligible_in_finetuning"]
    assert verdict.text == "supported"
    assert verdict.robust == {"trial-only t": "supported", "collapse reading": "inconclusive"}
    report = render(evidence, tmp_path).splitlines()
    row = next(line for line in report if '<a id="claim-top_two_layers_negl' in line)
    scope = "(tiny-bert (bert, 4 layers); sst2 n=500; 13 trials)"
    # its collapse outcome beside it: the one run of k = L−2 that collapsed, of 13
    rates = f"k{L} 0/13 [0.00, 0.25], k{L - 2} 1/13 [0.00, 0.36]"
    assert (
        f"| supported here {scope}; under the collapse reading: inconclusive; {COLLAPSE_LABEL}: sst2 n=500: {rates} |"
        in row
    )
    # a slope over k is a contrast of the conditions at each k: it has both robustness readings
    row = next(line for line in report if '<a id="claim-later_reinit_costs_less' in line)
    assert f"| supported here {scope}; survives the trial-only t and the collapse reading; {COLLAPSE_LABEL}: " in row


def test_a_chance_level_whose_condition_collapsed_in_every_trial_but_one_has_no_test():
    b = Builder().curve(RISING, trials=3, task="cola")
    b.rows = [r for r in b.rows if not (r["slug"] == "k0" and r["trial"] > 0)]
    for trial in (1, 2):
        b.add("k0", 0.5, task="cola", trial=trial, k=0, collapsed=True)
    (judged,) = verdicts(b.evidence())["all_reinit_at_chance"].units
    unit = judged.unit
    # one trial trained: the trained runs' test has none (p = 1 both ways), whatever the collapses say
    assert (unit.p_for, unit.p_against) == (1.0, 1.0) and not unit.refused and judged.status == "unresolved"
    assert "the trained runs' contrast has no test" in unit.interval_note and unit.collapse["k0"].collapsed == 2
    # its trial-only reading reads the same one trained trial: no test, and the notes say so rather than "nan"
    assert "trial-only t p for n/a (no test), against n/a (no test)" in unit.robustness.text()


def render_rows(verdict: dict) -> str:
    return "\n".join(str(row[-1]) for row in unit_rows([verdict]))


# --- the verdict and its labels --------------------------------------------------------------------------------------


def block_preserve_study(first: float, last: float, trials: int, curve=RISING, curve_trials: int = 6) -> Builder:
    """A progressive curve of `curve_trials` trials and the first and last blocks preserved alone."""
    b = Builder().curve(curve, trials=curve_trials, spread=0.002)
    for t in range(trials):
        for layer, value in ((1, first), (L - 2, last)):
            b.add(f"preserve{layer}", value, trial=t, scheme="block_preserve", layer=layer, window=3, study="blocks")
    return b


def test_a_refused_unit_beside_an_unresolved_gap_is_inconclusive_not_no_verdict():
    """early_layers_help_most's unit is refused at T = 1; where the full-vs-scratch gap it needs is
    unresolved too, more trials of the refused unit alone would not decide the claim: inconclusive."""
    flat = verdicts(block_preserve_study(0.8, 0.6, trials=1, curve=[0.5] * (L + 1)).evidence())
    (judged,) = flat["early_layers_help_most"].units
    assert judged.status == NO_VERDICT and flat["full_beats_scratch"].units[0].status == "unresolved"
    assert flat["early_layers_help_most"].text == "inconclusive"
    shown = verdicts(block_preserve_study(0.8, 0.6, trials=1).evidence())
    assert shown["full_beats_scratch"].text == "supported"
    assert shown["early_layers_help_most"].text == NO_VERDICT  # the refused unit is all that stands


def test_the_planner_of_an_existential_claim_counts_every_unit_that_could_decide_it():
    """One unit's test *for* supports an existential claim: with two undecided steps, N trials support it
    whenever either step's route alone would (the same draws), and the plan's N is the smallest reaching
    0.5 and report.power."""
    from src.claims.planner import FEW, chance_of, decides, existential, outcome_of

    # two non-monotone steps: a large one (k=1 -> 2) and a small one (k=3 -> 4), neither shown at 3 trials
    ev = Builder().curve([0.5, 0.75, 0.70, 0.80, 0.79], trials=3, spread=0.03).evidence()
    v = verdicts(ev, plan=True)["reinit_curve_not_monotone"]
    assert v.text == "inconclusive"
    sims = [outcome_of(j, (SETTINGS.alpha / v.plan.family, SETTINGS.alpha), ev) for j in v.units]
    both = chance_of(sims, existential(sims, [(s, []) for s in sims], complete=True))
    steps = [s for s in sims if s.unit.estimate > 0]
    assert len(steps) == 2
    for trials in (5, 20, 100):
        alone = [chance_of(sims, existential(sims, [(s, [])], complete=True))(trials)[0] for s in steps]
        assert both(trials)[0] >= max(alone) and both(trials)[0] > min(alone)
    (few, *_), (n, *_) = v.plan.chances
    assert decides(both, few) >= FEW > decides(both, few - 1)
    assert decides(both, n) >= SETTINGS.power > decides(both, n - 1)
    assert v.plan.command == f"dvc exp run -S studies.progressive.trials={n}"


def test_the_planner_plans_no_trials_for_a_unit_more_trials_cannot_decide():
    """A test that takes a crossed seed_design's trials as independent (CoLA's near-linear drop: a t over trials
    of each trial's R²; the slope over k is a paired contrast now, which reads the design) is refused, and more
    trials would not change that: no trials, no command, the refusal as its reason."""
    crossed = {"progressive": replace(CONFIG.studies["progressive"], seed_design=(3, 3), trials=9)}
    v = verdicts(crossed_study((3, 3), task="cola").evidence(studies=crossed), plan=True)["cola_near_linear_drop"]
    (unit,) = units_of(v)
    assert unit.refused.kind is Refusal.CROSSED_TRIALS and v.plan is not None
    assert v.plan.trials is None and v.plan.command is None and not v.plan.chances
    assert any(unit.refused.reason in reason for reason in v.plan.reasons)


def test_judging_without_the_planner_gives_the_same_verdicts_with_no_plan():
    """judge_claims(plan=False), for tools/calibrate's replicates: every verdict, p and unit as with the planner;
    no Plan, where the planner gives undecided claims one."""
    ev = Builder().curve([0.5, 0.75, 0.70, 0.80, 0.79], trials=3, spread=0.03).evidence()
    (planned, units), (bare, bare_units) = judge_claims(ev), judge_claims(ev, plan=False)
    assert any(v.plan is not None for v in planned) and all(v.plan is None for v in bare)
    assert [repr(replace(v, plan=None)) for v in planned] == [repr(v) for v in bare]  # repr: NaN p's compare equal
    assert repr(units) == repr(bare_units)


def test_the_planner_plans_no_trials_where_a_needed_gap_has_no_runs():
    """Blocks at a size the progressive study does not run: the full-vs-scratch gap the claim needs there has no
    runs, so no number of trials of its studies can support it: no plan, and that as its reason."""
    b = Builder().curve(RISING, trials=6, spread=0.002)
    for t in range(3):
        for layer, value in ((1, 0.8), (L - 2, 0.6)):
            b.add(
                f"preserve{layer}",
                value + 0.01 * t,
                size=100,
                trial=t,
                scheme="block_preserve",
                layer=layer,
                window=3,
                study="blocks",
            )
    v = verdicts(b.evidence(), plan=True)["early_layers_help_most"]
    assert v.text == "inconclusive" and [j.status for j in v.units] == ["for"]
    assert v.plan.trials is None and v.plan.command is None and not v.plan.chances
    assert v.plan.reasons == ("sst2 n=100: the full-vs-scratch gap it needs has no runs",)


def test_the_planner_draws_a_welch_unit_from_the_estimate_its_test_reads():
    """A Welch unit keeps only its pooled SD (Spread): the Estimate the planner draws from has hypothesis.two_sample's
    estimate, SE and df, so its p is the unit's."""
    from src.claims.planner import observed_of
    from src.claims.units import welch_unit
    from src.stats.hypothesis import two_sample

    a, b = np.array([0.31, 0.35, 0.28, 0.40, 0.33]), np.array([0.30, 0.26, 0.29, 0.27, 0.31])
    unit = welch_unit("claim", "sst2", "a - b > 0", a, b)
    drawn, welch = observed_of(unit), two_sample(a, b)
    assert drawn.estimate == pytest.approx(welch.estimate) and drawn.se == pytest.approx(welch.se)
    assert drawn.df == welch.df and drawn.p_greater() == pytest.approx(unit.p_for)


def test_the_planned_family_is_the_claims_papers():
    """Each paper's planned Holm family counts its own units with a p and those more trials make testable."""
    from src.claims.planner import planned_families

    ev = Builder().curve([0.5, 0.75, 0.70, 0.80, 0.79], trials=3, spread=0.03).evidence()
    verdict_list, units = judge_claims(ev)
    by_claim = {v.id: [j.unit for j in v.units] for v in verdict_list}
    families = planned_families(CLAIMS, by_claim, lambda u: not u.refused and u.test_type != "bootstrap-difference")
    for v in verdict_list:
        if v.plan is not None:
            assert v.plan.family == max(families[v.claim.paper], 1)
    counted = {
        paper: sum(
            1
            for claim in CLAIMS
            if claim.paper == paper
            for u in by_claim[claim.id]
            if not u.refused
            and u.test_type != "bootstrap-difference"
            and math.isfinite(u.p_against if claim.every else u.p_for)
        )
        for paper in families
    }
    assert families == counted and sum(families.values()) > max(families.values())  # more than one paper planned


def test_a_contradicted_claim_prints_the_holm_p_that_decided_it_and_each_verdict_its_error_rate(tmp_path):
    evidence = Builder().curve(RISING[::-1], trials=6).evidence()
    v = verdicts(evidence)
    contradicted, supported = v["full_beats_scratch"], v["permutation_lowers_accuracy"]
    assert contradicted.text == "contradicted"
    (judged,) = contradicted.units
    assert contradicted.p == judged.adjusted < SETTINGS.alpha and judged.status == "against"
    assert contradicted.p_label.startswith("Holm, smallest, against") and "familywise" in contradicted.p_label
    md = render(evidence, tmp_path)
    details = md.split("<strong>Claims in detail")[1]
    row = next(line for line in details.splitlines() if "(full_beats_scratch)" in line)
    assert f"{judged.adjusted:.3g} (Holm, smallest, against; familywise error rate" in row
    assert supported.text == NOT_RUN
    v = verdicts(Builder().curve(RISING, trials=6).evidence())["full_beats_scratch"]
    assert v.text == "supported" and "intersection-union" in v.p_label and "this claim alone" in v.p_label


def test_the_rule_names_every_refusal_the_units_make_and_the_error_rate_of_each_verdict_kind():
    scenarios = [
        Builder().curve(RISING, trials=1).evidence(),  # the design cannot decide at T = 1
        Builder().curve([0.5] * 5, trials=12, spread=0.02).curve(RISING, trials=12, size=100).evidence(),
        Builder().curve(RISING, trials=12).evidence(probe=probe_table([[0.6, 0.61, 0.6, 0.62, 0.9]])),
        crossed_study((3, 3)).evidence(
            studies={"progressive": replace(CONFIG.studies["progressive"], seed_design=(3, 3), trials=9)}
        ),
        crossed_with_a_collapse(),
        permutation_study(0.55, trials=2).evidence(),
    ]
    kinds = {u.refused.kind for e in scenarios for u in judge_claims(e)[1] if u.refused}
    assert len(kinds) >= 4 and kinds >= {Refusal.DESIGN, Refusal.CROSSED_COLLAPSE}
    assert all(kind.value in RULE for kind in Refusal)
    assert "declared minimum trials" not in RULE  # not a refusal the code makes
    assert "familywise" in RULE and "for this claim alone" in RULE


def test_no_two_columns_of_a_report_table_share_a_heading(tmp_path):
    md = render(Builder().curve(RISING, trials=3).evidence(), tmp_path)
    lines = md.splitlines()
    headers = [lines[i - 1] for i, line in enumerate(lines) if line.startswith("| ---")]
    assert len(headers) >= 3
    for header in headers:
        cells = [c.strip() for c in header.strip("|").split(" | ")]
        assert len(cells) == len(set(cells)), header


def test_a_one_sided_test_prints_the_one_sided_bound_it_reads(tmp_path):
    """The interval of each unit is the one its test for reads at α: a unit is "for" exactly where
    its bound clears 0 (or the margin); a TOST prints the 1 − 2α interval."""
    b = single_layer_study({2: 0.0, 3: 0.01}, trials=6, spread=0.002)
    for t in range(6):
        b.add("permutation", 0.86 + 0.03 * (t % 3 - 1), trial=t, scheme="permutation", study="permutation")
    evidence = b.evidence(single_layer_margin=0.03)
    alpha, checked = SETTINGS.alpha, 0
    for v in judge_claims(evidence)[0]:
        for u in units_of(v):
            if u.refused or not isinstance(u.result, (Estimate, Bootstrap)):
                continue
            (low, high), margin = u.interval, u.margin or 0
            clears = {
                "greater": low > 0 and high == math.inf,
                "within": -margin < low and high < margin,
                "below": high < margin and low == -math.inf,
                "above": low > -margin and high == math.inf,
            }[u.shape if isinstance(u.result, Estimate) else "greater" if u.margin is None else "within"]
            assert clears == (u.p_for < alpha), (u.claim, u.name, u.interval, u.p_for)
            checked += 1
    assert checked >= 5
    md = render(evidence, tmp_path)
    assert re.search(r"\| full_beats_scratch \| sst2 n=500 \| [^|]+ \| [^|]+ \| \[\+0\.\d+, \+∞\) \|", md)


def test_weight_change_welch_units_print_a_one_sided_bound():
    weights = [
        {"task": "sst2", "size": size, "slug": f"k{L}", "trial": trial, "layer": layer, "sublayer": "output"}
        | {"status": "ok", "frobenius": size * layer * (1 + 0.05 * trial)}
        for size in (64, 256)
        for trial in range(4)
        for layer in range(1, L + 1)
    ]
    b = Builder().curve(RISING, trials=4, size=64).curve(RISING, trials=4, size=256)
    (unit,) = units_of(verdicts(b.evidence(weight_change=pd.DataFrame(weights)))["more_data_moves_weights_more"])
    assert unit.interval[1] == math.inf and unit.interval[0] > 0 and unit.p_for < SETTINGS.alpha


def test_per_task_sizes_give_not_run_commands_the_schema_accepts(tmp_path):
    """`sizes: {task: [...]}` in a not-run command: a new study
    starts from the mapping's first size; an existing study gets its whole mapping back, extended."""
    params = grid_params()
    params["studies"] = {"progressive": {**params["studies"]["progressive"], "sizes": {"rt_sentiment": [32]}}}
    per_task = validate(params).studies
    v = verdicts(Builder().curve(RISING, trials=3).evidence(studies=dict(per_task)))
    assert "sizes: [32]" in v["lr_multiplier_does_not_help"].needs
    assert "-S 'studies.progressive.sizes.rt_sentiment=[32, 64]'" in v["k90_grows_as_data_shrinks"].needs
    for claim in v.values():
        if claim.text == NOT_RUN:
            validate(not_run_params(claim.needs, params, tmp_path))


# --- each claim as the paper states it --------------------------------------------------------------------------------


def test_the_first_few_layers_give_more_than_half_the_gain_with_plentiful_data_only():
    from src.claims.families.progressive import few_threshold

    assert [few_threshold(replace(Builder().evidence(), num_layers=n)) for n in (4, 6, 12)] == [1, 2, 3]
    b = Builder().curve(EARLY, trials=6, size=5000).curve(LATE, trials=6, size=500)
    v = verdicts(b.evidence())["few_layers_suffice_with_plenty_of_data"]
    plentiful, scarce = units_of(v)[::-1] if units_of(v)[0].key[1] == 500 else units_of(v)
    assert plentiful.estimate == pytest.approx(0.78 - 0.65, abs=0.01) and v.text == "supported"
    # 500 examples are not plentiful (001: 5k and up): outside the paper's scope, its contradiction decides nothing
    assert scarce.refused.kind is Refusal.OUT_OF_SCOPE and "plentiful data" in scarce.interval_note
    v = verdicts(Builder().curve(EARLY, trials=6).evidence())["few_layers_suffice_with_plenty_of_data"]
    assert v.text == NOT_RUN and "studies.progressive.sizes=[8, 16, 5000]" in v.needs  # the params add 5k
    v = verdicts(Builder().curve(LATE, trials=6, size=5000).evidence())["few_layers_suffice_with_plenty_of_data"]
    (unit,) = units_of(v)  # k = 1 keeps 0.02 of a 0.30 gain
    assert unit.estimate == pytest.approx(0.52 - 0.65, abs=0.01) and unit.p_against < SETTINGS.alpha
    assert v.text != "supported"


def blocks_with_probe(preserved: float, trials: int = 6) -> Evidence:
    """Block-preserve runs (window 3, blocks at 1 and 2) beside RISING, and 3 probe seeds that peak at
    layers 2-4, so the highest-probing block starts at layer 2."""
    b = Builder().curve(RISING, trials=trials, spread=0.002)
    for t in range(trials):
        for start, value in ((1, 0.55), (2, preserved)):
            b.add(f"preserve{start}", value + 0.002 * (t % 3 - 1), trial=t, scheme="block_preserve", layer=start)
            b.rows[-1] |= {"window": 3, "study": "blocks"}
    return b.evidence(probe=probe_table([[0.5, 0.5, 0.7, 0.8, 0.8 + 0.01 * s] for s in range(3)]))


def test_high_probing_layers_are_not_sufficient_for_the_full_models_accuracy():
    """The abstract's 'not sufficient for high accuracy': the preserved block below the full model by
    more than the margin; §4's 'higher than scratch' is its own, secondary entry."""
    v = verdicts(blocks_with_probe(0.70))
    (unit,) = units_of(v["high_probing_layers_not_sufficient"])
    assert unit.name == "sst2 n=500 layers 2-4" and unit.margin == -SETTINGS.block_margin
    assert v["high_probing_layers_not_sufficient"].text == "supported"  # 0.70 against 0.90
    assert v["high_probing_layers_not_sufficient_by_section_4"].text == "contradicted"  # 0.20 above scratch
    assert BY_ID["high_probing_layers_not_sufficient_by_section_4"].secondary
    assert verdicts(blocks_with_probe(0.96))["high_probing_layers_not_sufficient"].text == "contradicted"


def head_study(drops: dict, trials: int = 10, heads=range(H), layers=(1, 2, L - 1, L)) -> Builder:
    """Head runs at `layers`, head h of layer l scoring the full model's RISING[-1] − drops.get((l, h), 0).
    10 trials: the crossed variance reads the eval set's share on the trials' T − 1 df, so a 0.1 drop per head
    on 3 trials (2 df) does not survive Holm over the report's family."""
    b = Builder().curve(RISING, trials=trials, spread=0.002)
    for t in range(trials):
        for layer in layers:
            for head in heads:
                value = RISING[-1] - drops.get((layer, head), 0.0) + 0.002 * ((t + head) % 3 - 1)
                b.add(f"layer{layer}_head{head}", value, trial=t, scheme="head", layer=layer, head_index=head)
                b.rows[-1]["study"] = "heads"
    return b


HEADS_STUDIES = {"progressive": CONFIG.studies["progressive"], "heads": CONFIG.studies["heads"]}


def test_the_first_two_layers_heads_hurt_up_to_the_75th_percentile_with_every_head_run():
    nine = {(layer, head): 0.1 for layer in (1, 2) for head in range(9)}  # 9 of 12 heads: ⌈0.75 × 12⌉
    # 8 trials: at 3, each head's paired t on the trials' 2 df gives p ≈ 0.02, which Holm over 12 heads never passes
    v = verdicts(head_study(nine, trials=8).evidence(studies=HEADS_STUDIES))["head_reinit_in_first_two_layers_hurts"]
    assert [u.name for u in units_of(v)] == ["sst2 n=500 layer 1 (12 heads)", "sst2 n=500 layer 2 (12 heads)"]
    # the estimate is the paper's 75th percentile of head reinit − full (numpy's, interpolated)
    assert v.text == "supported" and units_of(v)[0].estimate == pytest.approx(-0.075, abs=0.005)
    eight = {(layer, head): 0.1 for layer in (1, 2) for head in range(8)}
    v = verdicts(head_study(eight, trials=8).evidence(studies=HEADS_STUDIES))["head_reinit_in_first_two_layers_hurts"]
    assert v.text != "supported"  # every head run lowering it is not required, 9 of 12 is
    one_head = head_study({(1, 0): 0.1, (2, 0): 0.1}, heads=[0]).evidence(studies=HEADS_STUDIES)
    v = verdicts(one_head)["head_reinit_in_first_two_layers_hurts"]
    assert v.text == NOT_RUN and f"studies.heads.heads={list(range(H))}".replace("'", "") in v.needs


def test_heads_4_and_9_are_the_papers_and_certain_top_heads_suffice():
    paper = {(layer, head): 0.1 for layer in (1, 2, L - 1, L) for head in (3, 8)}
    top = {(L, 5): -0.1}  # one head of the top layer beats the full model
    v = verdicts(head_study(paper | top, trials=8, heads=[0, 3, 5, 8]).evidence(studies=HEADS_STUDIES))
    assert {u.name.split(" head ")[1] for u in units_of(v["specific_heads_matter"])} == {"3", "8"}
    assert v["specific_heads_matter"].text == "supported"
    assert v["head_reinit_in_last_two_layers_helps"].text == "supported"  # existential: certain heads
    assert v["any_head_reinit_in_last_two_layers_helps"].text == NOT_RUN  # needs every head of the layers
    v = verdicts(head_study({}, heads=[0]).evidence(studies=HEADS_STUDIES))
    assert v["specific_heads_matter"].text == NOT_RUN
    assert "-S 'studies.heads.heads=[0, 3, 8, 11]'" in v["specific_heads_matter"].needs  # the study had [0, 11]


# --- twelve claims beyond the first reading of the papers -------------------------------------------------------------


def two_sizes(small_curve, large_curve, small_spread=0.05, large_spread=0.005, trials=8, small=50, large=500):
    b = Builder().curve(small_curve, trials=trials, spread=small_spread, size=small)
    return b.curve(large_curve, trials=trials, spread=large_spread, size=large)


def test_gains_shrink_and_spread_grows_as_data_shrink_and_little_data_beats_scratch_with_tenfold():
    b = two_sizes([0.5, 0.55, 0.6, 0.85, 0.9], [0.6, 0.8, 0.82, 0.84, 0.85])
    v = verdicts(b.evidence())
    for claim in (
        "pretraining_gain_shrinks_as_data_grow",  # 0.40 at n=50, 0.25 at n=500
        "full_at_little_data_beats_scratch_with_tenfold",  # 0.90 at n=50 against 0.60 at n=500
        "sst2_middle_layers_matter_more_with_less_data",  # k=3 − k=1: 0.30 at n=50, 0.04 at n=500
        "subsampling_variance_larger_with_less_data",  # spread 0.05 against 0.005
    ):
        (unit,) = units_of(v[claim])
        assert unit.name == "sst2 n=50 vs n=500" and v[claim].text == "supported", (claim, unit.p_for)
    (unit,) = units_of(v["pretraining_gain_shrinks_as_data_grow"])
    assert unit.estimate == pytest.approx(0.15, abs=0.02) and unit.interval[1] == math.inf
    reversed_gain = verdicts(
        two_sizes([0.6, 0.8, 0.82, 0.84, 0.85], [0.5, 0.55, 0.6, 0.85, 0.9], 0.005, 0.005).evidence()
    )
    assert reversed_gain["pretraining_gain_shrinks_as_data_grow"].text == "contradicted"
    twofold = verdicts(two_sizes(RISING, RISING, large=100).evidence())[
        "full_at_little_data_beats_scratch_with_tenfold"
    ]
    assert twofold.text == NOT_RUN and "studies.progressive.sizes=[8, 16, 80]" in twofold.needs


def test_the_top_two_layers_are_negligible_and_the_curves_steps_not_constant():
    flat_top = [0.5, 0.7, 0.85, 0.85, 0.85]
    v = verdicts(Builder().curve(flat_top, trials=12, spread=0.002).evidence(single_layer_margin=0.05))
    assert v["top_two_layers_negligible_in_finetuning"].text == "supported"
    v = verdicts(Builder().curve(RISING, trials=12, spread=0.002).evidence(single_layer_margin=0.05))
    assert v["top_two_layers_negligible_in_finetuning"].text == "contradicted"  # k=2 0.80, k=4 0.90
    assert v["reinit_curve_change_not_constant"].text == "supported"  # steps 0.2, 0.1, 0.05, 0.05
    assert len(units_of(v["reinit_curve_change_not_constant"])) == 2 * (L - 1)  # both signs at each k
    linear = verdicts(Builder().curve([0.5, 0.6, 0.7, 0.8, 0.9], trials=6, spread=0.002).evidence())
    assert linear["reinit_curve_change_not_constant"].text != "supported"


def test_rte_gains_from_reinitialising_its_top_layers_and_mrpc_does_not_care():
    b = Builder().curve([0.5, 0.55, 0.6, 0.7, 0.62], trials=6, spread=0.002, task="rte")
    b.curve([0.7] * (L + 1), trials=12, spread=0.002, task="mrpc")
    v = verdicts(b.evidence(single_layer_margin=0.05))
    (unit,) = units_of(v["rte_top_layer_reinit_beats_full"])  # k = ⌈7 L / 12⌉ = 3 .. L − 1 = 3
    assert unit.name == "rte n=500 k=3" and v["rte_top_layer_reinit_beats_full"].text == "supported"
    assert len(units_of(v["mrpc_insensitive_to_reinit"])) == L
    assert v["mrpc_insensitive_to_reinit"].text == "supported"
    # 004 §5.6's table: every k < L at 0.683, the full model at 0.776: the k < L score alike, whatever the full model
    paper = Builder().curve([0.683] * L + [0.776], trials=12, spread=0.002, task="mrpc")
    assert verdicts(paper.evidence(single_layer_margin=0.05))["mrpc_insensitive_to_reinit"].text == "supported"
    apart = Builder().curve([0.5, 0.6, 0.7, 0.8, 0.8], trials=12, spread=0.002, task="mrpc")
    assert verdicts(apart.evidence(single_layer_margin=0.05))["mrpc_insensitive_to_reinit"].text == "contradicted"
    default = verdicts(Builder().curve(RISING, trials=3).evidence())
    assert "studies.progressive.tasks=[rt_sentiment, rte]" in default["rte_top_layer_reinit_beats_full"].needs


def blocks_of_sst2_and_qnli(sst2: dict, qnli: dict) -> Evidence:
    b = Builder().curve(RISING, trials=6).curve(RISING, trials=6, task="qnli")
    for task, values in (("sst2", sst2), ("qnli", qnli)):
        for t in range(6):
            for start, value in values.items():
                b.add(f"reinit{start}", value + 0.002 * (t % 3 - 1), task=task, trial=t, scheme="block_reinit")
                b.rows[-1] |= {"layer": start, "window": 3, "study": "blocks"}
    return b.evidence()


def test_sst2_needs_middle_blocks_and_qnli_early_ones_compared_between_the_tasks():
    v = verdicts(blocks_of_sst2_and_qnli({1: 0.85, 2: 0.70, 3: 0.88}, {1: 0.60, 2: 0.85, 3: 0.88}))
    (unit,) = units_of(v["sst2_needs_middle_qnli_needs_early_layers"])
    # SST-2's first − middle share (+0.375 of its gap) − QNLI's (−0.625)
    assert unit.name == "sst2 n=500 vs qnli n=500" and unit.estimate == pytest.approx(1.0, abs=0.02)
    assert unit.result.fixed_se > 0  # each task's eval-set noise, common to its trials, is in the SE
    assert v["sst2_needs_middle_qnli_needs_early_layers"].text == "supported"
    # both tasks hurt alike by the middle block: SST-2 is not damaged more than QNLI, whatever each task's own order
    alike = verdicts(blocks_of_sst2_and_qnli({1: 0.85, 2: 0.70, 3: 0.88}, {1: 0.85, 2: 0.70, 3: 0.88}))
    assert alike["sst2_needs_middle_qnli_needs_early_layers"].text != "supported"


def test_sst2_probing_declines_more_gradually_than_qnli():
    probe = pd.DataFrame(
        [
            {"task": task, "layer": layer, "value": value + 0.005 * seed, "seed": seed}
            for task, curve in (("sst2", [0.5, 0.6, 0.7, 0.8, 0.9]), ("qnli", [0.5, 0.5, 0.5, 0.9, 0.9]))
            for seed in range(3)
            for layer, value in enumerate(curve)
        ]
    )
    v = verdicts(Builder().curve(RISING, trials=3).evidence(probe=probe))[
        "sst2_probe_declines_more_gradually_than_qnli"
    ]
    (unit,) = units_of(v)
    assert unit.estimate == pytest.approx(0.3) and v.text == "supported"


def test_wnli_as_intermediate_task_helps_every_final_task_but_rte():
    b = Builder().curve(RISING, trials=6, task="cola").curve(RISING, trials=6, task="rte")
    for task, gain in (("cola", 0.05), ("rte", -0.05)):
        for t in range(6):
            b.add(f"k{L}_after_wnli", RISING[-1] + gain + 0.002 * (t % 3 - 1), task=task, trial=t, k=L)
            b.rows[-1] |= {"intermediate_task": "wnli", "ref_baseline": f"k{L}", "plain": False, "study": "sequential"}
    v = verdicts(b.evidence())["wnli_intermediate_helps_every_task_but_rte"]
    assert [u.test for u in units_of(v)] == [
        "after intermediate − direct > 0",
        "direct − after intermediate > 0 (the exception)",
    ]
    assert v.text == "supported"
    needs = verdicts(Builder().curve(RISING, trials=3).evidence())["wnli_intermediate_helps_every_task_but_rte"].needs
    assert "intermediate_tasks: [wnli]" in needs and "wnli]" in needs.split("data.tasks=")[1]


def test_head_reinitialisation_has_no_significant_impact_within_the_margin():
    v = verdicts(head_study({}, trials=12, heads=[0, 1]).evidence(single_layer_margin=0.05))
    assert len(units_of(v["head_reinit_no_significant_impact"])) == 2 * 4  # two heads at each of the 4 layers
    assert v["head_reinit_no_significant_impact"].text == "supported"
    v = verdicts(head_study({(1, 0): 0.2}, trials=12, heads=[0, 1]).evidence(single_layer_margin=0.05))
    assert v["head_reinit_no_significant_impact"].text == "contradicted"


PRESETS = sorted((Path(__file__).parents[3] / "presets").glob("*.yaml"))


@pytest.mark.parametrize("preset", PRESETS, ids=[p.stem for p in PRESETS])
def test_every_presets_not_run_commands_build_and_the_schema_accepts_them(preset, tmp_path):
    """The presets give sizes per task; no claim's command may crash or be refused."""
    params = yaml.safe_load(preset.read_text())
    config = validate(params)
    evidence = replace(
        Builder().curve(RISING, trials=3).evidence(studies=dict(config.studies)), data=config.data, train=config.train
    )
    not_run = [v for v in verdicts(evidence).values() if v.text == NOT_RUN]
    assert not_run
    for claim in not_run:
        validate(not_run_params(claim.needs, yaml.safe_load(preset.read_text()), tmp_path))


@pytest.mark.parametrize("design", [REPO / "params.yaml", *PRESETS], ids=["default", *(p.stem for p in PRESETS)])
def test_a_not_run_command_that_trains_longer_also_trains_the_plain_runs_it_is_compared_with(design, tmp_path):
    """A claim about epochs (and the training-length check) pairs each longer-training run with the plain run of the
    default epochs at the same task, size, k and trial. The command a "not run" row prints must give both: with
    only the longer runs at a size the progressive study lacks, the claim stays not run after hours of training
    (the default's epochs_beyond_3_do_not_help_with_plenty_of_data asked for 6-epoch runs at 256 examples and
    no plain run there)."""
    params = yaml.safe_load(design.read_text())
    config = validate(params)
    evidence = replace(
        Builder().curve(RISING, trials=3).evidence(studies=dict(config.studies)), data=config.data, train=config.train
    )
    longer = [
        claim
        for claim in verdicts(evidence).values()
        if claim.text == NOT_RUN and any("epochs" in need.modifiers for need in BY_ID[claim.id].needs)
    ]
    for claim in longer:
        after = validate(not_run_params(claim.needs, yaml.safe_load(design.read_text()), tmp_path))
        conditions = {c for study in all_study_conditions(after, L).values() for c in study}
        trained_longer = [
            c for c in conditions if c.scheme == "progressive" and c.epochs != after.train.epochs_for(c.size)
        ]
        assert trained_longer, claim.needs
        for condition in trained_longer:
            plain = replace(condition, epochs=after.train.epochs_for(condition.size))
            assert plain in conditions, (claim.id, condition.slug, condition.size, claim.needs)


def test_only_a_study_paired_with_the_reference_takes_its_trials():
    """Runs of other epochs pair with the progressive study's plain runs by trial, so the command gives them no
    more trials than it has; an lr-multiplier study trains its own baselines, at the 3 a verdict is calibrated
    from."""
    studies = {"progressive": replace(CONFIG.studies["progressive"], trials=2)}
    v = verdicts(Builder().curve(RISING, trials=2).evidence(studies=studies))
    assert "trials: 2}" in v["five_epochs_help_with_little_data"].needs
    assert "trials: 3}" in v["lr_multiplier_does_not_help"].needs


def test_a_refused_head_percentile_asks_for_the_trials_its_design_decides_from():
    v = verdicts(head_study({}, trials=1, layers=(1,)).evidence(studies=HEADS_STUDIES), plan=True)
    claim = v["head_reinit_in_first_two_layers_hurts"]
    (unit,) = units_of(claim)
    assert unit.refused.reason.startswith("the design cannot decide at T = 1") and claim.plan.trials == 3


def test_a_bootstrap_difference_is_calibrated_at_alpha_only_so_it_supports_but_never_contradicts():
    # k90 at n=100 is 1 and at n=500 is 4: the reverse of "k90 grows as data shrink", far beyond any Holm level
    early = Builder().curve([0.5, 0.9, 0.9, 0.9, 0.9], trials=6, size=100)
    v = verdicts(early.curve([0.5, 0.55, 0.6, 0.65, 0.9], trials=6).evidence())["k90_grows_as_data_shrinks"]
    (judged,) = v.units
    unit = judged.unit
    assert unit.test_type == "bootstrap-difference" and unit.p_against < SETTINGS.alpha / 10
    assert math.isnan(judged.adjusted) and judged.status == "unresolved" and v.text == "inconclusive"
    late = Builder().curve([0.5, 0.55, 0.6, 0.65, 0.9], trials=6, size=100)
    assert (
        verdicts(late.curve([0.5, 0.9, 0.9, 0.9, 0.9], trials=6).evidence())["k90_grows_as_data_shrinks"].text
        == "supported"
    )


def test_all_reinit_at_chance_reads_the_best_constant_predictions_score_on_004s_tasks_only():
    at_chance = [0.555, 0.7, 0.8, 0.85, 0.9]  # LABELS' majority class is 0.555 of them: accuracy's chance level
    b = Builder().curve(at_chance, trials=6, spread=0.002, task="cola").curve(at_chance, trials=6, spread=0.002)
    v = verdicts(b.evidence())["all_reinit_at_chance"]
    by_task = {u.name.split()[0]: u for u in units_of(v)}
    assert by_task["cola"].notes[-1].startswith("chance level 0.555") and not by_task["cola"].refused
    # sst2 is not one of 004's tasks: outside the paper's scope, deciding nothing
    assert by_task["sst2"].refused.kind is Refusal.OUT_OF_SCOPE and "CoLA, MRPC, RTE" in by_task["sst2"].interval_note
    assert v.text != NOT_RUN and v.p == by_task["cola"].p_for  # decided by the unit in the scope alone
    only_sst2 = verdicts(Builder().curve(at_chance, trials=6, spread=0.002).evidence())["all_reinit_at_chance"]
    assert only_sst2.text == NOT_RUN and "studies.progressive.tasks=[rt_sentiment, cola, mrpc, rte]" in only_sst2.needs
    mrpc = replace(
        Builder().curve(at_chance, trials=3, task="mrpc").evidence(), labels={"mrpc": np.array([1] * 279 + [0] * 129)}
    )
    mrpc.runs["metric"] = "f1"
    from src.claims.evidence import chance_level

    assert chance_level(mrpc, "mrpc") == pytest.approx(0.812, abs=0.001)  # always "paraphrase", 004 §5.6's F1


def test_003s_sst2_and_qnli_claims_and_001s_plentiful_data_claims_ask_for_runs_in_their_papers_scope():
    flat_top = [0.5, 0.7, 0.85, 0.85, 0.85]
    cola = Builder().curve(flat_top, trials=12, spread=0.002, task="cola")
    probed = probe_evidence(cola, [0.5, 0.6, 0.8, 0.9, 0.7], seeds=3)
    v = verdicts(
        replace(
            probed,
            probe=probed.probe.assign(task="cola"),
            probe_predictions={"cola": probed.probe_predictions["sst2"]},
        )
    )
    for claim in ("top_two_layers_negligible_in_finetuning", "top_two_layers_hurt_probing"):
        (unit,) = units_of(v[claim])
        assert unit.refused.kind is Refusal.OUT_OF_SCOPE and "SST-2 and QNLI" in unit.interval_note, claim
        assert v[claim].text == NOT_RUN and "qnli" in v[claim].needs, claim
    epochs = verdicts(Builder().curve(RISING, trials=3).evidence())["epochs_beyond_3_do_not_help_with_plenty_of_data"]
    assert "'+studies.epochs={scheme: progressive, ks: [0, 4], epochs: 6, tasks: [rt_sentiment], sizes: [5000]" in (
        epochs.needs
    )


def blocks_on_two_scales(cola_shares) -> Evidence:
    """Block-reinit runs (blocks at 1, 2, 3) on SST-2 (scratch 0.5, full 0.9) at shares 0.2, 0.5, 0.8 of the gap,
    and on CoLA (an MCC-like scale: scratch 0.0, full 0.2) at `cola_shares` of its gap."""
    b = Builder().curve([0.5, 0.6, 0.7, 0.8, 0.9], trials=6, spread=0.002)
    b.curve([0.0, 0.05, 0.1, 0.15, 0.2], trials=6, spread=0.002, task="cola")
    for task, low, gap, shares in (("sst2", 0.5, 0.4, (0.2, 0.5, 0.8)), ("cola", 0.0, 0.2, cola_shares)):
        for t in range(6):
            for start, share in zip((1, 2, 3), shares):
                noise = 0.004 * ((t + start) % 3 - 1)
                b.add(f"reinit{start}", low + share * gap + noise, task=task, trial=t, scheme="block_reinit")
                b.rows[-1] |= {"layer": start, "window": 1, "study": "blocks"}
    return b.evidence()


def test_useful_layers_differ_by_task_on_gap_normalised_profiles_so_a_metrics_scale_cannot_make_it_significant():
    alike = verdicts(blocks_on_two_scales((0.2, 0.5, 0.8)))["useful_layers_differ_by_task"]
    (unit,) = units_of(alike)  # the raw scores' profiles differ by the scales alone (steps 0.12 against 0.06)
    assert unit.p_for > 0.2 and alike.text == "inconclusive"
    differ = verdicts(blocks_on_two_scales((0.8, 0.5, 0.2)))["useful_layers_differ_by_task"]
    assert differ.text == "supported"


def test_curve_statistics_are_per_trial_statistics_that_decide_from_three_trials():
    """CoLA's near-linear drop (R² per trial, t over trials) and the probe-vs-finetuning peaks and gain centres
    (Welch over finetuning trials and probe seeds) decide from 3 trials, where a percentile bootstrap never did."""
    linear, early = [0.5, 0.6, 0.7, 0.8, 0.9], [0.5, 0.8, 0.85, 0.88, 0.9]  # R² 1.0 and 0.72
    for curve, supported in ((linear, True), (early, False)):
        b = Builder().curve(curve, trials=3, spread=0.005, task="cola")
        v = verdicts(b.evidence())["cola_near_linear_drop"]
        (unit,) = units_of(v)
        assert unit.n == 3 and not unit.refused and (v.text == "supported") == supported, (curve, unit.p_for)
        assert "with the eval set's part of the variance (its draws, the trials held)" in unit.notes
        assert unit.result.fixed_se > 0  # 200 eval examples: their noise, common to the trials, is in the SE
    assert unit.p_against < SETTINGS.alpha  # the early curve, 0.18 below the threshold
    probed = verdicts(probe_evidence(Builder().curve(RISING, trials=3), [0.5, 0.5, 0.55, 0.7, 0.75], seeds=3))
    for claim in ("probe_peaks_lower_than_finetuning", "probe_needs_more_layers"):
        (unit,) = units_of(probed[claim])  # peaks 0.90 against 0.75; gain centres 1.9 against 2.8
        assert not unit.refused and probed[claim].text == "supported", (claim, unit.p_for)
        assert unit.result.fixed_se > 0  # the shared eval set's part, from the probes' and the runs' predictions
