"""The per-run measurements (src/measures/) against known cases, on the real code paths.

CKA: the textbook properties of linear CKA with the unbiased HSIC estimator, and the bias
of the plain estimator it exists to remove. Criticality and head importance: on the tiny
model, through the same functions a finetune run calls.
"""

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.stats import ortho_group

from bench.levers import gram_cka
from src.conditions.condition import Condition
from src.data import tokens
from src.measures.cka import Side, layer_cka, linear_cka, pretrained_sides, unbiased_hsic
from src.measures.criticality import layer_states, rewind_drops
from src.measures.heads import head_gates, head_importance
from src.model.families import family_of
from src.model.finetuner import build_finetuner
from src.params.load import validate
from src.tasks import splits
from src.tasks.registry import get_task
from src.train.loop import evaluate
from src.train.run import run_condition
from src.train.schedule import is_full_model, run_settings
from tests.support import grid_params

RNG = np.random.default_rng(0)


def biased_cka(x: np.ndarray, y: np.ndarray) -> float:
    """CKA with the plain HSIC estimator tr(KHLH) (Kornblith et al. 2019): the contrast case."""
    x, y = x - x.mean(0), y - y.mean(0)
    cross = np.linalg.norm(y.T @ x) ** 2
    return cross / (np.linalg.norm(x.T @ x) * np.linalg.norm(y.T @ y))


def test_cka_of_a_representation_with_itself_is_one():
    x = RNG.normal(size=(32, 50))
    assert linear_cka(x, x) == pytest.approx(1.0, abs=1e-12)


def test_cka_is_invariant_to_orthogonal_transforms_and_isotropic_scaling():
    x = RNG.normal(size=(40, 20))
    y = x[:, :10] @ RNG.normal(size=(10, 15)) + 0.5 * RNG.normal(size=(40, 15))  # related, not identical
    reference = linear_cka(x, y)
    assert 0.2 < reference < 0.95
    rotation = ortho_group.rvs(20, random_state=1)
    assert linear_cka(x @ rotation, y) == pytest.approx(reference, abs=1e-10)
    assert linear_cka(7.5 * x, 0.01 * y) == pytest.approx(reference, abs=1e-10)
    assert linear_cka(x + 3.0, y) == pytest.approx(reference, abs=1e-10)  # a shift too: features are centred


@pytest.mark.parametrize("width, biased_mean", [(8, 0.2), (384, 0.92)])
def test_cka_of_independent_inputs_is_near_zero_at_small_n_where_the_biased_estimator_is_not(width, biased_mean):
    # n = 32: the plain estimator gives ~0.2 at 8 features and ~0.92 at MiniLM's 384; the
    # unbiased one is centred on 0 (each draw's spread ~0.05, the mean of 30 draws ~0.01).
    unbiased, biased = [], []
    for seed in range(30):
        rng = np.random.default_rng(seed)
        x, y = rng.normal(size=(32, width)), rng.normal(size=(32, width))
        unbiased.append(linear_cka(x, y))
        biased.append(biased_cka(x, y))
    assert np.mean(biased) == pytest.approx(biased_mean, abs=0.03)
    assert abs(np.mean(unbiased)) < 0.03 and max(abs(v) for v in unbiased) < 0.2


def test_cka_of_a_constant_representation_is_zero_not_nan():
    x = RNG.normal(size=(32, 8))
    constant = np.ones((32, 8)) * 3.0
    assert linear_cka(x, constant) == 0.0 and linear_cka(constant, x) == 0.0
    assert linear_cka(constant, constant) == 0.0
    assert linear_cka(x, np.c_[x, np.ones(32)]) == pytest.approx(1.0)  # a constant column adds nothing


def test_unbiased_hsic_matches_its_definition_on_a_small_case():
    # Song et al. (2012) eq. 5 written out term by term with explicit sums (n = 5), on the Grams of
    # centred features (what linear_cka compares)
    a, b = (lambda x: x - x.mean(0))(RNG.normal(size=(5, 3))), (lambda x: x - x.mean(0))(RNG.normal(size=(5, 2)))
    k, l = a @ a.T, b @ b.T  # noqa: E741
    n = 5
    kt, lt = k - np.diag(np.diag(k)), l - np.diag(np.diag(l))
    one = np.ones(n)
    expected = (
        np.trace(kt @ lt)
        + (one @ kt @ one) * (one @ lt @ one) / ((n - 1) * (n - 2))
        - 2 / (n - 2) * one @ kt @ lt @ one
    ) / (n * (n - 3))
    assert unbiased_hsic(Side.of(a), Side.of(b)) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("n, width", [(300, 40), (30, 200)])  # more examples than features, and fewer
def test_cka_in_feature_space_equals_the_gram_formula(n, width):
    rng = np.random.default_rng(n)
    for _ in range(5):
        x = rng.normal(size=(n, width)) + 2.0
        y = x[:, : width // 2] @ rng.normal(size=(width // 2, width)) + rng.normal(size=(n, width))
        for a, b in ((x, y), (x, rng.normal(size=(n, width // 3)))):  # related, and independent
            assert linear_cka(a, b) == pytest.approx(gram_cka(a, b), rel=1e-12, abs=1e-14)


def test_layer_cka_reuses_the_prepared_pretrained_side_only_for_the_same_features():
    finetuned, pretrained = RNG.normal(size=(40, 3, 16)), RNG.normal(size=(40, 3, 16))
    expected = [round(gram_cka(finetuned[:, i], pretrained[:, i]), 6) for i in range(3)]
    assert layer_cka(finetuned, pretrained) == expected
    assert pretrained_sides(pretrained.copy()) is pretrained_sides(pretrained)  # equal features: prepared once
    other = pretrained.copy()
    other[0, 0, 0] += 1e-9
    assert pretrained_sides(other) is not pretrained_sides(pretrained)
    assert layer_cka(finetuned, other) == [round(gram_cka(finetuned[:, i], other[:, i]), 6) for i in range(3)]


def tiny_settings(**train):
    params = grid_params()
    params["train"].update({"lr": 1e-3, "batch_size": 8, "eval_batch_size": 32}, **train)
    return validate(params)


def tiny_model(model_dir, k=3):
    task = get_task("rt_sentiment")
    model, _ = build_finetuner(model_dir, Condition("rt_sentiment", 8, 0, 1, k=k), 2, seed=0)
    return model.eval(), task


def eval_split(tasks_dir):
    return splits.load_split(tasks_dir / "rt_sentiment" / "tokens.npz", "eval")


def eval_loss(model, task, split) -> float:
    return evaluate(model, task, split, 32, "fp32")["loss"]


def test_a_run_whose_finetuning_changed_nothing_has_every_rewind_drop_exactly_zero(tiny_model_dir, tiny_tasks_root):
    from dataclasses import replace

    condition = Condition("rt_sentiment", 16, trial=0, epochs=1, k=1)  # layers 2-3 reinitialised
    # Adam at lr 0 moves nothing; rewound models scored on the first 20 of the 60 eval examples
    settings = replace(run_settings(tiny_settings(criticality="all", criticality_examples=20), 1), lr=0.0)
    assert settings.criticality_examples == 20
    result = run_condition(condition, settings, tiny_model_dir, tiny_tasks_root)
    assert [(r["layer"], r["rewound_to"]) for r in result.criticality] == [
        (layer, to) for layer in (1, 2, 3) for to in ("pretrained", "initial")
    ]
    # paired on the same 20 examples: the finetuned model is scored on them too
    assert all(round(r["score"] * 20, 4) == int(round(r["score"] * 20)) for r in result.criticality)
    initial = [r for r in result.criticality if r["rewound_to"] == "initial"]
    assert all(r["drop"] == 0.0 for r in initial)
    # layer 1 kept its pretrained weights, and lr 0 left them there
    pretrained = {r["layer"]: r for r in result.criticality if r["rewound_to"] == "pretrained"}
    assert pretrained[1]["drop"] == 0.0


def test_rewinding_the_one_layer_finetuning_changed_recovers_the_pretrained_score(tiny_model_dir, tiny_tasks_root):
    model, task = tiny_model(tiny_model_dir)
    split = eval_split(tiny_tasks_root)
    pretrained = layer_states(model.encoder)
    before = eval_loss(model, task, split)
    layer = model.encoder.encoder.layer[1]
    with torch.no_grad():  # "finetuning" that moved layer 2 only
        for p in layer.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    after = eval_loss(model, task, split)
    changed = layer_states(model.encoder)
    assert after != before
    rows = rewind_drops(model.encoder, pretrained, pretrained, lambda: eval_loss(model, task, split), after)
    by_layer = {r["layer"]: r for r in rows if r["rewound_to"] == "pretrained"}
    assert by_layer[2]["score"] == round(before, 6) and by_layer[2]["drop"] == round(after - before, 6)
    assert by_layer[1]["drop"] == 0.0 and by_layer[3]["drop"] == 0.0
    assert all(
        torch.equal(a[n], b[n]) for a, b in zip(changed, layer_states(model.encoder)) for n in a
    )  # every layer restored


def gated_logits(model, batch, gates_to=None):
    with head_gates(model.encoder) as gates:
        if gates_to is not None:
            gates_to(gates)
        return model(**batch)


def a_batch(tasks_dir):
    split = eval_split(tasks_dir)
    batch = tokens.collate(split, np.arange(16))
    batch.pop("labels")
    return batch


@torch.no_grad()
def test_head_gates_at_one_leave_the_model_bit_identical(tiny_model_dir, tiny_tasks_root):
    model, _ = tiny_model(tiny_model_dir)
    batch = a_batch(tiny_tasks_root)
    assert torch.equal(gated_logits(model, batch), model(**batch))
    # and the hooks are gone after the context: a gate at 0 no longer acts
    gated_logits(model, batch, lambda g: g.zero_())
    assert torch.equal(model(**batch), gated_logits(model, batch))


@torch.no_grad()
def test_a_gate_at_zero_equals_zeroing_that_heads_output_columns(tiny_model_dir, tiny_tasks_root):
    model, _ = tiny_model(tiny_model_dir)
    batch = a_batch(tiny_tasks_root)
    gated = gated_logits(model, batch, lambda g: g[1, 2].zero_())
    projection = model.encoder.get_submodule(family_of(model.encoder).stack)[1].attention.output.dense
    width = model.encoder.config.hidden_size // model.encoder.config.num_attention_heads
    projection.weight[:, 2 * width : 3 * width] = 0
    zeroed = model(**batch)
    assert not torch.allclose(gated, gated_logits(tiny_model(tiny_model_dir)[0], batch), atol=1e-4)  # it matters
    torch.testing.assert_close(gated, zeroed, rtol=0, atol=1e-6)


def test_a_head_whose_output_columns_are_zero_has_importance_zero(tiny_model_dir, tiny_tasks_root):
    model, task = tiny_model(tiny_model_dir)
    train = splits.load_split(tiny_tasks_root / "rt_sentiment" / "tokens.npz", "train").subset(np.arange(32))
    width = model.encoder.config.hidden_size // model.encoder.config.num_attention_heads
    with torch.no_grad():
        model.encoder.encoder.layer[0].attention.output.dense.weight[:, width : 2 * width] = 0
    importance = np.array(head_importance(model, task, train, 8))
    assert importance.shape == (3, 4)
    assert importance[0, 1] == 0.0
    assert (np.delete(importance.ravel(), 1) > 0).all()
    assert all(p.grad is None for p in model.parameters())  # only the gates' gradient was taken


def test_a_run_records_cka_criticality_and_head_importance_where_its_settings_ask(tiny_model_dir, tiny_tasks_root):
    config = tiny_settings(criticality="full_model", head_importance="full_model")
    full = Condition("rt_sentiment", 16, trial=0, epochs=1, k=3)
    assert is_full_model(full, 3) and not is_full_model(Condition("rt_sentiment", 16, 0, 1, k=2), 3)
    result = run_condition(full, run_settings(config, 1, full_model=True), tiny_model_dir, tiny_tasks_root)
    assert len(result.layer_cka) == 4 and all(-1 <= v <= 1 for v in result.layer_cka)
    assert result.layer_cka[0] > 0.9  # the embeddings barely move in one epoch
    assert len(result.criticality) == 6 and {r["rewound_to"] for r in result.criticality} == {"pretrained", "initial"}
    assert np.array(result.head_importance["before"]).shape == (3, 4) == np.array(result.head_importance["after"]).shape
    assert result.head_importance["before"] != result.head_importance["after"]
    # on a run that reinitialises, the full-model measurements are off: fingerprint and record as without them
    partial = run_settings(config, 1, full_model=False)
    assert not partial.criticality and not partial.head_importance and partial.cka
    assert run_settings(tiny_settings(criticality_examples=200), 1).criticality_examples == 0  # off: not fingerprinted
    plain = run_condition(
        full, run_settings(tiny_settings(cka=False, criticality="off"), 1, True), tiny_model_dir, tiny_tasks_root
    )
    assert plain.layer_cka == [] and plain.criticality == [] and plain.head_importance == {}
    assert plain.scores == result.scores  # measuring never changes the run


def test_head_studies_measure_head_importance_on_exactly_the_full_model_runs_a_head_study_compares_with():
    from src.conditions.studies import head_references

    params = grid_params()
    params["studies"]["heads"].update(sizes=[8], trials=1)  # compares with trial 0 of the full model at n = 8 only
    config = validate({**params, "train": {**params["train"], "head_importance": "head_studies"}})
    compared = head_references(config, 6)
    assert compared == {Condition("rt_sentiment", 8, 0, 1, k=6)}
    full_trial_1 = Condition("rt_sentiment", 8, 1, 1, k=6)  # the progressive study's, which no head study pairs with
    assert run_settings(config, 1, is_full_model(full_trial_1, 6), full_trial_1 in compared).head_importance is False
    assert run_settings(config, 1, True, True).head_importance is True
    assert run_settings(config, 1, False, True).head_importance is False  # never on a run that reinitialises
    every = validate({**params, "train": {**params["train"], "head_importance": "full_model"}})
    assert run_settings(every, 1, True, False).head_importance is True
    off = validate({**params, "train": {**params["train"], "head_importance": "off"}})
    assert run_settings(off, 1, True, True).head_importance is False
    without_heads = {**params, "studies": {k: v for k, v in params["studies"].items() if k != "heads"}}
    assert head_references(validate(without_heads), 6) == set()


def test_importance_vs_reinit_correlation_has_the_exact_permutation_p_and_the_interval_calibrated_at_its_heads():
    import itertools

    from scipy.stats import norm, spearmanr

    from src.stats.correlation import spearman_with_uncertainty

    importance = np.array([0.1, 0.5, 0.3, 0.9, 0.2, 0.7])
    drop = np.array([0.0, 0.02, 0.01, 0.05, -0.01, 0.03])
    found = spearman_with_uncertainty(importance, drop)
    rho = spearmanr(importance, drop).statistic
    as_extreme = [abs(spearmanr(p, drop).statistic) >= abs(rho) - 1e-12 for p in itertools.permutations(importance)]
    assert found["spearman"] == pytest.approx(rho)
    assert found["p_permutation"] == pytest.approx(np.mean(as_extreme))  # all 720 pairings: 12 / 720
    # 6 heads: measures.correlation_interval's pick, Fisher z with the Bonett-Wright SE (docs/calibration.md)
    half = norm.ppf(0.975) * np.sqrt((1 + rho**2 / 2) / (6 - 3))
    assert found["interval"] == "Fisher z, Bonett-Wright SE"
    assert (found["ci_low"], found["ci_high"]) == pytest.approx(np.tanh(np.arctanh(rho) + np.array([-half, half])))
    # fewer heads than any measured: rho and the exact p (all 24 pairings), no interval, and why
    few = spearman_with_uncertainty(importance[:4], drop[:4])
    assert few["spearman"] == pytest.approx(spearmanr(importance[:4], drop[:4]).statistic)
    assert few["p_permutation"] == pytest.approx(1 / 12)  # 2 of the 24 pairings are as extreme as rho = 1
    assert np.isnan(few["ci_low"]) and np.isnan(few["ci_high"])
    assert few["interval"] == "none: not calibrated at 4 heads (docs/calibration.md)"
    too_few = spearman_with_uncertainty(importance[:2], drop[:2])
    assert np.isnan(too_few["spearman"]) and too_few["interval"].startswith("none: fewer than 3 heads")


def test_rewinding_to_the_initial_value_of_an_unchanged_model_drops_nothing_and_to_pretrained_does(
    tiny_model_dir, tiny_tasks_root
):
    # k = 1: layers 2-3 start from a random init, so their initial and pretrained values differ.
    from src.model.base import load_encoder

    model, task = tiny_model(tiny_model_dir, k=1)
    split = eval_split(tiny_tasks_root)
    initial, pretrained = layer_states(model.encoder), layer_states(load_encoder(tiny_model_dir, with_pooler=False))
    unchanged = eval_loss(model, task, split)  # "finetuning" that changed nothing
    rows = rewind_drops(model.encoder, pretrained, initial, lambda: eval_loss(model, task, split), unchanged)
    drops = {(r["layer"], r["rewound_to"]): r["drop"] for r in rows}
    assert all(drops[layer, "initial"] == 0.0 for layer in (1, 2, 3))
    assert drops[1, "pretrained"] == 0.0 and drops[2, "pretrained"] != 0.0 and drops[3, "pretrained"] != 0.0


def test_measurement_tables_and_figure_from_real_runs(tiny_model_dir, tiny_tasks_root, tmp_path):
    from src.figures.plots import plot_representation
    from src.results.measures import MEASURE_COLUMNS, run_measures

    config = tiny_settings(criticality="full_model", head_importance="full_model")
    full, partial = Condition("rt_sentiment", 16, 0, 1, k=3), Condition("rt_sentiment", 16, 0, 1, k=1)
    results = [
        run_condition(c, run_settings(config, 1, is_full_model(c, 3)), tiny_model_dir, tiny_tasks_root)
        for c in (full, partial)
    ]
    tables = run_measures({"progressive": results, "other": results[:1]})
    cka = tables["cka"]
    assert list(cka.columns) == MEASURE_COLUMNS["cka"] and len(cka) == 3 * 4  # 2 + 1 runs x layers 0..3
    assert cka.query("study == 'progressive' and k == 1")["cka"].tolist() == results[1].layer_cka
    criticality = tables["criticality"]
    assert set(criticality["k"]) == {3} and len(criticality) == 2 * 6  # the full model's run, in both studies
    importance = tables["head_importance"]
    assert len(importance) == 2 * 3 * 4  # before and after, once although two studies report the run
    weights = pd.DataFrame([{"study": "progressive", **r.condition, **w} for r in results for w in r.weight_change])
    plot_representation(cka[cka["study"] == "progressive"], weights, criticality, tmp_path / "representation.png")
    assert (tmp_path / "representation.png").stat().st_size > 10_000


def test_a_shallower_model_rewinds_each_position_to_the_pretrained_layer_it_kept(tiny_model_dir, tiny_tasks_root):
    # layer 2 of 3 deleted: position 2 holds pretrained layer 3. Nothing was reinitialised, so
    # each position's pretrained value is its initial one: the same weights, the same score
    # (rewound to pretrained layer 2 instead, position 2 scored 0.62 against 0.97).
    condition = Condition("rt_sentiment", 80, 0, 2, scheme="remove", removal="listed", removed=(2,))
    result = run_condition(
        condition,
        run_settings(tiny_settings(criticality="all", criticality_examples=0), 2),
        tiny_model_dir,
        tiny_tasks_root,
    )
    assert result.depth["kept"] == [1, 3] and len(result.layer_cka) == 3  # embeddings and the two positions
    rows = {(r["layer"], r["rewound_to"]): r["score"] for r in result.criticality}
    assert set(rows) == {(layer, to) for layer in (1, 2) for to in ("pretrained", "initial")}
    assert all(rows[layer, "pretrained"] == rows[layer, "initial"] for layer in (1, 2))


def test_cka_of_a_shallower_model_compares_each_position_with_the_pretrained_layer_it_kept():
    from src.measures import MEASUREMENTS, Measured

    rng = np.random.default_rng(0)
    pretrained = rng.normal(size=(40, 4, 8)).astype(np.float32)  # embeddings and layers 1..3
    finetuned = pretrained[:, [0, 1, 3]].copy()  # layer 2 deleted: position 2 is layer 3, unchanged
    run = Measured(
        model=None,
        task=None,
        train_split=None,
        eval_split=None,
        settings=None,
        evaluation={"layer_features": finetuned},
        pretrained_encoder=None,
        pretrained_features=lambda: pretrained,
        score=None,
        source_layers=[0, 2],
    )
    cka = next(m for m in MEASUREMENTS if m.setting == "cka")
    assert cka.at_end(run, None) == [1.0, 1.0, 1.0]
