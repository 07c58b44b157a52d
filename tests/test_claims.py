"""Claims get their verdicts from the numbers: each flips when the table is changed to contradict it,
is "not run" without its rows, and ignores (but reports) diverged runs. Tables are built by hand."""

import base64
import math

import numpy as np
import pandas as pd
import pytest

from src.claims import agreement, all_claims, first_reaching, write_report

L = 4
RUN_COLUMNS = ["study", "task", "size", "trial", "scheme", "k", "layer", "metric", "value", "status"]
EARLY = [0.50, 0.90, 0.91, 0.92, 0.93]  # most of the gain from layer 1: k90 = 1
LATE = [0.50, 0.52, 0.55, 0.60, 0.90]  # the gain comes with the last layer: k90 = 4


def run(task="sst2", size=500, trial=0, scheme="progressive", value=0.5, k=math.nan, layer=math.nan, status="ok"):
    return {"study": scheme, "task": task, "size": size, "trial": trial, "scheme": scheme, "k": k, "layer": layer, "metric": "accuracy", "value": value, "status": status}


def noise(trial, k):
    """Small run-to-run spread that averages to exactly 0 over trials 0..2, so mean curves are the curves given."""
    return 0.002 * ((trial + k) % 3 - 1)


def progressive(curve, task="sst2", size=500, trials=3):
    return [run(task, size, t, value=v + noise(t, k), k=k) for t in range(trials) for k, v in enumerate(curve)]


def probe(curve, task="sst2"):
    return pd.DataFrame({"task": task, "layer": range(len(curve)), "metric": "accuracy", "value": curve})


def weights(per_layer, task="sst2", size=500, trials=3):
    """Every sublayer of layer l moves by per_layer[l - 1] (times a per-trial factor)."""
    sublayers = ["query", "key", "value", "attention_output", "intermediate", "output"]
    rows = [
        {"task": task, "size": size, "trial": t, "k": L, "layer": layer, "sublayer": s, "frobenius": change * (1 + 0.01 * t), "spectral": change / 10}
        for t in range(trials) for layer, change in enumerate(per_layer, start=1) for s in sublayers
    ]
    return pd.DataFrame(rows)


def runs_table(rows):
    return pd.DataFrame(rows, columns=RUN_COLUMNS)


NO_RUNS = runs_table([])
NO_PROBE = pd.DataFrame(columns=["task", "layer", "metric", "value"])
NO_WEIGHTS = pd.DataFrame(columns=["task", "size", "trial", "k", "layer", "sublayer", "frobenius", "spectral"])


def claim(claim_id, runs=(), probe=NO_PROBE, weights=NO_WEIGHTS):
    found = {c["id"]: c for c in all_claims(runs_table(list(runs)), probe, weights, L)}
    return found[claim_id]


def verdict(claim_id, **tables):
    return claim(claim_id, **tables)["verdict"]


# --- first_reaching and agreement ---------------------------------------------------------------


def test_first_reaching_by_hand():
    assert first_reaching(EARLY) == 1
    assert first_reaching(LATE) == 4
    assert first_reaching(pd.Series([0.5, 0.59, 0.95, 1.0])) == 2  # exactly on the target: 0.45 of a 0.5 gain
    assert first_reaching([0.0, 0.3, 0.6, 1.0], fraction=0.5) == 2
    assert first_reaching([0.7, 0.8, 0.7]) is None  # no gain: undefined
    assert first_reaching([0.7, 0.9, 0.6]) is None  # a loss: undefined


def test_agreement_same_shape_is_rho_one_reversed_is_minus_one():
    runs = runs_table(progressive(EARLY, size=500) + progressive(EARLY, size=5000))
    table = agreement(runs, pd.concat([probe([0.1, 0.5, 0.6, 0.75, 0.8]), probe([0.8, 0.7, 0.6, 0.5, 0.1], task="qnli")]), L)
    assert list(table["size"]) == [500, 5000]  # no qnli curves: no qnli rows
    assert table["rho"].tolist() == pytest.approx([1.0, 1.0])
    assert table.iloc[0][["k90_finetune", "k90_probe"]].tolist() == [1, 3]

    reversed_probe = agreement(runs, probe([0.8, 0.7, 0.6, 0.5, 0.1]), L)
    assert reversed_probe["rho"].tolist() == pytest.approx([-1.0, -1.0])


def test_agreement_needs_every_k():
    incomplete = [row for row in progressive(EARLY) if row["k"] != 2]
    assert agreement(runs_table(incomplete), probe(EARLY), L).empty


# --- each claim: supported, then contradicted by a changed table ---------------------------------


def test_full_beats_scratch():
    assert verdict("full_beats_scratch", runs=progressive(EARLY)) == "supported"
    assert verdict("full_beats_scratch", runs=progressive(EARLY) + progressive(EARLY[::-1], task="cola")) == "contradicted"


def test_full_beats_scratch_single_trial_is_inconclusive():
    assert verdict("full_beats_scratch", runs=progressive(EARLY, trials=1)) == "inconclusive"


def test_k90_grows_as_data_shrinks():
    assert verdict("k90_grows_as_data_shrinks", runs=progressive(LATE, size=500) + progressive(EARLY, size=5000)) == "supported"
    assert verdict("k90_grows_as_data_shrinks", runs=progressive(EARLY, size=500) + progressive(LATE, size=5000)) == "contradicted"
    assert verdict("k90_grows_as_data_shrinks", runs=progressive(LATE, size=500)) == "not run"  # one size: no trend


def test_permuted_closer_to_scratch():
    def permuted(value):
        return [run(scheme="permutation", trial=t, value=value + noise(t, 0)) for t in range(3)]

    assert verdict("permuted_closer_to_scratch", runs=progressive(EARLY) + permuted(0.55)) == "supported"
    assert verdict("permuted_closer_to_scratch", runs=progressive(EARLY) + permuted(0.90)) == "contradicted"


def test_probes_do_not_predict_finetuning():
    runs = progressive(LATE, size=500) + progressive(EARLY, size=5000)
    assert verdict("probes_do_not_predict_finetuning", runs=runs, probe=probe(EARLY[::-1])) == "supported"
    assert verdict("probes_do_not_predict_finetuning", runs=runs, probe=probe(EARLY)) == "contradicted"


def test_agreement_grows_as_data_shrinks():
    linear = probe([0.5, 0.6, 0.7, 0.8, 0.9])
    unlike = [0.50, 0.90, 0.85, 0.88, 0.87]  # ranks unlike the probe's
    assert verdict("agreement_grows_as_data_shrinks", runs=progressive(LATE, size=500) + progressive(unlike, size=5000), probe=linear) == "supported"
    assert verdict("agreement_grows_as_data_shrinks", runs=progressive(unlike, size=500) + progressive(LATE, size=5000), probe=linear) == "contradicted"


def test_later_layers_move_more():
    assert verdict("later_layers_move_more", weights=weights([1.0, 2.0, 3.0, 4.0])) == "supported"
    assert verdict("later_layers_move_more", weights=weights([4.0, 3.0, 2.0, 1.0])) == "contradicted"


def test_more_data_moves_weights_more():
    def sized(small, large):
        return pd.concat([weights([small * layer for layer in range(1, L + 1)], size=500), weights([large * layer for layer in range(1, L + 1)], size=5000)])

    assert verdict("more_data_moves_weights_more", weights=sized(1.0, 2.0)) == "supported"
    assert verdict("more_data_moves_weights_more", weights=sized(2.0, 1.0)) == "contradicted"


def single_layer(drop_at_layer_1=0.0, trials=3):
    """Single-layer runs scoring like the full model (paired noise), except layer 1 minus the drop."""
    full = EARLY[-1]
    return [
        run(scheme="single_layer", trial=t, layer=layer, value=full + noise(t, L) + 0.003 * (layer - 2.5) * (t - 1) - (drop_at_layer_1 if layer == 1 else 0))
        for t in range(trials) for layer in range(1, L + 1)
    ]


def test_single_layer_barely_matters():
    assert verdict("single_layer_barely_matters", runs=progressive(EARLY) + single_layer()) == "supported"
    assert verdict("single_layer_barely_matters", runs=progressive(EARLY) + single_layer(drop_at_layer_1=0.2)) == "contradicted"
    # a large mean drop whose CI still contains 0 (one trial far off) is no evidence either way
    noisy = [dict(r, value=r["value"] - (0.3 if r["trial"] == 0 and r["layer"] == 1 else 0)) for r in single_layer()]
    assert verdict("single_layer_barely_matters", runs=progressive(EARLY) + noisy) == "inconclusive"


def test_every_claim_is_not_run_without_its_rows():
    claims = all_claims(NO_RUNS, NO_PROBE, NO_WEIGHTS, L)
    assert [c["id"] for c in claims] == [
        "full_beats_scratch", "k90_grows_as_data_shrinks", "permuted_closer_to_scratch", "probes_do_not_predict_finetuning",
        "agreement_grows_as_data_shrinks", "later_layers_move_more", "more_data_moves_weights_more", "single_layer_barely_matters",
    ]
    assert {c["verdict"] for c in claims} == {"not run"}
    # the references alone do not run the comparisons that need other schemes
    for claim_id in ["permuted_closer_to_scratch", "single_layer_barely_matters", "probes_do_not_predict_finetuning"]:
        assert verdict(claim_id, runs=progressive(EARLY)) == "not run"


# --- diverged runs: excluded from the numbers, counted in the text --------------------------------

ABSURD = 1e6
DIVERGED_CASES = {
    "full_beats_scratch": (progressive(EARLY), [run(trial=3, k=L, value=ABSURD, status="diverged"), run(trial=3, k=0, value=0.5)]),
    "k90_grows_as_data_shrinks": (progressive(LATE, size=500) + progressive(EARLY, size=5000), [run(trial=3, k=2, value=ABSURD, status="diverged")]),
    "permuted_closer_to_scratch": (progressive(EARLY) + [run(scheme="permutation", trial=t, value=0.55) for t in range(3)], [run(scheme="permutation", trial=3, value=ABSURD, status="diverged")]),
    "single_layer_barely_matters": (progressive(EARLY) + single_layer(), [run(scheme="single_layer", trial=3, layer=2, value=ABSURD, status="diverged"), run(trial=3, k=L, value=0.93)]),
}


@pytest.mark.parametrize("claim_id", DIVERGED_CASES)
def test_diverged_runs_are_excluded_and_counted(claim_id):
    supporting, diverged = DIVERGED_CASES[claim_id]
    before, after = claim(claim_id, runs=supporting), claim(claim_id, runs=supporting + diverged)
    assert before["verdict"] == after["verdict"] == "supported"
    assert " (1 diverged)" in after["statistic"]
    assert after["statistic"].replace(" (1 diverged)", "") == before["statistic"]


def test_weights_of_diverged_runs_are_excluded_and_counted():
    moved = weights([1.0, 2.0, 3.0, 4.0])
    absurd = weights([ABSURD, 0.0, 0.0, 0.0], trials=4).query("trial == 3")  # would reverse the trend
    before = claim("later_layers_move_more", weights=moved)
    after = claim("later_layers_move_more", runs=[run(trial=3, k=L, value=math.nan, status="diverged")], weights=pd.concat([moved, absurd]))
    assert before["verdict"] == after["verdict"] == "supported"
    assert " (1 diverged)" in after["statistic"]
    assert after["statistic"].replace(" (1 diverged)", "") == before["statistic"]


# --- the report -----------------------------------------------------------------------------------


def test_report_has_every_verdict_and_inlines_figures(tmp_path):
    verdicts = ["supported", "contradicted", "inconclusive", "not run"]
    claims = [{"id": f"claim_{i}", "claim": f"Claim {i} <a|b>", "source": "Tamkin et al. 2020 §3", "verdict": v, "statistic": f"rho={i}"} for i, v in enumerate(verdicts)]
    table = pd.DataFrame({"task": ["sst2"], "size": [500], "rho": [0.12345], "p": [0.5], "k90_finetune": [np.nan], "k90_probe": [3.0], "diverged": [1]})
    png = tmp_path / "plots" / "fig1.png"
    png.parent.mkdir()
    png.write_bytes(b"\x89PNG\r\n\x1a\n fake image bytes")
    md, page = tmp_path / "report" / "claims.md", tmp_path / "report" / "claims.html"

    write_report(claims, table, [("Fig. 1", png), ("Fig. 3", tmp_path / "plots" / "missing.png")], md, page)

    md_text, html_text = md.read_text(), page.read_text()
    for v in verdicts:
        assert f"| {v} |" in md_text and f">{v}</td>" in html_text
    assert "Claim 0 <a\\|b>" in md_text and "Claim 0 &lt;a|b&gt;" in html_text  # pipes escaped in Markdown, markup in HTML
    assert "| sst2 | 500 | 0.123 | 0.5 | n/a | 3 | 1 |" in md_text
    assert "![Fig. 1](../plots/fig1.png)" in md_text
    assert base64.b64encode(png.read_bytes()).decode() in html_text
    assert "Fig. 3: figure not produced" in md_text and "Fig. 3: figure not produced" in html_text
    assert "background:" in html_text and "src='http" not in html_text
