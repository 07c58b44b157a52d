"""The progressive curve over k (k = 0..L pretrained layers kept, the rest reinitialised): the
full-vs-scratch gap, how many layers reach most of it and how that moves with data, the curve's
shape (slope, steps, linearity) and its scratch end against chance.

Each claim is one entry of this family's CLAIMS_<seed> (the papers: src/claims/claim.py), its
builders beside it; src/claims/registry.py orders the families' entries."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from src.claims.claim import (
    PROGRESSIVE,
    SEED_001,
    SEED_003,
    SEED_004,
    TWO_SIZES,
    Claim,
    Shared,
    curve_contrasts,
    curves_under_eval_draws,
    in_scope,
    interval_text,
    k_text,
    number,
    one_sided_welch,
    p_text,
    per_trial_contrast,
    plentiful_only,
    variance_ratio_unit,
    with_eval_part,
)
from src.claims.curves import along_draws, curves_design
from src.claims.evidence import (
    PLENTIFUL_SIZE,
    SST2_QNLI,
    Evidence,
    chance_level,
    grouped,
    outside_scope,
    studies_of,
)
from src.claims.units import (
    Refusal,
    Unit,
    bootstrap_unit,
    contrast_unit,
    estimate_test_unit,
    refuse,
    refuse_collapsed_curves,
)
from src.stats.curves import drop_point, first_reaching, linear_r2
from src.stats.hypothesis import Estimate


def full_beats_scratch(ev: Evidence, shared: Shared) -> list[Unit]:
    return curve_contrasts(ev, "full_beats_scratch", lambda L: [("", {L: 1, 0: -1}, "full − scratch > 0")])


def few_threshold(ev: Evidence) -> int:
    """'The first few layers': ⌈report.few_layers_fraction × L⌉, at least 1 (the paper's first three of 12
    at 0.25; two of MiniLM's six)."""
    return max(1, math.ceil(ev.settings.few_layers_fraction * ev.num_layers))


def size_pairs(ev: Evidence, tasks: tuple = (), ratio: float = 1.0):
    """(task, smallest, largest, {k: slug} at each) for every task (of `tasks`) whose progressive study
    ran two sizes at least `ratio` apart."""
    for task, sizes in ev.curve_sizes().items():
        if (not tasks or task in tasks) and len(sizes) > 1 and sizes[-1] >= ratio * sizes[0]:
            at = {size: {k: c.slug for k, c in ev.curve(task, size).items()} for size in (sizes[0], sizes[-1])}
            yield task, sizes[0], sizes[-1], at[sizes[0]], at[sizes[-1]]


def size_pair_units(
    ev: Evidence, claim: str, small_weights, large_weights, test: str, tasks: tuple = (), ratio: float = 1.0
) -> list[Unit]:
    """Welch over trials of sum_k w k's score at a task's smallest size (`small_weights(L)`) − the
    same at its largest (`large_weights(L)`) > 0. The sizes' runs are not paired (each trial draws its
    own subset at each size); trials only: the eval set's noise, common to both sizes, is left out."""
    units, L = [], ev.num_layers
    for task, small, large, at_small, at_large in size_pairs(ev, tasks, ratio):
        a_w, b_w = small_weights(L), large_weights(L)
        if not (set(a_w) <= set(at_small) and set(b_w) <= set(at_large)):
            continue
        a = per_trial_contrast(ev, task, small, {at_small[k]: w for k, w in a_w.items()})
        b = per_trial_contrast(ev, task, large, {at_large[k]: w for k, w in b_w.items()})
        studies = tuple(
            sorted(
                set(studies_of(ev, task, small, at_small.values()))
                | set(studies_of(ev, task, large, at_large.values()))
            )
        )
        unit = one_sided_welch(
            ev,
            claim,
            f"{task} n={small} vs n={large}",
            test,
            a,
            b,
            studies=studies,
            reads=((task, small), (task, large)),
            notes=("trials only: the eval set's noise, common to both sizes, is not in the variance",),
        )
        units.append(unit)
    return units


def few_layers_suffice(ev: Evidence, shared: Shared) -> list[Unit]:
    few = few_threshold(ev)
    test = f"score(k={few}) − (full + scratch)/2 > 0: the first {few} layers give more than half the gain"
    return plentiful_only(
        curve_contrasts(
            ev, "few_layers_suffice_with_plenty_of_data", lambda L: [("", {few: 1, L: -0.5, 0: -0.5}, test)], gap=True
        )
    )


def curve_shift_units(ev: Evidence, shared: Shared, claim: str, statistic, label: str) -> list[Unit]:
    """`statistic` of a task's curve (a k, applied along each draw) at its smallest size minus at its
    largest, > 0: the bootstrap of the difference, both curves drawn on the task's shared eval draws
    (and its crossed seed_design, where they read one); needs the gap at both sizes; refused where either curve
    holds a (nearly) collapsed or degraded run (units.refuse_collapsed_curves)."""
    units = []
    for task in shared.tasks():
        sizes = shared.sizes(task)
        if len(sizes) < 2:
            continue
        small, large = shared.curves[(task, sizes[0])], shared.curves[(task, sizes[-1])]
        design, read = curves_design((small, large))
        value = {sizes[0]: statistic(small.mean), sizes[-1]: statistic(large.mean)}
        units.append(
            bootstrap_unit(
                ev,
                claim,
                f"{task} n={sizes[0]} vs n={sizes[-1]}",
                f"bootstrap of {label}(smallest) − {label}(largest) > 0",
                value[sizes[0]] - value[sizes[-1]],
                along_draws(statistic, small.draws) - along_draws(statistic, large.draws),
                min(len(small.trials), len(large.trials)),
                kind="bootstrap-difference",
                design=design,
                reads_seed_design=read,
                gaps=((task, sizes[0]), (task, sizes[-1])),
                studies=tuple(sorted(set(small.studies + large.studies))),
                notes=(
                    *small.notes,
                    *large.notes,
                    f"{label} {k_text(value[sizes[0]])} at n={sizes[0]}, {k_text(value[sizes[-1]])} at n={sizes[-1]}",
                ),
            )
        )
        units[-1] = refuse_collapsed_curves(units[-1], (small, large))
    return units


def k90_grows_as_data_shrinks(ev: Evidence, shared: Shared) -> list[Unit]:
    return curve_shift_units(ev, shared, "k90_grows_as_data_shrinks", first_reaching, "k90")


def drop_point_shifts(ev: Evidence, shared: Shared) -> list[Unit]:
    return curve_shift_units(ev, shared, "drop_point_shifts_with_data_size", drop_point, "steepest step k")


def cola_near_linear(ev: Evidence, shared: Shared) -> list[Unit]:
    """Per trial, R² of a straight line through that trial's curve over k, minus report.linear_r2; a t over the
    trials that its mean is > 0."""
    units, r2 = [], ev.settings.linear_r2
    for size in shared.sizes("cola"):
        curve = shared.curves[("cola", size)]
        per_trial = np.array([linear_r2(row) for row in curve.per_trial]) - r2
        per_trial = per_trial[np.isfinite(per_trial)]
        n = len(per_trial)
        sd = float(np.std(per_trial, ddof=1)) if n > 1 else math.nan
        estimate = Estimate(
            float(np.mean(per_trial)) if n else math.nan, sd / math.sqrt(n) if n else math.nan, n, n - 1, sd, n - 1
        )
        draws = curves_under_eval_draws(shared, "cola", size)
        eval_draws = None if draws is None else np.nanmean(np.apply_along_axis(linear_r2, -1, draws), axis=-1)
        estimate = with_eval_part(estimate, eval_draws)
        units.append(
            estimate_test_unit(
                "cola_near_linear_drop",
                f"cola n={size}",
                f"mean over trials of R²(line through the trial's curve) − {r2} > 0 (t over trials)",
                estimate,
                studies=curve.studies,
                reads=(("cola", size),),
                notes=(
                    f"R² of the mean curve {linear_r2(curve.mean):.3f}",
                    "with the eval set's part of the variance (its draws, the trials held)"
                    if eval_draws is not None
                    else "trials only (no stored predictions): the eval set's noise is not in the variance",
                ),
            )
        )
    return units


def later_reinit_costs_less(ev: Evidence, shared: Shared) -> list[Unit]:
    """The OLS slope of the score over k = 0..L is the linear contrast sum_k w_k score(k) with w_k = (k - mean k) /
    sum_j (j - mean k)^2, so it is a paired contrast: the crossed trials x examples test (a t over per-trial slopes
    leaves out the eval set's variance, which all k share: two-sided size 0.080 at T = 3), and, its weights summing
    to 0, the hurdle of collapses and trained runs like every "> 0" contrast of conditions."""

    def slope(layers: int):
        centred = np.arange(layers + 1) - layers / 2
        weights = dict(enumerate((centred / np.sum(centred**2)).tolist()))
        return [("", weights, "OLS slope of score over k > 0: paired contrast Σ_k (k − k̄) / Σ(k − k̄)² · score(k)")]

    return curve_contrasts(ev, "later_reinit_costs_less", slope)


def reinit_curve_not_monotone(ev: Evidence, shared: Shared) -> list[Unit]:
    return curve_contrasts(
        ev,
        "reinit_curve_not_monotone",
        lambda L: [(f" k={k} vs {k + 1}", {k: 1, k + 1: -1}, f"score(k={k}) − score(k={k + 1}) > 0") for k in range(L)],
    )


def reinit_curve_change_not_constant(ev: Evidence, shared: Shared) -> list[Unit]:
    """The step from k+1 to k+2 larger or smaller than from k to k+1: each sign its own one-sided unit."""
    return curve_contrasts(
        ev,
        "reinit_curve_change_not_constant",
        lambda L: [
            (
                f" steps at k={k},{k + 1} {word}",
                {k: sign, k + 1: -2 * sign, k + 2: sign},
                f"{sign:+d} × (step(k={k + 1}) − step(k={k})) > 0",
            )
            for k in range(L - 1)
            for sign, word in ((1, "grow"), (-1, "shrink"))
        ],
    )


def top_two_negligible(ev: Evidence, shared: Shared) -> list[Unit]:
    m, reason = ev.settings.single_layer_margin, outside_scope(SEED_003, "SST-2 and QNLI")
    units = curve_contrasts(
        ev,
        "top_two_layers_negligible_in_finetuning",
        lambda L: [("", {L: 1, L - 2: -1}, f"|score(k=L) − score(k=L−2)| < {m} (TOST)")],
        shape="within",
        margin=m,
    )
    return in_scope(units, lambda u: u.key[0] in SST2_QNLI, reason)


def rte_top_reinit_beats_full(ev: Evidence, shared: Shared) -> list[Unit]:
    return curve_contrasts(
        ev,
        "rte_top_layer_reinit_beats_full",
        lambda L: [(f" k={k}", {k: 1, L: -1}, f"score(k={k}) − full > 0") for k in range(math.ceil(7 * L / 12), L)],
        tasks=("rte",),
    )


def mrpc_insensitive(ev: Evidence, shared: Shared) -> list[Unit]:
    """Every k < L scores alike: each k's score within the margin of the mean over the k < L (a TOST per k)."""
    m = ev.settings.single_layer_margin

    def alike(L: int):
        for k in range(L):
            weights = {j: (1.0 if j == k else 0.0) - 1 / L for j in range(L)}
            yield f" k={k}", weights, f"|score(k={k}) − mean score(k < L)| < {m} (TOST)"

    return curve_contrasts(ev, "mrpc_insensitive_to_reinit", alike, tasks=("mrpc",), shape="within", margin=m)


def pretraining_gain_shrinks(ev: Evidence, shared: Shared) -> list[Unit]:
    gain = lambda L: {L: 1, 0: -1}  # noqa: E731
    test = "Welch t over trials: (full − scratch) at the smallest size − at the largest > 0"
    return size_pair_units(ev, "pretraining_gain_shrinks_as_data_grow", gain, gain, test)


def little_data_beats_scratch_with_more(ev: Evidence, shared: Shared) -> list[Unit]:
    test = "Welch t over trials: full at the smallest size − scratch at a size ≥ 10× larger > 0"
    return size_pair_units(
        ev, "full_at_little_data_beats_scratch_with_tenfold", lambda L: {L: 1}, lambda L: {0: 1}, test, ratio=10
    )


def sst2_middle_layers_with_less_data(ev: Evidence, shared: Shared) -> list[Unit]:
    middle = lambda L: {math.ceil(2 * L / 3): 1, L // 3: -1}  # noqa: E731 - the middle third's gain
    test = "Welch t over trials: score(k=⌈2L/3⌉) − score(k=⌊L/3⌋) at the smallest size − at the largest > 0"
    return size_pair_units(ev, "sst2_middle_layers_matter_more_with_less_data", middle, middle, test, ("sst2",))


def subsampling_variance(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for task, small, large, at_small, at_large in size_pairs(ev):
        L = ev.num_layers
        if L in at_small and L in at_large:
            a = per_trial_contrast(ev, task, small, {at_small[L]: 1})
            b = per_trial_contrast(ev, task, large, {at_large[L]: 1})
            studies = tuple(
                sorted(
                    set(studies_of(ev, task, small, [at_small[L]])) | set(studies_of(ev, task, large, [at_large[L]]))
                )
            )
            units.append(
                variance_ratio_unit(
                    "subsampling_variance_larger_with_less_data",
                    f"{task} n={small} vs n={large}",
                    "var over trials of the full model at the smallest size / at the largest > 1 (F test, one-sided)",
                    a,
                    b,
                    studies,
                    reads=((task, small), (task, large)),
                )
            )
    return units


HUANG_TASKS = ("cola", "mrpc", "rte", "stsb", "squad_v2")  # 004's layer-by-layer tasks (§5.6, §6.2)
HUANG_SCOPE = "CoLA, MRPC, RTE, STS-B and SQuAD 2.0"


def all_reinit_at_chance(ev: Evidence, shared: Shared) -> list[Unit]:
    """|scratch − chance| < margin per task and size, the chance level the best constant prediction's score
    (evidence.chance_level); on tasks other than 004's the unit is outside the paper's scope."""
    units = []
    for (task, size), conditions in grouped(ev.conditions("progressive"), lambda c: (c.task, c.size)):
        scratch = conditions[0].refs.scratch
        chance = chance_level(ev, task)
        if scratch not in {c.slug for c in conditions}:
            continue
        unit = contrast_unit(
            ev,
            "all_reinit_at_chance",
            task,
            size,
            {scratch: 1},
            f"|scratch − chance| < {ev.settings.chance_margin} (TOST)",
            shape="within",
            margin=ev.settings.chance_margin,
            shift=chance if np.isfinite(chance) else 0.0,
        )
        if not np.isfinite(chance):
            unit = refuse(unit, Refusal.CHANCE_UNKNOWN, "chance level unknown without the eval labels")
        units.append(unit.noted(f"chance level {chance:.3f} ({ev.metric(task)}: the best constant prediction)"))
    return in_scope(units, lambda u: u.key[0] in HUANG_TASKS, outside_scope(SEED_004, HUANG_SCOPE))


# --- claims added for issue 50 (003 §6.1.2-§7, 004 §6.2, 001's v2 abstract) ---


def middle_third(L: int) -> dict[int, float]:
    """The middle third's gain: score(k = ⌈2L/3⌉) − score(k = ⌊L/3⌋) (layers 5-8 of 12 kept pretrained)."""
    return {math.ceil(2 * L / 3): 1, L // 3: -1}


def middle_helps_sst2_not_qnli(ev: Evidence, shared: Shared) -> list[Unit]:
    m = ev.settings.single_layer_margin
    sst2 = curve_contrasts(
        ev,
        "middle_layers_help_sst2_not_qnli",
        lambda L: [("", middle_third(L), "score(k=⌈2L/3⌉) − score(k=⌊L/3⌋) > 0 on SST-2")],
        tasks=("sst2",),
    )
    qnli = curve_contrasts(
        ev,
        "middle_layers_help_sst2_not_qnli",
        lambda L: [("", middle_third(L), f"score(k=⌈2L/3⌉) − score(k=⌊L/3⌋) < {m} on QNLI (non-superiority)")],
        tasks=("qnli",),
        shape="below",
        margin=m,
    )
    return sst2 + qnli


def task_pairs(ev: Evidence, a: str, b: str, within: float | None = None):
    """(size of `a`, size of `b`) for each size of task `a`'s progressive curve and the size of `b`'s nearest to it
    (by ratio); with `within`, only where the two differ by at most that fraction of `a`'s."""
    sizes = ev.curve_sizes()
    for size in sizes.get(a, []):
        if b not in sizes:
            return
        nearest = min(sizes[b], key=lambda s: abs(math.log(s / size)))
        if within is None or abs(nearest - size) <= within * size:
            yield size, nearest


def between_tasks(ev: Evidence, claim: str, test: str, per_trial, pairs) -> list[Unit]:
    """Welch over trials of `per_trial(task, size)` (one value per trial, or None) on SST-2 − on QNLI > 0 at each
    (SST-2 size, QNLI size) of `pairs` (task_pairs). The tasks' runs are independent; trials only: each task's eval
    set is held fixed (the estimand is of these eval sets)."""
    units = []
    for small, other in pairs:
        pair = (("sst2", small), ("qnli", other))
        a, b = per_trial("sst2", small), per_trial("qnli", other)
        if a is None or b is None:
            continue
        units.append(
            one_sided_welch(
                ev,
                claim,
                f"sst2 n={small} vs qnli n={other}",
                test,
                a,
                b,
                studies=tuple(sorted({s for task, n in pair for s in curve_studies(ev, task, n)})),
                reads=pair,
                notes=("trials only: each task's eval set is held fixed",),
            )
        )
    return units


def curve_studies(ev: Evidence, task: str, size: int) -> tuple:
    return studies_of(ev, task, size, [c.slug for c in ev.curve(task, size).values()])


MATCHED = 0.1  # 003 §6.1.3's "similar training data sizes": 673 SST-2 and 628 QNLI examples (1% and 0.6%)


def sst2_middle_beats_qnli_at_equal_size(ev: Evidence, shared: Shared) -> list[Unit]:
    def middle_gain(task: str, size: int):
        by_k, weights = ev.curve(task, size), middle_third(ev.num_layers)
        if not set(weights) <= set(by_k):
            return None
        return per_trial_contrast(ev, task, size, {by_k[k].slug: w for k, w in weights.items()})

    return between_tasks(
        ev,
        "sst2_middle_layers_matter_more_than_qnlis_at_equal_size",
        "Welch t over trials: middle third's gain score(k=⌈2L/3⌉) − score(k=⌊L/3⌋) on SST-2 − on QNLI > 0",
        middle_gain,
        [(a, b) for a, b in task_pairs(ev, "sst2", "qnli", MATCHED) if a < PLENTIFUL_SIZE],  # §6.1.3: small data
    )


def linearity(curves: np.ndarray) -> np.ndarray:
    """Fisher's z of each curve's (rows of `curves`, over k = 0, 1, …) Pearson correlation of score with k: how
    close to a straight line it is. Not R² itself: per-trial R² is skewed, and a Welch t of it exceeds its size
    where the tasks' spreads differ (docs/claims.md); its z is near symmetric. NaN for a flat curve."""
    y = np.asarray(curves, dtype=float)
    k = np.arange(y.shape[-1]) - (y.shape[-1] - 1) / 2
    centred = y - y.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (centred * k).sum(axis=-1) / np.sqrt((k**2).sum() * (centred**2).sum(axis=-1))
        return np.arctanh(r)


def sst2_more_linear_than_qnli(ev: Evidence, shared: Shared) -> list[Unit]:
    def per_trial(task: str, size: int):
        curve = shared.curves.get((task, size))
        return None if curve is None else linearity(curve.per_trial)

    units = between_tasks(
        ev,
        "sst2_curve_more_linear_than_qnli",
        "Welch t over trials: per-trial Fisher z of corr(score, k) on SST-2 − on QNLI > 0",
        per_trial,
        task_pairs(ev, "sst2", "qnli"),
    )
    flat = "a trial's curve is flat (every k scored alike, e.g. every run collapsed): its linearity is undefined"
    return [refuse(u, Refusal.TOO_FEW, flat) if not np.isfinite(u.estimate) and not u.refused else u for u in units]


def flat_units(ev: Evidence, claim: str, task: str, last: int) -> list[Unit]:
    """|score(k) − scratch| < single_layer_margin (TOST) for k = 1 .. `last` on `task`: the curve flat there."""
    m = ev.settings.single_layer_margin
    return curve_contrasts(
        ev,
        claim,
        lambda L: [(f" k={k}", {k: 1, 0: -1}, f"|score(k={k}) − scratch| < {m} (TOST)") for k in range(1, last + 1)],
        tasks=(task,),
        shape="within",
        margin=m,
    )


def rte_flat_until_layer_7(ev: Evidence, shared: Shared) -> list[Unit]:
    return flat_units(ev, "rte_flat_until_layer_7", "rte", 5 * ev.num_layers // 12)  # 5 of 12


def stsb_peaks_at_layer_8(ev: Evidence, shared: Shared) -> list[Unit]:
    peak = 2 * ev.num_layers // 3  # layer 8 of 12
    return curve_contrasts(
        ev,
        "stsb_peaks_at_layer_8_and_layers_9_to_11_hinder",
        lambda L: [
            (f" k={peak} vs {peak - 1}", {peak: 1, peak - 1: -1}, f"score(k={peak}) − score(k={peak - 1}) > 0"),
            *(
                (f" k={peak} vs {k}", {peak: 1, k: -1}, f"score(k={peak}) − score(k={k}) > 0")
                for k in range(peak + 1, L)
            ),
        ],
        tasks=("stsb",),
    )


def cola_flat_until_layer_10(ev: Evidence, shared: Shared) -> list[Unit]:
    jump = 5 * ev.num_layers // 6  # layer 10 of 12
    claim = "cola_flat_until_layer_10"
    rise = curve_contrasts(
        ev,
        claim,
        lambda L: [(f" k={jump} vs {jump - 1}", {jump: 1, jump - 1: -1}, f"score(k={jump}) − score(k={jump - 1}) > 0")],
        tasks=("cola",),
    )
    return flat_units(ev, claim, "cola", jump - 1) + rise


def both_unit(claim: str, name: str, test: str, first: Unit, second: Unit) -> Unit:
    """The conjunction of two units' claims: its test for is their intersection-union (the larger p for), its
    test against the union of their tests against (Bonferroni: twice the smaller p against); refused where either
    part is. The estimate is the first part's minus the second's (here: the gain at the plentiful size minus at the
    scarce one); each part's own estimate, interval and p for are in the notes."""
    parts = (first, second)
    refused = next((part.refused for part in parts if part.refused), None)
    unit = Unit(
        claim,
        name,
        test,
        first.estimate - second.estimate,
        (math.nan, math.nan),
        first.n,
        studies=tuple(sorted({s for part in parts for s in part.studies})),
        notes=tuple(
            f"{part.name}: {part.test}: {number(part.estimate)} {interval_text(part)}, p for {p_text(part.p_for)}"
            for part in parts
        ),
        refused=refused,
        interval_note=refused.reason if refused else "a conjunction of two tests: each part's estimate in the notes",
        reads=first.reads + second.reads,
        test_type=first.test_type,
        collapse={f"{part.name}: {slug}": rate for part in parts for slug, rate in part.collapse.items()},
    )
    if refused:
        return unit
    return replace(
        unit, p_for=max(first.p_for, second.p_for), p_against=min(1.0, 2 * min(first.p_against, second.p_against))
    )


def gain_large_when_plentiful(ev: Evidence, shared: Shared) -> list[Unit]:
    """Per task with a plentiful size (≥ PLENTIFUL_SIZE) and a scarce one (below PLENTIFUL_SIZE and at most a tenth
    of the plentiful), per prefix of k < L layers:
    its gain score(k) − scratch exceeds single_layer_margin at the largest size and stays within it at the
    smallest."""
    claim, m, units = (
        "pretrained_layers_gain_large_when_plentiful_negligible_when_scarce",
        ev.settings.single_layer_margin,
        [],
    )
    for task, scarce, plentiful, at_scarce, at_plentiful in size_pairs(ev, ratio=10):
        if plentiful < PLENTIFUL_SIZE or scarce >= PLENTIFUL_SIZE:
            continue
        for k in range(1, ev.num_layers):
            if not ({k, 0} <= set(at_scarce) and {k, 0} <= set(at_plentiful)):
                continue
            large = contrast_unit(
                ev,
                claim,
                task,
                plentiful,
                {at_plentiful[k]: 1, at_plentiful[0]: -1},
                f"score(k={k}) − scratch > {m}",
                shape="above",
                margin=-m,
            )
            small = contrast_unit(
                ev,
                claim,
                task,
                scarce,
                {at_scarce[k]: 1, at_scarce[0]: -1},
                f"|score(k={k}) − scratch| < {m} (TOST)",
                shape="within",
                margin=m,
            )
            units.append(
                both_unit(
                    claim,
                    f"{task} k={k} n={plentiful} vs n={scarce}",
                    f"score(k={k}) − scratch > {m} at n={plentiful} and within ±{m} at n={scarce}",
                    large,
                    small,
                )
            )
    return units


CLAIMS_001 = (
    Claim(
        "full_beats_scratch",
        f"{SEED_001} §2, Fig. 1",
        "The fully pretrained model finetunes better than the model trained from scratch.",
        "k = L against k = 0 at every task and size the progressive study ran.",
        "paired contrast full − scratch > 0 (one-sided t)",
        (PROGRESSIVE,),
        full_beats_scratch,
    ),
    Claim(
        "few_layers_suffice_with_plenty_of_data",
        f"{SEED_001} §1 contribution 1, Fig. 1 caption",
        "The first few layers of BERT are sufficient to provide the majority of improvement on downstream metrics "
        "when finetuning data is plentiful ('first three BERT layers', Fig. 1 caption).",
        "'The majority of the improvement': more than half of the full model's gain over scratch; 'the first few "
        "layers': k = ⌈report.few_layers_fraction × L⌉ pretrained layers (the caption's three of 12 is 0.25); "
        "'plentiful': every size of 5,000 examples and up (001's 5k and 50k); below, outside the paper's scope.",
        "paired contrast score(k=few) − (full + scratch)/2 > 0; needs the gap",
        (replace(PROGRESSIVE, sizes="plentiful_and_scarce"),),
        few_layers_suffice,
        needs_gap=True,
    ),
    Claim(
        "k90_grows_as_data_shrinks",
        f"{SEED_001} §2, contribution 1",
        "More pretrained layers are needed when finetuning data is scarce.",
        "k90 at a task's smallest size against its largest.",
        "bootstrap of k90(smallest) − k90(largest) > 0; needs the gap",
        (TWO_SIZES,),
        k90_grows_as_data_shrinks,
        needs_gap=True,
    ),
    Claim(
        "subsampling_variance_larger_with_less_data",
        f"{SEED_001} App. B",
        "The particular datapoints subsampled can have a large impact on downstream performance, especially when "
        "data is scarce.",
        "The full model's spread over trials (each trial its own subset) at a task's smallest size against its "
        "largest.",
        "one-sided F test of the variance ratio (normal scores)",
        (TWO_SIZES,),
        subsampling_variance,
    ),
    Claim(
        "pretrained_layers_gain_large_when_plentiful_negligible_when_scarce",
        f"{SEED_001} v2 abstract (002_98be35e3712dd4a8.txt, arXiv:2004.14975v2)",
        "The benefit of using pretrained parameters for a layer varies dramatically with finetuning dataset size: "
        "parameters that provide tremendous performance improvement when data is plentiful may provide negligible "
        "benefits in data-scarce settings.",
        f"A prefix of k < L pretrained layers (the progressive scheme at k) against scratch: its absolute gain "
        f"exceeds report.single_layer_margin at a plentiful size (≥ {PLENTIFUL_SIZE:,} examples, the papers' plentiful "
        "sizes) and stays within it at a scarce size, below that and at most a tenth of the plentiful one (001: 500 "
        "examples); existential over tasks "
        "and k ('may provide'). Runs below a plentiful size are outside the statement and give no unit.",
        "per (task, k): gain > margin at the plentiful size (one-sided) AND |gain| < margin at the scarce size "
        "(TOST), intersection-union within the unit; Holm across k and tasks",
        (replace(PROGRESSIVE, sizes="plentiful"),),
        gain_large_when_plentiful,
        every=False,
        paper_value="Fig. 1: the first three layers give most of the gain at 5,000 and 50,000 examples, more layers "
        "are needed at 500 (no table of numbers)",
    ),
)


CLAIMS_003 = (
    Claim(
        "drop_point_shifts_with_data_size",
        f"{SEED_003} §6.1",
        "As training data shrink, the rapid accuracy drop begins at later layers: more early layers become important.",
        "The drop point = the k whose addition gains most (the curve's steepest step), smallest against largest size.",
        "bootstrap of drop point(smallest) − drop point(largest) > 0; needs the gap",
        (TWO_SIZES,),
        drop_point_shifts,
        needs_gap=True,
    ),
    Claim(
        "cola_near_linear_drop",
        f"{SEED_003} §6.1, Fig. 1(d)",
        "CoLA shows a fairly linear drop in performance with increasing partial reinitialisation.",
        "R² of a straight line through each trial's curve over k, on average above report.linear_r2 (a per-trial "
        "curve statistic; noise lowers a trial's R², so it errs against the claim).",
        "one-sample t over trials of R² − threshold > 0",
        (replace(PROGRESSIVE, tasks=("cola",)),),
        cola_near_linear,
    ),
    Claim(
        "pretraining_gain_shrinks_as_data_grow",
        f"{SEED_003} abstract, §7",
        "As training data size increases, the performance gains from the pre-trained information of each layer are "
        "lower.",
        "The full model's gain over scratch at a task's smallest size against its largest (trials of the two "
        "sizes are not paired).",
        "Welch t over trials of (full − scratch) at the smallest size − at the largest > 0",
        (TWO_SIZES,),
        pretraining_gain_shrinks,
    ),
    Claim(
        "full_at_little_data_beats_scratch_with_tenfold",
        f"{SEED_003} §6.1.1",
        "With 1% of the training examples, the model with no (or only the last few layers') reinitialisation beats "
        "a fully supervised model trained on 10 or 100 times the data.",
        "The full model at a task's smallest size against scratch (k = 0) at its largest, where that is at least "
        "10 times larger.",
        "Welch t over trials of full(smallest) − scratch(largest) > 0",
        (replace(PROGRESSIVE, sizes="tenfold"),),
        little_data_beats_scratch_with_more,
    ),
    Claim(
        "sst2_middle_layers_matter_more_with_less_data",
        f"{SEED_003} §6.1.1, §6.1.3",
        "For SST-2 the loss with increasing reinitialisation becomes less concave as data shrink: the middle layers' "
        "pretrained information contributes much more with less training data.",
        "The middle third's gain, score(k = ⌈2L/3⌉) − score(k = ⌊L/3⌋), at SST-2's smallest size against its largest.",
        "Welch t over trials of the middle third's gain at the smallest size − at the largest > 0",
        (replace(TWO_SIZES, tasks=("sst2",)),),
        sst2_middle_layers_with_less_data,
    ),
    Claim(
        "top_two_layers_negligible_in_finetuning",
        f"{SEED_003} §6.2",
        "In partial reinitialisation the highest two layers have a negligible effect on accuracy.",
        "Keeping the top two layers pretrained (k = L) against reinitialising them (k = L − 2), within "
        "report.single_layer_margin (the margin of 'a single layer barely matters'), on SST-2 and QNLI (the paper "
        "states CoLA's findings apart: §6.1.4, App. B); elsewhere outside the paper's scope.",
        "TOST |score(L) − score(L−2)| < margin",
        (replace(PROGRESSIVE, tasks=SST2_QNLI),),
        top_two_negligible,
    ),
    Claim(
        "middle_layers_help_sst2_not_qnli",
        f"{SEED_003} §7, §6.1.2",
        "The importance of middle-layers' pre-trained information is task dependant: while it increases performance "
        "in SST-2, it fails to provide a positive contribution in QNLI (§6.1.2: for all the training data fractions, "
        "the contribution of pre-trained information from the middle layers is fairly low).",
        "The middle third's gain, score(k = ⌈2L/3⌉) − score(k = ⌊L/3⌋) (layers 5-8 of 12 kept pretrained): above 0 "
        "on SST-2, below report.single_layer_margin on QNLI ('no positive contribution': non-superiority), at every "
        "size of each task (§6.1.2: 'for all the training data fractions').",
        "paired contrast per task and size: middle gain > 0 on SST-2; middle gain < margin on QNLI",
        (replace(PROGRESSIVE, tasks=("sst2", "qnli")),),
        middle_helps_sst2_not_qnli,
        paper_value="SST-2 at 673 examples: reinitialising the middle layers costs about 5 accuracy points (§6.1.3); "
        "QNLI: 'fairly low' at every fraction (Fig. 1(b), no number)",
    ),
    Claim(
        "sst2_middle_layers_matter_more_than_qnlis_at_equal_size",
        f"{SEED_003} §6.1.3, §4.3.1, Fig. 1(c)",
        "Comparing the fine-tuning performance with partial reinitialisation on both tasks with similar training "
        "data sizes (around 670 examples) we see very different degrees of concavity: for QNLI the pre-trained "
        "information from the first four layers contributes most, the middle and later layers not much; for SST-2 "
        "reinitialising the middle layers also leads to considerable drops in accuracy, by about 5% points.",
        f"The middle third's gain (as middle_layers_help_sst2_not_qnli) on SST-2 against QNLI at sizes within "
        f"{MATCHED:.0%} of each other and below {PLENTIFUL_SIZE:,} examples (§6.1.3 is 'for small data': the "
        "paper's 1% of SST-2, 673 examples, and 0.6% of QNLI, 628; presets/singh_giovanardi.yaml runs both); no unit "
        "at sizes further apart or plentiful. The paper compares concavity, not a plateau size: what is tested is "
        "which task's middle layers contribute more at matched small data.",
        "Welch t over trials of the middle third's gain on SST-2 − on QNLI > 0 (tasks' runs independent; trials only)",
        (replace(PROGRESSIVE, tasks=("sst2", "qnli")),),
        sst2_middle_beats_qnli_at_equal_size,
        paper_value="SST-2 middle layers: about −5 accuracy points when reinitialised; QNLI: 'not contributing much' "
        "(§6.1.3, Fig. 1(c), no table)",
    ),
    Claim(
        "sst2_curve_more_linear_than_qnli",
        f"{SEED_003} §6.2 (on Fig. 1(a, b))",
        "SST-2 presents a more linear pattern [of partial re-initialisation] than QNLI, which instead presents a "
        "steep jump in performance.",
        "Each trial's progressive curve over k: how close to a straight line it is, as Fisher's z of its Pearson "
        "correlation of score with k (a monotone function of a line's R² for a rising curve; z, not R², because a "
        "t of per-trial R² loses its size where the tasks' spreads differ), SST-2 against QNLI at each SST-2 size "
        "and QNLI's nearest size.",
        "Welch t over trials of per-trial z on SST-2 − on QNLI > 0 (tasks' runs independent; trials only)",
        (replace(PROGRESSIVE, tasks=("sst2", "qnli")),),
        sst2_more_linear_than_qnli,
    ),
)


CLAIMS_004 = (
    Claim(
        "later_reinit_costs_less",
        f"{SEED_004} §6.2, abstract",
        "Reinitialising downstream layers causes a smaller decrease than reinitialising upstream layers.",
        "Reinitialising layers ≥ k is the progressive scheme at k − 1: the score rises with k.",
        "paired contrast: OLS slope of score over k > 0, crossed trials × examples (hurdle of collapses)",
        (PROGRESSIVE,),
        later_reinit_costs_less,
    ),
    Claim(
        "reinit_curve_not_monotone",
        f"{SEED_004} §6.2, abstract",
        "The change in performance does not decrease monotonically as the next upstream layer is reinitialised.",
        "Somewhere along the progressive curve, keeping one more layer lowers the score; existential over adjacent k.",
        "paired contrast score(k) − score(k+1) > 0, Holm across its paper's claims",
        (PROGRESSIVE,),
        reinit_curve_not_monotone,
        every=False,
    ),
    Claim(
        "all_reinit_at_chance",
        f"{SEED_004} §6.2",
        "Every task exhibits random-guessing behaviour when all layers are reinitialised.",
        "k = 0 within report.chance_margin of the chance level, the best constant prediction's score (accuracy: "
        "the majority class's share; binary F1: always positive, 2p / (1 + p), MRPC's 0.812; SQuAD 2.0 F1: always "
        "'no answer', the unanswerable share; MCC and correlations: 0), on 004's tasks (CoLA, MRPC, RTE, STS-B, "
        "SQuAD 2.0); elsewhere outside the paper's scope.",
        "TOST |scratch − chance| < margin",
        (replace(PROGRESSIVE, tasks=("cola", "mrpc", "rte")),),
        all_reinit_at_chance,
    ),
    Claim(
        "reinit_curve_change_not_constant",
        f"{SEED_004} abstract, §6.2",
        "The change in performance is not constant as the next upstream layer is reinitialised (with "
        "reinit_curve_not_monotone: neither monotone nor constant).",
        "Somewhere along the progressive curve one step differs from the next: a second difference score(k) − "
        "2 score(k+1) + score(k+2) above or below 0; existential over k and sign.",
        "paired contrast ±(second difference) > 0, Holm across its paper's claims",
        (PROGRESSIVE,),
        reinit_curve_change_not_constant,
        every=False,
    ),
    Claim(
        "rte_top_layer_reinit_beats_full",
        f"{SEED_004} §6.2",
        "For RTE, the performance when reinitialising from layers k ∈ [8, 12] surpasses the performance when no "
        "layers are reinitialised.",
        "On RTE, keeping k = ⌈7L/12⌉ … L − 1 layers (reinitialising from layer 8 of 12 up) against the full model, "
        "at every such k.",
        "paired contrast score(k) − full > 0 per k",
        (replace(PROGRESSIVE, tasks=("rte",)),),
        rte_top_reinit_beats_full,
    ),
    Claim(
        "mrpc_insensitive_to_reinit",
        f"{SEED_004} §5.6",
        "For MRPC, the performance does not change with reinitialising different layers.",
        "On MRPC, every k < L scores alike: each k < L within report.single_layer_margin of the mean over the "
        "k < L (a reformulation: 'does not change with reinitialising different layers' compares the reinitialised "
        "models with each other, not with the full model, which §5.6's own table puts 0.09 above them).",
        "TOST |score(k) − mean score(k < L)| < margin per k < L",
        (replace(PROGRESSIVE, tasks=("mrpc",)),),
        mrpc_insensitive,
        paper_value="accuracy 0.776 with no layer reinitialised, 0.683 with any k layers; F1 0.848 vs 0.812 (§5.6)",
    ),
    Claim(
        "rte_flat_until_layer_7",
        f"{SEED_004} §6.2, Fig. 3",
        "[For RTE] we also observe that performance is flat before reinitializing layer 7; the upstream layers "
        "mostly have negligible effect on improving the performance over random guessing until the middle layers "
        "(layer 8 for RTE).",
        "On RTE, keeping k = 1 … ⌊5L/12⌋ pretrained layers (5 of 12) scores within report.single_layer_margin of "
        "scratch (k = 0), at every such k. Fig. 3's axis is the first layer reinitialised, x = k + 1 (its 'layer "
        "13' is no reinitialisation): 'before reinitializing layer 7' is x = 1 … 6.",
        "TOST |score(k) − scratch| < margin per k",
        (replace(PROGRESSIVE, tasks=("rte",)),),
        rte_flat_until_layer_7,
    ),
    Claim(
        "stsb_peaks_at_layer_8_and_layers_9_to_11_hinder",
        f"{SEED_004} §6.2, Fig. 3",
        "For STS-B, when we add back the 8th pretrained layer we see a spike in performance; afterwards the "
        "performance halves until no layers are reinitialised. The information encoded in layers 9 through 11 "
        "actually hinder the model from performing well.",
        "On STS-B, k = ⌊2L/3⌋ (8 of 12) against k − 1 (the spike) and against every k from ⌊2L/3⌋ + 1 to L − 1 "
        "(layers 9-11 added back hinder). STS-B comes from the GLUE files: not run offline.",
        "paired contrast per k: score(⌊2L/3⌋) − score(k) > 0",
        (replace(PROGRESSIVE, tasks=("stsb",)),),
        stsb_peaks_at_layer_8,
        paper_value="Pearson correlation near 0 up to k = 7, 0.5 at k = 8, about half that at k = 9-11 (Fig. 3, "
        "one run each, no table)",
    ),
    Claim(
        "cola_flat_until_layer_10",
        f"{SEED_004} §6.2, Fig. 3",
        "For CoLA, we observe that performance is flat until adding back layer 10, where it jumps to 0.6.",
        "On CoLA, keeping k = 1 … ⌊5L/6⌋ − 1 pretrained layers (9 of 12) scores within report.single_layer_margin "
        "of scratch (flat), and k = ⌊5L/6⌋ (layer 10 of 12 added back) beats k − 1 (the jump).",
        "TOST |score(k) − scratch| < margin per k below the jump; paired contrast score(⌊5L/6⌋) − score(⌊5L/6⌋ − 1) "
        "> 0",
        (replace(PROGRESSIVE, tasks=("cola",)),),
        cola_flat_until_layer_10,
        paper_value="MCC about 0 up to k = 9, 0.6 at k = 10 (Fig. 3, one run each, no table)",
    ),
)
