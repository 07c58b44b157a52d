"""tools/prospective: the measured components, the claim models against the registry, a unit's decision
probability against the t test's exact size, the claim combination, and the cost of a design."""

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from bench.cost import load_preset
from src.claims.registry import CLAIMS
from src.stats.validity import MIN_TRIALS
from tests.support import REPO
from tools.prospective import components as comp
from tools.prospective.claims import claim_models
from tools.prospective.simulate import UnitModel, combine, unit_probabilities
from tools.prospective.table import EFFECTS, PAPER_OF_PRESET, cost, family_size, rows, without_effect


def design(name: str):
    return load_preset(REPO / "presets" / f"{name}.yaml")


def test_components_invert_the_reported_unit():
    """A unit built from known components (trial SD 0.02, example SD 0.3, T = 3, N = 800) and reported as the
    report prints it (its one-sided bound, its trial-only p) gives the components back."""
    trial_sd, example_sd, trials, n, estimate = 0.02, 0.3, 3, 800, 0.05
    trial_se, crossed = trial_sd / math.sqrt(trials), math.sqrt(trial_sd**2 / trials + example_sd**2 / n)
    lower = estimate - stats.t.ppf(0.95, trials - 1) * crossed
    p_trial_only = stats.t.sf(estimate / trial_se, trials - 1)
    got = comp.from_report(estimate, lower, p_trial_only, trials, n, "test")
    assert got.trial_sd == pytest.approx(trial_sd, rel=1e-9)
    assert got.example_sd == pytest.approx(example_sd, rel=1e-9)


def test_every_claim_of_the_registry_has_a_model_in_its_order():
    models = claim_models(design("huang2021"))
    assert [m.id for m in models] == [c.id for c in CLAIMS]
    assert all(c.source.startswith(m.paper) for m, c in zip(models, CLAIMS, strict=True))
    assert not any(m.build and m.cannot for m in models)


def unit(**kw) -> UnitModel:
    base = dict(label="u", study="progressive", task="sst2", size=500, trial_sd=0.02, fixed_se=0.0, effect=0.0)
    return UnitModel(**(base | dict(fixed_df=math.nan, trials_only=True, conditions=("k12", "k0")) | kw))


def test_a_trials_only_unit_at_zero_effect_rejects_at_the_t_tests_size():
    """The t test on T - 1 df at its null boundary rejects with probability exactly its level: 20,000 draws,
    Monte Carlo SE 0.0015 at 0.05."""
    p_for, p_against = unit_probabilities(unit(), 4, 0.05, 0.05, 20_000, np.random.default_rng(0))
    assert p_for == pytest.approx(0.05, abs=0.006) and p_against == pytest.approx(0.05, abs=0.006)


def test_a_unit_below_three_trials_never_decides():
    assert unit_probabilities(unit(effect=1.0), 2, 0.05, 0.05, 100, np.random.default_rng(0)) == (0.0, 0.0)


def test_power_of_a_trials_only_unit_is_the_noncentral_t():
    """At effect d, P(t > t_crit) on T - 1 df is the noncentral t's tail (nc = d / (sd / sqrt(T)))."""
    trials, effect = 5, 0.02
    exact = stats.nct.sf(stats.t.isf(0.05, trials - 1), trials - 1, effect / (0.02 / math.sqrt(trials)))
    p_for, _ = unit_probabilities(unit(effect=effect), trials, 0.05, 0.05, 20_000, np.random.default_rng(1))
    assert p_for == pytest.approx(exact, abs=0.01)


def test_combine_universal_and_existential():
    universal = combine(True, [0.9, 0.5], [0.1, 0.2])
    assert universal.supported == pytest.approx(0.45) and universal.contradicted == pytest.approx(1 - 0.9 * 0.8)
    existential = combine(False, [0.9, 0.5], [0.1, 0.2])
    assert existential.supported == pytest.approx(1 - 0.1 * 0.5) and existential.contradicted == pytest.approx(0.02)
    assert existential.undecided == pytest.approx(0.03)
    assert combine(True, [1.0], [0.5]).undecided == 0.0  # overlapping sides: floored at 0


def test_cost_counts_each_condition_once_and_adds_the_intermediate_steps():
    """huang2021: batch 32, 3 epochs. Two units on RTE's k12 share that condition's runs; a sequential unit
    after WNLI adds WNLI's full training set (635) to each run."""
    d = design("huang2021")
    a = unit(task="rte", size=2490, conditions=("k12", "k0"))
    b = unit(task="rte", size=2490, conditions=("k12", "k6"))
    runs, steps = cost(d, [a, b], 4)
    assert runs == 3 * 4 and steps == 12 * math.ceil(2490 / 32) * 3
    seq = unit(study="sequential", task="rte", size=2490, conditions=("direct", "after:wnli"))
    runs, steps = cost(d, [seq], 3)
    assert runs == 6 and steps == 6 * math.ceil(2490 / 32) * 3 + 3 * math.ceil(635 / 32) * 3


def test_huang_units_read_the_papers_numbers():
    """004 Fig. 2: CoLA after WNLI - direct = 0.536 - 0.526; Figs. 5-6: head 4 of layer 2 on CoLA -0.045."""
    models = {m.id: m for m in claim_models(design("huang2021"))}
    wnli = models["wnli_intermediate_helps_every_task_but_rte"].build(design("huang2021"))
    assert [round(u.effect, 3) for u in wnli] == [0.010, 0.010, 0.047]
    heads = models["specific_heads_matter"].build(design("huang2021"))
    assert next(u.effect for u in heads if u.label == "cola layer 2 head 4") == pytest.approx(0.045)


def test_plentiful_claims_get_units_only_at_5000_and_up():
    d = design("tamkin2020")
    models = {m.id: m for m in claim_models(d)}
    sizes = {u.size for u in models["few_layers_suffice_with_plenty_of_data"].build(d)}
    assert sizes == {5000, 50000}


def test_table_1_pairs_decide_from_validitys_pairs_and_hold_their_size_at_the_margin():
    """Spearman units read the report's test (correlation.spearman_above, its simulated null at the margin):
    refused below the pairs validity names; at population rho = 0.5 (the margin) they reject at most about the
    level from there (at validity's 4 pairs the test is discrete: rho = 1 has p 0.134, so it cannot reach 0.05;
    Fisher's z, the test before, rejected 0.133 there), and at Table 1's 10 pairs about the level itself, with
    the power docs/calibration.md measures at rho = 0.83 (0.425 at 0.05); 20,000 draws, Monte Carlo SE <= 0.0035."""
    d = design("tamkin2020")
    pair = next(m for m in claim_models(d) if m.id == "permutation_affects_tasks_alike").build(d)[0]
    fewest = MIN_TRIALS["spearman-margin"][0]
    assert unit_probabilities(pair, fewest - 1, 0.05, 0.05, 100, np.random.default_rng(0)) == (0.0, 0.0)
    size, _ = unit_probabilities(replace(pair, effect=0.5), fewest, 0.05, 0.05, 20_000, np.random.default_rng(0))
    assert size < 0.055
    size, _ = unit_probabilities(replace(pair, effect=0.5), 10, 0.05, 0.05, 20_000, np.random.default_rng(0))
    assert 0.04 < size < 0.06
    power, _ = unit_probabilities(replace(pair, effect=0.83), 10, 0.05, 0.05, 20_000, np.random.default_rng(0))
    assert power == pytest.approx(0.425, abs=0.02)


def documented_cell(preset: str, claim: str) -> list[float]:
    """The "this design, at the effect" triple of `claim` in `preset`'s table in docs/presets.md."""
    section = (REPO / "docs" / "presets.md").read_text().split(f"**`{preset}.yaml`**")[1].split("\n\n**")[0]
    row = next(line for line in section.splitlines() if line.startswith(f"| `{claim}` |"))
    return [float(x) for x in row.split("|")[5].split("/")]


@pytest.mark.slow
@pytest.mark.parametrize(
    "preset, claim",
    [("singh_giovanardi", "later_layers_move_more"), ("huang2021_decisive", "later_reinit_costs_less")],
)
def test_a_documented_cell_recomputes(preset, claim):
    """The docs' table cell, recomputed with its command's reps and seed (1,000, 0): within 0.05 (the Monte Carlo
    SE of a probability from 1,000 draws is at most 0.016)."""
    row = next(r for r in rows(design(preset), PAPER_OF_PRESET[preset], 1000, 0) if r.claim.id == claim)
    got = [row.at_effect.supported, row.at_effect.contradicted, row.at_effect.undecided]
    assert got == pytest.approx(documented_cell(preset, claim), abs=0.05)


def test_a_claim_without_an_effect_names_the_effect_its_design_needs():
    """No effect given: no probability at an effect, and for a "> 0" claim the smallest effect that decides it,
    which a larger effect than the smallest tried (and a smaller one than the largest) must be here."""
    d = design("tamkin2020")
    model = next(m for m in claim_models(d) if m.id == "sst2_needs_middle_qnli_needs_early_layers")
    row = without_effect(d, model, model.build(d), family_size(d, "001"), 400, np.random.default_rng(0))
    assert row.at_effect is None and row.at_zero is not None and row.at_zero.supported < 0.05
    assert row.needs.startswith("an effect ≥ ") and float(row.needs.split()[3]) in EFFECTS[1:]
