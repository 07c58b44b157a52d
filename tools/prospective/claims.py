"""Each claim's units on a preset's design, the effect each is simulated at, and the claims no simulation here
covers (with the reason). Units follow the claims' builders (src/claims/families/) in what they contrast, where
and with which shape; the model is the one of simulate.py. A claim whose paper states it for some tasks or data
regimes gets units only there (plentiful data: sizes >= 5,000; 003's SST-2/QNLI claims: those tasks)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from src.claims.families.permutation import RELATIVELY_HIGH
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
    return design.studies[study].sizes_of(task) if study in design.studies else ()


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
    L = layers(design)
    return [
        replace(u, label=f"{u.label} k={k}")
        for k in range(L)
        for u in curve_units(
            design, "progressive", {k: 1, L: -1}, "within", design.report.single_layer_margin, tasks=("mrpc",)
        )
    ]


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


ALL_HEADS = tuple(range(1, 13))
LAYERS_1_TO_L = tuple(str(layer) for layer in range(1, 13))
EPOCH_KS = ("_k0", "_k6", "_k12")  # the epochs study's ks (presets/tamkin2020.yaml)
KS_BELOW_L = tuple(f"_k{k}" for k in range(12))
RTE_TOP_KS = tuple(str(k) for k in range(7, 12))  # ⌈7L/12⌉ .. L - 1: the paper's "from layers 8-12" of 12
BOOTSTRAP = (
    "a percentile bootstrap of a curve statistic: src/stats/validity.py refuses it at every T (it under-covers "
    "at 3, 5 and 10 trials, docs/calibration.md), so no number of trials decides it with today's test"
)
BOOTSTRAP_DIFFERENCE = (
    "a bootstrap difference of curve statistics: calibrated at α = 0.05 only, it can support but never "
    "contradict; its power is not computed by the Estimate route this table uses"
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
        ClaimModel("probes_do_not_predict_finetuning", "001", True, cannot=BOOTSTRAP),
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
            "useful_layers_differ_by_task", "001", True, cannot="a two-way ANOVA interaction F; not simulated here"
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
        ClaimModel("drop_point_shifts_with_data_size", "003", True, cannot=BOOTSTRAP_DIFFERENCE),
        ClaimModel("cola_near_linear_drop", "003", True, cannot=BOOTSTRAP),
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
        ClaimModel("probe_peaks_lower_than_finetuning", "003", True, cannot=BOOTSTRAP),
        ClaimModel("probe_needs_more_layers", "003", True, cannot=BOOTSTRAP),
        ClaimModel(
            "top_two_layers_hurt_probing", "003", True, top_two_hurt_probing, source=f"{fx.PAPER_TASKS} (the probe's)"
        ),
        ClaimModel("sst2_probe_declines_more_gradually_than_qnli", "003", True, cannot=BOOTSTRAP_DIFFERENCE),
        ClaimModel("some_intermediate_task_beats_direct", "004", False, some_intermediate, source=seq_src),
        ClaimModel("wnli_intermediate_helps_every_task_but_rte", "004", True, wnli_helps, source=seq_src),
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
    ]
