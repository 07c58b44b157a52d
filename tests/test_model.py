"""The base checkpoint: unreachable hub ids get a message that names the offline default."""

import os
import subprocess
import sys


def test_unreachable_hub_model_names_the_offline_default(tmp_path):
    code = "from pathlib import Path; from src.model import export_base_model; export_base_model('bert-base-uncased', Path(r'%s'))" % tmp_path
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))  # no network, empty cache
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert run.returncode != 0
    assert "could not load model 'bert-base-uncased' from the Hugging Face hub" in run.stderr
    assert "Offline, use the embedded default: model.name: embedded" in run.stderr
    assert not (tmp_path / "model.safetensors").exists()
