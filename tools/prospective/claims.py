"""Each claim's units on a preset's design, the effect each is simulated at, and the claims no simulation here
covers (with the reason). Units follow the claims' builders (src/claims/families/) in what they contrast, where
and with which shape; the model is the one of simulate.py. A claim whose paper states it for some tasks or data
regimes gets units only there (plentiful data: sizes >= 5,000; 003's SST-2/QNLI claims: those tasks)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from src.claims.families.permutation import RELATIVELY_HIGH
from src.claims.families.progressive import linearity
from src.claims.families.weight_change import BALANCED
from src.config.schema import Config
from tools.prospective import components as comp
from tools.prospective import effects as fx
from tools.prospective.simulate import SPEARMAN, UnitModel

PLENTIFUL = 5000  # "plentiful data": the papers' own plentiful sizes (>= 5,000 examples)


@dataclass(frozen=True)
class ClaimModel:
    id: str
    paper: str  # "001" | "003" | "004"
    every: bool
    build: Callable[[Config], list[UnitModel]] | None = None
    gap: bool = False  # supported only where full beats scratch at each of its (task, size)
    source: str = fx.PAPER_TASKS  # where its effects come from
    cannot: str = ""  # why no simulation here covers it (build is None)


def sizes(design: Config, study: str, task: str) -> tuple[int, ...]:
    if study not in design.studies or task not in design.studies[study].tasks:
        return ()
    return design.studies[study].sizes_of(task)


def layers(design: Config) -> int:
    return 12  # every preset is BERT-base's design (bench/cost.BERT_BASE)


def contrast(
    label: str,
    study: str,
    task: str,
    size: int,
    weights: dict[str, float],
    effect: float,
    shape: str = "greater",
    margin: float | None = None,
    **kw,
) -> UnitModel:
    """A paired contrast of conditions: both components scale by sqrt(sum w^2 / 2) (each condition's deviations
    independent, of equal variance: the measured two-condition contrast has sum w^2 = 2)."""
    c, scale = comp.components(task), math.sqrt(sum(w * w for w in weights.values()) / 2)
    fixed = scale * c.example_sd / math.sqrt(comp.EVAL_EXAMPLES[task])
    n = comp.EVAL_EXAMPLES[task]
    return UnitModel(
        label,
        study,
        task,
        size,
        scale * c.trial_sd,
        fixed,
        effect,
        n - 1,
        shape,
        margin,
        conditions=tuple(weights),
        **kw,
    )


def curve_units(design: Config, study: str, ks: dict[int, float], shape="greater", margin=None, tasks=None, min_size=0):
    """One unit per (task, size) of `study`: the contrast sum w_k score(k) on the progressive curve."""
    if study not in design.studies:
        return []
    L, out, have = layers(design), [], design.studies[study].tasks
    for task in (t for t in tasks or have if t in have):
        for size in sizes(design, study, task):
            if size >= min_size:
                effect = sum(w * fx.score(task, k, L) for k, w in ks.items())
                weights = {f"k{k}": w for k, w in ks.items()}
                out.append(contrast(f"{task} n={size}", study, task, size, weights, effect, shape, margin))
    return out


def full_scratch(design: Config, min_size: int = 0) -> list[UnitModel]:
    return curve_units(design, "progressive", {layers(design): 1, 0: -1}, min_size=min_size)


def gaps_for(design: Config, units: list[UnitModel]) -> list[UnitModel]:
    """The full-vs-scratch gap at each (task, size) a claim's units read (its units' "for" side only)."""
    wanted = {(u.task, u.size) for u in units}
    return [u for u in full_scratch(design) if (u.task, u.size) in wanted]


def few_layers(design: Config) -> list[UnitModel]:
    L = layers(design)
    few = math.ceil(design.report.few_layers_fraction * L)
    return curve_units(design, "progressive", {few: 1, L: -0.5, 0: -0.5}, min_size=PLENTIFUL)


def top_two_negligible(design: Config) -> list[UnitModel]:
    L = layers(design)
    return curve_units(
        design, "progressive", {L: 1, L - 2: -1}, "within", design.report.single_layer_margin, tasks=("sst2", "qnli")
    )


def probe_units(design: Config, task: str, weights: dict[int, float], effect: float, shape: str, margin=None):
    """A contrast of probe layers (or a layer against a constant), the probe seeds as trials; its SD the one
    measured on `task`'s probe (all of it the seeds' part)."""
    sd = comp.PROBE_SEED_SD[task] * math.sqrt(sum(w * w for w in weights.values()) / 2)
    conditions = tuple(f"probe{k}" for k in weights)
    return UnitModel(f"{task} probe", "probe", task, 0, sd, 0.0, effect, math.nan, shape, margin, conditions=conditions)


def probe_at_chance(design: Config, task: str) -> list[UnitModel]:
    L, margin = layers(design), design.report.chance_margin
    return [
        replace(
            probe_units(design, task, {k: 1}, fx.probe(task, k, L) - fx.CHANCE[task], "within", margin),
            label=f"{task} probe layer {k}",
        )
        for k in range(L + 1)
    ]


def cola_probing_at_chance(design: Config) -> list[UnitModel]:
    if "cola" not in design.probe.tasks:
        return []
    return probe_at_chance(design, "cola") + [u for u in full_scratch(design) if u.task == "cola"]


def top_two_hurt_probing(design: Config) -> list[UnitModel]:
    L = layers(design)
    return [
        probe_units(design, t, {L - 2: 1, L: -1}, fx.probe(t, L - 2, L) - fx.probe(t, L, L), "greater")
        for t in ("sst2", "qnli")
        if t in design.probe.tasks
    ]


def weight_slopes(design: Config) -> list[UnitModel]:
    """later_layers_move_more: the per-trial slope of the weight change over layers (trial-only t), at this
    project's measured slope and SD (MiniLM's per-layer slope, used as BERT-base's)."""
    out = []
    for task in design.studies["progressive"].tasks:
        if task in comp.WEIGHT_SLOPE:
            slope, sd = comp.WEIGHT_SLOPE[task]
            for size in sizes(design, "progressive", task):
                out.append(
                    UnitModel(
                        f"{task} n={size}",
                        "progressive",
                        task,
                        size,
                        sd,
                        0.0,
                        slope,
                        math.nan,
                        trials_only=True,
                        conditions=("k12",),
                    )
                )
    return out


def score_slopes(design: Config) -> list[UnitModel]:
    """later_reinit_costs_less: the per-trial OLS slope of score over k (trial-only t)."""
    L = layers(design)
    ks = range(L + 1)
    mean_k, ss = sum(ks) / len(ks), sum((k - sum(ks) / len(ks)) ** 2 for k in ks)
    weights = {k: (k - mean_k) / ss for k in ks}
    return [replace(u, trials_only=True) for u in curve_units(design, "progressive", weights)]


def adjacent(design: Config) -> list[UnitModel]:
    """reinit_curve_not_monotone: score(k) - score(k + 1) > 0 for every k < L."""
    L = layers(design)
    out = []
    for k in range(L):
        out += [
            replace(u, label=f"{u.label} k={k} vs {k + 1}")
            for u in curve_units(design, "progressive", {k: 1, k + 1: -1})
        ]
    return out


def second_differences(design: Config) -> list[UnitModel]:
    """reinit_curve_change_not_constant: +-(score(k) - 2 score(k + 1) + score(k + 2)) > 0."""
    L = layers(design)
    out = []
    for k in range(L - 1):
        for sign in (1, -1):
            ks = {k: sign, k + 1: -2 * sign, k + 2: sign}
            out += [
                replace(u, label=f"{u.label} k={k}..{k + 2} {sign:+d}") for u in curve_units(design, "progressive", ks)
            ]
    return out


def scratch_at_chance(design: Config) -> list[UnitModel]:
    out = []
    for task in design.studies["progressive"].tasks:
        for size in sizes(design, "progressive", task):
            effect = fx.score(task, 0, layers(design)) - fx.CHANCE[task]
            out.append(
                contrast(
                    f"{task} n={size}",
                    "progressive",
                    task,
                    size,
                    {"k0": 1},
                    effect,
                    "within",
                    design.report.chance_margin,
                )
            )
    return out


def mrpc_alike(design: Config) -> list[UnitModel]:
    """|score(k) − mean score(k < L)| < single_layer_margin per k < L on MRPC (progressive.mrpc_insensitive: the
    reinitialised models against each other, not against the full model)."""
    L = layers(design)
    out = []
    for k in range(L):
        weights = {j: (1.0 if j == k else 0.0) - 1 / L for j in range(L)}
        out += [
            replace(u, label=f"{u.label} k={k}")
            for u in curve_units(
                design, "progressive", weights, "within", design.report.single_layer_margin, tasks=("mrpc",)
            )
        ]
    return out


def sequential_units(design: Config, pairs: list[tuple[str, str, int]]) -> list[UnitModel]:
    """(final, intermediate, sign): sign x (after intermediate - direct) > 0 on the final task, at 004 Fig. 2."""
    out = []
    for final, inter, sign in pairs:
        for size in sizes(design, "sequential", final):
            effect = sign * fx.sequential(final, inter)
            out.append(
                contrast(
                    f"{final} after {inter}", "sequential", final, size, {"direct": 1, f"after:{inter}": -1}, effect
                )
            )
    return out


def some_intermediate(design: Config) -> list[UnitModel]:
    if "sequential" not in design.studies:
        return []
    tasks = design.studies["sequential"].tasks
    return sequential_units(design, [(f, i, 1) for f in tasks for i in tasks if i != f])


def wnli_helps(design: Config) -> list[UnitModel]:
    if "sequential" not in design.studies:
        return []
    return sequential_units(design, [("cola", "wnli", 1), ("mrpc", "wnli", 1), ("rte", "wnli", -1)])


def head_units(
    design: Config, layers_: tuple[int, ...], heads: tuple[int, ...], sign: int, shape="greater", margin=None
):
    """sign x (head reinit - full) per head (004 Figs. 5-6: heads counted from 1)."""
    if "heads" not in design.studies:
        return []
    out = []
    for task in design.studies["heads"].tasks:
        for size in sizes(design, "heads", task):
            for layer in layers_:
                for head in heads:
                    effect = sign * fx.HEADS[task][layer][head - 1]
                    label = f"{task} layer {layer} head {head}"
                    out.append(
                        contrast(label, "heads", task, size, {f"h{layer}.{head}": 1, "full": -1}, effect, shape, margin)
                    )
    return out


# 001 Table 1: Spearman rho between tasks over the same permutations (N = 10).
TABLE_1 = {("sst2", "qnli"): 0.72, ("sst2", "cola"): 0.74, ("qnli", "cola"): 0.83}


def permutation_pairs(design: Config) -> list[UnitModel]:
    if "permutation" not in design.studies:
        return []
    study, out = design.studies["permutation"], []
    for (a, b), rho in TABLE_1.items():
        if a in study.tasks and b in study.tasks:
            size = study.sizes_of(a)[0]
            conditions = (f"permuted@{a}", f"permuted@{b}")
            out.append(
                UnitModel(
                    f"{a}, {b}",
                    "permutation",
                    a,
                    size,
                    0.0,
                    0.0,
                    rho,
                    math.nan,
                    SPEARMAN,
                    RELATIVELY_HIGH,
                    conditions=conditions,
                )
            )
    return out


NO_EFFECT = math.nan  # a unit whose effect neither the paper nor this project gives: simulated at zero only


def pair_units(
    design: Config,
    study: str,
    weights: dict[str, float],
    shape: str = "greater",
    margin: float | None = None,
    tasks: tuple[str, ...] = (),
    min_size: int = 0,
    per: tuple[str, ...] = ("",),
    trials_only: bool = False,
) -> list[UnitModel]:
    """One contrast of `weights` per (task, size) of `study` (and per entry of `per`: layers, ks), no effect."""
    if study not in design.studies:
        return []
    have = design.studies[study].tasks
    return [
        contrast(
            f"{task} n={size} {name}".strip(),
            study,
            task,
            size,
            {f"{c}{name}": w for c, w in weights.items()},
            NO_EFFECT,
            shape,
            margin,
            trials_only=trials_only,
        )
        for task in (t for t in tasks or have if t in have)
        for size in sizes(design, study, task)
        if size >= min_size
        for name in per
    ]


def two_sizes(design: Config, weights: dict[str, float], tasks: tuple[str, ...] = ()) -> list[UnitModel]:
    """Welch over trials between a task's smallest and largest size (unpaired trials: the per-trial contrast's
    SD x sqrt(2) on T - 1 df, the smaller df, a conservative reading of Welch's), no effect."""
    out = []
    for u in pair_units(design, "progressive", weights, tasks=tasks, trials_only=True):
        if u.size == min(sizes(design, "progressive", u.task)) and len(sizes(design, "progressive", u.task)) > 1:
            out.append(replace(u, trial_sd=u.trial_sd * math.sqrt(2), label=f"{u.task} smallest vs largest"))
    return out


def middle_third(design: Config) -> dict[int, float]:
    """score(k = ⌈2L/3⌉) − score(k = ⌊L/3⌋): the middle third's gain (progressive.middle_third)."""
    L = layers(design)
    return {math.ceil(2 * L / 3): 1, L // 3: -1}


def middle_helps_sst2_not_qnli(design: Config) -> list[UnitModel]:
    """SST-2: middle gain > 0; QNLI: middle gain < single_layer_margin (non-superiority), at every size."""
    m = design.report.single_layer_margin
    return curve_units(design, "progressive", middle_third(design), tasks=("sst2",)) + curve_units(
        design, "progressive", middle_third(design), "below", m, tasks=("qnli",)
    )


MATCHED = 0.1  # progressive.MATCHED: 003 §6.1.3's "similar training data sizes" (673 SST-2, 628 QNLI)


def between_tasks(design: Config, effect_of: Callable[[str], float], trial_sd: float, within=None, below=None):
    """Welch over trials of a per-trial statistic on SST-2 − on QNLI at each SST-2 size and QNLI's nearest
    (progressive.task_pairs; `within`: sizes at most that fraction apart; `below`: SST-2 sizes under it). The
    tasks' runs are independent and each task's eval set is held fixed (trials only): one trial's SD of the
    difference is the statistic's trial SD x sqrt(2), on T - 1 df (the smaller df, a conservative reading of
    Welch's, as two_sizes). Its cost reads both tasks' runs, QNLI's priced at SST-2's size (cost's cond@task
    convention)."""
    qnli = sizes(design, "progressive", "qnli")
    if not qnli:
        return []
    out = []
    for size in sizes(design, "progressive", "sst2"):
        nearest = min(qnli, key=lambda s: abs(math.log(s / size)))
        if (within is None or abs(nearest - size) <= within * size) and (below is None or size < below):
            out.append(
                UnitModel(
                    f"sst2 n={size} vs qnli n={nearest}",
                    "progressive",
                    "sst2",
                    size,
                    trial_sd * math.sqrt(2),
                    0.0,
                    effect_of("sst2") - effect_of("qnli"),
                    math.nan,
                    trials_only=True,
                    conditions=tuple(f"k{k}{at}" for k in middle_third(design) for at in ("", "@qnli")),
                )
            )
    return out


def middle_gain_between_tasks(design: Config) -> list[UnitModel]:
    """sst2_middle_layers_matter_more_than_qnlis_at_equal_size: the middle third's gain, SST-2 − QNLI, at sizes
    within MATCHED and below PLENTIFUL; each task's gain from this project's curve, its trial SD the pooled one."""
    L = layers(design)
    gain = lambda task: sum(w * fx.score(task, k, L) for k, w in middle_third(design).items())  # noqa: E731
    return between_tasks(design, gain, comp.TRIAL_SD, within=MATCHED, below=PLENTIFUL)


def linearity_between_tasks(design: Config, reps: int = 20_000) -> list[UnitModel]:
    """sst2_curve_more_linear_than_qnli: per-trial Fisher z of corr(score, k) over k = 0..L, SST-2 − QNLI. The
    z's mean and trial SD per task by simulation: this project's mean curve (k scaled by L) plus, per trial and
    k, a condition's trial deviation (the pooled trial SD / sqrt(2): a contrast of two conditions has sum w^2 = 2),
    seed 0; the two tasks' SDs pooled."""
    L = layers(design)
    rng = np.random.default_rng(0)
    z = {}
    for task in ("sst2", "qnli"):
        curve = np.array([fx.score(task, k, L) for k in range(L + 1)])
        z[task] = linearity(curve + rng.normal(0.0, comp.TRIAL_SD / math.sqrt(2), (reps, L + 1)))
    sd = math.sqrt((np.var(z["sst2"], ddof=1) + np.var(z["qnli"], ddof=1)) / 2)
    units = between_tasks(design, lambda task: float(np.mean(z[task])), sd)
    return [replace(u, conditions=tuple(f"k{k}{at}" for k in range(L + 1) for at in ("", "@qnli"))) for u in units]


def cola_weight_balance(design: Config) -> list[UnitModel]:
    """cola_weight_change_balanced_across_layers: TOST |relative rise| < BALANCED, a trial-only t over trials,
    per CoLA size; the rise's trial SD this project's (WEIGHT_BALANCE_SD), no effect (none is measured on CoLA)."""
    return [
        UnitModel(
            f"cola n={size}",
            "progressive",
            "cola",
            size,
            WEIGHT_BALANCE_SD,
            0.0,
            NO_EFFECT,
            math.nan,
            "within",
            BALANCED,
            trials_only=True,
            conditions=(f"k{layers(design)}",),
        )
        for size in sizes(design, "progressive", "cola")
    ]


# The relative rise's SD over trials of the full model, the only weight-change run on disk (metrics/
# weight_change.csv: the default's subjectivity, 128 examples, MiniLM, 3 trials, k6_e7: rises 0.300, 0.435,
# 0.401, mean 0.379, SD 0.070), used as CoLA's at BERT-base (labelled); its mean is not CoLA's and is not used.
WEIGHT_BALANCE_SD = 0.070


def explicit(design: Config, study: str, task: str, items, shape="greater", margin=None) -> list[UnitModel]:
    """Contrasts of progressive ks given as (label, weights over k, effect) at every size of `task`."""
    return [
        contrast(f"{task} n={size}{label}", study, task, size, {f"k{k}": w for k, w in ks.items()}, e, shape, margin)
        for size in sizes(design, study, task)
        for label, ks, e in items
    ]


def rte_flat(design: Config) -> list[UnitModel]:
    """|score(k) − scratch| < single_layer_margin for k = 1 .. ⌊5L/12⌋ on RTE, each at the paper's "flat": 0."""
    m, last = design.report.single_layer_margin, 5 * layers(design) // 12
    return explicit(
        design, "progressive", "rte", [(f" k={k}", {k: 1, 0: -1}, 0.0) for k in range(1, last + 1)], "within", m
    )


def stsb_peak(design: Config) -> list[UnitModel]:
    """score(⌊2L/3⌋) − score(k) > 0 for k = ⌊2L/3⌋ − 1 (the spike: 0.5 − 0) and ⌊2L/3⌋ + 1 .. L − 1 (about half:
    0.5 − 0.25), 004 Fig. 3's Pearson correlations."""
    L = layers(design)
    peak = 2 * L // 3
    items = [(f" k={peak} vs {peak - 1}", {peak: 1, peak - 1: -1}, STSB_PEAK)]
    items += [(f" k={peak} vs {k}", {peak: 1, k: -1}, STSB_PEAK / 2) for k in range(peak + 1, L)]
    return explicit(design, "progressive", "stsb", items)


def cola_flat(design: Config) -> list[UnitModel]:
    """Flat (TOST vs scratch, effect 0) for k = 1 .. ⌊5L/6⌋ − 1, then the jump ⌊5L/6⌋ − (⌊5L/6⌋ − 1) = 0.6 (004
    Fig. 3: MCC about 0, then 0.6)."""
    m, jump = design.report.single_layer_margin, 5 * layers(design) // 6
    flat = explicit(
        design, "progressive", "cola", [(f" k={k}", {k: 1, 0: -1}, 0.0) for k in range(1, jump)], "within", m
    )
    return flat + explicit(
        design, "progressive", "cola", [(f" k={jump} vs {jump - 1}", {jump: 1, jump - 1: -1}, COLA_JUMP)]
    )


STSB_PEAK, COLA_JUMP = 0.5, 0.6  # 004 §6.2, Fig. 3 (one run each, read off the figure; no table)


def direct_best(design: Config) -> list[UnitModel]:
    """direct − after intermediate > 0 on RTE and WNLI, after each of the paper's intermediates the study runs."""
    if "sequential" not in design.studies:
        return []
    tasks = [t for t in fx.SEQUENTIAL_ORDER if t in design.studies["sequential"].tasks]
    return sequential_units(design, [(f, i, -1) for f in ("rte", "wnli") if f in tasks for i in tasks if i != f])


def wnli_over_rte_on_cola(design: Config) -> list[UnitModel]:
    """after WNLI − after RTE > 0 on CoLA (004 Fig. 2: 0.536 − 0.526)."""
    if "sequential" not in design.studies:
        return []
    effect = fx.sequential("cola", "wnli") - fx.sequential("cola", "rte")
    return [
        contrast("cola after wnli vs after rte", "sequential", "cola", size, {"after:wnli": 1, "after:rte": -1}, effect)
        for size in sizes(design, "sequential", "cola")
    ]


def head_layers(design: Config) -> tuple[int, ...]:
    L = layers(design)
    return (1, 2, L - 1, L)


def late_heads_cost_less(design: Config) -> list[UnitModel]:
    """mean over the heads of layers L−1, L of (head reinit − full) − the same over layers 1, 2 > 0, per task and
    size (004 Figs. 5-6: CoLA +0.019, STS-B +0.004)."""
    if "heads" not in design.studies:
        return []
    L, out = layers(design), []
    late, early = (L - 1, L), (1, 2)
    for task in design.studies["heads"].tasks:
        n = len(ALL_HEADS)
        weights = {f"h{layer}.{h}": 1 / (2 * n) for layer in late for h in ALL_HEADS}
        weights |= {f"h{layer}.{h}": -1 / (2 * n) for layer in early for h in ALL_HEADS}
        mean = lambda ls: float(np.mean([fx.HEADS[task][layer] for layer in ls]))  # noqa: E731
        for size in sizes(design, "heads", task):
            out.append(contrast(f"{task} late vs early heads", "heads", task, size, weights, mean(late) - mean(early)))
    return out


def head_on_average(design: Config, head: int, sign_of: Callable[[str], int]) -> list[UnitModel]:
    """sign x (the mean over layers 1, 2, L−1, L of head `head` reinit − full) > 0 on CoLA and STS-B (004 Figs.
    5-6)."""
    if "heads" not in design.studies:
        return []
    out = []
    for task in (t for t in design.studies["heads"].tasks if t in ("cola", "stsb")):
        ls, sign = head_layers(design), sign_of(task)
        weights = {f"h{layer}.{head}": sign / len(ls) for layer in ls} | {"full": -sign}
        effect = sign * float(np.mean([fx.HEADS[task][layer][head - 1] for layer in (1, 2, 11, 12)]))
        for size in sizes(design, "heads", task):
            out.append(contrast(f"{task} head {head}", "heads", task, size, weights, effect))
    return out


ALL_HEADS = tuple(range(1, 13))
LAYERS_1_TO_L = tuple(str(layer) for layer in range(1, 13))
EPOCH_KS = ("_k0", "_k6", "_k12")  # the epochs study's ks (presets/tamkin2020.yaml)
KS_BELOW_L = tuple(f"_k{k}" for k in range(12))
RTE_TOP_KS = tuple(str(k) for k in range(7, 12))  # ⌈7L/12⌉ .. L - 1: the paper's "from layers 8-12" of 12
PER_TRIAL_STATISTIC = (
    "a per-trial curve statistic (gain centre, a trial's maximum, a trial's R²) tested by a t over trials (and probe "
    "seeds) with the eval set's part of its variance from the report's eval-set draws: it decides from 3 trials, but "
    "this simulator draws one contrast of conditions per unit and has no model of that statistic's spread, so its "
    "chance is not computed here"
)
BOOTSTRAP_DIFFERENCE = (
    "a bootstrap difference of curve statistics: calibrated at α = 0.05 only, it can support but never "
    "contradict; its power is not computed by the Estimate route this table uses"
)
CONJUNCTION = (
    "each unit is a conjunction (the gain above the margin at a plentiful size AND within it at a scarce one, "
    "progressive.both_unit), existential over tasks and k: the simulator models one contrast per unit; and neither "
    "the paper (Fig. 1, no table) nor this project (no run at >= 5,000 examples) gives the gain at both sizes"
)
F_TEST = "an F test of a variance ratio: neither the paper nor this project gives the ratio; not simulated here"


def claim_models(design: Config) -> list[ClaimModel]:
    """Every claim of the three papers, in the registry's order."""
    m = design.report
    L = layers(design)
    heads_src = fx.HEADS_SOURCE
    seq_src = f"paper's, {fx.SEED_004} §5.5 Fig. 2 (one run each)"
    no_effect = "no effect: neither the paper's text nor this project's runs give one"
    return [
        ClaimModel("full_beats_scratch", "001", True, full_scratch),
        ClaimModel("few_layers_suffice_with_plenty_of_data", "001", True, few_layers, gap=True),
        ClaimModel("k90_grows_as_data_shrinks", "001", True, cannot=BOOTSTRAP_DIFFERENCE),
        ClaimModel("subsampling_variance_larger_with_less_data", "001", True, cannot=F_TEST),
        ClaimModel(
            "pretrained_layers_gain_large_when_plentiful_negligible_when_scarce",
            "001",
            False,
            cannot=CONJUNCTION,
        ),
        ClaimModel("probes_do_not_predict_finetuning", "001", True, cannot=PER_TRIAL_STATISTIC),
        ClaimModel(
            "sst2_early_layers_transfer_though_probing_near_chance",
            "001",
            True,
            lambda d: probe_at_chance(d, "sst2") if "sst2" in d.probe.tasks else [],
            source=f"{fx.PAPER_TASKS} (the probe's); its block unit: {no_effect} (left out)",
        ),
        ClaimModel("cola_transfers_though_probing_at_chance", "001", True, cola_probing_at_chance),
        ClaimModel("agreement_grows_as_data_shrinks", "001", True, cannot=BOOTSTRAP_DIFFERENCE),
        ClaimModel(
            "high_probing_layers_not_necessary",
            "001",
            True,
            lambda d: pair_units(d, "blocks", {"reinit": 1, "full": -1}, "above", d.report.block_margin),
            gap=True,
            source=no_effect,
        ),
        ClaimModel(
            "high_probing_layers_not_sufficient",
            "001",
            True,
            lambda d: pair_units(d, "blocks", {"preserve": 1, "full": -1}, "below", -d.report.block_margin),
            gap=True,
            source=no_effect,
        ),
        ClaimModel(
            "high_probing_layers_not_sufficient_by_section_4",
            "001",
            True,
            lambda d: pair_units(d, "blocks", {"preserve": 1, "scratch": -1}, "below", d.report.block_margin),
            gap=True,
            source=no_effect,
        ),
        ClaimModel(
            "useful_layers_differ_by_task",
            "001",
            True,
            cannot=(
                "Welch tests of gap-normalised block shares per task pair, Bonferroni over pairs and blocks; neither "
                "the paper nor this project gives the shares; not simulated here"
            ),
        ),
        ClaimModel(
            "early_layers_help_most",
            "001",
            True,
            lambda d: pair_units(d, "blocks", {"preserve_first": 1, "preserve_last": -1}),
            gap=True,
            source=no_effect,
        ),
        ClaimModel(
            "sst2_needs_middle_qnli_needs_early_layers",
            "001",
            True,
            lambda d: pair_units(d, "blocks", {"reinit_first": 1, "reinit_middle": -1}, tasks=("sst2", "qnli")),
            source=no_effect,
        ),
        ClaimModel(
            "permutation_lowers_accuracy",
            "001",
            True,
            lambda d: pair_units(d, "permutation", {"full": 1, "permuted": -1}),
            source=no_effect,
        ),
        ClaimModel(
            "permuted_closer_to_scratch",
            "001",
            True,
            lambda d: pair_units(d, "permutation", {"full": 0.5, "scratch": 0.5, "permuted": -1}),
            gap=True,
            source=no_effect,
        ),
        ClaimModel(
            "permutation_affects_tasks_alike",
            "001",
            True,
            permutation_pairs,
            source="paper's, ../shared/seeds/001_27c42214c9172bd1.txt §5 Table 1: Spearman ρ 0.72, 0.74, 0.83",
        ),
        ClaimModel(
            "single_layer_barely_matters",
            "001",
            True,
            lambda d: pair_units(
                d, "single_layer", {"layer": 1, "full": -1}, "within", m.single_layer_margin, per=LAYERS_1_TO_L
            ),
            gap=True,
            source=no_effect,
        ),
        ClaimModel(
            "epochs_beyond_3_do_not_help_with_plenty_of_data",
            "001",
            True,
            lambda d: pair_units(
                d, "epochs", {"longer": 1, "default": -1}, "below", m.modifier_margin, min_size=PLENTIFUL, per=EPOCH_KS
            ),
            source=no_effect,
        ),
        ClaimModel(
            "five_epochs_help_with_little_data",
            "001",
            True,
            cannot="the preset schedules no 3-epoch runs at 500 examples, so it never runs (issue 50)",
        ),
        ClaimModel(
            "lr_multiplier_does_not_help",
            "001",
            True,
            lambda d: pair_units(
                d, "lr_multiplier", {"5x": 1, "plain": -1}, "below", m.modifier_margin, per=KS_BELOW_L
            ),
            source=no_effect,
        ),
        ClaimModel("lr_multiplier_adds_variance", "001", True, cannot=F_TEST),
        ClaimModel(
            "keep_layernorm_does_not_help",
            "001",
            True,
            lambda d: pair_units(
                d, "keep_layernorm", {"kept": 1, "plain": -1}, "below", m.modifier_margin, per=KS_BELOW_L
            ),
            source=no_effect,
        ),
        ClaimModel(
            "later_layers_move_more",
            "003",
            True,
            weight_slopes,
            source="this project's, later_layers_move_more's units in docs/paper_tasks/report.md (MiniLM, 500)",
        ),
        ClaimModel("more_data_moves_weights_more", "003", True, source=no_effect),
        ClaimModel("more_data_moves_weights_more_at_equal_steps", "003", True, source=no_effect),
        ClaimModel("weight_change_grows_more_in_later_layers_with_more_data", "003", True, source=no_effect),
        ClaimModel(
            "cola_weight_change_balanced_across_layers",
            "003",
            True,
            cola_weight_balance,
            source=f"{no_effect} on CoLA; the relative rise's trial SD (0.070) this project's, subjectivity n=128 "
            "(metrics/weight_change.csv, the default, MiniLM)",
        ),
        ClaimModel("drop_point_shifts_with_data_size", "003", True, cannot=BOOTSTRAP_DIFFERENCE),
        ClaimModel("cola_near_linear_drop", "003", True, cannot=PER_TRIAL_STATISTIC),
        ClaimModel(
            "pretraining_gain_shrinks_as_data_grow",
            "003",
            True,
            lambda d: two_sizes(d, {f"k{L}": 1, "k0": -1}),
            source=no_effect,
        ),
        ClaimModel(
            "full_at_little_data_beats_scratch_with_tenfold",
            "003",
            True,
            lambda d: two_sizes(d, {f"k{L}": 1, "k0": -1}),
            source=no_effect,
        ),
        ClaimModel(
            "sst2_middle_layers_matter_more_with_less_data",
            "003",
            True,
            lambda d: two_sizes(d, {f"k{math.ceil(2 * L / 3)}": 1, f"k{L // 3}": -1}, tasks=("sst2",)),
            source=no_effect,
        ),
        ClaimModel("top_two_layers_negligible_in_finetuning", "003", True, top_two_negligible),
        ClaimModel(
            "middle_layers_help_sst2_not_qnli",
            "003",
            True,
            middle_helps_sst2_not_qnli,
            source=f"{fx.PAPER_TASKS} (SST-2's middle gain 0.055, as 003 §6.1.3's 'about 5 points'; QNLI's 0.143)",
        ),
        ClaimModel(
            "sst2_middle_layers_matter_more_than_qnlis_at_equal_size",
            "003",
            True,
            middle_gain_between_tasks,
            source=f"{fx.PAPER_TASKS}: SST-2 − QNLI middle gain −0.088 (003 §6.1.3 gives SST-2's ~0.05 only)",
        ),
        ClaimModel(
            "sst2_curve_more_linear_than_qnli",
            "003",
            True,
            linearity_between_tasks,
            source=f"{fx.PAPER_TASKS}; per-trial z of corr(score, k) simulated with the pooled trial SD",
        ),
        ClaimModel("probe_peaks_lower_than_finetuning", "003", True, cannot=PER_TRIAL_STATISTIC),
        ClaimModel("probe_needs_more_layers", "003", True, cannot=PER_TRIAL_STATISTIC),
        ClaimModel(
            "top_two_layers_hurt_probing", "003", True, top_two_hurt_probing, source=f"{fx.PAPER_TASKS} (the probe's)"
        ),
        ClaimModel("sst2_probe_declines_more_gradually_than_qnli", "003", True, cannot=BOOTSTRAP_DIFFERENCE),
        ClaimModel("some_intermediate_task_beats_direct", "004", False, some_intermediate, source=seq_src),
        ClaimModel("wnli_intermediate_helps_every_task_but_rte", "004", True, wnli_helps, source=seq_src),
        ClaimModel("direct_finetuning_best_on_rte_and_wnli", "004", True, direct_best, source=seq_src),
        ClaimModel("wnli_beats_rte_as_intermediate_on_cola", "004", True, wnli_over_rte_on_cola, source=seq_src),
        ClaimModel("later_reinit_costs_less", "004", True, score_slopes),
        ClaimModel("reinit_curve_not_monotone", "004", False, adjacent),
        ClaimModel("all_reinit_at_chance", "004", True, scratch_at_chance),
        ClaimModel("reinit_curve_change_not_constant", "004", False, second_differences),
        ClaimModel(
            "rte_top_layer_reinit_beats_full",
            "004",
            True,
            lambda d: pair_units(d, "progressive", {"k": 1, f"k{L}": -1}, tasks=("rte",), per=RTE_TOP_KS),
            source=no_effect,
        ),
        ClaimModel("mrpc_insensitive_to_reinit", "004", True, mrpc_alike, source=fx.curve_source("mrpc")),
        ClaimModel("rte_flat_until_layer_7", "004", True, rte_flat, source=f"paper's, {fx.SEED_004} §6.2: 'flat' (0)"),
        ClaimModel(
            "stsb_peaks_at_layer_8_and_layers_9_to_11_hinder",
            "004",
            True,
            stsb_peak,
            source=f"paper's, {fx.SEED_004} §6.2 Fig. 3: Pearson 0 to 0.5 at k = 8, about half at k = 9-11",
        ),
        ClaimModel(
            "cola_flat_until_layer_10",
            "004",
            True,
            cola_flat,
            source=f"paper's, {fx.SEED_004} §6.2 Fig. 3: MCC flat (0) to k = 9, 0.6 at k = 10",
        ),
        ClaimModel(
            "head_reinit_no_significant_impact",
            "004",
            True,
            lambda d: head_units(d, (1, 2, L - 1, L), ALL_HEADS, 1, "within", m.single_layer_margin),
            source=heads_src,
        ),
        ClaimModel(
            "head_reinit_in_first_two_layers_hurts",
            "004",
            True,
            cannot="its unit is the ⌈0.75 H⌉-th Holm p within a layer; not simulated here",
        ),
        ClaimModel(
            "head_reinit_in_last_two_layers_helps",
            "004",
            False,
            lambda d: head_units(d, (L - 1, L), ALL_HEADS, 1),
            source=heads_src,
        ),
        ClaimModel(
            "any_head_reinit_in_last_two_layers_helps",
            "004",
            True,
            lambda d: head_units(d, (L - 1, L), ALL_HEADS, 1),
            source=heads_src,
        ),
        ClaimModel(
            "specific_heads_matter",
            "004",
            True,
            lambda d: head_units(d, (1, 2, L - 1, L), (4, 9), -1),
            source=heads_src,
        ),
        ClaimModel(
            "head_reinit_costs_less_downstream_than_upstream",
            "004",
            True,
            late_heads_cost_less,
            source=heads_src,
        ),
        ClaimModel(
            "head_12_reinit_helps_on_average",
            "004",
            True,
            lambda d: head_on_average(d, 12, lambda task: 1),
            source=heads_src,
        ),
        ClaimModel(
            "head_1_reinit_helps_cola_hurts_stsb",
            "004",
            True,
            lambda d: head_on_average(d, 1, lambda task: 1 if task == "cola" else -1),
            source=heads_src,
        ),
    ]
