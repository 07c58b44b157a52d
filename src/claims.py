"""Verdicts on the studies' claims, computed from the finished runs, the probes and the weight changes.

Every claim returns {"id", "claim", "source", "verdict", "statistic"}. The verdict comes from the
numbers only; "not run" means the rows the claim needs are absent, never a guess. Diverged runs
are excluded from every statistic and counted in its text. Conditions are compared paired by
trial: the same (task, size, trial) shares its training subset and seeds across conditions, so
pairing removes the subset-to-subset variance from the comparison.
"""

from __future__ import annotations

import base64
import html
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from src.stats import mean_ci, summarise

GROUP = ["task", "size"]
NOT_RUN = "not run"

CLAIMS = {  # id: (the claim in one sentence, where it is made)
    "full_beats_scratch": ("The fully pretrained model (k = L) finetunes better than the model trained from scratch (k = 0) at every task and size.", "Tamkin et al. 2020 §2, Fig. 1"),
    "k90_grows_as_data_shrinks": ("The less finetuning data, the more pretrained layers are needed to reach 90% of the full model's gain over scratch.", "Tamkin et al. 2020 §2"),
    "permuted_closer_to_scratch": ("Shuffling the order of the pretrained layers brings finetuning down closer to scratch than to the full model.", "Tamkin et al. 2020 §5"),
    "probes_do_not_predict_finetuning": ("A layer's probing score does not predict how much keeping layers up to it helps finetuning.", "Tamkin et al. 2020 §3"),
    "agreement_grows_as_data_shrinks": ("Probing and progressive finetuning curves agree more when finetuning data is scarce.", "Tamkin et al. 2020 §3"),
    "later_layers_move_more": ("Finetuning changes the weights of later layers more than those of earlier layers.", "Singh & Giovanardi §4.5, §6.3"),
    "more_data_moves_weights_more": ("The more finetuning data, the more finetuning changes the weights.", "Singh & Giovanardi §4.5, §6.3"),
    "single_layer_barely_matters": ("Reinitialising any single layer barely changes the finetuned score.", "Tamkin et al. 2020 App. C"),
}


def first_reaching(values_by_k, fraction: float = 0.9) -> int | None:
    """First index whose gain over index 0 reaches `fraction` of the gain at the last index (L);
    None when that gain is not positive, since "90% of no gain" is undefined."""
    gains = np.asarray(values_by_k, dtype=float)
    gains = gains - gains[0]
    if not gains[-1] > 0:  # also catches NaN
        return None
    target = fraction * gains[-1]
    # isclose: a curve landing exactly on the target must count despite float rounding
    return int(np.argmax((gains >= target) | np.isclose(gains, target)))


def mean_curves(runs: pd.DataFrame, num_layers: int) -> pd.DataFrame:
    """Mean progressive score (diverged runs excluded), one row per (task, size), one column per
    k = 0..L; only curves where every k has a finished run."""
    ks = list(range(num_layers + 1))
    progressive = runs[runs["scheme"] == "progressive"]
    if progressive.empty:
        return pd.DataFrame(columns=ks)
    means = summarise(progressive.astype({"k": int}), [*GROUP, "k"]).set_index([*GROUP, "k"])["mean"]
    return means.unstack("k").reindex(columns=ks).dropna()


def paired_differences(a: pd.DataFrame, b: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Mean and 95% CI of the per-trial difference a − b, for each group of `a` over `by`.

    `b` is matched on (task, size) and trial. A trial counts only when both sides finished;
    diverged runs on either side are counted in `diverged`. `reference` is False where `b` has
    no runs at all for the group.
    """
    rows = []
    for key, group in a.groupby(by):
        labels = dict(zip(by, key))
        reference = b[(b["task"] == labels["task"]) & (b["size"] == labels["size"])]
        mean, half, n = mean_ci((_trial_means(group) - _trial_means(reference)).dropna())
        diverged = _count_diverged(group) + _count_diverged(reference)
        rows.append({**labels, "mean": mean, "low": mean - half, "high": mean + half, "n": n, "diverged": diverged, "reference": not reference.empty})
    return pd.DataFrame(rows, columns=[*by, "mean", "low", "high", "n", "diverged", "reference"])


def agreement(runs: pd.DataFrame, probe: pd.DataFrame, num_layers: int) -> pd.DataFrame:
    """Per (task, size): Spearman rho and two-sided p between the probe curve over layers 0..L and
    the mean progressive curve over k = 0..L, and where each first reaches 90% of its gain."""
    columns = [*GROUP, "rho", "p", "k90_finetune", "k90_probe", "diverged"]
    layers = list(range(num_layers + 1))
    probes = probe.astype({"layer": int}).groupby(["task", "layer"])["value"].mean().unstack("layer").reindex(columns=layers).dropna()
    diverged = _diverged_by_group(runs[runs["scheme"] == "progressive"])
    rows = []
    for (task, size), curve in mean_curves(runs, num_layers).iterrows():
        if task not in probes.index:
            continue
        rho, p = stats.spearmanr(probes.loc[task], curve)
        rows.append({"task": task, "size": size, "rho": rho, "p": p, "k90_finetune": first_reaching(curve), "k90_probe": first_reaching(probes.loc[task]), "diverged": diverged.get((task, size), 0)})
    return pd.DataFrame(rows, columns=columns)


def layer_changes(runs: pd.DataFrame, weights: pd.DataFrame, num_layers: int) -> pd.DataFrame:
    """Weight change of each encoder layer of the full model (k = L), averaged over trials: one row
    per (task, size, layer) with `change` and `trials`.

    A layer's change is sqrt(sum of its sublayers' frobenius²), i.e. the Frobenius norm of all its
    matrices together. Weights of runs that diverged are dropped.
    """
    full = _progressive(runs, num_layers)
    diverged = full.loc[full["status"] != "ok", [*GROUP, "trial"]].drop_duplicates()
    moved = weights[weights["k"] == num_layers].merge(diverged, on=[*GROUP, "trial"], how="left", indicator=True)
    moved = moved[moved["_merge"] == "left_only"]
    per_trial = moved.assign(squared=moved["frobenius"] ** 2).groupby([*GROUP, "trial", "layer"])["squared"].sum() ** 0.5
    return per_trial.groupby([*GROUP, "layer"]).agg(change="mean", trials="size").reset_index()


# --- the claims -------------------------------------------------------------------------------


def full_beats_scratch(runs: pd.DataFrame, num_layers: int) -> dict:
    diffs = paired_differences(_progressive(runs, num_layers), _progressive(runs, 0), GROUP)
    if not diffs["reference"].any():
        return _claim("full_beats_scratch", NOT_RUN, "needs progressive runs at k = L and k = 0")
    # a NaN interval (one trial) fails both tests: one run cannot decide the claim
    verdict = _verdict((diffs["low"] > 0).all(), ((diffs["mean"] < 0) & (diffs["high"] < 0)).any())
    return _claim("full_beats_scratch", verdict, "full − scratch, paired by trial: " + "; ".join(_difference_text(row) for _, row in diffs.iterrows()))


def k90_grows_as_data_shrinks(runs: pd.DataFrame, num_layers: int) -> dict:
    diverged = _diverged_by_group(runs[runs["scheme"] == "progressive"])
    k90 = _by_task({key: first_reaching(curve) for key, curve in mean_curves(runs, num_layers).iterrows()})
    if not k90:
        return _claim("k90_grows_as_data_shrinks", NOT_RUN, "needs complete progressive curves at two sizes or more of a task")
    supported = all(None not in ks and ks[0] > ks[-1] and all(x >= y for x, y in zip(ks, ks[1:])) for ks in _values(k90))
    contradicted = any(None not in (ks[0], ks[-1]) and ks[0] < ks[-1] for ks in _values(k90))
    text = "; ".join(
        f"{task}: " + ", ".join(f"k90={'undefined' if k is None else k} at size={size}{_note(diverged.get((task, size), 0))}" for size, k in pairs)
        for task, pairs in k90.items()
    )
    return _claim("k90_grows_as_data_shrinks", _verdict(supported, contradicted), text)


def permuted_closer_to_scratch(runs: pd.DataFrame, num_layers: int) -> dict:
    conditions = {"permuted": runs[runs["scheme"] == "permutation"], "full": _progressive(runs, num_layers), "scratch": _progressive(runs, 0)}
    if any(rows.empty for rows in conditions.values()):
        return _claim("permuted_closer_to_scratch", NOT_RUN, "needs permutation runs and progressive runs at k = L and k = 0")
    table = summarise(pd.concat(rows.assign(condition=name) for name, rows in conditions.items()), [*GROUP, "condition"])
    table = table.set_index([*GROUP, "condition"]).unstack("condition")
    table = table.loc[table[("n", "permuted")].notna()]  # only the (task, size) that have permutation runs
    means = table["mean"]
    to_scratch, to_full = (means["permuted"] - means["scratch"]).abs(), (means["full"] - means["permuted"]).abs()
    verdict = _verdict((to_scratch < to_full).all(), (to_full < to_scratch).all())  # NaN (no finished run) fails both
    text = "; ".join(
        f"{task} size={size}: " + ", ".join(f"{name} {row[('mean', name)]:.3f} n={_int(row[('n', name)])}{_note(_int(row[('diverged', name)]))}" for name in conditions)
        for (task, size), row in table.iterrows()
    )
    return _claim("permuted_closer_to_scratch", verdict, text)


def probes_do_not_predict_finetuning(runs: pd.DataFrame, probe: pd.DataFrame, num_layers: int) -> dict:
    table = agreement(runs, probe, num_layers)
    if table.empty:
        return _claim("probes_do_not_predict_finetuning", NOT_RUN, "needs a probe over layers 0..L and a complete progressive curve of the same task")
    # the paper's claim is about plentiful data, where the curves differ most: each task's largest size
    largest = table.loc[table.groupby("task")["size"].idxmax()]
    predicts = (largest["rho"] > 0) & (largest["p"] < 0.05)
    verdict = _verdict(largest["rho"].notna().all() and not predicts.any(), predicts.all())
    text = "; ".join(f"{row.task} size={row.size}: rho={row.rho:.3f}, p={row.p:.3g} over {num_layers + 1} points{_note(row.diverged)}" for row in largest.itertuples())
    return _claim("probes_do_not_predict_finetuning", verdict, text)


def agreement_grows_as_data_shrinks(runs: pd.DataFrame, probe: pd.DataFrame, num_layers: int) -> dict:
    rhos = _by_task({(row.task, row.size): (row.rho, row.p, row.diverged) for row in agreement(runs, probe, num_layers).itertuples()})
    if not rhos:
        return _claim("agreement_grows_as_data_shrinks", NOT_RUN, "needs a probe and complete progressive curves at two sizes or more of a task")
    supported = all(values[0][0] > values[-1][0] for values in _values(rhos))
    contradicted = all(values[0][0] < values[-1][0] for values in _values(rhos))
    text = "; ".join(
        f"{task}: " + ", ".join(f"rho={rho:.3f}, p={p:.3g} at size={size}{_note(diverged)}" for size, (rho, p, diverged) in pairs)
        for task, pairs in rhos.items()
    )
    return _claim("agreement_grows_as_data_shrinks", _verdict(supported, contradicted), text)


def later_layers_move_more(runs: pd.DataFrame, weights: pd.DataFrame, num_layers: int) -> dict:
    changes = layer_changes(runs, weights, num_layers)
    if changes.empty:
        return _claim("later_layers_move_more", NOT_RUN, "needs weight changes of progressive runs at k = L")
    diverged = _diverged_by_group(_progressive(runs, num_layers))
    parts, correlations = [], []
    for (task, size), group in changes.groupby(GROUP):
        rho, p = stats.spearmanr(group["layer"], group["change"])
        correlations.append((rho, p))
        parts.append(f"{task} size={size}: rho={rho:.3f}, p={p:.3g} over {len(group)} layers, n={group['trials'].max()} trials{_note(diverged.get((task, size), 0))}")
    supported = all(rho > 0 and p < 0.05 for rho, p in correlations)
    contradicted = all(rho < 0 for rho, _ in correlations)
    return _claim("later_layers_move_more", _verdict(supported, contradicted), "Spearman(layer, change): " + "; ".join(parts))


def more_data_moves_weights_more(runs: pd.DataFrame, weights: pd.DataFrame, num_layers: int) -> dict:
    diverged = _diverged_by_group(_progressive(runs, num_layers))
    means = layer_changes(runs, weights, num_layers).groupby(GROUP).agg(change=("change", "mean"), trials=("trials", "max"))
    by_task = _by_task({row.Index: (row.change, row.trials) for row in means.itertuples()})
    if not by_task:
        return _claim("more_data_moves_weights_more", NOT_RUN, "needs weight changes of progressive runs at k = L at two sizes or more of a task")
    steps = [np.diff([change for change, _ in values]) for values in _values(by_task)]
    verdict = _verdict(all((step > 0).all() for step in steps), all((step < 0).all() for step in steps))
    text = "; ".join(
        f"{task}: " + ", ".join(f"{change:.4g} at size={size}, n={trials} trials{_note(diverged.get((task, size), 0))}" for size, (change, trials) in pairs)
        for task, pairs in by_task.items()
    )
    return _claim("more_data_moves_weights_more", verdict, "mean layer change: " + text)


def single_layer_barely_matters(runs: pd.DataFrame, num_layers: int, tolerance: float = 0.02) -> dict:
    diffs = paired_differences(runs[runs["scheme"] == "single_layer"], _progressive(runs, num_layers), [*GROUP, "layer"])
    if not diffs["reference"].any():
        return _claim("single_layer_barely_matters", NOT_RUN, "needs single-layer runs and progressive runs at k = L")
    # Supported only by small effects: a wide CI that contains 0 is absence of evidence
    # (inconclusive), not evidence of no effect.
    small = diffs["mean"].abs() <= tolerance
    excludes_zero = (diffs["low"] > 0) | (diffs["high"] < 0)  # False for a NaN interval (one trial)
    verdict = _verdict(small.all(), (excludes_zero & ~small).any())
    text = f"single − full, paired by trial, tolerance {tolerance}: " + "; ".join(_difference_text(row) for _, row in diffs.iterrows())
    return _claim("single_layer_barely_matters", verdict, text)


def all_claims(runs: pd.DataFrame, probe: pd.DataFrame, weights: pd.DataFrame, num_layers: int) -> list[dict]:
    return [
        full_beats_scratch(runs, num_layers),
        k90_grows_as_data_shrinks(runs, num_layers),
        permuted_closer_to_scratch(runs, num_layers),
        probes_do_not_predict_finetuning(runs, probe, num_layers),
        agreement_grows_as_data_shrinks(runs, probe, num_layers),
        later_layers_move_more(runs, weights, num_layers),
        more_data_moves_weights_more(runs, weights, num_layers),
        single_layer_barely_matters(runs, num_layers),
    ]


# --- the report -------------------------------------------------------------------------------

VERDICT_COLOURS = {"supported": "#d4edda", "contradicted": "#f8d7da", "inconclusive": "#fff3cd", NOT_RUN: "#e2e3e5"}
TITLE = "Claims: Tamkin et al. 2020 and follow-ups"


def write_report(claims: list[dict], agreement_table: pd.DataFrame, figures: list[tuple[str, Path]], md_path: Path, html_path: Path) -> None:
    """The claims table, the probe/finetune agreement table and the figures, as Markdown (figures
    linked relative to md_path) and as a standalone HTML page (figures inlined as base64)."""
    md_path, html_path = Path(md_path), Path(html_path)
    tables = [
        ("Claims", ["claim", "source", "verdict", "statistic"], [[f"{c['claim']} ({c['id']})", c["source"], c["verdict"], c["statistic"]] for c in claims]),
        ("Probing vs finetuning agreement", list(agreement_table.columns), [[_cell(v) for v in row] for row in agreement_table.itertuples(index=False)]),
    ]
    figures = [(title, Path(png)) for title, png in figures]

    md = [f"# {TITLE}"]
    for heading, header, rows in tables:
        md += ["", f"## {heading}", "", _pipe_table(header, rows)]
    md += ["", "## Figures", ""]
    for title, png in figures:
        md.append(f"![{title}]({Path(os.path.relpath(png, md_path.parent)).as_posix()})" if png.is_file() else f"{title}: figure not produced")
        md.append("")
    md_path.parent.mkdir(parents=True, exist_ok=True)
    md_path.write_text("\n".join(md))

    page = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(TITLE)}</title>", "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:2em}td,th{border:1px solid #999;padding:4px 8px;vertical-align:top}img{max-width:100%}</style></head><body>", f"<h1>{html.escape(TITLE)}</h1>"]
    for heading, header, rows in tables:
        page += [f"<h2>{html.escape(heading)}</h2>", _html_table(header, rows)]
    page.append("<h2>Figures</h2>")
    for title, png in figures:
        if png.is_file():
            data = base64.b64encode(png.read_bytes()).decode("ascii")
            page.append(f"<figure><img alt='{html.escape(title)}' src='data:image/png;base64,{data}'><figcaption>{html.escape(title)}</figcaption></figure>")
        else:
            page.append(f"<p>{html.escape(title)}: figure not produced</p>")
    page.append("</body></html>")
    html_path.parent.mkdir(parents=True, exist_ok=True)
    html_path.write_text("\n".join(page))


def _pipe_table(header: list[str], rows: list[list]) -> str:
    """A Markdown pipe table (DataFrame.to_markdown needs tabulate, which is not installed)."""

    def line(cells):
        return "| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |"

    return "\n".join([line(header), line(["---"] * len(header)), *map(line, rows)])


def _html_table(header: list[str], rows: list[list]) -> str:
    def cell(name, value):
        colour = VERDICT_COLOURS.get(value) if name == "verdict" else None
        return f"<td style='background:{colour}'>" if colour else "<td>"

    head = "<tr>" + "".join(f"<th>{html.escape(name)}</th>" for name in header) + "</tr>"
    body = ["<tr>" + "".join(f"{cell(name, value)}{html.escape(str(value))}</td>" for name, value in zip(header, row)) + "</tr>" for row in rows]
    return "<table>" + head + "".join(body) + "</table>"


# --- helpers ----------------------------------------------------------------------------------


def _claim(claim_id: str, verdict: str, statistic: str) -> dict:
    claim, source = CLAIMS[claim_id]
    return {"id": claim_id, "claim": claim, "source": source, "verdict": verdict, "statistic": statistic}


def _verdict(supported: bool, contradicted: bool) -> str:
    return "supported" if supported else "contradicted" if contradicted else "inconclusive"


def _progressive(runs: pd.DataFrame, k: int) -> pd.DataFrame:
    """Progressive runs at one k, whatever study they were run for: k = L is "full", k = 0 "scratch"."""
    return runs[(runs["scheme"] == "progressive") & (runs["k"] == k)]


def _trial_means(rows: pd.DataFrame) -> pd.Series:
    return rows[rows["status"] == "ok"].groupby("trial")["value"].mean()


def _count_diverged(rows: pd.DataFrame) -> int:
    return int((rows["status"] != "ok").sum())


def _diverged_by_group(rows: pd.DataFrame) -> pd.Series:
    """Diverged runs per (task, size), for the statistic text."""
    return rows[rows["status"] != "ok"].groupby(GROUP).size()


def _by_task(values: dict) -> dict:
    """{(task, size): value} -> {task: [(size, value), ...] by increasing size}, for the tasks
    measured at two sizes or more (a trend over size needs two)."""
    grouped = {}
    for (task, size), value in sorted(values.items(), key=lambda item: item[0]):
        grouped.setdefault(task, []).append((size, value))
    return {task: pairs for task, pairs in grouped.items() if len(pairs) >= 2}


def _values(by_task: dict) -> list[list]:
    """The values of each task of a _by_task dict, sizes dropped."""
    return [[value for _, value in pairs] for pairs in by_task.values()]


def _difference_text(row: pd.Series) -> str:
    name = f"{row['task']} size={row['size']}" + (f" layer {int(row['layer'])}" if "layer" in row else "")
    missing = "" if row["reference"] else " (no reference runs)"
    return f"{name}: {row['mean']:+.3f} [{row['low']:+.3f}, {row['high']:+.3f}], n={row['n']}{_note(row['diverged'])}{missing}"


def _note(diverged: int) -> str:
    return f" ({diverged} diverged)" if diverged else ""


def _int(value) -> int:
    """Counts come back as float after unstack (NaN where a condition has no rows)."""
    return 0 if pd.isna(value) else int(value)


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.3g}" if isinstance(value, float) else str(value)
