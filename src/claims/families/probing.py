"""Probes against finetuning: the probe curve over layers (one linear probe per layer, several
probe seeds) compared with the progressive curve it shares an eval set with, probes near
chance where finetuning transfers, and the probe curve's own top layers.

Each claim is one entry of this family's CLAIMS_<seed> (the papers: src/claims/claim.py), its
builders beside it; src/claims/registry.py orders the families' entries."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from src.claims.claim import (
    BLOCKS,
    PROBED,
    SEED_001,
    SEED_003,
    Claim,
    Shared,
    curve_contrasts,
    curves_under_eval_draws,
    in_scope,
    k_text,
    p_text,
    probe_under_eval_draws,
    with_eval_part,
)
from src.claims.curves import (
    Curve,
    ProbeCurve,
    along_draws,
    curves_design,
    probe_contrast,
    probe_measure_curve,
)
from src.claims.evidence import PROBE_MEASURES, SST2_QNLI, Evidence, chance_level, grouped, outside_scope
from src.claims.units import (
    ONE_PROBE_SEED,
    Refusal,
    Refused,
    Unit,
    bootstrap_unit,
    contrast_unit,
    design_refusal,
    estimate_test_unit,
    estimate_unit,
    refuse,
    refuse_collapsed_curves,
    shape_p,
)
from src.stats import hypothesis
from src.stats.curves import first_reaching


def probe_units_refused(unit: Unit, probe: ProbeCurve) -> Unit:
    return refuse(unit, Refusal.ONE_PROBE_SEED, ONE_PROBE_SEED) if probe.draws is None else unit


def paired_draws(probe: ProbeCurve, curve: Curve) -> np.ndarray:
    """Probe draws paired with the finetuning curve's draws: draw b of both took the same eval-set
    draw (Shared.eval_draws) and independent draws of probe seeds and trials; the fixed probe
    curve where there is one seed (the unit is then refused)."""
    probe_draws = probe.draws if probe.draws is not None else np.broadcast_to(probe.mean, curve.draws.shape)
    return probe_draws[: len(curve.draws)]


def rho_draws(probe: ProbeCurve, curve: Curve) -> np.ndarray:
    return hypothesis.spearman_rows(paired_draws(probe, curve), curve.draws)


def gain_centre(curve) -> float:
    """The mean layer at which a curve's gain over layer 0 arrives, its one-layer steps weighted by their size, on
    the curve's running maximum y (the best score with at most k layers, so that every step is >= 0 and the centre
    stays within [1, L] however the curve dips): sum_k k (y_k − y_(k−1)) / (y_L − y_0) =
    L − sum_(k<L) (y_k − y_0) / (y_L − y_0). A curve that gains at its first layer scores 1, one that gains at its
    last L; NaN without a gain."""
    y = np.maximum.accumulate(np.asarray(curve, dtype=float))
    gain = y[-1] - y[0]
    return float(len(y) - 1 - np.sum((y[:-1] - y[0]) / gain)) if gain > 0 else math.nan


LAYERS_APART = 1 / 12
"""'Probing does not explain which layers matter': the finetuning gain's centre and the probe's lie more than this
share of the depth apart (one layer of BERT-base's 12). The paper gives no number; stated here, as
permutation.RELATIVELY_HIGH is."""


def trials_against_seeds(  # noqa: PLR0913
    ev: Evidence,
    shared: Shared,
    claim: str,
    test: str,
    statistic,
    probed: tuple[str, int, ProbeCurve, Curve],
    shape: str = "greater",
    margin: float | None = None,
    **kw,
) -> Unit:
    """`statistic` of each finetuning trial's curve against the same of each probe seed's curve (`probed`: task,
    size, probe, curve), finetuning − probe, by Welch's test over trials and seeds (hypothesis.two_sample) of
    `shape` and `margin` (units.shape_p), on min(trials, seeds) − 1 df, with the eval set's part of the variance
    added (claim.with_eval_part: the difference under each of the task's shared eval draws, trials and seeds held;
    both curves take the same draw, so the noise they share cancels as in the statistic); trials only where
    predictions are missing. Refused with one probe seed; trials or seeds where the statistic is undefined are
    left out and counted."""
    task, size, probe, curve = probed
    a = np.array([statistic(row) for row in curve.per_trial])
    b = np.array([statistic(row) for row in probe.per_seed])
    undefined = int((~np.isfinite(a)).sum() + (~np.isfinite(b)).sum())
    finetuned, probed_draws = curves_under_eval_draws(shared, task, size), probe_under_eval_draws(shared, task)
    eval_draws = (
        np.nanmean(np.apply_along_axis(statistic, -1, finetuned), axis=-1)
        - np.nanmean(np.apply_along_axis(statistic, -1, probed_draws), axis=-1)
        if finetuned is not None and probed_draws is not None
        else None
    )
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    estimate = with_eval_part(hypothesis.two_sample(a, b), eval_draws)
    p_for, p_against = shape_p(estimate, shape, margin) if min(len(a), len(b)) >= 2 else (math.nan, math.nan)
    notes = (
        *kw.pop("notes", ()),
        f"Welch over {len(a)} finetuning trials and {len(b)} probe seeds, "
        + (
            "with the shared eval set's part of the variance (its draws, trials and seeds held)"
            if eval_draws is not None
            else "trials only (no stored predictions): the shared eval set's noise is not in the variance"
        ),
        *([f"{undefined} trial(s) or seed(s) without a gain left out"] if undefined else []),
    )
    unit = estimate_unit(
        claim,
        f"{task} n={size}",
        test,
        estimate,
        p_for,
        p_against,
        margin=margin,
        shape=shape,
        studies=curve.studies,
        reads=((task, size),),
        notes=notes,
        **kw,
    )
    if min(len(a), len(b)) < 2:
        return probe_units_refused(refuse(unit, Refusal.TOO_FEW, "fewer than 2 runs on a side"), probe)
    return probe_units_refused(design_refusal(unit, "welch", min(len(a), len(b))), probe)


def probes_do_not_predict(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for probed in shared.probed_at_largest_size():
        task, _, probe, curve = probed
        apart = LAYERS_APART * ev.num_layers
        units.append(
            trials_against_seeds(
                ev,
                shared,
                "probes_do_not_predict_finetuning",
                f"|gain centre(finetuning) − gain centre(probe)| > {apart:.2f} layers (Welch, either way)",
                gain_centre,
                probed,
                shape="beyond",
                margin=apart,
                gaps=((task, probed[1]),),
                notes=(
                    f"gain centre: finetuning {gain_centre(curve.mean):.2f}, probe {gain_centre(probe.mean):.2f}",
                    f"Spearman ρ of the mean curves {hypothesis.spearman(probe.mean, curve.mean):+.2f} "
                    f"(both rise: not a test of the claim), exact p (raw) "
                    f"{p_text(hypothesis.exact_spearman_p(probe.mean, curve.mean))}",
                    *secondary_probe_measures(ev, task, curve),
                ),
            )
        )
    return units


def secondary_probe_measures(ev: Evidence, task: str, curve: Curve) -> list[str]:
    """The same comparison against the probes' controls: ρ of the selectivity curve and
    of the MDL compression curve against the finetuning curve, with exact p (raw). A labelled
    secondary analysis: the paper states the claim for probe accuracy, and the verdict is that."""
    notes = []
    for column, label in PROBE_MEASURES.items():
        measure = probe_measure_curve(ev, task, column)
        if measure is not None:
            rho, p = hypothesis.spearman(measure, curve.mean), hypothesis.exact_spearman_p(measure, curve.mean)
            notes.append(
                f"secondary, not in the verdict: ρ({label}, finetuning) = {rho:+.2f}, exact p (raw) {p_text(p)}"
            )
    return notes


def agreement_grows(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for task in shared.tasks():
        sizes = shared.sizes(task)
        if len(sizes) < 2 or task not in shared.probes:
            continue
        probe = shared.probes[task]
        small, large = shared.curves[(task, sizes[0])], shared.curves[(task, sizes[-1])]
        design, read = curves_design((small, large))
        rho = {s: hypothesis.spearman(probe.mean, shared.curves[(task, s)].mean) for s in (sizes[0], sizes[-1])}
        unit = bootstrap_unit(
            ev,
            "agreement_grows_as_data_shrinks",
            f"{task} n={sizes[0]} vs n={sizes[-1]}",
            "bootstrap of ρ(probe, curve at smallest) − ρ(probe, curve at largest) > 0",
            rho[sizes[0]] - rho[sizes[-1]],
            rho_draws(probe, small) - rho_draws(probe, large),
            min(len(small.trials), len(large.trials)),
            kind="bootstrap-difference",
            design=design,
            reads_seed_design=read,
            gaps=((task, sizes[0]), (task, sizes[-1])),
            studies=tuple(sorted(set(small.studies + large.studies))),
            notes=(f"ρ {rho[sizes[0]]:.3f} at n={sizes[0]}, {rho[sizes[-1]]:.3f} at n={sizes[-1]}",),
        )
        units.append(probe_units_refused(refuse_collapsed_curves(unit, (small, large)), probe))
    return units


def probe_near_chance_units(ev: Evidence, shared: Shared, claim: str, task: str, layers) -> list[Unit]:
    """ "Probing near chance" at `layers`: a TOST of probe − chance per layer, the probe seeds as
    trials; with one probe seed refused (its noise is unmeasured)."""
    if task not in shared.probes:
        return []
    probe, chance, margin = shared.probes[task], chance_level(ev, task), ev.settings.chance_margin
    units = []
    for layer in layers:
        estimate = probe_contrast(ev, task, probe, {layer: 1})
        unit = estimate_test_unit(
            claim,
            f"{task} probe layer {layer}",
            f"|probe − chance| < {margin} (TOST, paired by probe seed)",
            replace(estimate, estimate=estimate.estimate - chance),
            shape="within",
            margin=margin,
            notes=(f"chance level {chance:.3f}; {probe.seeds} probe seed(s) as trials",),
        )
        unit = probe_units_refused(unit, probe)
        if not np.isfinite(chance):
            unit = replace(
                unit, refused=Refused(Refusal.CHANCE_UNKNOWN, "chance level unknown without the eval labels")
            )
        units.append(unit)
    return units


def sst2_early_layers(ev: Evidence, shared: Shared) -> list[Unit]:
    claim = "sst2_early_layers_transfer_though_probing_near_chance"
    units = probe_near_chance_units(ev, shared, claim, "sst2", range(1, 4))
    sst2 = [c for c in ev.conditions("block_preserve") if c.task == "sst2"]
    for (task, size), conditions in grouped(sst2, lambda c: (c.task, c.size)):
        first = [c for c in conditions if c.condition.layer == 1]
        if first:
            units.append(
                contrast_unit(
                    ev,
                    claim,
                    task,
                    size,
                    {first[0].slug: 1, conditions[0].refs.scratch: -1},
                    "preserve(first block) − scratch > 0",
                    name=f"sst2 n={size} first block preserved",
                )
            )
    return units if len(units) > 3 else []


def cola_transfers_without_probe(ev: Evidence, shared: Shared) -> list[Unit]:
    claim = "cola_transfers_though_probing_at_chance"
    gap = curve_contrasts(ev, claim, lambda L: [("", {L: 1, 0: -1}, "full − scratch > 0 on CoLA")], tasks=("cola",))
    units = probe_near_chance_units(ev, shared, claim, "cola", range(ev.num_layers + 1))
    return units + gap if units and gap else []


def probe_peaks_lower(ev: Evidence, shared: Shared) -> list[Unit]:
    return [
        trials_against_seeds(
            ev,
            shared,
            "probe_peaks_lower_than_finetuning",
            "max over k of a finetuning trial's curve − max over layers of a probe seed's curve > 0 (Welch)",
            np.max,
            probed,
        )
        for probed in shared.probed_at_largest_size()
    ]


def probe_needs_more_layers(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for probed in shared.probed_at_largest_size():
        task, size, probe, curve = probed
        k90 = f"k90 of the mean curves: probe {k_text(first_reaching(probe.mean))}, finetuning "
        units.append(
            trials_against_seeds(
                ev,
                shared,
                "probe_needs_more_layers",
                "gain centre(finetuning) − gain centre(probe) < 0: the probe's gain arrives at later layers (Welch)",
                gain_centre,
                probed,
                shape="below",
                margin=0.0,
                gaps=((task, size),),
                notes=(k90 + k_text(first_reaching(curve.mean)),),
            )
        )
    return units


def top_two_hurt_probing(ev: Evidence, shared: Shared) -> list[Unit]:
    L = ev.num_layers
    units = [
        probe_units_refused(
            estimate_test_unit(
                "top_two_layers_hurt_probing",
                task,
                f"probe(layer {L - 2}) − probe(layer {L}) > 0, paired by probe seed",
                probe_contrast(ev, task, probe, {L - 2: 1, L: -1}),
                notes=(
                    f"{probe.seeds} probe seed(s) as trials"
                    + (", crossed with the eval examples" if probe.eval_resampled else " (no stored predictions)"),
                ),
            ),
            probe,
        )
        for task, probe in shared.probes.items()
    ]
    return in_scope(units, lambda u: u.name in SST2_QNLI, outside_scope(SEED_003, "SST-2 and QNLI"))


def steepest_probe_step(curve: np.ndarray) -> float:
    """The largest gain from one layer to the next along a probe curve."""
    return float(np.max(np.diff(curve)))


def sst2_probe_more_gradual(ev: Evidence, shared: Shared) -> list[Unit]:
    if not {"sst2", "qnli"} <= set(shared.probes):
        return []
    sst2, qnli = shared.probes["sst2"], shared.probes["qnli"]
    unit = bootstrap_unit(
        ev,
        "sst2_probe_declines_more_gradually_than_qnli",
        "qnli vs sst2 probes",
        "bootstrap of steepest step(QNLI probe) − steepest step(SST-2 probe) > 0",
        steepest_probe_step(qnli.mean) - steepest_probe_step(sst2.mean),
        along_draws(steepest_probe_step, qnli.draws) - along_draws(steepest_probe_step, sst2.draws)
        if qnli.draws is not None and sst2.draws is not None
        else np.full(1, np.nan),
        min(qnli.seeds, sst2.seeds),
        kind="bootstrap-difference",
        notes=(
            f"steepest step {steepest_probe_step(sst2.mean):.3f} (SST-2), {steepest_probe_step(qnli.mean):.3f} (QNLI); "
            "the two tasks' eval sets and seeds are drawn independently",
        ),
    )
    return [probe_units_refused(unit, sst2 if sst2.draws is None else qnli)]


CLAIMS_001 = (
    Claim(
        "probes_do_not_predict_finetuning",
        f"{SEED_001} §3, contribution 2",
        "Probing performance does not explain which layers matter for finetuning.",
        "Reformulation: where the gain arrives differs. Each curve's gain centre (the one-layer steps' mean layer of "
        "its running maximum, weighted by their size: 1 where all the gain comes at layer 1, L where it comes at the "
        "last) per "
        "finetuning trial and per probe seed, at each task's largest size; the claim holds where the two lie more "
        "than LAYERS_APART of the depth (one of BERT-base's 12 layers) apart, either way, and fails where they lie "
        "within it (the probe locating the finetuning gain). A correlation of the two curves cannot tell these "
        "apart: both rise, so ρ is near 1 either way.",
        "Welch over finetuning trials and probe seeds: |gain centre(finetuning) − gain centre(probe)| > margin "
        "(against: within it, TOST); needs the gap",
        (PROBED,),
        probes_do_not_predict,
        needs_gap=True,
    ),
    Claim(
        "sst2_early_layers_transfer_though_probing_near_chance",
        f"{SEED_001} §3",
        "SST-2 probing is near chance at the first three layers, yet preserving them gives large finetuning gains.",
        "Probe at layers 1-3 within report.chance_margin of chance, and the first block preserved beats scratch.",
        "TOST per probe layer (probe seeds as trials); paired contrast preserve(first block) − scratch > 0",
        (
            replace(PROBED, tasks=("sst2",)),
            replace(BLOCKS, tasks=("sst2",)),
        ),
        sst2_early_layers,
    ),
    Claim(
        "cola_transfers_though_probing_at_chance",
        f"{SEED_001} §3",
        "No layer of BERT holds explicit knowledge of CoLA as measured by probing, yet its parameters enable "
        "finetuning.",
        "Probe within report.chance_margin of chance (MCC 0) at every layer, and full beats scratch on CoLA.",
        "TOST per probe layer (probe seeds as trials); paired contrast full − scratch > 0 on CoLA",
        (replace(PROBED, tasks=("cola",)),),
        cola_transfers_without_probe,
    ),
    Claim(
        "agreement_grows_as_data_shrinks",
        f"{SEED_001} §3",
        "The curves for the smallest-data regime bear a greater similarity to the probing curves.",
        "Similarity = Spearman ρ(probe curve, finetuning curve); smallest against largest size.",
        "bootstrap of ρ(smallest) − ρ(largest) > 0, probe seeds and the shared eval set resampled; needs the gap",
        (replace(PROBED, sizes="two"),),
        agreement_grows,
        needs_gap=True,
    ),
)


CLAIMS_003 = (
    Claim(
        "probe_peaks_lower_than_finetuning",
        f"{SEED_003} §6.2",
        "Probing reaches a lower peak accuracy than partial reinitialisation.",
        "Each finetuning trial's maximum over k against each probe seed's maximum over layers, at each task's "
        "largest size (the maximum of a noisy curve is biased up on both sides).",
        "Welch over finetuning trials and probe seeds of the maxima, finetuning − probe > 0",
        (PROBED,),
        probe_peaks_lower,
    ),
    Claim(
        "probe_needs_more_layers",
        f"{SEED_003} §6.2, contribution 2",
        "In probing, information from more layers is needed than in partial reinitialisation for comparable "
        "performance.",
        "Where each curve's gain over layer 0 arrives, its gain centre (the one-layer steps' mean layer of its "
        "running maximum, weighted by their size, a continuous k90 that each trial and each probe seed defines), "
        "probe against finetuning, at "
        "each task's largest size.",
        "Welch over finetuning trials and probe seeds: gain centre(finetuning) − gain centre(probe) < 0; needs the gap",
        (PROBED,),
        probe_needs_more_layers,
        needs_gap=True,
    ),
    Claim(
        "top_two_layers_hurt_probing",
        f"{SEED_003} §6.2",
        "The highest two layers hurt probing performance.",
        "Probe score at layer L−2 against layer L, on SST-2 and QNLI (the paper states CoLA's probing apart: App. B); "
        "elsewhere outside the paper's scope.",
        "paired contrast of probe(L−2) − probe(L) > 0, the probe seeds as trials crossed with the eval examples",
        (replace(PROBED, tasks=SST2_QNLI),),
        top_two_hurt_probing,
    ),
    Claim(
        "sst2_probe_declines_more_gradually_than_qnli",
        f"{SEED_003} §6.2",
        "The probing accuracy on SST-2 decreases more gradually than on QNLI, which presents a steep decline when the "
        "sixth layer is removed.",
        "'More gradually': the largest gain from one layer to the next along the probe curve is smaller on SST-2 "
        "than on QNLI.",
        "bootstrap of steepest step(QNLI) − steepest step(SST-2) > 0, probe seeds and each eval set resampled",
        (replace(PROBED, tasks=("sst2", "qnli")),),
        sst2_probe_more_gradual,
    ),
)
