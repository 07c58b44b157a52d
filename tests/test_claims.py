"""Tests of intent for the claims registry, on hand-built evidence (not the live params.yaml):
a verdict follows its stated test, never a point estimate; non-significance is
inconclusive; "no effect" needs equivalence within the declared margin; a task without a
resolved full-vs-scratch gap is not counted; collapsed runs stay in; an inconclusive
verdict says how many trials would decide it and how to add them."""

import math
import zlib
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from conftest import grid_params

from src.claims.registry import Evidence, Unit, first_reaching, judge_claims, plan_trials
from src.claims.render import write_report
from src.config.schema import ReportConfig

L = 4
N = 400  # eval examples
LABELS = np.random.default_rng(0).integers(0, 2, N)
SETTINGS = ReportConfig(**{**grid_params()["report"], "bootstrap_resamples": 2000})


def predictions_with_accuracy(accuracy: float, seed: int) -> np.ndarray:
    """Predictions whose accuracy on LABELS is `accuracy` (errors at random examples)."""
    wrong = np.random.default_rng(seed).permutation(N)[: round((1 - accuracy) * N)]
    predictions = LABELS.copy()
    predictions[wrong] = 1 - predictions[wrong]
    return predictions


def stable_seed(*parts) -> int:
    """The same seed in every process (Python's hash() of a str is salted per process)."""
    return zlib.crc32("|".join(map(str, parts)).encode())


class Builder:
    """Runs of plain conditions with their predictions, as the report stage reads them."""

    def __init__(self):
        self.rows, self.predictions = [], {}

    def add(
        self,
        slug,
        accuracy,
        task="sst2",
        size=500,
        trial=0,
        scheme="progressive",
        k=math.nan,
        layer=math.nan,
        status="ok",
        collapsed=False,
        study="progressive",
    ):
        value = math.nan if status != "ok" else accuracy
        self.rows.append(
            {
                "study": study,
                "task": task,
                "size": size,
                "slug": slug,
                "trial": trial,
                "scheme": scheme,
                "k": k,
                "layer": layer,
                "metric": "accuracy",
                "value": value,
                "status": status,
                "collapsed": collapsed,
                "ref_full": f"k{L}",
                "ref_scratch": "k0",
            }
        )
        if status == "ok":
            self.predictions[(task, size, slug, trial)] = predictions_with_accuracy(
                accuracy, stable_seed(task, size, slug, trial)
            )
        return self

    def curve(self, values, trials, spread=0.01, task="sst2", size=500):
        for t in range(trials):
            for k, v in enumerate(values):
                self.add(f"k{k}", v + spread * ((t + k) % 3 - 1), task, size, t, k=k)
        return self

    def evidence(self, probe=None, layer_change=None, **settings):
        return Evidence(
            pd.DataFrame(self.rows),
            self.predictions,
            {"sst2": LABELS, "cola": LABELS},
            probe if probe is not None else pd.DataFrame(columns=["task", "layer", "value"]),
            layer_change
            if layer_change is not None
            else pd.DataFrame(columns=["task", "size", "trial", "step", "layer", "frobenius"]),
            L,
            replace(SETTINGS, **settings),
        )


def verdicts(evidence) -> dict:
    return {v["id"]: v for v in judge_claims(evidence)[0]}


RISING = [0.50, 0.70, 0.80, 0.85, 0.90]


def test_first_reaching_by_hand():
    assert first_reaching([0.5, 0.9, 0.91, 0.92, 0.93]) == 1
    assert first_reaching([0.5, 0.52, 0.55, 0.60, 0.90]) == 4
    assert math.isnan(first_reaching([0.5, 0.5, 0.4]))


def test_a_large_paired_effect_over_enough_trials_is_supported_and_its_reverse_contradicted():
    v = verdicts(Builder().curve(RISING, trials=6).evidence())
    assert v["full_beats_scratch"]["verdict"] == "supported"
    (unit,) = v["full_beats_scratch"]["units"]
    assert unit.result.estimate == pytest.approx(0.40, abs=0.02) and unit.result.n == 6 and unit.adjusted_for < 0.05
    v = verdicts(Builder().curve(RISING[::-1], trials=6).evidence())
    assert v["full_beats_scratch"]["verdict"] == "contradicted"


def test_one_trial_or_a_wide_interval_is_inconclusive_whatever_the_point_estimate():
    assert verdicts(Builder().curve(RISING, trials=1).evidence())["full_beats_scratch"]["verdict"] == "inconclusive"
    noisy = Builder().curve([0.5, 0.5, 0.5, 0.5, 0.56], trials=3, spread=0.08)
    v = verdicts(noisy.evidence())["full_beats_scratch"]
    assert v["units"][0].result.estimate > 0 and v["verdict"] == "inconclusive"
    assert (
        v["plan"]["trials"] > 3
        and v["plan"]["command"] == f"dvc exp run -S studies.progressive.trials={v['plan']['trials']}"
    )


def single_layer_study(drop: float, trials: int, spread: float):
    b = Builder().curve(RISING, trials=trials)
    for t in range(trials):
        b.add(
            "single2",
            RISING[-1] - drop + spread * (t % 3 - 1),
            trial=t,
            scheme="single_layer",
            layer=2,
            study="single_layer",
        )
    return b


def test_a_small_mean_with_a_wide_interval_does_not_show_that_a_layer_barely_matters():
    v = verdicts(single_layer_study(drop=0.005, trials=3, spread=0.06).evidence())["single_layer_barely_matters"]
    (unit,) = v["units"]
    assert abs(unit.result.estimate) < SETTINGS.single_layer_margin and v["verdict"] == "inconclusive"


def test_equivalence_within_the_declared_margin_is_supported_and_a_large_drop_contradicts():
    assert (
        verdicts(single_layer_study(drop=0.0, trials=12, spread=0.0005).evidence(single_layer_margin=0.03))[
            "single_layer_barely_matters"
        ]["verdict"]
        == "supported"
    )
    assert (
        verdicts(single_layer_study(drop=0.2, trials=12, spread=0.001).evidence())["single_layer_barely_matters"][
            "verdict"
        ]
        == "contradicted"
    )


def test_where_full_and_scratch_do_not_differ_a_claim_that_needs_the_gap_is_not_counted():
    b = Builder().curve([0.5] * (L + 1), trials=6, spread=0.002)  # a task at chance: no transfer to measure
    for t in range(6):
        b.add("permutation", 0.2, trial=t, scheme="permutation", study="permutation")  # far below both
    v = verdicts(b.evidence())["permuted_closer_to_scratch"]
    (unit,) = v["units"]
    assert unit.status == "for" and not unit.counted and v["verdict"] == "inconclusive"
    assert any("not counted: full vs scratch unresolved" in note for note in unit.notes)


def test_a_non_significant_correlation_is_not_evidence_that_probes_do_not_predict():
    probe = pd.DataFrame({"task": "sst2", "layer": range(L + 1), "value": [0.6, 0.62, 0.61, 0.63, 0.62]})
    v = verdicts(Builder().curve(RISING, trials=3).evidence(probe=probe))["probes_do_not_predict_finetuning"]
    assert v["verdict"] == "inconclusive"
    assert any("no bootstrap verdict below 10 trials" in note for note in v["units"][0].notes)


def test_collapsed_runs_stay_in_the_contrast():
    b = Builder().curve(RISING, trials=4)
    b.add("k0", 0.5, trial=4, k=0, collapsed=True).add(f"k{L}", 0.9, trial=4, k=L)
    for k in range(1, L):
        b.add(f"k{k}", RISING[k], trial=4, k=k)
    (unit,) = verdicts(b.evidence())["full_beats_scratch"]["units"]
    assert unit.result.n == 5 and "1 collapsed run(s) kept" in unit.notes


def test_a_diverged_run_leaves_its_trial_out_of_the_pair_and_is_counted():
    b = Builder().curve(RISING, trials=4)
    b.rows = [r for r in b.rows if not (r["trial"] == 3 and r["slug"] == "k0")]
    b.add("k0", 0.0, trial=3, k=0, status="diverged")
    (unit,) = verdicts(b.evidence())["full_beats_scratch"]["units"]
    assert unit.result.n == 3 and "1 diverged run(s) left out" in unit.notes


def test_weight_change_is_compared_at_equal_steps():
    rows = []
    for size, steps, per_step in ((64, 40, 1.0), (256, 96, 1.0)):  # the same change per step at both sizes
        for trial in range(3):
            for step in [s for s in (1, 2, 4, 8, 16, 32, 64) if s <= steps]:
                rows += [
                    {
                        "task": "sst2",
                        "size": size,
                        "trial": trial,
                        "steps": steps,
                        "step": step,
                        "layer": layer,
                        "frobenius": per_step * step * layer * (1 + 0.01 * trial),
                    }
                    for layer in range(1, L + 1)
                ]
    v = verdicts(Builder().curve(RISING, trials=3).evidence(layer_change=pd.DataFrame(rows)))[
        "more_data_moves_weights_more"
    ]
    (unit,) = v["units"]
    assert unit.result["estimate"] == pytest.approx(0.0, abs=1e-9)  # at step 32 for both: no difference
    assert "at step 32 for both sizes" in unit.notes[0] and v["verdict"] == "inconclusive"


def test_every_claim_is_not_run_without_its_rows():
    v = verdicts(Builder().evidence())
    assert {claim["verdict"] for claim in v.values()} == {"not run"}


def test_report_names_test_estimate_interval_p_n_and_the_trials_that_would_decide(tmp_path):
    b = Builder().curve([0.5, 0.5, 0.5, 0.5, 0.56], trials=3, spread=0.08)
    png = tmp_path / "progressive.png"
    png.write_bytes(b"\x89PNG fake")
    verdict_list, _ = judge_claims(b.evidence())
    write_report(
        verdict_list,
        SETTINGS,
        [("extra", pd.DataFrame({"a": [1.5]}))],
        [("progressive", png), ("heads", "not run: no rows to plot")],
        tmp_path / "r.md",
        tmp_path / "r.html",
    )
    md = (tmp_path / "r.md").read_text()
    assert "paired contrast full − scratch > 0" in md and "dvc exp run -S studies.progressive.trials=" in md
    assert "| full_beats_scratch | sst2 n=500 | difference |" in md and "Holm" in md
    assert "heads: not run: no rows to plot" in md and "base64," in (tmp_path / "r.html").read_text()


def test_the_planner_never_asks_for_the_trials_an_unresolved_unit_already_has():
    # A Welch unit whose power formula asks for 2 per group (sd 0) but that is unresolved at 3
    # per group (as in a Holm family of 19): the plan must ask for more than 3.
    unit = Unit(
        "more_data_moves_weights_more",
        "sst2 n=256 vs n=64",
        "welch",
        {"estimate": -0.09, "low": -0.12, "high": -0.05, "p": 0.005, "n": (3, 3), "sd": 0.0},
        studies=("progressive",),
    )
    plan = plan_trials(unit.claim, [unit], [], Builder().evidence(), family=19)
    assert plan["trials"] == 4 and plan["command"] == "dvc exp run -S studies.progressive.trials=4"
