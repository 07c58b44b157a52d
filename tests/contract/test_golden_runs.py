"""Golden runs: a tiny run per scheme family on the suite's tiny model (and one with every
modifier, one sequential, one packed pair, and one measured both while training and on its
kept weights), through the engine's entry points (run_condition, run_all), compared with the
numbers the code at commit 83d6513 produced by this same harness (golden_runs.json).

They are the proof behind EQUIVALENT_RECIPES (src/train/run.py): a recipe digest is declared
equivalent to the current one, so that its results are not trained again, only while these
runs still give the pinned numbers. Predictions, the layer order, the depth audit, the
reinitialised tensors, the subset and the seeds must match exactly; every float (losses,
scores, weight changes, measurements) within TOLERANCE, which is far below what any change
of the recipe moves and above what another CPU's kernels move (checked with
ATEN_CPU_CAPABILITY=avx2 on an AVX512 CPU). A change that moves these numbers is a new recipe:
keep its digest out of EQUIVALENT_RECIPES, and regenerate the file with the new code
(GOLDEN_RUNS_WRITE=1 python -m pytest tests/contract/test_golden_runs.py), saying why in the
commit.
"""

import json
import math
import os
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from src.conditions.condition import Condition
from src.params.load import validate
from src.train.run import run_condition
from src.train.schedule import run_all, run_settings
from tests.support import training_params

GOLDEN = Path(__file__).with_name("golden_runs.json")
TOLERANCE = {"rel": 1e-4, "abs": 1e-5}
# what must match bit for bit; every other field is compared as floats within TOLERANCE
EXACT = ("status", "predictions", "layer_order", "depth", "reinitialised", "train_subset_sha256", "seeds", "steps")
FLOATS = (
    "scores",
    "eval_loss",
    "majority_share",
    "epoch_losses",
    "step_losses",
    "weight_change",
    "layer_cka",
    "criticality",
    "head_importance",
    "intermediate_steps",
)
MEASUREMENTS = ("layer_cka", "criticality", "head_importance")

ALONE = {  # name -> condition trained alone (80 examples, trial 0, 1 epoch: 10 steps that learn the toy task)
    "progressive": dict(k=1),
    "block": dict(scheme="block_preserve", layer=2, window=1),
    "single_layer": dict(scheme="single_layer", layer=2),
    "permutation": dict(scheme="permutation"),
    "head": dict(scheme="head", layer=2, head_index=1),
    "remove": dict(scheme="remove", removal="top", removed=(3,)),
    "modifiers": dict(k=1, lr_multiplier=10.0, keep_layernorm=True),
    "sequential": dict(k=2, intermediate_task="rt_sentiment", intermediate_size=24),
    "full_model_measured": dict(k=3),  # nothing reinitialised: every measurement applies
}
PACKED = {"packed_k0": dict(k=0), "packed_k2": dict(k=2)}


def condition(**fields) -> Condition:
    return Condition("rt_sentiment", 80, 0, 1, **fields)


def settings(**train):
    """The tiny model's training settings (fp32, 1 thread: the same numbers on any CPU)."""
    config = validate(training_params(precision="fp32", threads=1, **train))
    return config, run_settings(config, 1, full_model=True)


def pinned(result) -> dict:
    fields = asdict(result)
    fields["step_losses"] = result.step_loss_values().astype(float).tolist()
    fields["intermediate_steps"] = [  # a step's time is not a number the recipe makes
        {key: value for key, value in step.items() if key != "train_seconds"} for step in fields["intermediate_steps"]
    ]
    return {name: fields[name] for name in (*EXACT, *FLOATS)}


def golden_runs(model_dir: Path, tasks_dir: Path, tmp: Path) -> dict:
    """Every golden run's pinned fields, by name."""
    _, measured = settings(cka=True, criticality="all", head_importance="full_model", criticality_examples=20)
    runs = {}
    for name, fields in ALONE.items():
        ask = measured if name == "full_model_measured" else replace(measured, head_importance=False)
        runs[name] = pinned(run_condition(condition(**fields), ask, model_dir, tasks_dir))
    # the same run trained unmeasured with its weights kept, then measured on them (measure_kept_weights)
    full, weights = condition(k=3), tmp / "kept.weights.safetensors"
    kept = run_condition(full, measured.unmeasured(), model_dir, tasks_dir, weights=weights)
    again = run_condition(full, measured, model_dir, tasks_dir, weights=weights, kept=kept)
    runs["measured_on_kept_weights"] = {name: pinned(again)[name] for name in MEASUREMENTS}
    # a packed pair through the stage's scheduler (train.pack 2, one worker in this process)
    config, _ = settings(pack=2, cka=False, criticality="off", workers=1)
    conditions = [condition(**fields) for fields in PACKED.values()]
    for name, result in zip(PACKED, run_all(conditions, config, model_dir, tasks_dir, tmp / "out", "golden", False)):
        runs[name] = pinned(result)
    return runs


def close(actual, expected, where: str) -> list[str]:
    """Where `actual` differs from `expected` beyond TOLERANCE (floats) or at all (anything else)."""
    if isinstance(expected, dict) and isinstance(actual, dict) and actual.keys() == expected.keys():
        return [d for key in expected for d in close(actual[key], expected[key], f"{where}.{key}")]
    if isinstance(expected, list) and isinstance(actual, list) and len(actual) == len(expected):
        return [d for i, (a, e) in enumerate(zip(actual, expected)) for d in close(a, e, f"{where}[{i}]")]
    if isinstance(expected, float) and isinstance(actual, (int, float)) and not isinstance(actual, bool):
        same = math.isclose(actual, expected, rel_tol=TOLERANCE["rel"], abs_tol=TOLERANCE["abs"])
    else:
        same = actual == expected
    return [] if same else [f"{where}: {actual!r} != {expected!r}"]


def test_golden_runs_give_the_numbers_the_code_at_83d6513_gave(tiny_model_dir, tiny_tasks_root, tmp_path):
    runs = golden_runs(tiny_model_dir, tiny_tasks_root, tmp_path)
    if os.environ.get("GOLDEN_RUNS_WRITE"):
        GOLDEN.write_text(json.dumps(runs, indent=1, sort_keys=True) + "\n")
        pytest.skip(f"wrote {GOLDEN}")
    expected = json.loads(GOLDEN.read_text())
    assert runs.keys() == expected.keys()
    differences = [d for name in expected for d in close(runs[name], expected[name], name)]
    assert not differences, "\n".join(differences[:20])


def test_a_measurement_on_kept_weights_equals_the_one_made_while_training():
    expected = json.loads(GOLDEN.read_text())
    made = {name: expected["full_model_measured"][name] for name in MEASUREMENTS}
    assert not close(expected["measured_on_kept_weights"], made, "measured_on_kept_weights")
