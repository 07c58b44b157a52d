"""The base checkpoint: a model the hub cannot give fails fast, in one line that names the
offline default, from the real prepare_model stage."""

import os
import subprocess
import sys
import time

import pytest
import yaml

from tests.support import REPO, grid_params


@pytest.mark.parametrize(
    "offline",
    [
        pytest.param({"HF_HUB_OFFLINE": "1"}, id="offline-mode"),
        # A hub that refuses connections, offline mode unset: the client would retry 5 times (~30 s).
        pytest.param({"HF_ENDPOINT": "http://127.0.0.1:9"}, id="hub-unreachable"),
    ],
)
def test_unreachable_hub_model_fails_fast_in_one_line_naming_the_offline_default(tmp_path, offline):
    params = grid_params()
    params["model"]["name"] = "bert-base-uncased"
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT")}
    env.update(offline, HF_HOME=str(tmp_path / "hf"), PYTHONPATH=str(REPO))  # empty cache
    start = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "stages.prepare_model", "--out", "model"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    seconds = time.perf_counter() - start
    assert run.returncode == 1, run.stderr[-3000:]
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    errors = [line for line in run.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith(
        "error: params.yaml: model.name = 'bert-base-uncased': could not load it (the Hugging Face hub is unreachable"
    ), run.stderr[-3000:]
    assert errors[0].endswith("Offline, use the embedded default: model.name: embedded"), errors[0]
    assert seconds < 20, f"{seconds:.1f} s: an unreachable hub must fail without the client's retries"
    assert not (tmp_path / "model" / "model.safetensors").exists()
