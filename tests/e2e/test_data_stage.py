"""The data stage (python -m stages.build_data) run twice on the embedded tasks builds the same
files every time: once through its entry point in this process, once in a fresh interpreter (another
hash seed, no state shared with the first)."""

import json
import os
import subprocess
import sys

import pandas as pd
import yaml

from tests.support import REPO, grid_params, run_stage_in_process


def test_the_data_stage_builds_the_new_tasks_the_same_every_time(tmp_path, tiny_model_dir):
    params = grid_params()
    params.update(task="subjectivity", k=3)  # the tiny model has 3 layers
    # the tiny model's 18-word vocabulary maps most of the real text to [UNK]: only the splits are tested here
    params["data"].update(tasks=["subjectivity", "tweet_sentiment"], eval_size=500, max_unk_rate=1.0)
    params["model"]["max_length"] = 64  # the tiny model's positions
    params["probe"]["tasks"] = ["subjectivity"]
    params["studies"] = {
        "progressive": {"scheme": "progressive", "tasks": ["subjectivity"], "sizes": [256], "ks": [0, 3], "trials": 3}
    }
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    outputs = []
    for out in ("first", "second"):
        args = ("--model", str(tiny_model_dir), "--out", out)
        run = (
            run_stage_in_process(tmp_path, "stages.build_data", *args)
            if out == "first"
            else subprocess.run(
                [sys.executable, "-m", "stages.build_data", *args],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
        )
        assert run.returncode == 0, run.stderr[-3000:]
        outputs.append(
            {p.relative_to(tmp_path / out): p.read_bytes() for p in sorted((tmp_path / out).rglob("*")) if p.is_file()}
        )
    assert outputs[0] == outputs[1] and len(outputs[0]) == 2 * 4  # per task: train.tsv, eval.tsv, tokens.npz, info.json
    for name, train_size in (("subjectivity", 3992), ("tweet_sentiment", 1362)):
        info = json.loads((tmp_path / "first" / name / "info.json").read_text())
        assert (info["train_examples"], info["eval_examples"]) == (train_size, 500)
        train_counts, eval_counts = info["label_counts"]["train"], info["label_counts"]["eval"]
        assert (
            sum(train_counts.values()) == train_size and abs(train_counts["0"] - train_counts["1"]) <= 0.02 * train_size
        )
        assert train_counts["0"] + eval_counts["0"] == train_counts["1"] + eval_counts["1"]
        train = pd.read_csv(tmp_path / "first" / name / "train.tsv", sep="\t", keep_default_na=False)
        eval_ = pd.read_csv(tmp_path / "first" / name / "eval.tsv", sep="\t", keep_default_na=False)
        assert len(train) == train_size and not set(train["sentence"]) & set(eval_["sentence"])
