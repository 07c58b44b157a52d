"""The real finetune and probe code paths on the tiny model: reproducible, learning, and honest about divergence."""

import base64
from dataclasses import asdict, replace

import numpy as np
import torch

from src.artefacts.run_result import RunResult
from src.conditions.condition import Condition
from src.data import tokens
from src.model.base import load_encoder
from src.model.features import layer_features
from src.model.finetuner import masked_mean
from src.params.load import validate
from src.probing.probes import train_probes
from src.tasks import splits
from src.tasks.registry import get_task
from src.train.run import _seeds, training_seeds
from src.train.schedule import run_settings
from tests.support import train_condition as run
from tests.support import training_params


def test_a_condition_is_reproducible(tiny_model_dir, tiny_tasks_root):
    condition = Condition("rt_sentiment", 64, trial=0, epochs=3, k=1)
    first = run(condition, tiny_model_dir, tiny_tasks_root)
    second = run(condition, tiny_model_dir, tiny_tasks_root)
    assert first.scores == second.scores and first.epoch_losses == second.epoch_losses
    other_trial = run(Condition("rt_sentiment", 64, trial=1, epochs=3, k=1), tiny_model_dir, tiny_tasks_root)
    assert other_trial.train_subset_sha256 != first.train_subset_sha256


def test_conditions_with_the_same_training_run_end_with_the_same_result(tiny_model_dir, tiny_tasks_root):
    # The pipeline trains such conditions once and shares the result (Condition.training_run):
    # at L=3, keeping layer 1 with a window of 1 is reinitialising layers 2-3 is k=1.
    twins = [
        Condition("rt_sentiment", 64, 0, epochs=2, k=1),
        Condition("rt_sentiment", 64, 0, epochs=2, scheme="block_preserve", layer=1, window=1),
    ]
    assert twins[0].training_run(3) == twins[1].training_run(3)
    first, second = (run(c, tiny_model_dir, tiny_tasks_root) for c in twins)
    for field in (
        "scores",
        "eval_loss",
        "epoch_losses",
        "weight_change",
        "reinitialised",
        "layer_order",
        "train_subset_sha256",
    ):
        assert getattr(first, field) == getattr(second, field), field


def test_finetuning_learns_the_toy_task(tiny_model_dir, tiny_tasks_root):
    result = run(Condition("rt_sentiment", 200, 0, epochs=4, k=3), tiny_model_dir, tiny_tasks_root)
    assert result.status == "ok"
    assert result.epoch_losses[-1] < result.epoch_losses[0]
    assert result.scores["accuracy"] > 0.8


def test_absurd_learning_rate_is_recorded_as_diverged(tiny_model_dir, tiny_tasks_root):
    result = run(Condition("rt_sentiment", 64, 0, epochs=2, k=3), tiny_model_dir, tiny_tasks_root, lr=1e12)
    assert result.status == "diverged" and result.scores == {}


def test_features_draw_no_progress_bar_in_a_log_or_inside_a_run(tiny_model_dir, tiny_task_dir, capsys):
    """A run's own pass (no desc) never draws a bar under its stage's live line; a named one draws only on a
    terminal, so a log or CI gets none (capsys's stderr is not a terminal)."""
    encoder = load_encoder(tiny_model_dir, with_pooler=False)
    split = splits.load_split(tiny_task_dir / "tokens.npz", "eval")
    for desc in ("", "features eval"):
        layer_features(encoder, split, batch_size=16, pooling="mean", desc=desc)
    assert capsys.readouterr().err == ""


def test_features_equal_per_layer_masked_means(tiny_model_dir, tiny_task_dir):
    encoder = load_encoder(tiny_model_dir, with_pooler=False)
    split = splits.load_split(tiny_task_dir / "tokens.npz", "eval")
    features = layer_features(encoder, split, batch_size=16, pooling="mean")
    assert features.shape == (len(split), 4, 64)
    batch = tokens.collate(split, np.array([2]))
    with torch.no_grad():
        hidden = encoder(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], output_hidden_states=True
        ).hidden_states
    for layer in range(4):  # one example alone, no padding: the batched pass must agree
        expected = masked_mean(hidden[layer], batch["attention_mask"])[0].numpy()
        np.testing.assert_allclose(features[2, layer], expected, rtol=1e-2, atol=1e-2)


def test_probes_are_independent_per_layer(config):
    # Layer 1 carries the label, layers 0 and 2 are noise: only probe 1 may score well.
    rng = np.random.default_rng(0)

    def make(n):
        y = rng.integers(2, size=n)
        x = rng.normal(size=(n, 3, 16)).astype(np.float32)
        x[:, 1, 0] += 3 * (2 * y - 1)
        return x, y

    (train_x, train_y), (eval_x, eval_y) = make(600), make(300)
    probe = replace(config.probe, epochs=10, lr=1e-2, train_batch_size=32)
    [predictions] = train_probes(get_task("rt_sentiment"), train_x, train_y[:, None], eval_x, probe, seed=0)
    accuracy = [(p == eval_y).mean() for p in predictions]
    assert accuracy[1] > 0.95 and accuracy[0] < 0.65 and accuracy[2] < 0.65


def test_the_lr_multiplier_reaches_the_reinitialised_layers_through_run_condition(tiny_model_dir, tiny_tasks_root):
    # With Adam, a step's size is about the lr: over one short epoch, the reinitialised
    # layers (2-3 at k=1) must move several times more at 5x lr, the kept layer about the same.
    def moved(multiplier):
        result = run(
            Condition("rt_sentiment", 32, 0, epochs=1, k=1, lr_multiplier=multiplier),
            tiny_model_dir,
            tiny_tasks_root,
            lr=1e-4,
            precision="fp32",
        )
        return {
            layer: np.mean([r["frobenius"] for r in result.weight_change if r["layer"] == layer]) for layer in (1, 2, 3)
        }

    plain, boosted = moved(1.0), moved(5.0)
    assert boosted[2] / plain[2] > 3 and boosted[3] / plain[3] > 3
    assert 0.5 < boosted[1] / plain[1] < 2


def test_a_result_keeps_its_predictions_and_the_weight_change_at_power_of_two_steps(tiny_model_dir, tiny_tasks_root):
    from src.tasks.kinds import decode_predictions
    from src.tasks.metrics import score

    result = run(Condition("rt_sentiment", 40, 0, epochs=2, k=3), tiny_model_dir, tiny_tasks_root)
    eval_split = splits.load_split(tiny_tasks_root / "rt_sentiment" / "tokens.npz", "eval")
    predictions = decode_predictions(result.predictions)
    assert len(predictions) == len(eval_split) and score(("accuracy",), predictions, eval_split.labels) == result.scores
    assert result.steps == 10 and [r["step"] for r in result.layer_change_by_step] == [1, 2, 4, 8]
    changes = [r["frobenius"] for r in result.layer_change_by_step]
    assert all(len(c) == 3 for c in changes) and changes[0][0] > 0


def test_a_result_keeps_every_steps_loss_in_two_bytes_and_each_epochs_mean_is_theirs(tiny_model_dir, tiny_tasks_root):
    result = run(Condition("rt_sentiment", 40, 0, epochs=2, k=3), tiny_model_dir, tiny_tasks_root)
    losses = result.step_loss_values()
    assert losses.dtype == np.float16 and len(losses) == result.steps == 10  # 40 examples in batches of 8, 2 epochs
    assert len(base64.b64decode(result.step_losses["base64"])) == 2 * result.steps
    # every batch holds 8 examples, so an epoch's mean loss is the mean of its steps' losses
    by_epoch = losses.astype(np.float64).reshape(2, 5).mean(axis=1)
    assert np.allclose(by_epoch, result.epoch_losses, rtol=2e-3)
    assert RunResult(**{**asdict(result), "step_losses": None}).step_loss_values().size == 0  # an older result


def test_auto_precision_is_native_bf16_or_fp32_on_a_cpu_and_the_fingerprint_holds_the_resolved_one(monkeypatch):
    from src.train.device import resolve_precision

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # a CPU machine, also where a GPU is lent
    # an AVX-512 CPU without BF16: oneDNN calls bf16 supported there, and emulates it 2.75x slower
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: True)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    assert resolve_precision("auto", "cpu") == "fp32"
    assert resolve_precision("bf16", "cpu") == "bf16"  # an explicit choice stands
    assert run_settings(validate(training_params(precision="auto")), 1).precision == "fp32"
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True)
    assert resolve_precision("auto", "cpu") == "bf16"
    assert run_settings(validate(training_params(precision="auto")), 1).precision == "bf16"


def test_the_recorded_subset_seeds_draw_the_subsets_each_step_trains_on():
    # final task and each intermediate step (here on another subset stream than the trial)
    condition = Condition(
        "rt_sentiment",
        32,
        1,
        2,
        intermediate_task="subjectivity+tweet_sentiment",
        intermediate_size=16,
        intermediate_epochs=1,
        streams=(("subset", 2),),
    )
    seeds = _seeds(condition, 7)
    for recorded, task, size in (
        ("subset", "rt_sentiment", 32),
        ("subset_intermediate", "subjectivity", 16),
        ("subset_intermediate_1", "tweet_sentiment", 16),
    ):
        drawn = np.sort(np.random.default_rng(seeds[recorded]).choice(200, size=size, replace=False))
        assert (drawn == tokens.training_subset(200, size, task, 2, 7)).all(), recorded
    assert (seeds["order"], seeds["dropout"]) == training_seeds(condition, 7)
