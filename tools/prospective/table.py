"""A preset's prospective table: per claim of its paper, P(supported) / P(not supported) / P(undecided) on the
paper's design at the effect of claims.py and at zero effect, and the fewest trials that decide it with
probability >= POWER, priced in run-steps (a run's optimizer steps: ceil(size / batch) x epochs, plus its
intermediate steps) and converted to GPU-hours by bench/cost.py's measured step time."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from bench.cost import measured_assumptions
from src.config.schema import Config
from tools.prospective.claims import ClaimModel, claim_models, gaps_for
from tools.prospective.simulate import Outcome, UnitModel, combine, unit_probabilities

POWER = 0.8
TRIALS = (3, 4, 5, 6, 8, 10, 20, 50)  # the designs searched: every study the claim reads at T trials
PAPER_OF_PRESET = {
    "tamkin2020": "001",
    "singh_giovanardi": "003",
    "huang2021": "004",
    "huang2021_decisive": "004",
    "huang2021_squad": "004",
}
# GLUE train sets (../shared/glue/PROVENANCE.tsv): an intermediate step at `intermediate_size: full` trains on them.
TRAIN_EXAMPLES = {"cola": 8551, "mrpc": 3668, "rte": 2490, "wnli": 635}
GPU_JSON = Path(__file__).resolve().parents[2] / "bench" / "gpu.json"


@dataclass(frozen=True)
class Row:
    claim: ClaimModel
    units: int
    at_effect: Outcome | None  # None: no effect to simulate at
    at_zero: Outcome | None
    cheapest: int | None  # fewest trials in TRIALS deciding it with >= POWER at the effect; None: none does
    run_steps: int  # of the claim's runs at `cheapest` trials
    runs: int
    by_trials: dict[int, Outcome]  # at the effect, every study it reads at T trials (or its preset's, if more)
    needs: str = ""  # a claim without an effect: what it would take to decide it on this design


def trials_of(design: Config, unit: UnitModel, trials: int | None) -> int:
    """The unit's trials: the preset's (probe units: its probe seeds), or `trials` where that is more."""
    have = design.probe.seeds if unit.study == "probe" else design.studies[unit.study].trials_at(unit.size)
    return max(have, trials or 0)


def family_size(design: Config, paper: str) -> int:
    """The paper's Holm family on this design: one test per simulated unit of its claims (the claims simulated
    here only: bootstrap and F units are left out, so the level alpha / m is a little too lenient)."""
    return sum(len(m.build(design)) for m in claim_models(design) if m.paper == paper and m.build)


def outcome(
    design: Config,
    model: ClaimModel,
    family: int,
    trials: int | None,
    reps: int,
    rng,
    zero: bool = False,
    effect: float | None = None,
) -> Outcome:
    """The claim's outcome at `trials` (None: the preset's): at its units' effects; `zero`: every unit and gap
    at 0 (the null world); `effect`: its own units at that effect, its gaps at theirs."""
    assert model.build is not None
    alpha = design.report.alpha
    units = model.build(design)
    gaps = gaps_for(design, units) if model.gap else []
    if zero:
        units, gaps = [replace(u, effect=0.0) for u in units], [replace(g, effect=0.0) for g in gaps]
    if effect is not None:
        units = [replace(u, effect=effect) for u in units]
    level_for, level_against = (alpha, alpha / family) if model.every else (alpha / family, alpha)
    fors, againsts = [], []
    for unit in units:
        p_for, p_against = unit_probabilities(
            unit, trials_of(design, unit, trials), level_for, level_against, reps, rng
        )
        fors.append(p_for)
        againsts.append(p_against)
    gap_fors = [unit_probabilities(g, trials_of(design, g, trials), alpha, alpha, reps, rng)[0] for g in gaps]
    if model.every:
        fors += gap_fors
    elif gap_fors:  # existential with gaps: a unit supports only beside its gap (not used by 004's claims)
        fors = [f * g for f, g in zip(fors, gap_fors, strict=True)]
    return combine(model.every, fors, againsts)


def decided(o: Outcome) -> float:
    return o.supported + o.contradicted


def run_key(unit: UnitModel, condition: str) -> tuple[str, str, str, int]:
    """(study, task, condition, size) of a condition a unit reads ("cond@task": on another task)."""
    name, _, task = condition.partition("@")
    return unit.study, task or unit.task, name, unit.size


def cost(design: Config, units: list[UnitModel], trials: int) -> tuple[int, int]:
    """(runs, run-steps) of the distinct conditions the units read, each at `trials` (or its preset's, if more).
    Probe seeds train no finetuning run (a frozen pass and a linear probe): 0 run-steps."""
    runs = {run_key(u, c): trials_of(design, u, trials) for u in units if u.study != "probe" for c in u.conditions}
    train = design.train
    steps = 0
    for (_, _task, condition, size), n in runs.items():
        per_run = math.ceil(size / train.batch_size) * train.epochs_for(size)
        if condition.startswith("after:"):
            per_run += math.ceil(TRAIN_EXAMPLES[condition[6:]] / train.batch_size) * train.epochs
        steps += n * per_run
    return sum(runs.values()), steps


def gpu_hours(runs: int, run_steps: int) -> float:
    """bench/cost.py's measured assumptions (bench/gpu.json: its fastest configuration's run-step time and
    per-run overhead): run-steps x step time + runs x overhead."""
    a = measured_assumptions(json.loads(GPU_JSON.read_text()))
    return (run_steps * a["step_latency_s"] + runs * a["run_overhead_s"]) / 3600


def gpu_label() -> str:
    return measured_assumptions(json.loads(GPU_JSON.read_text()))["measured"]["label"]


EFFECTS = (0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2)  # the effects tried for a claim that has none


def without_effect(design: Config, model: ClaimModel, units: list[UnitModel], family: int, reps: int, rng) -> Row:
    """A claim neither the paper nor this project gives an effect for. "> 0" claims: the smallest effect of
    EFFECTS its units must have for the preset's design to decide it with >= POWER. Margin claims (within,
    below, above: true at zero): the fewest trials that decide it with >= POWER where every unit's effect is 0,
    its gaps at theirs."""
    at_zero = outcome(design, model, family, None, reps, rng, effect=0.0)
    if all(u.shape == "greater" for u in units):
        smallest = next(
            (e for e in EFFECTS if decided(outcome(design, model, family, None, reps, rng, effect=e)) >= POWER), None
        )
        needs = f"an effect ≥ {smallest} on every unit" if smallest else f"an effect above {EFFECTS[-1]}"
        return Row(model, len(units), None, at_zero, None, 0, 0, {}, needs)
    cheapest = next(
        (t for t in TRIALS if decided(outcome(design, model, family, t, reps, rng, effect=0.0)) >= POWER), None
    )
    runs, steps = cost(design, units, cheapest) if cheapest else (0, 0)
    return Row(model, len(units), None, at_zero, cheapest, steps, runs, {}, "its units at zero effect")


def rows(design: Config, paper: str, reps: int, seed: int = 0) -> list[Row]:
    rng = np.random.default_rng(seed)
    family = family_size(design, paper)
    out = []
    for model in (m for m in claim_models(design) if m.paper == paper):
        units = model.build(design) if model.build else []
        if not units:
            out.append(Row(model, 0, None, None, None, 0, 0, {}))
            continue
        if any(math.isnan(u.effect) for u in units):
            out.append(without_effect(design, model, units, family, reps, rng))
            continue
        at_effect = outcome(design, model, family, None, reps, rng)
        at_zero = outcome(design, model, family, None, reps, rng, zero=True)
        by_trials = {t: outcome(design, model, family, t, reps, rng) for t in TRIALS}
        cheapest = next((t for t in TRIALS if decided(by_trials[t]) >= POWER), None)
        runs, steps = cost(design, units, cheapest) if cheapest else (0, 0)
        out.append(Row(model, len(units), at_effect, at_zero, cheapest, steps, runs, by_trials))
    return out
