"""The registry of the studies' claims: one `Claim` entry each (adding a claim is one entry).

Each entry has its source (seed file and section), the hypothesis as the paper states it
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
import pandas as pd
import statsmodels.formula.api as smf
from statsmodels.stats.anova import anova_lm

from src.claims.curves import (
    PROBE_MEASURES,
    Curve,
    ProbeCurve,
    along_draws,
    curves_design,
    probe_contrast,
    probe_curve,
    probe_measure_curve,
    progressive_curve,
)
from src.claims.evidence import Evidence, chance_level, studies_of
from src.claims.units import (
    ONE_PROBE_SEED,
    Unit,
    bootstrap_unit,
    contrast_unit,
    estimate_test_unit,
    exact_unit,
    slope_unit,
    welch_unit,
)
from src.stats import hypothesis
from src.stats.curves import drop_point, first_reaching, linear_r2

SEED_001, SEED_003, SEED_004 = "001 Tamkin et al. 2020", "003 Singh & Giovanardi", "004 Huang, Lin & Zhou"


@dataclass(frozen=True)
class Need:
    """Runs a claim needs: a study of `scheme` with `modifiers` (named `study` when it has to be
    added, with `args`), on `tasks` (empty: any), with `sizes` ("two": at least two sizes;
    "small": one at most train.small_size; "large": one above it), `min_tasks` tasks, and
    probes of its tasks when `probe`."""

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


class Shared:
    """What several claims read, computed once per report: progressive curves and probe curves,
    all of a task's drawn with the same draws of its eval set (they are all scored on it)."""

    def __init__(self, ev: Evidence):
        self.ev, self.rng = ev, np.random.default_rng(0)

    @cached_property
    def eval_draws(self) -> dict[str, np.ndarray]:
        """Each task's eval-set bootstrap draws [B, N] (hypothesis.example_draws)."""
        return {
            task: hypothesis.example_draws(len(labels), self.ev.settings.bootstrap_resamples, self.rng)
            for task, labels in sorted(self.ev.labels.items())
        }

    @cached_property
    def curves(self) -> dict[tuple[str, int], Curve]:
        plain = self.ev.plain()
        progressive = plain[plain["scheme"] == "progressive"]
        found = {}
        for task, size in sorted(set(zip(progressive["task"], progressive["size"].astype(int)))):
            curve = progressive_curve(self.ev, task, size, self.rng, self.eval_draws.get(task))
            if curve is not None:
                found[(task, size)] = curve
        return found

    @cached_property
    def probes(self) -> dict[str, ProbeCurve]:
        tasks = sorted(set(self.ev.probe["task"])) if not self.ev.probe.empty else []
        return {t: p for t in tasks if (p := probe_curve(self.ev, t, self.rng, self.eval_draws.get(t))) is not None}

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


def plain_by(ev: Evidence, scheme: str) -> pd.DataFrame:
    plain = ev.plain()
    return plain[plain["scheme"] == scheme]


def refs(rows: pd.DataFrame) -> tuple[str, str]:
    first = rows.iloc[0]
    return first["ref_full"], first["ref_scratch"]


# --- seed 001: progressive curves ------------------------------------------------------------------------------


def full_beats_scratch(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for (task, size), rows in plain_by(ev, "progressive").groupby(["task", "size"]):
        full, scratch = refs(rows)
        if {full, scratch} <= set(rows["slug"]):
            units.append(
                contrast_unit(ev, "full_beats_scratch", task, int(size), {full: 1, scratch: -1}, "full − scratch > 0")
            )
    return units


def few_threshold(ev: Evidence) -> int:
    return max(1, math.floor(ev.settings.few_layers_fraction * ev.num_layers))


def few_layers_suffice(ev: Evidence, shared: Shared) -> list[Unit]:
    limit = few_threshold(ev)
    units = []
    for task in shared.tasks():
        size = shared.sizes(task)[-1]
        curve = shared.curves[(task, size)]
        margin_of = lambda c: limit + 0.5 - first_reaching(c)  # noqa: E731 - > 0 exactly when k90 <= limit
        unit = bootstrap_unit(
            ev,
            "few_layers_suffice_with_plenty_of_data",
            f"{task} n={size}",
            f"k90 ≤ {limit}: bootstrap of {limit} + ½ − k90 > 0",
            margin_of(curve.mean),
            along_draws(margin_of, curve.draws),
            len(curve.trials),
            kind="bootstrap",
            gaps=((task, size),),
            studies=curve.studies,
            notes=[*curve.notes, f"k90 = {k_text(first_reaching(curve.mean))}"],
        )
        units.append(unit)
    return units


def k90_grows_as_data_shrinks(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for task in shared.tasks():
        sizes = shared.sizes(task)
        if len(sizes) < 2:
            continue
        small, large = shared.curves[(task, sizes[0])], shared.curves[(task, sizes[-1])]
        design, read = curves_design((small, large))
        k90 = lambda draws: along_draws(first_reaching, draws)  # noqa: E731
        units.append(
            bootstrap_unit(
                ev,
                "k90_grows_as_data_shrinks",
                f"{task} n={sizes[0]} vs n={sizes[-1]}",
                "bootstrap of k90(smallest) − k90(largest) > 0",
                first_reaching(small.mean) - first_reaching(large.mean),
                k90(small.draws) - k90(large.draws),
                min(len(small.trials), len(large.trials)),
                kind="bootstrap-difference",
                design=design,
                reads_seed_design=read,
                gaps=((task, sizes[0]), (task, sizes[-1])),
                studies=tuple(sorted(set(small.studies + large.studies))),
                notes=[
                    *small.notes,
                    *large.notes,
                    f"k90 {k_text(first_reaching(small.mean))} at n={sizes[0]}, "
                    f"{k_text(first_reaching(large.mean))} at n={sizes[-1]}",
                ],
            )
        )
    return units


def drop_point_shifts(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for task in shared.tasks():
        sizes = shared.sizes(task)
        if len(sizes) < 2:
            continue
        small, large = shared.curves[(task, sizes[0])], shared.curves[(task, sizes[-1])]
        design, read = curves_design((small, large))
        units.append(
            bootstrap_unit(
                ev,
                "drop_point_shifts_with_data_size",
                f"{task} n={sizes[0]} vs n={sizes[-1]}",
                "bootstrap of steepest step k(smallest) − k(largest) > 0",
                drop_point(small.mean) - drop_point(large.mean),
                drop_point(small.draws) - drop_point(large.draws),
                min(len(small.trials), len(large.trials)),
                kind="bootstrap-difference",
                design=design,
                reads_seed_design=read,
                gaps=((task, sizes[0]), (task, sizes[-1])),
                studies=tuple(sorted(set(small.studies + large.studies))),
                notes=[
                    f"steepest step at k={drop_point(small.mean):.0f} (n={sizes[0]}), "
                    f"{drop_point(large.mean):.0f} (n={sizes[-1]})"
                ],
            )
        )
    return units


def cola_near_linear(ev: Evidence, shared: Shared) -> list[Unit]:
    units, r2 = [], ev.settings.linear_r2
    for size in shared.sizes("cola"):
        curve = shared.curves[("cola", size)]
        units.append(
            bootstrap_unit(
                ev,
                "cola_near_linear_drop",
                f"cola n={size}",
                f"bootstrap of R²(line through the curve) − {r2} > 0",
                linear_r2(curve.mean) - r2,
                along_draws(linear_r2, curve.draws) - r2,
                len(curve.trials),
                kind="bootstrap",
                studies=curve.studies,
                notes=[f"R² = {linear_r2(curve.mean):.3f}"],
            )
        )
    return units


def later_reinit_costs_less(ev: Evidence, shared: Shared) -> list[Unit]:
    return [
        slope_unit(
            "later_reinit_costs_less",
            f"{task} n={size}",
            "per-trial OLS slope of score over k > 0 (t over trials)",
            range(ev.num_layers + 1),
            curve.per_trial,
            studies=curve.studies,
            notes=list(curve.notes),
        )
        for (task, size), curve in shared.curves.items()
    ]


def reinit_curve_not_monotone(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for (task, size), rows in plain_by(ev, "progressive").groupby(["task", "size"]):
        by_k = dict(zip(rows["k"].astype(int), rows["slug"]))
        for k in sorted(by_k):
            if k + 1 in by_k:
                units.append(
                    contrast_unit(
                        ev,
                        "reinit_curve_not_monotone",
                        task,
                        int(size),
                        {by_k[k]: 1, by_k[k + 1]: -1},
                        f"score(k={k}) − score(k={k + 1}) > 0",
                        name=f"{task} n={size} k={k} vs {k + 1}",
                    )
                )
    return units


def all_reinit_at_chance(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for (task, size), rows in plain_by(ev, "progressive").groupby(["task", "size"]):
        _, scratch = refs(rows)
        chance = chance_level(ev, task)
        if scratch not in set(rows["slug"]):
            continue
        unit = contrast_unit(
            ev,
            "all_reinit_at_chance",
            task,
            int(size),
            {scratch: 1},
            f"|scratch − chance| < {ev.settings.chance_margin} (TOST)",
            shape="within",
            margin=ev.settings.chance_margin,
            shift=chance if np.isfinite(chance) else 0.0,
        )
        if not np.isfinite(chance):
            unit.refused, unit.p_for, unit.p_against = (
                "chance level unknown without the eval labels",
                math.nan,
                math.nan,
            )
        else:
            unit.notes.append(f"chance level {chance:.3f}")
        units.append(unit)
    return units


# --- seed 001: probes against finetuning ----------------------------------------------------------------------


def probe_units_refused(unit: Unit, probe: ProbeCurve) -> Unit:
    if probe.draws is None:
        unit.refused, unit.p_for, unit.p_against = ONE_PROBE_SEED, math.nan, math.nan
        unit.interval, unit.interval_note = (math.nan, math.nan), ONE_PROBE_SEED
    return unit


def paired_draws(probe: ProbeCurve, curve: Curve) -> np.ndarray:
    """Probe draws paired with the finetuning curve's draws: draw b of both took the same eval-set
    draw (Shared.eval_draws) and independent draws of probe seeds and trials; the fixed probe
    curve where there is one seed (the unit is then refused)."""
    probe_draws = probe.draws if probe.draws is not None else np.broadcast_to(probe.mean, curve.draws.shape)
    return probe_draws[: len(curve.draws)]


def rho_draws(probe: ProbeCurve, curve: Curve) -> np.ndarray:
    return hypothesis.spearman_rows(paired_draws(probe, curve), curve.draws)


def probes_do_not_predict(ev: Evidence, shared: Shared) -> list[Unit]:
    units, margin = [], ev.settings.correlation_margin
    for task, size, probe, curve in shared.probed_at_largest_size():
        unit = bootstrap_unit(
            ev,
            "probes_do_not_predict_finetuning",
            f"{task} n={size}",
            f"|Spearman ρ(probe curve, finetuning curve)| < {margin} (bootstrap TOST)",
            hypothesis.spearman(probe.mean, curve.mean),
            rho_draws(probe, curve),
            len(curve.trials),
            kind="bootstrap",
            margin=margin,
            gaps=((task, size),),
            studies=curve.studies,
            notes=[
                f"{probe.seeds} probe seed(s); the draws resample the trials, the {probe.resampled}",
                f"exact permutation p of ρ (raw) = {p_text(hypothesis.exact_spearman_p(probe.mean, curve.mean))}",
                *secondary_probe_measures(ev, task, curve),
            ],
        )
        units.append(probe_units_refused(unit, probe))
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
            notes=[f"ρ {rho[sizes[0]]:.3f} at n={sizes[0]}, {rho[sizes[-1]]:.3f} at n={sizes[-1]}"],
        )
        units.append(probe_units_refused(unit, probe))
    return units


def probe_peaks_lower(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for task, size, probe, curve in shared.probed_at_largest_size():
        unit = bootstrap_unit(
            ev,
            "probe_peaks_lower_than_finetuning",
            f"{task} n={size}",
            "bootstrap of max(finetuning curve) − max(probe curve) > 0",
            curve.mean.max() - probe.mean.max(),
            curve.draws.max(axis=1) - paired_draws(probe, curve).max(axis=1),
            len(curve.trials),
            kind="bootstrap",
            studies=curve.studies,
        )
        units.append(probe_units_refused(unit, probe))
    return units


def probe_needs_more_layers(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for task, size, probe, curve in shared.probed_at_largest_size():
        unit = bootstrap_unit(
            ev,
            "probe_needs_more_layers",
            f"{task} n={size}",
            "bootstrap of k90(probe) − k90(finetuning) > 0",
            first_reaching(probe.mean) - first_reaching(curve.mean),
            along_draws(first_reaching, paired_draws(probe, curve)) - along_draws(first_reaching, curve.draws),
            len(curve.trials),
            kind="bootstrap",
            gaps=((task, size),),
            studies=curve.studies,
            notes=[f"k90 probe {k_text(first_reaching(probe.mean))}, finetuning {k_text(first_reaching(curve.mean))}"],
        )
        units.append(probe_units_refused(unit, probe))
    return units


def top_two_hurt_probing(ev: Evidence, shared: Shared) -> list[Unit]:
    L = ev.num_layers
    return [
        probe_units_refused(
            estimate_test_unit(
                "top_two_layers_hurt_probing",
                task,
                f"probe(layer {L - 2}) − probe(layer {L}) > 0, paired by probe seed",
                probe_contrast(ev, task, probe, {L - 2: 1, L: -1}),
                notes=[
                    f"{probe.seeds} probe seed(s) as trials"
                    + (", crossed with the eval examples" if probe.eval_resampled else " (no stored predictions)")
                ],
            ),
            probe,
        )
        for task, probe in shared.probes.items()
    ]


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
            notes=[f"chance level {chance:.3f}; {probe.seeds} probe seed(s) as trials"],
        )
        unit = probe_units_refused(unit, probe)
        if not np.isfinite(chance):
            unit.refused = "chance level unknown without the eval labels"
        units.append(unit)
    return units


def sst2_early_layers(ev: Evidence, shared: Shared) -> list[Unit]:
    claim = "sst2_early_layers_transfer_though_probing_near_chance"
    units = probe_near_chance_units(ev, shared, claim, "sst2", range(1, 4))
    blocks = plain_by(ev, "block_preserve")
    for (task, size), rows in blocks[blocks["task"] == "sst2"].groupby(["task", "size"]):
        first = rows[rows["layer"] == 1]
        if len(first):
            _, scratch = refs(rows)
            units.append(
                contrast_unit(
                    ev,
                    claim,
                    task,
                    int(size),
                    {first["slug"].iloc[0]: 1, scratch: -1},
                    "preserve(first block) − scratch > 0",
                    name=f"sst2 n={size} first block preserved",
                )
            )
    return units if len(units) > 3 else []


def cola_transfers_without_probe(ev: Evidence, shared: Shared) -> list[Unit]:
    claim = "cola_transfers_though_probing_at_chance"
    progressive = plain_by(ev, "progressive")
    gap = []
    for (task, size), rows in progressive[progressive["task"] == "cola"].groupby(["task", "size"]):
        full, scratch = refs(rows)
        gap.append(contrast_unit(ev, claim, task, int(size), {full: 1, scratch: -1}, "full − scratch > 0 on CoLA"))
    units = probe_near_chance_units(ev, shared, claim, "cola", range(ev.num_layers + 1))
    return units + gap if units and gap else []


# --- seed 001: blocks, permutations, single layers ------------------------------------------------------------


def highest_probing_window(ev: Evidence, shared: Shared, task: str, window: int) -> int | None:
    """The start of the `window`-layer block with the highest mean probe score (layers 1..L)."""
    if task not in shared.probes:
        return None
    probe = shared.probes[task].mean[1:]
    means = [probe[s : s + window].mean() for s in range(len(probe) - window + 1)]
    return int(np.argmax(means)) + 1


def block_units(
    ev: Evidence, shared: Shared, claim: str, scheme: str, against: str, shape: str, test: str
) -> list[Unit]:
    units = []
    for (task, size), rows in plain_by(ev, scheme).groupby(["task", "size"]):
        window = int(rows["window"].iloc[0])
        start = highest_probing_window(ev, shared, task, window)
        chosen = rows[rows["layer"] == start]
        if start is None or chosen.empty:
            continue
        full, scratch = refs(rows)
        reference = full if against == "full" else scratch
        unit = contrast_unit(
            ev,
            claim,
            task,
            int(size),
            {chosen["slug"].iloc[0]: 1, reference: -1},
            test,
            name=f"{task} n={size} layers {start}-{start + window - 1}",
            shape=shape,
            margin=ev.settings.block_margin,
            gap=True,
        )
        unit.notes.append(
            f"block chosen by the highest mean probe score ({shared.probes[task].seeds} probe seed(s); "
            "the choice is not resampled)"
        )
        units.append(unit)
    return units


def high_probing_not_necessary(ev: Evidence, shared: Shared) -> list[Unit]:
    return block_units(
        ev,
        shared,
        "high_probing_layers_not_necessary",
        "block_reinit",
        "full",
        "above",
        f"reinit(highest-probing block) − full > −{ev.settings.block_margin} (non-inferiority)",
    )


def high_probing_not_sufficient(ev: Evidence, shared: Shared) -> list[Unit]:
    return block_units(
        ev,
        shared,
        "high_probing_layers_not_sufficient",
        "block_preserve",
        "scratch",
        "below",
        f"preserve(highest-probing block) − scratch < {ev.settings.block_margin} (non-superiority)",
    )


def early_layers_help_most(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for (task, size), rows in plain_by(ev, "block_preserve").groupby(["task", "size"]):
        first, last = rows[rows["layer"] == rows["layer"].min()], rows[rows["layer"] == rows["layer"].max()]
        if first["slug"].iloc[0] == last["slug"].iloc[0]:
            continue
        units.append(
            contrast_unit(
                ev,
                "early_layers_help_most",
                task,
                int(size),
                {first["slug"].iloc[0]: 1, last["slug"].iloc[0]: -1},
                "preserve(first block) − preserve(last block) > 0",
                gap=True,
            )
        )
    return units


def useful_layers_differ_by_task(ev: Evidence, shared: Shared) -> list[Unit]:
    """Two-way ANOVA (statsmodels) of block-reinit scores on task × block: the interaction's F
    test. It can show that the profiles differ, never that they are alike (no p against)."""
    units = []
    reinit = plain_by(ev, "block_reinit")
    for size, rows in reinit[reinit["status"] == "ok"].groupby("size"):
        if rows["task"].nunique() < 2 or rows["layer"].nunique() < 2:
            continue
        fit = smf.ols("value ~ C(task) * C(layer)", data=rows.astype({"value": float})).fit()
        table = anova_lm(fit, typ=2)
        p = float(table.loc["C(task):C(layer)", "PR(>F)"]) if "C(task):C(layer)" in table.index else math.nan
        unit = Unit(
            "useful_layers_differ_by_task",
            f"n={size}: {', '.join(sorted(rows['task'].unique()))}",
            "task × block interaction in block-reinit scores (two-way ANOVA F)",
            float(table.loc["C(task):C(layer)", "F"]) if np.isfinite(p) else math.nan,
            (math.nan, math.nan),
            int(rows.groupby(["task", "layer"]).size().min()),
            p_for=p,
            studies=tuple(sorted(set(rows["study"]))),
        )
        unit.interval_note = "an F statistic: no interval"
        unit.notes.append("estimate is the F statistic; the test cannot show that the profiles are alike")
        if not np.isfinite(p):
            unit.refused = "one run per cell: no residual variance"
        units.append(unit)
    return units


def permutation_lowers_accuracy(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for (task, size), rows in plain_by(ev, "permutation").groupby(["task", "size"]):
        full, _ = refs(rows)
        units.append(
            contrast_unit(
                ev,
                "permutation_lowers_accuracy",
                task,
                int(size),
                {full: 1, rows["slug"].iloc[0]: -1},
                "full − permuted > 0",
            )
        )
    return units


def permuted_closer_to_scratch(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for (task, size), rows in plain_by(ev, "permutation").groupby(["task", "size"]):
        full, scratch = refs(rows)
        units.append(
            contrast_unit(
                ev,
                "permuted_closer_to_scratch",
                task,
                int(size),
                {full: 0.5, scratch: 0.5, rows["slug"].iloc[0]: -1},
                "(full + scratch)/2 − permuted > 0 (below the midpoint)",
                gap=True,
            )
        )
    return units


def permutation_affects_tasks_alike(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    permuted = plain_by(ev, "permutation")
    permuted = permuted[permuted["status"] == "ok"]
    for size, rows in permuted.groupby("size"):
        by_task = rows.pivot_table(index="trial", columns="task", values="value")
        tasks = list(by_task.columns)
        for i, a in enumerate(tasks):
            for b in tasks[i + 1 :]:
                pair = by_task[[a, b]].dropna()
                units.append(
                    exact_unit(
                        "permutation_affects_tasks_alike",
                        f"{a} ~ {b} n={size}",
                        "Spearman ρ over the same permutations > 0 (exact permutation test, one-sided)",
                        pair[a],
                        pair[b],
                        studies=tuple(sorted(set(rows["study"]))),
                    )
                )
    return units


def single_layer_barely_matters(ev: Evidence, shared: Shared) -> list[Unit]:
    units, margin = [], ev.settings.single_layer_margin
    for (task, size, layer), rows in plain_by(ev, "single_layer").groupby(["task", "size", "layer"]):
        full, _ = refs(rows)
        name = f"{task} n={size} layer {int(layer)}"
        if task == "cola" and int(layer) == 1:  # the paper's own exception: layer 1 matters on CoLA
            units.append(
                contrast_unit(
                    ev,
                    "single_layer_barely_matters",
                    task,
                    int(size),
                    {full: 1, rows["slug"].iloc[0]: -1},
                    "exception: full − single layer 1 > 0 on CoLA",
                    name=name,
                    gap=True,
                )
            )
            continue
        units.append(
            contrast_unit(
                ev,
                "single_layer_barely_matters",
                task,
                int(size),
                {rows["slug"].iloc[0]: 1, full: -1},
                f"|single layer − full| < {margin} (TOST)",
                name=name,
                shape="within",
                margin=margin,
                gap=True,
            )
        )
    return units


# --- seed 001 appendices: modifiers against the plain run at the same k ------------------------------------------


def modified_units(
    ev: Evidence, claim: str, select, shape: str, test: str, sizes=lambda size: True, sign: int = 1
) -> list[Unit]:
    """Each modified condition (`select` of the runs) against the plain run at the same task, size
    and k, paired by trial: sign * (modified − plain)."""
    units, plain = [], ev.plain()
    modified = ev.runs[~ev.runs["plain"]] if "plain" in ev.runs else ev.runs.iloc[0:0]
    for (task, size, k, slug), _ in select(modified).groupby(["task", "size", "k", "slug"]):
        if not sizes(int(size)):
            continue
        base = plain[
            (plain["scheme"] == "progressive") & (plain["task"] == task) & (plain["size"] == size) & (plain["k"] == k)
        ]
        if base.empty:
            continue
        units.append(
            contrast_unit(
                ev,
                claim,
                task,
                int(size),
                {slug: sign, base["slug"].iloc[0]: -sign},
                test,
                name=f"{task} n={size} {slug}",
                shape=shape,
                margin=ev.settings.modifier_margin,
            )
        )
    return units


def default_epochs(ev: Evidence, size: int) -> int:
    return ev.train.epochs_for(size) if ev.train else 3


def longer_training(ev: Evidence, shared: Shared) -> list[Unit]:
    small = ev.train.small_size if ev.train else 0
    return modified_units(
        ev,
        "epochs_beyond_3_do_not_help_with_plenty_of_data",
        lambda r: r[
            (r["lr_multiplier"] == 1)
            & ~r["keep_layernorm"].astype(bool)
            & r["intermediate_task"].isna()
            & (r["epochs"] > r["size"].map(lambda s: default_epochs(ev, s)))
        ],
        "below",
        f"longer − default epochs < {ev.settings.modifier_margin} (non-superiority)",
        sizes=lambda s: s > small,
    )


def five_epochs_help(ev: Evidence, shared: Shared) -> list[Unit]:
    small = ev.train.small_size if ev.train else 0
    return modified_units(
        ev,
        "five_epochs_help_with_little_data",
        lambda r: r[
            (r["lr_multiplier"] == 1)
            & ~r["keep_layernorm"].astype(bool)
            & r["intermediate_task"].isna()
            & (r["epochs"] < r["size"].map(lambda s: default_epochs(ev, s)))
        ],
        "greater",
        "default (small_epochs) − fewer epochs > 0",
        sizes=lambda s: s <= small,
        sign=-1,
    )


def lr_no_gain(ev: Evidence, shared: Shared) -> list[Unit]:
    return modified_units(
        ev,
        "lr_multiplier_does_not_help",
        lambda r: r[(r["lr_multiplier"] != 1) & (r["k"] < ev.num_layers)],
        "below",
        f"5× lr − plain < {ev.settings.modifier_margin} (non-superiority)",
    )


def lr_adds_variance(ev: Evidence, shared: Shared) -> list[Unit]:
    units, plain = [], ev.plain()
    modified = ev.runs[~ev.runs["plain"]] if "plain" in ev.runs else ev.runs.iloc[0:0]
    modified = modified[
        (modified["lr_multiplier"] != 1) & (modified["k"] < ev.num_layers) & (modified["status"] == "ok")
    ]
    for (task, size, k, slug), rows in modified.groupby(["task", "size", "k", "slug"]):
        base = plain[
            (plain["scheme"] == "progressive")
            & (plain["task"] == task)
            & (plain["size"] == size)
            & (plain["k"] == k)
            & (plain["status"] == "ok")
        ]
        a, b = rows["value"].to_numpy(float), base["value"].to_numpy(float)
        if len(b) == 0:
            continue
        ratio = (
            float(np.var(a, ddof=1) / np.var(b, ddof=1))
            if len(a) > 1 and len(b) > 1 and np.var(b, ddof=1) > 0
            else math.nan
        )
        unit = Unit(
            "lr_multiplier_adds_variance",
            f"{task} n={size} {slug}",
            "var(5× lr) / var(plain) > 1 (F test, one-sided)",
            ratio,
            (math.nan, math.nan),
            (len(a), len(b)),
            p_for=hypothesis.variance_ratio_p(a, b),
            p_against=hypothesis.variance_ratio_p(b, a),
            studies=tuple(sorted(set(rows["study"]) | set(base["study"]))),
        )
        unit.interval_note = "a variance ratio: no interval printed"
        unit.notes.append("estimate is the variance ratio; the F test assumes normal scores")
        if len(a) < 2 or len(b) < 2:
            unit.refused = "fewer than 2 runs on a side"
        units.append(unit)
    return units


def keep_layernorm_no_help(ev: Evidence, shared: Shared) -> list[Unit]:
    return modified_units(
        ev,
        "keep_layernorm_does_not_help",
        lambda r: r[r["keep_layernorm"].astype(bool) & (r["k"] < ev.num_layers)],
        "below",
        f"kept LayerNorm − plain < {ev.settings.modifier_margin} (non-superiority)",
    )


# --- seed 003: weight change at the end of training ------------------------------------------------------------


def full_model_output_change(ev: Evidence) -> pd.DataFrame:
    """End-of-training ‖ΔW‖ (Frobenius: the paper's L2 distance) of the output sublayer of the
    unmodified full model, per task, size, trial and layer."""
    w = ev.weight_change
    if w.empty:
        return pd.DataFrame(columns=["task", "size", "slug", "trial", "layer", "frobenius"])
    plain = ev.plain()
    full = plain[(plain["slug"] == plain["ref_full"]) & (plain["status"] == "ok")][["task", "size", "slug", "trial"]]
    rows = w[(w["sublayer"] == "output") & (w["status"] == "ok")].merge(
        full.drop_duplicates(), on=["task", "size", "slug", "trial"]
    )
    return rows.drop_duplicates(["task", "size", "trial", "layer"])


def later_layers_move_more(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for (task, size), rows in full_model_output_change(ev).groupby(["task", "size"]):
        by_trial = rows.pivot_table(index="trial", columns="layer", values="frobenius")
        layers = by_trial.columns.to_numpy(dtype=float)
        unit = slope_unit(
            "later_layers_move_more",
            f"{task} n={size}",
            "per-trial slope of end-of-training ‖ΔW_output‖ over layers > 0 (t over trials)",
            layers,
            by_trial.to_numpy(),
            studies=studies_of(ev.runs, task, size, set(rows["slug"])),
        )
        unit.notes.append(
            "exact permutation p of ρ(layer, mean ‖ΔW‖) (raw) = "
            + p_text(hypothesis.exact_spearman_p(layers, by_trial.mean().to_numpy()))
        )
        units.append(unit)
    return units


def per_trial_output_total(rows: pd.DataFrame) -> np.ndarray:
    return rows.groupby("trial")["frobenius"].apply(lambda f: float(np.sqrt((f**2).sum()))).to_numpy()


def size_pairs(rows: pd.DataFrame):
    for task, task_rows in rows.groupby("task"):
        sizes = sorted(set(task_rows["size"]))
        if len(sizes) >= 2:
            yield (
                task,
                sizes[0],
                sizes[-1],
                task_rows[task_rows["size"] == sizes[0]],
                task_rows[task_rows["size"] == sizes[-1]],
            )


def change_studies(ev: Evidence, task: str, sizes, rows: pd.DataFrame) -> tuple:
    return tuple(sorted({s for size in sizes for s in studies_of(ev.runs, task, size, set(rows["slug"]))}))


def more_data_moves_weights_more(ev: Evidence, shared: Shared) -> list[Unit]:
    return [
        welch_unit(
            "more_data_moves_weights_more",
            f"{task} n={large} vs n={small}",
            "Welch t: end-of-training ‖ΔW_output‖ (all layers) at the largest size − at the smallest > 0",
            per_trial_output_total(big),
            per_trial_output_total(little),
            studies=change_studies(ev, task, (small, large), big),
        )
        for task, small, large, little, big in size_pairs(full_model_output_change(ev))
    ]


def more_data_equal_steps(ev: Evidence, shared: Shared) -> list[Unit]:
    """Secondary: all sublayers' ‖ΔW‖ at the largest step count both sizes reached."""
    units = []
    changes = ev.layer_change
    if changes.empty:
        return units
    for task, small, large, little, big in size_pairs(changes):
        step = min(little.groupby("trial")["step"].max().min(), big.groupby("trial")["step"].max().min())
        unit = welch_unit(
            "more_data_moves_weights_more_at_equal_steps",
            f"{task} n={large} vs n={small}",
            f"Welch t: ‖ΔW‖ (all sublayers) at step {step} at the largest size − at the smallest > 0",
            per_trial_output_total(big[big["step"] == step]),
            per_trial_output_total(little[little["step"] == step]),
            studies=studies_of(ev.runs, task, large, set(ev.plain()["ref_full"])),
        )
        unit.notes.append("equal steps: controls the number of Adam steps, not how often each example was seen")
        units.append(unit)
    return units


def weight_change_interaction(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for task, small, large, little, big in size_pairs(full_model_output_change(ev)):
        slopes = [
            np.array(
                [
                    np.polyfit(r["layer"].to_numpy(float), r["frobenius"].to_numpy(float), 1)[0]
                    for _, r in rows.groupby("trial")
                ]
            )
            for rows in (big, little)
        ]
        units.append(
            welch_unit(
                "weight_change_grows_more_in_later_layers_with_more_data",
                f"{task} n={large} vs n={small}",
                "Welch t: per-trial slope of ‖ΔW_output‖ over layers at the largest size − at the smallest > 0",
                *slopes,
                studies=change_studies(ev, task, (small, large), big),
            )
        )
    return units


# --- seed 004: sequential finetuning and heads --------------------------------------------------------------------


def intermediate_beats_direct(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    runs = ev.runs[ev.runs["intermediate_task"].notna()] if "intermediate_task" in ev.runs else ev.runs.iloc[0:0]
    for (task, size, slug), rows in runs.groupby(["task", "size", "slug"]):
        direct = rows["ref_baseline"].iloc[0]
        units.append(
            contrast_unit(
                ev,
                "some_intermediate_task_beats_direct",
                task,
                int(size),
                {slug: 1, direct: -1},
                "after intermediate − direct > 0",
                name=f"{task} n={size} after {rows['intermediate_task'].iloc[0]}",
            )
        )
    return units


def head_units(ev: Evidence, claim: str, layers: Callable[[int], set], sign: int, test: str) -> list[Unit]:
    units = []
    for (task, size, layer, head), rows in plain_by(ev, "head").groupby(["task", "size", "layer", "head_index"]):
        if int(layer) not in layers(ev.num_layers):
            continue
        full, _ = refs(rows)
        units.append(
            contrast_unit(
                ev,
                claim,
                task,
                int(size),
                {rows["slug"].iloc[0]: sign, full: -sign},
                test,
                name=f"{task} n={size} layer {int(layer)} head {int(head)}",
            )
        )
    return units


def early_heads_hurt(ev: Evidence, shared: Shared) -> list[Unit]:
    return head_units(ev, "head_reinit_in_first_two_layers_hurts", lambda L: {1, 2}, -1, "full − head reinit > 0")


def late_heads_help(ev: Evidence, shared: Shared) -> list[Unit]:
    return head_units(ev, "head_reinit_in_last_two_layers_helps", lambda L: {L - 1, L}, 1, "head reinit − full > 0")


def specific_heads_matter(ev: Evidence, shared: Shared) -> list[Unit]:
    return head_units(ev, "specific_heads_matter", lambda L: set(range(1, L + 1)), -1, "full − head reinit > 0")


# --- the registry --------------------------------------------------------------------------------------------------

ALL_KS = "all_ks"  # Need.args value: ks 0..L (filled in when the command is written)
PROGRESSIVE = Need("progressive", "progressive", {"ks": ALL_KS})
BLOCKS = Need("block", "blocks", {"window": 3})

CLAIMS = [
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
        f"{SEED_001} §2, Fig. 1 caption, contribution 1",
        "The first few layers provide the majority of the improvement when finetuning data is plentiful.",
        "'Majority': k90, the first k reaching 90% of the full model's gain over scratch; 'first few': k90 ≤ "
        "report.few_layers_fraction × L (the paper's 3 of 12 is 0.25); 'plentiful': each task's largest size.",
        "bootstrap of few + ½ − k90 > 0; needs the gap",
        (PROGRESSIVE,),
        few_layers_suffice,
        needs_gap=True,
    ),
    Claim(
        "k90_grows_as_data_shrinks",
        f"{SEED_001} §2, contribution 1",
        "More pretrained layers are needed when finetuning data is scarce.",
        "k90 at a task's smallest size against its largest.",
        "bootstrap of k90(smallest) − k90(largest) > 0; needs the gap",
        (Need("progressive", "progressive", {"ks": ALL_KS}, sizes="two"),),
        k90_grows_as_data_shrinks,
        needs_gap=True,
    ),
    Claim(
        "probes_do_not_predict_finetuning",
        f"{SEED_001} §3, contribution 2",
        "Probing performance does not explain which layers matter for finetuning.",
        "Equivalence: |Spearman ρ| between the probe curve and the finetuning curve below report.correlation_margin "
        "at each task's largest size (the paper gives no number; the margin is a declared input).",
        "bootstrap TOST of |ρ| < margin, probe seeds and the shared eval set resampled; needs the gap",
        (Need("progressive", "progressive", {"ks": ALL_KS}, probe=True),),
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
            Need("progressive", "progressive", {"ks": ALL_KS}, tasks=("sst2",), probe=True),
            Need("block", "blocks", {"window": 3}, tasks=("sst2",)),
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
        (Need("progressive", "progressive", {"ks": ALL_KS}, tasks=("cola",), probe=True),),
        cola_transfers_without_probe,
    ),
    Claim(
        "agreement_grows_as_data_shrinks",
        f"{SEED_001} §3",
        "The curves for the smallest-data regime bear a greater similarity to the probing curves.",
        "Similarity = Spearman ρ(probe curve, finetuning curve); smallest against largest size.",
        "bootstrap of ρ(smallest) − ρ(largest) > 0, probe seeds and the shared eval set resampled; needs the gap",
        (Need("progressive", "progressive", {"ks": ALL_KS}, sizes="two", probe=True),),
        agreement_grows,
        needs_gap=True,
    ),
    Claim(
        "high_probing_layers_not_necessary",
        f"{SEED_001} §3-4, Fig. 1 caption",
        "Probing does not indicate which layers are necessary: removing the best-probing layers need not hurt.",
        "The block (of the blocks study's window) with the highest mean probe score, reinitialised, stays within "
        "report.block_margin of the full model (the paper's 'necessary' = performance decreases when removed).",
        "paired non-inferiority reinit(block) − full > −margin; needs the gap",
        (BLOCKS, Need("progressive", "progressive", {"ks": ALL_KS}, probe=True)),
        high_probing_not_necessary,
        needs_gap=True,
    ),
    Claim(
        "high_probing_layers_not_sufficient",
        f"{SEED_001} §3-4",
        "The best-probing layers are not sufficient: kept alone they do not beat scratch by much.",
        "That block alone preserved stays below scratch + report.block_margin (the paper's 'sufficient' = "
        "performance is higher than scratch when kept).",
        "paired non-superiority preserve(block) − scratch < margin; needs the gap",
        (Need("block", "blocks", {"window": 3}), Need("progressive", "progressive", {"ks": ALL_KS}, probe=True)),
        high_probing_not_sufficient,
        needs_gap=True,
    ),
    Claim(
        "useful_layers_differ_by_task",
        f"{SEED_001} §4, contribution 3",
        "The layers most beneficial to finetuning differ by task.",
        "The profile of block-reinit scores over blocks differs between tasks: the task × block interaction.",
        "two-way ANOVA F test of the interaction (statsmodels)",
        (Need("block", "blocks", {"window": 3}, min_tasks=2),),
        useful_layers_differ_by_task,
    ),
    Claim(
        "early_layers_help_most",
        f"{SEED_001} §4",
        "The earlier layers appear to be generally more helpful for finetuning than the later ones.",
        "The first block preserved alone against the last block preserved alone, per task and size.",
        "paired contrast preserve(first) − preserve(last) > 0; needs the gap",
        (BLOCKS,),
        early_layers_help_most,
        needs_gap=True,
    ),
    Claim(
        "permutation_lowers_accuracy",
        f"{SEED_001} §5, contribution 4, Fig. 3",
        "Reordering the pretrained layers significantly decreases downstream accuracy.",
        "The full model against the permuted runs, per task and size (the paper's main permutation claim).",
        "paired contrast full − permuted > 0",
        (Need("permutation", "permutation"),),
        permutation_lowers_accuracy,
    ),
    Claim(
        "permuted_closer_to_scratch",
        f"{SEED_001} §5 (secondary analysis)",
        "Scrambling the layers reduces finetuning to not much above a randomly initialised network.",
        "'Not much above': below the midpoint of full and scratch (a labelled secondary analysis of the "
        "paper's qualitative wording; the main claim is permutation_lowers_accuracy).",
        "paired contrast (full + scratch)/2 − permuted > 0; needs the gap",
        (Need("permutation", "permutation"),),
        permuted_closer_to_scratch,
        needs_gap=True,
        secondary=True,
    ),
    Claim(
        "permutation_affects_tasks_alike",
        f"{SEED_001} §5, Table 1",
        "A given permutation has similar effects across tasks (relatively high paired correlations).",
        "Spearman ρ > 0 between two tasks' scores over the same permutations (trial n uses permutation n on "
        "every task).",
        "exact permutation test, one-sided, raw p (at N trials the smallest p is 1/N!)",
        (Need("permutation", "permutation", min_tasks=2),),
        permutation_affects_tasks_alike,
    ),
    Claim(
        "single_layer_barely_matters",
        f"{SEED_001} App. C",
        "Reinitialising a single layer has little effect on finetuning, with the exception of the first layer on CoLA.",
        "Equivalence |single − full| < report.single_layer_margin at every task, size and layer; the exception is "
        "encoded as its own test: full − single(layer 1) > 0 on CoLA.",
        "TOST per layer (exception: paired contrast); needs the gap",
        (Need("single_layer", "single_layer", {"layers": "all_layers"}),),
        single_layer_barely_matters,
        needs_gap=True,
    ),
    Claim(
        "epochs_beyond_3_do_not_help_with_plenty_of_data",
        f"{SEED_001} App. D",
        "Training longer than three epochs has minimal effect at 5k examples.",
        "Runs with more than the default epochs against the plain run at the same k, at sizes above "
        "train.small_size; 'minimal' = a gain below report.modifier_margin.",
        "paired non-superiority longer − default < margin",
        (Need("progressive", "epochs", {"ks": [0, "L"]}, {"epochs": 6}, sizes="large"),),
        longer_training,
    ),
    Claim(
        "five_epochs_help_with_little_data",
        f"{SEED_001} App. D",
        "Training five epochs instead of three improves the 500-example runs by several points.",
        "Plain runs at sizes ≤ train.small_size (train.small_epochs) against runs of train.epochs at the same k.",
        "paired contrast default − fewer epochs > 0",
        (Need("progressive", "epochs_small", {"ks": [0, "L"]}, {"epochs": "train.epochs"}, sizes="small"),),
        five_epochs_help,
    ),
    Claim(
        "lr_multiplier_does_not_help",
        f"{SEED_001} App. E",
        "A 5× learning rate on the reinitialised layers does not improve performance.",
        "Each k < L of the lr-multiplier study against the plain run at the same k; gain below report.modifier_margin.",
        "paired non-superiority 5× − plain < margin",
        (Need("progressive", "lr_multiplier", {"ks": [0, 3]}, {"reinit_lr_multiplier": 5}),),
        lr_no_gain,
    ),
    Claim(
        "lr_multiplier_adds_variance",
        f"{SEED_001} App. E",
        "A higher learning rate appears to increase the variance of the evaluation metrics.",
        "Variance over trials of the 5× runs against the plain runs at the same k < L.",
        "one-sided F test of the variance ratio",
        (Need("progressive", "lr_multiplier", {"ks": [0, 3]}, {"reinit_lr_multiplier": 5}),),
        lr_adds_variance,
    ),
    Claim(
        "keep_layernorm_does_not_help",
        f"{SEED_001} App. F",
        "Preserving the LayerNorm parameters does not aid (and may even harm) finetuning of reinitialised layers.",
        "Each k < L of the keep-LayerNorm study against the plain run at the same k; gain below "
        "report.modifier_margin.",
        "paired non-superiority kept − plain < margin",
        (Need("progressive", "keep_layernorm", {"ks": [0, 3]}, {"keep_layernorm": True}),),
        keep_layernorm_no_help,
    ),
    Claim(
        "later_layers_move_more",
        f"{SEED_003} §4.5, §6.3, Fig. 3",
        "Higher layers change more during finetuning than lower layers (the curves are upward trending).",
        "End-of-training L2 (Frobenius) distance of the output sublayer of the full model, per layer, as the paper.",
        "one-sample t over trials of each trial's slope over layers > 0",
        (PROGRESSIVE,),
        later_layers_move_more,
    ),
    Claim(
        "more_data_moves_weights_more",
        f"{SEED_003} §1, §6.3",
        "With more training data, the weights of all layers are transformed more (at the end of finetuning).",
        "End-of-training ‖ΔW_output‖ over all layers of the full model, largest size against smallest.",
        "Welch t > 0",
        (Need("progressive", "progressive", {"ks": ALL_KS}, sizes="two"),),
        more_data_moves_weights_more,
    ),
    Claim(
        "more_data_moves_weights_more_at_equal_steps",
        f"{SEED_003} §6.3 (secondary analysis)",
        "(Secondary, not the paper's statement) More data moves the weights more at an equal number of steps.",
        "All sublayers' ‖ΔW‖ at the largest step count both sizes reached.",
        "Welch t > 0",
        (Need("progressive", "progressive", {"ks": ALL_KS}, sizes="two"),),
        more_data_equal_steps,
        secondary=True,
    ),
    Claim(
        "weight_change_grows_more_in_later_layers_with_more_data",
        f"{SEED_003} §6.3",
        "The increase in L2 distance over layers is steeper when the data size is bigger (layer × size interaction).",
        "Per-trial slope of end-of-training ‖ΔW_output‖ over layers, largest size against smallest.",
        "Welch t > 0",
        (Need("progressive", "progressive", {"ks": ALL_KS}, sizes="two"),),
        weight_change_interaction,
    ),
    Claim(
        "drop_point_shifts_with_data_size",
        f"{SEED_003} §6.1",
        "As training data shrink, the rapid accuracy drop begins at later layers: more early layers become important.",
        "The drop point = the k whose addition gains most (the curve's steepest step), smallest against largest size.",
        "bootstrap of drop point(smallest) − drop point(largest) > 0; needs the gap",
        (Need("progressive", "progressive", {"ks": ALL_KS}, sizes="two"),),
        drop_point_shifts,
        needs_gap=True,
    ),
    Claim(
        "cola_near_linear_drop",
        f"{SEED_003} §6.1, Fig. 1(d)",
        "CoLA shows a fairly linear drop in performance with increasing partial reinitialisation.",
        "R² of a straight line through the mean curve over k at least report.linear_r2.",
        "bootstrap of R² − threshold > 0",
        (Need("progressive", "progressive", {"ks": ALL_KS}, tasks=("cola",)),),
        cola_near_linear,
    ),
    Claim(
        "probe_peaks_lower_than_finetuning",
        f"{SEED_003} §6.2",
        "Probing reaches a lower peak accuracy than partial reinitialisation.",
        "max over k of the finetuning curve against max over layers of the probe curve, at each task's largest size.",
        "bootstrap of the difference of maxima > 0, probe seeds and the shared eval set resampled",
        (Need("progressive", "progressive", {"ks": ALL_KS}, probe=True),),
        probe_peaks_lower,
    ),
    Claim(
        "probe_needs_more_layers",
        f"{SEED_003} §6.2, contribution 2",
        "In probing, information from more layers is needed than in partial reinitialisation for comparable "
        "performance.",
        "k90 of the probe curve against k90 of the finetuning curve (each relative to its own range).",
        "bootstrap of k90(probe) − k90(finetuning) > 0, probe seeds and the shared eval set resampled; needs the gap",
        (Need("progressive", "progressive", {"ks": ALL_KS}, probe=True),),
        probe_needs_more_layers,
        needs_gap=True,
    ),
    Claim(
        "top_two_layers_hurt_probing",
        f"{SEED_003} §6.2",
        "The highest two layers hurt probing performance.",
        "Probe score at layer L−2 against layer L.",
        "paired contrast of probe(L−2) − probe(L) > 0, the probe seeds as trials crossed with the eval examples",
        (Need("progressive", "progressive", {"ks": ALL_KS}, probe=True),),
        top_two_hurt_probing,
    ),
    Claim(
        "some_intermediate_task_beats_direct",
        f"{SEED_004} §6.1, abstract",
        "There are cases where finetuning on an intermediate task first beats finetuning directly on the final task.",
        "Every (final, intermediate) pair of the sequential study against direct finetuning; existential.",
        "paired contrast after intermediate − direct > 0, Holm across the report",
        (Need("progressive", "sequential", {"ks": ["L"]}, {"intermediate_tasks": "data.tasks"}, min_tasks=2),),
        intermediate_beats_direct,
        every=False,
    ),
    Claim(
        "later_reinit_costs_less",
        f"{SEED_004} §6.2, abstract",
        "Reinitialising downstream layers causes a smaller decrease than reinitialising upstream layers.",
        "Reinitialising layers ≥ k is the progressive scheme at k − 1: the score rises with k.",
        "one-sample t over trials of each trial's slope of score over k > 0",
        (PROGRESSIVE,),
        later_reinit_costs_less,
    ),
    Claim(
        "reinit_curve_not_monotone",
        f"{SEED_004} §6.2, abstract",
        "The change in performance does not decrease monotonically as the next upstream layer is reinitialised.",
        "Somewhere along the progressive curve, keeping one more layer lowers the score; existential over adjacent k.",
        "paired contrast score(k) − score(k+1) > 0, Holm across the report",
        (PROGRESSIVE,),
        reinit_curve_not_monotone,
        every=False,
    ),
    Claim(
        "all_reinit_at_chance",
        f"{SEED_004} §6.2",
        "Every task exhibits random-guessing behaviour when all layers are reinitialised.",
        "k = 0 within report.chance_margin of the chance level (majority class share; MCC 0).",
        "TOST |scratch − chance| < margin",
        (PROGRESSIVE,),
        all_reinit_at_chance,
    ),
    Claim(
        "head_reinit_in_first_two_layers_hurts",
        f"{SEED_004} §6.3, Fig. 7-8",
        "Reinitialising any attention head in layers 1 or 2 decreases performance (up to the 75th percentile).",
        "Every head reinitialised in layers 1-2 against the full model.",
        "paired contrast full − head reinit > 0",
        (Need("head", "heads", {"layers": [1, 2, "L-1", "L"], "heads": [0]}),),
        early_heads_hurt,
    ),
    Claim(
        "head_reinit_in_last_two_layers_helps",
        f"{SEED_004} §6.3",
        "Reinitialising any attention head in the downstream layers improves performance.",
        "Every head reinitialised in layers L−1 and L against the full model.",
        "paired contrast head reinit − full > 0",
        (Need("head", "heads", {"layers": [1, 2, "L-1", "L"], "heads": [0]}),),
        late_heads_help,
    ),
    Claim(
        "specific_heads_matter",
        f"{SEED_004} §6.3",
        "Specific attention heads (4 and 9 in BERT-base) hold information whose loss decreases performance.",
        "Some head reinitialised lowers the score; existential over every head and layer the heads study ran.",
        "paired contrast full − head reinit > 0, Holm across the report",
        (Need("head", "heads", {"layers": [1, 2, "L-1", "L"], "heads": [0]}),),
        specific_heads_matter,
        every=False,
    ),
]
BY_ID = {claim.id: claim for claim in CLAIMS}


# --- numbers as the report and its notes print them ---


def k_text(value: float) -> str:
    return "undefined" if not np.isfinite(value) else str(int(value))


def p_text(value) -> str:
    return "n/a" if value is None or not np.isfinite(value) else f"{value:.3g}"
