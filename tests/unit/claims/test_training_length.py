"""The training-length check (src/claims/training.py): longer-training runs against the plain runs of
the same k, paired by trial; a claim that reads an undertrained (task, size) is marked in the report."""

import pytest

from src.claims.summary import WhatRan, claim_rows
from src.claims.training import CONFOUNDED, NOT_CHECKED, PLATEAU, UNDERTRAINED, training_checks
from src.claims.verdicts import judge_claims
from tests.fake_evidence import Builder, L, render

TRIALS = 5
CURVE = [0.60, 0.70, 0.75, 0.80, 0.85]


def with_longer_training(gain_scratch: float, gain_full: float) -> Builder:
    """The progressive curve at its default epochs and, beside it, k = 0 and k = L trained 3 epochs longer."""
    builder = Builder().curve(CURVE, TRIALS)
    for trial in range(TRIALS):
        for k, gain in ((0, gain_scratch), (L, gain_full)):
            plain = CURVE[k] + 0.01 * ((trial + k) % 3 - 1)
            builder.add(f"k{k}_e6", plain + gain, trial=trial, k=k, epochs=6, study="epochs", plain=False)
    return builder


@pytest.mark.parametrize(
    ("gains", "status"),
    [((0.0, 0.005), PLATEAU), ((0.10, 0.0), UNDERTRAINED), ((0.0, 0.03), UNDERTRAINED)],
)
def test_the_check_reads_the_gain_of_longer_training_at_scratch_and_the_full_model(gains, status):
    check = training_checks(with_longer_training(*gains).evidence())[("sst2", 500)]
    assert check.status == status
    assert [(g.k, g.epochs) for g in check.gains] == [(0, (3, 6)), (L, (3, 6))]
    assert [round(g.estimate, 6) for g in check.gains] == [round(x, 6) for x in gains]
    assert len(check.gains[0].gains) == TRIALS


def test_without_longer_training_runs_nothing_is_checked_and_nothing_is_marked(tmp_path):
    evidence = Builder().curve(CURVE, TRIALS).evidence()
    assert training_checks(evidence)[("sst2", 500)].status == NOT_CHECKED
    report = render(evidence, tmp_path)
    assert f"sst2 n=500: {NOT_CHECKED}" in report
    assert CONFOUNDED not in report.split("<strong>Training length</strong>")[1].split("<strong>How a verdict")[
        0
    ].replace("*confounded by training length*", "")


def test_a_claim_reading_an_undertrained_size_is_marked_confounded_with_the_evidence(tmp_path):
    evidence = with_longer_training(0.10, 0.0).evidence()
    verdicts, _ = judge_claims(evidence)
    by_id = {v.id: v for v in verdicts}
    ran = WhatRan("tiny-bert", "tiny-bert (bert, 4 layers)", evidence.studies, 0, 0)
    rows = {r.id: r for r in claim_rows(verdicts, set(), ran)}
    assert by_id["full_beats_scratch"].text == "supported"
    scope = "(tiny-bert (bert, 4 layers); sst2 n=500; 5 trials)"
    assert rows["full_beats_scratch"].verdict.startswith(f"supported here {scope} ({CONFOUNDED}); survives")
    assert rows["head_reinit_in_first_two_layers_hurts"].verdict == "not run"  # a claim without runs is not marked
    report = render(evidence, tmp_path)
    assert "sst2 n=500: undertrained (k=0 3→6 epochs +0.100 [" in report
    assert f"supported here {scope} ({CONFOUNDED})" in report
    plateau = render(with_longer_training(0.0, 0.0).evidence(), tmp_path)
    assert "sst2 n=500: reached a plateau" in plateau
    assert f"({CONFOUNDED})" not in plateau
