"""The registry of the studies' claims, each a stated test, and the report that reads it.

Every claim is tested per unit (a task and size, or a layer of one): a directional claim by
a paired contrast with its CI, a "no effect" claim by an equivalence test (TOST) against a
margin declared in params.yaml (`report:`) before the data are seen, k90 and correlations of
curves by a bootstrap over trials (and eval examples). All p-values of the report form one
family, Holm-adjusted at `report.alpha`.

A unit is *for* the claim when its adjusted test resolves in the claim's direction (for a
"no effect" claim: equivalence shown), *against* when it resolves the other way (a
difference beyond the margin), else unresolved. The rule for combining units (the claims
are universal, "at every task and size"): a claim is **supported** when every counted unit
is for it, **contradicted** when any counted unit is against it, else **inconclusive**
("not run" without rows). A unit of a claim that needs the full-vs-scratch gap is not
counted where that gap is itself unresolved: with no transfer to measure, it can say
nothing about transfer. For every inconclusive claim the report gives the trials that
would decide it at `report.power` and the `dvc exp run` command that adds them.

Runs are never dropped for their outcome: collapsed runs (one class predicted) count like
any other; only a training failure (non-finite loss) removes a run, and it is counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from src.config.schema import ReportConfig
from src.stats import hypothesis
from src.stats.hypothesis import Bootstrap, Estimate

NOT_RUN = "not run"
CLAIMS = {  # id: (the claim in one sentence, where it is made, its test)
    "full_beats_scratch": (
        "The fully pretrained model (k = L) finetunes better than the model trained from scratch (k = 0) at every "
        "task and size.",
        "Tamkin et al. 2020 §2, Fig. 1",
        "paired contrast full − scratch > 0",
    ),
    "k90_grows_as_data_shrinks": (
        "The less finetuning data, the more pretrained layers are needed to reach 90% of the full model's gain over "
        "scratch.",
        "Tamkin et al. 2020 §2",
        "bootstrap of k90(smallest size) − k90(largest size) > 0; needs the gap",
    ),
    "permuted_closer_to_scratch": (
        "Shuffling the order of the pretrained layers brings finetuning down closer to scratch than to the full model.",
        "Tamkin et al. 2020 §5",
        "paired contrast (full + scratch)/2 − permuted > 0 (below the midpoint); needs the gap",
    ),
    "probes_do_not_predict_finetuning": (
        "A layer's probing score does not predict how much keeping layers up to it helps finetuning.",
        "Tamkin et al. 2020 §3",
        "equivalence: bootstrap |Spearman ρ(probe curve, finetuning curve)| < correlation margin at each task's "
        "largest size; needs the gap",
    ),
    "agreement_grows_as_data_shrinks": (
        "Probing and progressive finetuning curves agree more when finetuning data is scarce.",
        "Tamkin et al. 2020 §3",
        "bootstrap of ρ(smallest size) − ρ(largest size) > 0; needs the gap",
    ),
    "later_layers_move_more": (
        "Finetuning changes the weights of later layers more than those of earlier layers.",
        "Singh & Giovanardi §4.5, §6.3",
        "bootstrap of Spearman ρ(layer, ‖ΔW‖ of the full model) > 0",
    ),
    "more_data_moves_weights_more": (
        "The more finetuning data, the more finetuning changes the weights.",
        "Singh & Giovanardi §4.5, §6.3",
        "Welch t: ‖ΔW‖ (all layers, full model) at the largest size − at the smallest > 0, at equal step counts",
    ),
    "single_layer_barely_matters": (
        "Reinitialising any single layer barely changes the finetuned score.",
        "Tamkin et al. 2020 App. C",
        "equivalence (TOST): |single layer − full| < single-layer margin, paired by trial; needs the gap",
    ),
}
NEEDS_GAP = {
    "k90_grows_as_data_shrinks",
    "permuted_closer_to_scratch",
    "probes_do_not_predict_finetuning",
    "agreement_grows_as_data_shrinks",
    "single_layer_barely_matters",
}


@dataclass
class Evidence:
    """What the claims are tested on. `runs`: one headline row per run of a plain condition
    (task, size, slug, trial, scheme, k, layer, value, status, collapsed, study); predictions
    by (task, size, slug, trial) and eval labels by task; `layer_change`: the full model's
    per-layer ‖ΔW‖ by step (task, size, trial, step, layer, frobenius)."""

    runs: pd.DataFrame
    predictions: dict
    labels: dict
    probe: pd.DataFrame
    layer_change: pd.DataFrame
    num_layers: int
    settings: ReportConfig  # params.yaml `report:`


@dataclass(eq=False)  # compared and hashed by identity: a unit is one test
class Unit:
    """One test of one claim on one unit."""

    claim: str
    name: str  # e.g. "rt_sentiment n=256"
    kind: str  # difference | equivalence | bootstrap | bootstrap-equivalence | welch
    result: object  # Estimate, Bootstrap or a Welch dict
    gaps: tuple = ()  # the (task, size) whose full-vs-scratch gap the unit needs
    studies: tuple = ()  # studies that report the unit's runs (for the planner's command)
    notes: list = field(default_factory=list)
    key: tuple = ()  # full_beats_scratch: its (task, size), the gap other units look up
    p_for: float = math.nan  # raw p of the test supporting the claim
    p_against: float = math.nan  # raw p of the test contradicting it (equivalence kinds only)
    adjusted_for: float = math.nan
    adjusted_against: float = math.nan
    status: str = "unresolved"
    counted: bool = True


# --- building units ----------------------------------------------------------------------------------


def _plain_progressive(runs: pd.DataFrame) -> pd.DataFrame:
    return runs[runs["scheme"] == "progressive"]


def _trials(runs: pd.DataFrame, task: str, size: int, slugs: list[str]) -> tuple[list[int], int, int]:
    """(trials every slug finished at (task, size), diverged runs left out, collapsed runs kept)."""
    rows = runs[(runs["task"] == task) & (runs["size"] == size) & runs["slug"].isin(slugs)]
    ok = rows[rows["status"] == "ok"]
    common = set.intersection(*(set(ok.loc[ok["slug"] == s, "trial"]) for s in slugs)) if slugs else set()
    used = ok[ok["trial"].isin(common)]
    return (
        sorted(int(t) for t in common),
        int((rows["status"] != "ok").sum()),
        int(used["collapsed"].fillna(False).astype(bool).sum()),
    )


def _stack(ev: Evidence, task: str, size: int, slug: str, trials: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(predictions [T, N], scores [T]) of one condition over `trials`."""
    rows = (
        ev.runs[(ev.runs["task"] == task) & (ev.runs["size"] == size) & (ev.runs["slug"] == slug)]
        .drop_duplicates("trial")
        .set_index("trial")
    )
    scores = rows.loc[trials, "value"].to_numpy(dtype=float)
    keys = [(task, size, slug, t) for t in trials]
    if all(k in ev.predictions for k in keys) and task in ev.labels:
        return np.stack([ev.predictions[k] for k in keys]), scores
    return None, scores  # results without predictions: resampled over trials only


def _studies(runs: pd.DataFrame, task: str, size: int, slugs: list[str]) -> tuple:
    rows = runs[(runs["task"] == task) & (runs["size"] == size) & runs["slug"].isin(slugs)]
    return tuple(sorted(set(rows["study"])))


def _full_slugs(runs: pd.DataFrame) -> list[str]:
    return list(runs["ref_full"].unique())


def _metric(runs: pd.DataFrame, task: str) -> str:
    return str(runs.loc[runs["task"] == task, "metric"].iloc[0])


def contrast_unit(
    ev: Evidence,
    claim: str,
    task: str,
    size: int,
    weights: dict[str, float],
    kind: str = "difference",
    name: str | None = None,
    gap: bool = False,
) -> Unit:
    """A paired contrast sum_slug weight * score over the trials every slug finished."""
    slugs = list(weights)
    trials, diverged, collapsed = _trials(ev.runs, task, size, slugs)
    metric, labels = _metric(ev.runs, task), np.asarray(ev.labels.get(task, np.zeros(1)))
    terms = [(w, *_stack(ev, task, size, slug, trials)) for slug, w in weights.items()]
    if any(predictions is None for _, predictions, _ in terms):
        metric, terms = "trials only", [(w, np.zeros((len(trials), labels.size)), scores) for w, _, scores in terms]
    estimate = (
        hypothesis.paired_contrast(terms, labels, metric, ev.settings.bootstrap_resamples, seed=0)
        if trials
        else Estimate(math.nan, math.nan, 0)
    )
    notes = [f"{diverged} diverged run(s) left out"] if diverged else []
    notes += [f"{collapsed} collapsed run(s) kept"] if collapsed else []
    return Unit(
        claim,
        name or f"{task} n={size}",
        kind,
        estimate,
        ((task, size),) if gap else (),
        _studies(ev.runs, task, size, slugs),
        notes,
        key=(task, size),
    )


def _curve_draws(
    ev: Evidence, task: str, size: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, list[int], list[str]] | None:
    """(mean curve over k = 0..L, bootstrap draws of it [B, L+1], trials, notes) from the trials
    that finished at every k (the same trial set across the curve), resampling trials and,
    for accuracy, eval examples, the same draw at every k."""
    slugs = [f"k{k}" for k in range(ev.num_layers + 1)]
    rows = _plain_progressive(ev.runs)
    rows = rows[(rows["task"] == task) & (rows["size"] == size)]
    by_k = {int(k): s for k, s in zip(rows["k"], rows["slug"])}
    if sorted(by_k) != list(range(ev.num_layers + 1)):
        return None
    slugs = [by_k[k] for k in range(ev.num_layers + 1)]
    trials, diverged, collapsed = _trials(ev.runs, task, size, slugs)
    if not trials:
        return None
    B = ev.settings.bootstrap_resamples
    labels = np.asarray(ev.labels.get(task, np.zeros(1)))
    trial_counts = rng.multinomial(len(trials), np.full(len(trials), 1 / len(trials)), size=B)
    example_counts = rng.multinomial(labels.size, np.full(labels.size, 1 / labels.size), size=B).astype(float)
    metric = _metric(ev.runs, task)
    curve, draws = [], []
    for slug in slugs:
        predictions, scores = _stack(ev, task, size, slug, trials)
        if predictions is None:
            metric, predictions = "trials only", np.zeros((len(trials), labels.size))
        per_trial = hypothesis.example_weighted_metric(metric, predictions, labels, example_counts, scores)
        curve.append(scores.mean())
        draws.append((per_trial * trial_counts).sum(axis=1) / len(trials))
    notes = [f"{diverged} diverged run(s) left out"] if diverged else []
    notes += [f"{collapsed} collapsed run(s) kept"] if collapsed else []
    return np.array(curve), np.stack(draws, axis=1), trials, notes


def first_reaching(values_by_k, fraction: float = 0.9) -> float:
    """First index whose gain over index 0 reaches `fraction` of the gain at the last index (L);
    NaN when that gain is not positive, since "90% of no gain" is undefined."""
    gains = np.asarray(values_by_k, dtype=float)
    gains = gains - gains[0]
    if not gains[-1] > 0:
        return math.nan
    target = fraction * gains[-1]
    return float(np.argmax((gains >= target) | np.isclose(gains, target)))


def _bootstrap_unit(claim, name, estimate, draws, n, gaps, studies, notes, kind="bootstrap") -> Unit:
    return Unit(claim, name, kind, Bootstrap(float(estimate), draws, n), tuple(gaps), studies, list(notes))


# --- the claims ----------------------------------------------------------------------------------------


def claim_units(ev: Evidence) -> dict[str, list[Unit]]:
    """Every claim's units, untested claims with none."""
    runs, L = ev.runs, ev.num_layers
    rng = np.random.default_rng(0)
    units = {claim: [] for claim in CLAIMS}
    if runs.empty:
        return units
    progressive = _plain_progressive(runs)
    curves = {}
    for (task, size), rows in progressive.groupby(["task", "size"]):
        ref = rows.iloc[0]
        if {ref["ref_full"], ref["ref_scratch"]} <= set(rows["slug"]):
            units["full_beats_scratch"].append(
                contrast_unit(
                    ev, "full_beats_scratch", task, int(size), {ref["ref_full"]: 1.0, ref["ref_scratch"]: -1.0}
                )
            )
        drawn = _curve_draws(ev, task, int(size), rng)
        if drawn is not None:
            curves[(task, int(size))] = drawn

    probe_curves = (
        ev.probe.astype({"layer": int})
        .groupby(["task", "layer"])["value"]
        .mean()
        .unstack("layer")
        .reindex(columns=range(L + 1))
        .dropna()
        if not ev.probe.empty
        else pd.DataFrame()
    )
    for task in sorted({t for t, _ in curves}):
        sizes = sorted(s for t, s in curves if t == task)
        progressive_slugs = list(progressive.loc[progressive["task"] == task, "slug"].unique())
        studies = tuple(sorted({study for size in sizes for study in _studies(runs, task, size, progressive_slugs)}))
        if len(sizes) >= 2:
            small, large = curves[(task, sizes[0])], curves[(task, sizes[-1])]
            k90 = lambda draws: np.apply_along_axis(first_reaching, 1, draws)  # noqa: E731
            estimate = first_reaching(small[0]) - first_reaching(large[0])
            unit = _bootstrap_unit(
                "k90_grows_as_data_shrinks",
                f"{task} n={sizes[0]} vs n={sizes[-1]}",
                estimate,
                k90(small[1]) - k90(large[1]),
                min(len(small[2]), len(large[2])),
                [(task, sizes[0]), (task, sizes[-1])],
                studies,
                small[3] + large[3],
            )
            unit.notes.append(
                f"k90 {k_text(first_reaching(small[0]))} at n={sizes[0]}, {k_text(first_reaching(large[0]))} at "
                f"n={sizes[-1]}"
            )
            units["k90_grows_as_data_shrinks"].append(unit)
        if task in probe_curves.index:
            probe_curve = probe_curves.loc[task].to_numpy()
            rho = {
                s: (
                    hypothesis.spearman(probe_curve, curves[(task, s)][0]),
                    np.apply_along_axis(lambda c: hypothesis.spearman(probe_curve, c), 1, curves[(task, s)][1]),
                )
                for s in sizes
            }
            largest = sizes[-1]
            unit = _bootstrap_unit(
                "probes_do_not_predict_finetuning",
                f"{task} n={largest}",
                rho[largest][0],
                rho[largest][1],
                len(curves[(task, largest)][2]),
                [(task, largest)],
                studies,
                curves[(task, largest)][3],
                kind="bootstrap-equivalence",
            )
            unit.notes.append(
                f"exact permutation p of ρ over the {L + 1} points = "
                f"{p_text(hypothesis.exact_permutation_p(probe_curve, curves[(task, largest)][0]))}"
            )
            units["probes_do_not_predict_finetuning"].append(unit)
            if len(sizes) >= 2:
                difference = rho[sizes[0]][1] - rho[sizes[-1]][1]
                unit = _bootstrap_unit(
                    "agreement_grows_as_data_shrinks",
                    f"{task} n={sizes[0]} vs n={sizes[-1]}",
                    rho[sizes[0]][0] - rho[sizes[-1]][0],
                    difference,
                    min(len(curves[(task, s)][2]) for s in (sizes[0], sizes[-1])),
                    [(task, sizes[0]), (task, sizes[-1])],
                    studies,
                    [],
                )
                unit.notes.append(f"ρ {rho[sizes[0]][0]:.3f} at n={sizes[0]}, {rho[sizes[-1]][0]:.3f} at n={sizes[-1]}")
                units["agreement_grows_as_data_shrinks"].append(unit)

    permuted = runs[runs["scheme"] == "permutation"]
    for (task, size), rows in permuted.groupby(["task", "size"]):
        ref = rows.iloc[0]
        units["permuted_closer_to_scratch"].append(
            contrast_unit(
                ev,
                "permuted_closer_to_scratch",
                task,
                int(size),
                {ref["ref_full"]: 0.5, ref["ref_scratch"]: 0.5, ref["slug"]: -1.0},
                gap=True,
            )
        )
    single = runs[runs["scheme"] == "single_layer"]
    for (task, size, layer), rows in single.groupby(["task", "size", "layer"]):
        ref = rows.iloc[0]
        units["single_layer_barely_matters"].append(
            contrast_unit(
                ev,
                "single_layer_barely_matters",
                task,
                int(size),
                {ref["slug"]: 1.0, ref["ref_full"]: -1.0},
                kind="equivalence",
                name=f"{task} n={size} layer {int(layer)}",
                gap=True,
            )
        )

    units["later_layers_move_more"], units["more_data_moves_weights_more"] = weight_units(ev, rng)
    return units


def weight_units(ev: Evidence, rng: np.random.Generator) -> tuple[list[Unit], list[Unit]]:
    """later_layers_move_more per (task, size) at the last recorded step; more_data_moves_weights_more
    per task between its smallest and largest size at the largest step both reached."""
    changes = ev.layer_change
    later, more = [], []
    if changes.empty:
        return later, more
    for (task, size), rows in changes.groupby(["task", "size"]):
        last = rows[rows["step"] == rows.groupby("trial")["step"].transform("max")]
        by_trial = last.pivot_table(index="trial", columns="layer", values="frobenius")
        layers = by_trial.columns.to_numpy(dtype=float)
        mean = by_trial.mean().to_numpy()
        draws = hypothesis.resampled_means(by_trial.to_numpy(), ev.settings.bootstrap_resamples, rng)
        rho_draws = np.apply_along_axis(lambda c: hypothesis.spearman(layers, c), 1, draws)
        unit = _bootstrap_unit(
            "later_layers_move_more",
            f"{task} n={size}",
            hypothesis.spearman(layers, mean),
            rho_draws,
            len(by_trial),
            [],
            _studies(ev.runs, task, size, _full_slugs(ev.runs)),
            [],
        )
        unit.notes.append(
            f"‖ΔW‖ per layer at step {int(last['step'].max())} (the last power of two of the run); exact permutation "
            f"p of ρ over {len(layers)} layers = {p_text(hypothesis.exact_permutation_p(layers, mean))}"
        )
        later.append(unit)
    for task, rows in changes.groupby("task"):
        sizes = sorted(set(rows["size"]))
        if len(sizes) < 2:
            continue
        small, large = rows[rows["size"] == sizes[0]], rows[rows["size"] == sizes[-1]]
        step = min(small.groupby("trial")["step"].max().min(), large.groupby("trial")["step"].max().min())
        totals = [
            r[r["step"] == step].groupby("trial")["frobenius"].apply(lambda f: float(np.sqrt((f**2).sum()))).to_numpy()
            for r in (large, small)
        ]
        unit = Unit(
            "more_data_moves_weights_more",
            f"{task} n={sizes[-1]} vs n={sizes[0]}",
            "welch",
            _welch(*totals),
            (),
            tuple(
                sorted(
                    set(
                        _studies(ev.runs, task, sizes[-1], _full_slugs(ev.runs))
                        + _studies(ev.runs, task, sizes[0], _full_slugs(ev.runs))
                    )
                )
            ),
        )
        unit.notes.append(
            f"at step {step} for both sizes (equal steps): controls the number of Adam steps, not how often each "
            "example was seen"
        )
        more.append(unit)
    return later, more


def _welch(a: np.ndarray, b: np.ndarray) -> dict:
    """Welch's two-sample t test of mean(a) − mean(b), with its 95% CI (scipy)."""
    if len(a) < 2 or len(b) < 2:
        return {
            "estimate": float(np.mean(a) - np.mean(b)) if len(a) and len(b) else math.nan,
            "low": math.nan,
            "high": math.nan,
            "p": math.nan,
            "n": (len(a), len(b)),
            "sd": math.nan,
        }
    test = stats.ttest_ind(a, b, equal_var=False)
    ci = test.confidence_interval(0.95)
    sd = math.sqrt((np.var(a, ddof=1) + np.var(b, ddof=1)) / 2)
    return {
        "estimate": float(np.mean(a) - np.mean(b)),
        "low": float(ci.low),
        "high": float(ci.high),
        "p": float(test.pvalue),
        "n": (len(a), len(b)),
        "sd": sd,
    }


# --- testing, combining, planning ------------------------------------------------------------------------


def _raw_pvalues(unit: Unit, settings: ReportConfig) -> None:
    result = unit.result
    if unit.kind == "difference":
        unit.p_for = result.p_zero()
    elif unit.kind == "equivalence":
        unit.p_for, unit.p_against = (
            result.p_equivalent(settings.single_layer_margin),
            result.p_beyond(settings.single_layer_margin),
        )
    elif unit.kind == "welch":
        unit.p_for = result["p"]
    elif result.n < settings.bootstrap_min_trials:
        unit.notes.append(
            f"no bootstrap verdict below {settings.bootstrap_min_trials} trials (n = {result.n}): percentile "
            "intervals under-cover"
        )
    elif unit.kind == "bootstrap":
        unit.p_for = result.p_zero()
    else:  # bootstrap-equivalence
        unit.p_for, unit.p_against = (
            result.p_equivalent(settings.correlation_margin),
            result.p_beyond(settings.correlation_margin),
        )


def estimate_of(unit: Unit) -> float:
    return unit.result["estimate"] if unit.kind == "welch" else unit.result.estimate


def interval_of(unit: Unit) -> tuple[float, float]:
    return (unit.result["low"], unit.result["high"]) if unit.kind == "welch" else unit.result.interval(0.95)


def n_of(unit: Unit):
    return unit.result["n"] if unit.kind == "welch" else unit.result.n


def judge_claims(ev: Evidence) -> tuple[list[dict], list[Unit]]:
    """Every claim's verdict (with its units and the trials planner) from `ev`."""
    alpha = ev.settings.alpha
    by_claim = claim_units(ev)
    units = [u for us in by_claim.values() for u in us]
    for unit in units:
        _raw_pvalues(unit, ev.settings)
    adjusted = hypothesis.holm([u.p_for for u in units] + [u.p_against for u in units])
    for unit, p_for, p_against in zip(units, adjusted[: len(units)], adjusted[len(units) :]):
        unit.adjusted_for, unit.adjusted_against = p_for, p_against
        sign = np.sign(estimate_of(unit))  # every claim says "> 0" of its estimate
        if unit.kind in ("equivalence", "bootstrap-equivalence"):
            unit.status = "for" if p_for < alpha else "against" if p_against < alpha else "unresolved"
        elif p_for < alpha:
            unit.status = "for" if sign > 0 else "against"
    gaps = {u.key: u.status == "for" for u in by_claim["full_beats_scratch"]}
    verdicts = []
    for claim, claim_units_ in by_claim.items():
        for unit in claim_units_:
            if claim in NEEDS_GAP and not all(gaps.get(g, False) for g in unit.gaps):
                unit.notes.append(
                    "not counted: full vs scratch unresolved at " + ", ".join(f"{t} n={s}" for t, s in unit.gaps)
                )
                unit.counted = False
        verdicts.append(
            _verdict(
                claim, claim_units_, by_claim["full_beats_scratch"], ev, len([p for p in adjusted if np.isfinite(p)])
            )
        )
    return verdicts, units


def _verdict(claim: str, units: list[Unit], gap_units: list[Unit], ev: Evidence, family: int) -> dict:
    text, source, test = CLAIMS[claim]
    counted = [u for u in units if u.counted]
    if not units:
        verdict = NOT_RUN
    elif any(u.status == "against" for u in counted):
        verdict = "contradicted"
    elif counted and all(u.status == "for" for u in counted):
        verdict = "supported"
    else:
        verdict = "inconclusive"
    plan = plan_trials(claim, units, gap_units, ev, family) if verdict == "inconclusive" else None
    return {
        "id": claim,
        "claim": text,
        "source": source,
        "test": test,
        "verdict": verdict,
        "units": units,
        "plan": plan,
    }


def plan_trials(claim: str, units: list[Unit], gap_units: list[Unit], ev: Evidence, family: int) -> dict:
    """Trials that would resolve every unresolved unit of `claim` (and the gaps it needs) at
    report.power, from the observed per-trial variance: Bonferroni alpha / family, the
    strictest Holm step, so the number is conservative; never fewer than one more trial
    than a blocking unit already has."""
    s = ev.settings
    alpha = s.alpha / max(family, 1)
    needs, studies, reasons = [], set(), []
    blocking = [u for u in units if u.status != "for"]
    for unit in units:
        blocking += [gu for gu in gap_units if gu.key in unit.gaps and gu.status != "for"]
    for unit in dict.fromkeys(blocking):
        n = None
        if unit.kind == "difference":
            n = hypothesis.trials_for_difference(unit.result.estimate, unit.result.trial_sd, alpha, s.power)
        elif unit.kind == "equivalence":
            n = hypothesis.trials_for_equivalence(
                unit.result.estimate, unit.result.trial_sd, s.single_layer_margin, alpha, s.power
            )
        elif unit.kind == "welch":
            n = hypothesis.trials_for_two_samples(unit.result["estimate"], unit.result["sd"], alpha, s.power)
        else:
            n = s.bootstrap_min_trials if n_of(unit) < s.bootstrap_min_trials else None
            reasons.append(
                f"{unit.name}: a bootstrap statistic; power is not computed, {s.bootstrap_min_trials} trials is the "
                "minimum for its interval"
            )
        if n is None:
            reasons.append(f"{unit.name}: no number of trials resolves it if the observed effect is the true one")
            continue
        # The unit is unresolved at the trials it has, so those never decide it, whatever
        # the power formula says for an effect this size (it ignores the Holm family's order).
        needs.append(max(n, int(np.max(n_of(unit))) + 1))
        studies |= set(unit.studies)
    if not needs:
        return {"trials": None, "command": None, "reasons": reasons}
    n = max(needs)
    command = "dvc exp run " + " ".join(f"-S studies.{study}.trials={n}" for study in sorted(studies))
    return {"trials": n, "command": command, "reasons": reasons}


def agreement_table(ev: Evidence) -> pd.DataFrame:
    """Per task and size with a complete curve and a probe: Spearman ρ between the probe curve
    and the mean finetuning curve (same trials at every k), its exact permutation p over the
    L + 1 points and bootstrap 95% interval over trials, and where each curve first reaches
    90% of its gain."""
    columns = ["task", "size", "trials", "rho", "rho_p_exact", "rho_ci_low", "rho_ci_high", "k90_finetune", "k90_probe"]
    if ev.probe.empty:
        return pd.DataFrame(columns=columns)
    probes = (
        ev.probe.astype({"layer": int})
        .groupby(["task", "layer"])["value"]
        .mean()
        .unstack("layer")
        .reindex(columns=range(ev.num_layers + 1))
        .dropna()
    )
    rng, rows = np.random.default_rng(0), []
    for (task, size), _ in _plain_progressive(ev.runs).groupby(["task", "size"]):
        drawn = _curve_draws(ev, task, int(size), rng)
        if drawn is None or task not in probes.index:
            continue
        curve, draws, trials, _ = drawn
        probe_curve = probes.loc[task].to_numpy()
        rho = Bootstrap(
            hypothesis.spearman(probe_curve, curve),
            np.apply_along_axis(lambda c: hypothesis.spearman(probe_curve, c), 1, draws),
            len(trials),
        )
        low, high = rho.interval()
        rows.append(
            [
                task,
                int(size),
                len(trials),
                rho.estimate,
                hypothesis.exact_permutation_p(probe_curve, curve),
                low,
                high,
                first_reaching(curve),
                first_reaching(probe_curve),
            ]
        )
    return pd.DataFrame(rows, columns=columns)


# --- numbers as the report and its notes print them ---


def k_text(value: float) -> str:
    return "undefined" if not np.isfinite(value) else str(int(value))


def number(value) -> str:
    return "n/a" if value is None or not np.isfinite(value) else f"{value:+.3f}"


def p_text(value) -> str:
    return "n/a" if value is None or not np.isfinite(value) else f"{value:.3g}"


def cell(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.3g}" if isinstance(value, float) else str(value)
