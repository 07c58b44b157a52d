"""The variance components this project measured, and the eval sets of the presets' tasks.

A contrast's variance on T independent trials scored on one eval set of N examples is
trial_sd^2 / T + example_sd^2 / N (docs/calibration.md, "What is estimated"). Both components are read off the
paper-tasks run's report (docs/paper_tasks/report.md, "Tests, per unit": MiniLM, 500 examples, 3 trials, GLUE
dev), from a unit's estimate, its one-sided 95% bound (t on T - 1 df: the crossed SE) and its trial-only
robustness p (the trial part alone): fixed SE^2 = crossed SE^2 - trial SE^2, floored at 0."""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats

# GLUE dev (the eval set of every GLUE preset task; ../shared/glue/PROVENANCE.tsv rows; STS-B: GLUE's 1,500 dev
# pairs) and SQuAD 2.0 dev (11,873 questions, Rajpurkar et al. 2018).
EVAL_EXAMPLES = {
    "sst2": 872,
    "qnli": 5463,
    "cola": 1043,
    "mrpc": 408,
    "rte": 277,
    "wnli": 71,
    "stsb": 1500,
    "squad_v2": 11873,
}
PAPER_TASKS = "docs/paper_tasks/report.md (MiniLM, 500 examples, 3 trials)"


@dataclass(frozen=True)
class Components:
    """One trial's SD and one eval example's SD of a two-condition contrast (weights +1, -1)."""

    trial_sd: float
    example_sd: float
    source: str


def from_report(estimate: float, lower: float, p_trial_only: float, trials: int, examples: int, source: str):
    """Components from a reported one-sided unit: crossed SE = (estimate - lower) / t(0.95, T - 1); trial SE =
    estimate / t.isf(p_trial_only, T - 1)."""
    df = trials - 1
    crossed = (estimate - lower) / stats.t.ppf(0.95, df)
    trial = estimate / stats.t.isf(p_trial_only, df)
    fixed = math.sqrt(max(crossed**2 - trial**2, 0.0))
    return Components(float(trial * math.sqrt(trials)), fixed * math.sqrt(examples), source)


# full - scratch at 500 examples, "Tests, per unit" of docs/paper_tasks/report.md (QNLI: its 2,731 carved dev rows).
MEASURED = {
    "sst2": from_report(0.075, 0.039, 0.00742, 3, 872, f"SST-2 full − scratch, {PAPER_TASKS}"),
    "qnli": from_report(0.147, 0.123, 3.76e-05, 3, 2731, f"QNLI full − scratch, {PAPER_TASKS}"),
}
# One trial's SD, pooled over the two measured contrasts (root mean square: 2 + 2 df; each alone rests on 2 df).
TRIAL_SD = math.sqrt(sum(c.trial_sd**2 for c in MEASURED.values()) / len(MEASURED))
# Tasks this project has no valid measurement of (CoLA's and MRPC's runs collapsed, RTE did not learn at 500,
# WNLI, STS-B and SQuAD did not run): the larger measured example SD (QNLI's), labelled.
NEAREST_EXAMPLE_SD = max(c.example_sd for c in MEASURED.values())


def components(task: str) -> Components:
    """The pooled trial SD and the task's own example SD (or the nearest's), with where they come from."""
    if task in MEASURED:
        return Components(
            TRIAL_SD, MEASURED[task].example_sd, f"trial SD pooled over SST-2 and QNLI; {MEASURED[task].source}"
        )
    return Components(
        TRIAL_SD,
        NEAREST_EXAMPLE_SD,
        "trial SD pooled over SST-2 and QNLI; example SD QNLI's (none measured on this task)",
    )


# A probe contrast's SD over probe seeds, from top_two_layers_hurt_probing's units (probe(L-2) - probe(L),
# 3 seeds; "Tests, per unit" of docs/paper_tasks/report.md): all of its crossed SE taken as the seeds' part.
PROBE_SEED_SD = {
    task: (estimate - lower) / stats.t.ppf(0.95, 2) * math.sqrt(3)
    for task, estimate, lower in (("sst2", -0.001, -0.036), ("qnli", 0.153, 0.123), ("cola", 0.054, -0.045))
}
# later_layers_move_more's units (per-trial slope of the output sublayer's weight change over layers, a trial-only
# t): one trial's SD of the slope, and the slope, per task (same report).
WEIGHT_SLOPE = {
    task: (estimate, (estimate - lower) / stats.t.ppf(0.95, 2) * math.sqrt(3))
    for task, estimate, lower in (("sst2", 0.032, 0.026), ("qnli", 0.032, 0.014), ("cola", 0.012, -0.005))
}
