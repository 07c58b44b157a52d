"""Extractive QA (SQuAD 2.0) through the real pipeline: a tiny QA task and the progressive study
on it through `dvc exp run` in a scratch repo (the unit tests are unit/tasks/test_span_qa.py), on the
local model folder of all-MiniLM-L6-v2's shape and tokenizer that the pipeline test trains
(tests/support.py write_small_minilm), not the 30x costlier real one."""

import json

import pandas as pd
import pytest

from tests.support import build_scratch_repo, dvc_out, grid_params, write_small_minilm, write_tiny_squad

SMALL_MODEL = "small_minilm"  # the scratch repo's model folder


def write_inputs(repo) -> None:
    write_tiny_squad(repo / "squad")
    write_small_minilm(repo / SMALL_MODEL)


@pytest.mark.slow  # a whole SQuAD exp run (63 s); its report has a default test in test_preset_reports
def test_the_progressive_study_on_squad_runs_through_dvc_exp_run(tmp_path):
    from src.artefacts.predictions import read_predictions
    from src.artefacts.run_result import RunResult

    params = grid_params()
    params["model"].update(name=SMALL_MODEL, max_length=64)
    params["data"].update(tasks=["rt_sentiment", "squad_v2"], squad_dir="squad", qa_stride=16)
    params["probe"]["tasks"] = ["rt_sentiment"]
    params["train"].update(workers=1, threads=2)
    params.update(size=8, trials=1)  # the focus condition (on rt_sentiment): one short run
    params["studies"] = {"progressive": {**params["studies"]["progressive"], "sizes": [16]}}
    build_scratch_repo(tmp_path, params, write_inputs=write_inputs)
    dvc_out(tmp_path, "exp", "run", "-S", "studies.progressive.tasks=[squad_v2]")

    info = json.loads((tmp_path / "data/tasks/squad_v2/info.json").read_text())
    assert info["answerable"] == {"train": 24, "eval": 16} and info["windows"]["eval"] > 24  # windowed
    results = sorted((tmp_path / "data/runs/studies/progressive/squad_v2/n16").rglob("trial*.json"))
    assert len(results) == 2 * 2  # k = 0 and 6, two trials
    for path in results:
        result = RunResult.read(path)
        assert result.ok and result.metric == "squad_f1" and result.null_threshold is not None
        assert set(result.scores) == {"squad_f1", "squad_exact", "HasAns_f1", "HasAns_exact", "NoAns_f1", "NoAns_exact"}
        assert len(result.eval_predictions()) == 24  # one F1 per dev question
    runs = pd.read_csv(tmp_path / "metrics/runs.csv")
    squad = runs[runs["task"] == "squad_v2"]
    assert set(squad.loc[squad["headline"], "metric"]) == {"squad_f1"} and len(squad) == 4 * 6
    points = pd.read_csv(tmp_path / "metrics/points.csv")
    assert set(points.loc[points["task"] == "squad_v2", "k"]) == {0, 6}
    stored = read_predictions(tmp_path / "data/predictions.npz")
    assert stored.labels["squad_v2"].tolist().count(1) == 16 and len(stored.labels["squad_v2"]) == 24
    assert sum(key[0] == "squad_v2" for key in stored.runs) == 4
    assert stored.probes.keys() == {"rt_sentiment"}  # the probe of a classification task, on its eval set
    assert stored.probes["rt_sentiment"].shape[1:] == (7, len(stored.labels["rt_sentiment"]))
    assert "squad_v2" in (tmp_path / "metrics/report.md").read_text()
    assert (tmp_path / "plots/figures/progressive.png").exists()
