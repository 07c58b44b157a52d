"""Curves the claims compare, built from the evidence: a progressive curve over k (Curve) and a
probe curve over layers (ProbeCurve), each with its mean, per-trial (per-seed) values and
percentile-bootstrap draws (trials, and the eval examples where predictions are stored); the
probes' secondary measures by layer; a paired contrast of probe layers."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from src.claims.evidence import Evidence, common_trials, readable_design, runs_flagged, scores_of, studies_of
from src.stats import hypothesis
from src.stats.hypothesis import Estimate
from src.tasks.metrics import example_metric


@dataclass
class Curve:
    """A progressive curve over k = 0..L: its mean, bootstrap draws [B, L+1] (trials and, for
    accuracy, eval examples, the same draw at every k), per-trial values [T, L+1], trials, notes,
    and the crossed seed_design its draws read (subsets and draws resampled), None for
    independent trials, or why its runs' crossed design could not be read (readable_design);
    `flagged` [T, L+1]: whether each run (nearly) collapsed or degraded (evidence.runs_flagged)."""

    mean: np.ndarray
    draws: np.ndarray
    per_trial: np.ndarray
    trials: list[int]
    notes: list[str]
    studies: tuple
    flagged: np.ndarray
    design: tuple[int, int] | None | str = None

    @property
    def flagged_runs(self) -> int:
        return int(self.flagged.sum())


def progressive_curve(
    ev: Evidence, task: str, size: int, rng: np.random.Generator, example_counts: np.ndarray | None = None
) -> Curve | None:
    """The curve of `task` at `size`; `example_counts` are the task's shared eval-set draws
    (hypothesis.example_draws), None for fresh ones."""
    by_k = {k: c.slug for k, c in ev.curve(task, size).items()}
    if sorted(by_k) != list(range(ev.num_layers + 1)):
        return None
    slugs = [by_k[k] for k in range(ev.num_layers + 1)]
    trials, notes = common_trials(ev, task, size, slugs)
    if not trials:
        return None
    labels = np.asarray(ev.labels.get(task, np.zeros(1)))
    metric = ev.metric(task)
    points = [scores_of(ev, task, size, slug, trials) for slug in slugs]
    if any(predictions is None for predictions, _ in points):
        metric = "trials only"
    predictions = np.stack(
        [np.zeros((len(trials), labels.size)) if p is None or metric == "trials only" else p for p, _ in points]
    )
    scores = np.stack([s for _, s in points])  # [K, T]
    design = readable_design(ev, task, size, slugs, trials)
    if isinstance(design, str):
        notes = [*notes, f"{design}: its trials are resampled as independent"]
    elif design is not None:
        notes = [*notes, f"crossed seed_design: {design[0]} subsets x {design[1]} draws"]
    read = design if isinstance(design, tuple) else None
    draws = hypothesis.curve_draws(
        example_metric(metric), predictions, labels, scores, ev.settings.bootstrap_resamples, rng, example_counts, read
    )
    per_trial = scores.T
    runs = [[ev.condition_runs(task, size, slug).first[t] for t in trials] for slug in slugs]
    flagged = runs_flagged(
        [[r.collapsed for r in row] for row in runs], [[r.majority_share for r in row] for row in runs]
    )
    return Curve(
        per_trial.mean(axis=0),
        draws,
        per_trial,
        trials,
        notes,
        studies_of(ev, task, size, slugs),
        flagged.T,
        design,
    )


def curves_design(curves) -> tuple[tuple[int, int] | None, bool]:
    """For a statistic of several curves' draws: the crossed seed_design validity.decidable
    reads (of the curves whose draws read one, that with the fewest levels of a factor; None where
    none did) and whether every curve from a crossed design read it (else its trials were
    resampled as independent, and refuse_trials_as_independent refuses the unit)."""
    read = [c.design for c in curves if isinstance(c.design, tuple)]
    return min(read, key=min, default=None), not any(isinstance(c.design, str) for c in curves)


class ProbeCurve(NamedTuple):
    """A probe curve over layers 0..L: per-seed scores [S, L+1], bootstrap draws [B, L+1] of
    their mean (None with one seed), the eval predictions [S, L+1, N] (None where not stored:
    the draws then resample the seeds alone) and the metric."""

    per_seed: np.ndarray
    draws: np.ndarray | None
    predictions: np.ndarray | None
    metric: str

    @property
    def mean(self) -> np.ndarray:
        return self.per_seed.mean(axis=0)

    @property
    def seeds(self) -> int:
        return len(self.per_seed)

    @property
    def eval_resampled(self) -> bool:
        return self.predictions is not None

    @property
    def resampled(self) -> str:
        return "probe seeds and eval examples" if self.eval_resampled else "probe seeds"


def probe_curve(
    ev: Evidence, task: str, rng: np.random.Generator, example_counts: np.ndarray | None = None
) -> ProbeCurve | None:
    """The probe curve of `task`. With several seeds its draws resample the seeds (as a curve's
    trials) and, where the probes' eval predictions are stored, the eval examples by
    `example_counts`: the draws the finetuning curves of the task take, since probe and
    finetuning are scored on the same eval set, whose noise the seeds' spread does not hold."""
    probes = ev.probe_scores().get(task)
    if probes is None:
        return None
    layers = range(ev.num_layers + 1)
    scores = np.array(
        [[by_layer.get(layer, math.nan) for layer in layers] for _, by_layer in sorted(probes.scores.items())]
    )  # [S, L+1]: the seeds as a curve's trials
    if np.isnan(scores).any():
        return None
    labels, predictions = ev.labels.get(task), ev.probe_predictions.get(task)
    metric = probes.metric or "trials only"
    if (
        labels is None
        or predictions is None
        or predictions.shape != (*scores.shape, len(labels))
        or example_metric(metric) is None
    ):
        metric, predictions = "trials only", None
    resamples = ev.settings.bootstrap_resamples
    if len(scores) < 2:
        draws = None
    elif predictions is None:
        draws = hypothesis.resampled_means(scores, resamples, rng)
    else:
        draws = hypothesis.curve_draws(
            example_metric(metric),
            np.swapaxes(predictions, 0, 1),
            np.asarray(labels),
            scores.T,
            resamples,
            rng,
            example_counts,
        )
    return ProbeCurve(scores, draws, predictions, metric)


def probe_measure_curve(ev: Evidence, task: str, column: str) -> np.ndarray | None:
    """The mean over probe seeds of a PROBE_MEASURES column by layer 0..L, None where the probe
    table lacks it (probes run without that measure, or no online code: regression)."""
    probes = ev.probe_scores().get(task)
    measure = probes.measures.get(column) if probes is not None else None
    if measure is None:
        return None
    curve = np.array([measure.get(layer, math.nan) for layer in range(ev.num_layers + 1)])
    return None if np.isnan(curve).any() else curve


def probe_contrast(ev: Evidence, task: str, probe: ProbeCurve, weights: dict[int, float]) -> Estimate:
    """sum_layer weight * probe score, paired by probe seed: hypothesis.paired_contrast with the
    seeds as its trials (a probe seed, like a trial, fixes the init and the data order) and the
    eval examples crossed with them where the probes' predictions are stored; the seeds alone
    (paired t) where not. One seed gives no SE."""
    labels = np.asarray(ev.labels.get(task, np.zeros(1)))
    # without stored predictions probe.metric is "trials only", which reads no predictions
    predictions = probe.predictions if probe.predictions is not None else np.zeros((*probe.per_seed.shape, labels.size))
    terms = [(w, predictions[:, layer], probe.per_seed[:, layer]) for layer, w in weights.items()]
    return hypothesis.paired_contrast(terms, labels, example_metric(probe.metric))


def along_draws(function, draws: np.ndarray) -> np.ndarray:
    return np.apply_along_axis(function, 1, draws)
