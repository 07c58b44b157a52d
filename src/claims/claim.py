"""What a claim is (`Claim`), the runs it needs (`Need`) and what several claims read (`Shared`),
with the needs and helpers the claim families share (src/claims/families/).

A claim has its source (seed file and section), the hypothesis as the paper states it
(exceptions included), the operationalisation (and why, where the paper is qualitative),
the test, whether it is a universal ("at every unit") or existential ("somewhere")
statement, whether it needs the full-vs-scratch gap, the runs it needs (`Need`, from which
the `dvc exp run -S …` command that adds them is written) and the function that builds its
units from the evidence. How units become a verdict: src/claims/verdicts.py.

Seeds: 001 = Tamkin et al. 2020 (001_27c42214c9172bd1.txt), 003 = Singh & Giovanardi
(003_3cd4a3a1567cb7f4.txt), 004 = Huang, Lin & Zhou (004_317186e5dc9a0fa6.txt), all in the
seeds folder of the shared folder beside the repository (../shared/seeds/).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
from scipy import stats

from src.claims.curves import Curve, ProbeCurve, probe_curve, progressive_curve
from src.claims.evidence import PLENTIFUL, PLENTIFUL_SIZE, Evidence, common_trials, outside_scope, scores_of
from src.claims.units import Refusal, Refused, Unit, contrast_unit, refuse, welch_unit
from src.core.seeds import derive_seed
from src.stats import hypothesis
from src.tasks.metrics import example_metric

SEED_001, SEED_003, SEED_004 = "001 Tamkin et al. 2020", "003 Singh & Giovanardi", "004 Huang, Lin & Zhou"
# The papers by seed number, in the report's order: a claim's paper is the first word of its source (Claim.paper),
# and each paper's claims are one Holm family (src/claims/verdicts.py).
PAPERS = {seed.split()[0]: seed.split(" ", 1)[1] for seed in (SEED_001, SEED_003, SEED_004)}


@dataclass(frozen=True)
class Need:
    """Runs a claim needs: a study of `scheme` with `modifiers` (named `study` when it has to be
    added, with `args`), on `tasks` (empty: any), with `sizes` ("two": at least two sizes;
    "tenfold": two at least 10 times apart; "small": one at most train.small_size; "large": one
    above it; "plentiful": one of at least evidence.PLENTIFUL_SIZE; "plentiful_and_scarce": one of at least
    PLENTIFUL_SIZE and one below it at most a tenth of it), `min_tasks` tasks, and probes of its tasks when `probe`."""

    scheme: str
    study: str
    args: dict = field(default_factory=dict)
    modifiers: dict = field(default_factory=dict)
    tasks: tuple = ()
    sizes: str = ""
    min_tasks: int = 1
    probe: bool = False


@dataclass(frozen=True)
class Claim:
    id: str
    source: str  # seed file and section
    hypothesis: str  # as the paper states it, exceptions included
    operationalisation: str  # what is measured, and why where the paper is qualitative
    test: str
    needs: tuple[Need, ...]
    build: Callable[[Evidence, Shared], list[Unit]]
    every: bool = True  # universal ("at every unit": intersection-union) or existential ("somewhere": Holm)
    needs_gap: bool = False  # supported only where full beats scratch at each of its units
    secondary: bool = False  # a labelled secondary analysis, not the paper's statement
    paper_value: str = ""  # the paper's own number for it, where its text or tables give one, and where

    @property
    def paper(self) -> str:
        """The seed number of the claim's paper (a key of PAPERS): the first word of its source."""
        return self.source.split()[0]


DRAWS_SEED = 0  # every bootstrap draw of the report derives from it and from what the draw resamples


def draws_rng(*resampled) -> np.random.Generator:
    """The generator of the bootstrap draws of `resampled` (a task's eval set, a curve's trials, a probe's
    seeds), keyed by it: a claim's draws depend on what it resamples, never on the claims built before it."""
    return np.random.default_rng(derive_seed(DRAWS_SEED, "bootstrap", *resampled))


class Shared:
    """What several claims read, computed once per report: progressive curves and probe curves. Each draws
    from its own generator (draws_rng): a curve's trials by its task and size, a probe's seeds by its
    task; every curve of a task takes the same draws of its eval set (they are all scored on it, so they
    stay paired)."""

    def __init__(self, ev: Evidence):
        self.ev = ev

    @cached_property
    def eval_draws(self) -> dict[str, np.ndarray]:
        """Each task's eval-set bootstrap draws [B, N] (hypothesis.example_draws)."""
        return {
            task: hypothesis.example_draws(
                len(labels), self.ev.settings.bootstrap_resamples, draws_rng("eval set", task)
            )
            for task, labels in sorted(self.ev.labels.items())
        }

    @cached_property
    def curves(self) -> dict[tuple[str, int], Curve]:
        found = {}
        for task, size in ((t, s) for t, sizes in self.ev.curve_sizes().items() for s in sizes):
            curve = progressive_curve(self.ev, task, size, draws_rng("trials", task, size), self.eval_draws.get(task))
            if curve is not None:
                found[(task, size)] = curve
        return found

    @cached_property
    def probes(self) -> dict[str, ProbeCurve]:
        found = {}
        for task in self.ev.probe_scores():
            probe = probe_curve(self.ev, task, draws_rng("probe seeds", task), self.eval_draws.get(task))
            if probe is not None:
                found[task] = probe
        return found

    def sizes(self, task: str) -> list[int]:
        return sorted(s for t, s in self.curves if t == task)

    def tasks(self) -> list[str]:
        return sorted({t for t, _ in self.curves})

    def probed_at_largest_size(self):
        """(task, size, probe, curve) for every probed task at its largest size: where the
        probe-vs-finetuning claims compare the two curves."""
        for task in self.tasks():
            if task in self.probes:
                size = self.sizes(task)[-1]
                yield task, size, self.probes[task], self.curves[(task, size)]


def curve_contrasts(
    ev: Evidence, claim: str, contrasts, tasks: tuple = (), largest_only: bool = False, **shape
) -> list[Unit]:
    """Paired contrasts along each progressive curve (of `tasks`, every task where empty; at each
    task's largest size only with `largest_only`): `contrasts(L)` yields (label, {k: weight}, test),
    one unit per contrast whose every k ran; `shape` as contrast_unit's."""
    units = []
    for task, sizes in ev.curve_sizes().items():
        for size in sizes:
            if (tasks and task not in tasks) or (largest_only and size != sizes[-1]):
                continue
            by_k = ev.curve(task, size)
            for label, weights, test in contrasts(ev.num_layers):
                if set(weights) <= set(by_k):
                    slugs = {by_k[k].slug: w for k, w in weights.items()}
                    name = f"{task} n={size}{label}"
                    units.append(contrast_unit(ev, claim, task, size, slugs, test, name=name, **shape))
    return units


def curves_under_eval_draws(shared: Shared, task: str, size: int) -> np.ndarray | None:
    """Each trial's progressive curve at (task, size) under each of the task's shared eval draws (Shared.eval_draws):
    [B, T, L+1], trials as the curve's; None where a run's predictions or the task's eval labels are missing, or
    its metric is not resampled over examples."""
    ev, curve = shared.ev, shared.curves[(task, size)]
    metric, counts = example_metric(ev.metric(task)), shared.eval_draws.get(task)
    by_k = ev.curve(task, size)
    scored = [scores_of(ev, task, size, by_k[k].slug, curve.trials)[0] for k in range(ev.num_layers + 1)]
    if metric is None or counts is None or any(p is None for p in scored):
        return None
    labels = np.asarray(ev.labels[task])
    return np.stack([metric.weighted(p, labels, counts) for p in scored if p is not None], axis=-1)


def probe_under_eval_draws(shared: Shared, task: str) -> np.ndarray | None:
    """Each probe seed's curve under each of the task's shared eval draws: [B, S, L+1]; None where the probes'
    predictions are not stored (or as curves_under_eval_draws)."""
    ev, probe = shared.ev, shared.probes[task]
    metric, counts = example_metric(probe.metric), shared.eval_draws.get(task)
    if metric is None or counts is None or probe.predictions is None:
        return None
    labels = np.asarray(ev.labels[task])
    return np.stack(
        [metric.weighted(probe.predictions[:, layer], labels, counts) for layer in range(probe.predictions.shape[1])],
        axis=-1,
    )


def with_eval_part(estimate: hypothesis.Estimate, eval_draws: np.ndarray | None) -> hypothesis.Estimate:
    """`estimate` (of a mean over trials, its SE theirs alone) with the eval set's part of its variance added:
    `eval_draws` are the same mean under each eval-set draw with the trials held, whose variance is that part
    (fixed_se; it also holds the trials' interaction with the examples, which errs wide). Unchanged without them."""
    if eval_draws is None:
        return estimate
    fixed = float(np.nanstd(eval_draws, ddof=1))
    return replace(estimate, se=math.sqrt(estimate.se**2 + fixed**2), fixed_se=fixed)


def in_scope(units: list[Unit], inside: Callable[[Unit], bool], reason: str) -> list[Unit]:
    """`units` with each that `inside` rejects refused as outside its paper's scope (Refusal.OUT_OF_SCOPE, with
    `reason`: evidence.outside_scope): such a unit decides nothing."""
    return [u if inside(u) else refuse(u, Refusal.OUT_OF_SCOPE, reason) for u in units]


def plentiful_only(units: list[Unit]) -> list[Unit]:
    """`units` (each keyed by its (task, size)) refused below PLENTIFUL_SIZE: 001 states its plentiful-data claims
    at 5k examples and up."""
    return in_scope(units, lambda u: u.key[1] >= PLENTIFUL_SIZE, outside_scope(SEED_001, PLENTIFUL))


def per_trial_contrast(ev: Evidence, task: str, size: int, weights: dict[str, float]) -> np.ndarray:
    """sum_slug weight * score of each trial every slug finished at (task, size): trials only."""
    trials, _ = common_trials(ev, task, size, list(weights))
    total = np.zeros(len(trials))
    for slug, w in weights.items():
        total = total + w * scores_of(ev, task, size, slug, trials)[1]
    return total


def one_sided_welch(ev: Evidence, claim: str, name: str, test: str, a, b, **kw) -> Unit:
    """welch_unit of mean(a) − mean(b) > 0, its interval the one-sided (1 − α) lower bound its test
    reads (scipy), as the report prints every one-sided test's (verdicts.decision_interval)."""
    unit = welch_unit(claim, name, test, a, b, **kw)
    if not unit.refused:
        ci = stats.ttest_ind(a, b, equal_var=False, alternative="greater").confidence_interval(1 - ev.settings.alpha)
        return replace(unit, interval=(float(ci.low), math.inf))
    return unit


def variance_ratio_unit(
    claim: str, name: str, test: str, a: np.ndarray, b: np.ndarray, studies: tuple, reads: tuple = ()
) -> Unit:
    """var(a) / var(b) > 1 by the one-sided F test (hypothesis.variance_ratio_p; normal scores)."""
    ratio = (
        float(np.var(a, ddof=1) / np.var(b, ddof=1))
        if len(a) > 1 and len(b) > 1 and np.var(b, ddof=1) > 0
        else math.nan
    )
    return Unit(
        claim,
        name,
        test,
        ratio,
        (math.nan, math.nan),
        (len(a), len(b)),
        p_for=hypothesis.variance_ratio_p(a, b),
        p_against=hypothesis.variance_ratio_p(b, a),
        studies=studies,
        reads=reads,
        notes=("estimate is the variance ratio; the F test assumes normal scores",),
        refused=Refused(Refusal.TOO_FEW, "fewer than 2 runs on a side") if len(a) < 2 or len(b) < 2 else None,
        interval_note="a variance ratio: no interval printed",
    )


# --- the runs most claims need ---------------------------------------------------------------------------------

ALL_KS = "all_ks"  # Need.args value: ks 0..L (filled in when the command is written)
PROGRESSIVE = Need("progressive", "progressive", {"ks": ALL_KS})  # the whole progressive curve
TWO_SIZES = replace(PROGRESSIVE, sizes="two")  # ... at two training-set sizes at least
PROBED = replace(PROGRESSIVE, probe=True)  # ... with probes of its tasks
BLOCKS = Need("block", "blocks", {"window": 3})


# --- numbers as the report and its notes print them ---


def k_text(value: float) -> str:
    return "undefined" if not np.isfinite(value) else str(int(value))


def p_text(value) -> str:
    return "n/a" if value is None or not np.isfinite(value) else f"{value:.3g}"


def number(value) -> str:
    return "n/a" if value is None or not np.isfinite(value) else f"{value:+.3f}"


def interval_text(unit: Unit) -> str:
    """[low, high], or a one-sided bound as [low, +∞) or (−∞, high]; "—" (and why) without one."""
    low, high = unit.interval
    if np.isnan(low) or np.isnan(high):
        return f"— ({unit.interval_note})" if unit.interval_note else "—"
    opening = "(−∞" if low == -math.inf else f"[{number(low)}"
    closing = "+∞)" if high == math.inf else f"{number(high)}]"
    return f"{opening}, {closing}"
