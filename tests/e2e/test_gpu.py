"""The engine on a CUDA device: one run per kind of model change, every measurement on,
trained, scored and measured on the GPU, and a measurement made later on its kept weights.
Skipped without a GPU (CI has none); run where one is lent:
`python -m pytest -q -m gpu tests/e2e/test_gpu.py`."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from src.conditions.condition import Condition
from src.params.load import validate
from src.train.run import measure_kept_weights, run_condition
from src.train.schedule import run_all, run_settings
from tests.support import tiny_params

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

CONDITIONS = {
    "progressive": Condition("rt_sentiment", 64, 0, 1, k=1),
    "head": Condition("rt_sentiment", 64, 0, 1, scheme="head", layer=2, head_index=1),
    "permutation": Condition("rt_sentiment", 64, 0, 1, scheme="permutation"),
    "lr multiplier, keep LayerNorm": Condition("rt_sentiment", 64, 0, 1, k=2, lr_multiplier=5.0, keep_layernorm=True),
}


@pytest.fixture
def gpu_settings(config):
    settings = run_settings(config, 1)
    assert settings.device == "cuda"
    return replace(settings, cka=True, criticality=True, head_importance=True)


@pytest.mark.parametrize("name", list(CONDITIONS))
def test_a_run_trains_scores_and_measures_on_the_gpu(name, gpu_settings, tiny_model_dir, tiny_tasks_root, tmp_path):
    condition = CONDITIONS[name]
    weights = tmp_path / "trial0.weights.safetensors"
    result = run_condition(condition, gpu_settings, tiny_model_dir, tiny_tasks_root, key="k", weights=weights)
    assert result.ok and result.device == "cuda", result.status
    assert result.scores["accuracy"] > 0 and result.eval_predictions() is not None
    assert len(result.layer_cka) == 4 and len(result.criticality) >= 3
    assert set(result.head_importance) == {"after", "before"}
    # the same measurements again, made on the kept weights without training: equal
    off = {"cka": False, "criticality": False, "head_importance": False}
    unmeasured = replace(result, settings=result.settings | off, layer_cka=[], criticality=[], head_importance={})
    again = measure_kept_weights(condition, gpu_settings, tiny_model_dir, tiny_tasks_root, "k", weights, unmeasured)
    assert again.layer_cka == pytest.approx(result.layer_cka, abs=1e-5)
    assert [r["score"] for r in again.criticality] == [r["score"] for r in result.criticality]
    np.testing.assert_allclose(again.head_importance["after"], result.head_importance["after"], rtol=1e-4)


def test_a_pack_trains_on_the_gpu_and_its_runs_numbers_do_not_depend_on_their_order(
    tiny_model_dir, tiny_tasks_root, tmp_path
):
    # train.pack on the GPU through the stage's own scheduling: each run's result its own, and the
    # same bits whichever order the pack holds its runs in (the fingerprint leaves the mates out).
    config = validate(tiny_params(workers=1, pack=3, cka=False, criticality="off", head_importance="off"))
    ks = [0, 1, 2]

    def stage(order, out):
        conditions = [Condition("rt_sentiment", 40, 0, 1, k=k) for k in order]
        return run_all(
            conditions, config, tiny_model_dir, tiny_tasks_root, tmp_path / out, "studies.progressive", False
        )

    forward, backward = stage(ks, "forward"), stage(ks[::-1], "backward")
    assert all(r.ok and r.device == "cuda" and r.settings["pack"] == 3 for r in forward)
    for one, other in zip(forward, backward[::-1]):
        assert one.fingerprint == other.fingerprint
        assert one.step_losses == other.step_losses and one.predictions == other.predictions
