"""Every family's tiny checkpoint (tests/support.py write_family_checkpoint) through the stages from a
local folder, each by its dvc.yaml command run in process (tests/support.py run_stage_in_process):
every family through prepare_model, data and the finetune stage of the progressive study (k = 0 and L:
the whole stack reinitialised, and the model as prepared); one family, the furthest from BERT's
layout (ModernBERT: fused query-key-value, no segment ids), through the whole pipeline to aggregate, with
the head and permutation studies too; and (marked slow) every family as a real `dvc repro`. The
family table itself is tested in unit/model/test_families.py."""

import json

import pytest

from src.model.families import FAMILIES
from tests.support import (
    FAMILY_KINDS,
    FAMILY_LAYERS,
    build_scratch_repo,
    dvc_out,
    grid_params,
    run_stage_in_process,
    tiny_config,
    write_family_checkpoint,
    write_tiny_glue,
)

LAYERS, KINDS = FAMILY_LAYERS, FAMILY_KINDS  # each family's tiny checkpoint has 3 layers
WHOLE_PIPELINE = "modernbert"  # the family run through every stage in the default run
STUDIES = ("progressive", "heads", "permutation")


def tiny_family_repo(root, model_folder):
    """A git + DVC copy of this project whose params point model.name at a local folder and
    run a tiny grid: one SST-2-layout task, progressive k = 0 and L, head and permutation."""
    params = grid_params()
    params.update(task="sst2", size=8, k=LAYERS, trials=1)
    params["model"].update(name=str(model_folder), max_length=32)
    params["data"].update(tasks=["sst2"], glue_dir="glue", max_unk_rate=1.0)  # the tiny vocabulary: 18 words
    params["train"].update(epochs=1, small_epochs=1, workers=1, threads=1)
    params["probe"].update(epochs=1, tasks=["sst2"])
    tiny = {"tasks": ["sst2"], "sizes": [8], "trials": 1}
    params["studies"] = {
        "progressive": {"scheme": "progressive", **tiny, "ks": [0, LAYERS]},
        "heads": {"scheme": "head", "layers": [2], "heads": [3], **tiny},
        "permutation": {"scheme": "permutation", **tiny, "trials": 2},
    }
    build_scratch_repo(root, params, write_inputs=lambda root: write_tiny_glue(root / "glue"))


def run_stages_in_process(repo, studies, to_the_end: bool) -> None:
    """prepare_model -> data -> finetune@<study>, and with `to_the_end` features -> probe -> aggregate,
    each by its dvc.yaml command, run in this process: DVC and a fresh interpreter per stage made
    one family's `dvc repro` take 250-369 s on a loaded 2-core machine (the slow test below runs
    exactly that for every family)."""
    import shlex

    import yaml

    stages = yaml.safe_load((repo / "dvc.yaml").read_text())["stages"]
    commands = [stages["prepare_model"]["cmd"], stages["data"]["cmd"]]
    commands += [stages["finetune"]["do"]["cmd"].replace("${key}", study) for study in studies]
    if to_the_end:
        commands += [stages[name]["cmd"].replace("${item.task}", "sst2") for name in ("features", "probe", "aggregate")]
    for command in commands:
        _python, _dash_m, module, *args = shlex.split(command)
        run = run_stage_in_process(repo, module, *args)
        assert run.returncode == 0, f"{command}:\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}"


def check_prepared_and_trained(repo, kind, source) -> None:
    """base.json names the local folder; k = 0 reinitialised every layer of the family's stack; the run
    recorded the weight change of every sublayer of every layer."""
    base = json.loads((repo / "data/model/base.json").read_text())
    assert base["source"] == f"local folder {source}" and base["num_layers"] == LAYERS
    stack = FAMILIES[tiny_config(kind, 1).model_type].stack
    k0 = json.loads((repo / "data/runs/studies/progressive/sst2/n8/k0_e1/trial0.json").read_text())
    assert k0["status"] == "ok"
    assert {e["name"].split(".")[stack.count(".") + 1] for e in k0["reinitialised"] if e["name"].startswith(stack)} == {
        "0",
        "1",
        "2",
    }
    assert len({(change["layer"], change["sublayer"]) for change in k0["weight_change"]}) == 6 * LAYERS


def check_outputs(repo, kind, source) -> None:
    import pandas as pd

    check_prepared_and_trained(repo, kind, source)
    runs = pd.read_csv(repo / "metrics/runs.csv")
    assert set(runs["study"]) == set(STUDIES) and (runs["status"] == "ok").all()
    weights = pd.read_csv(repo / "metrics/weight_change.csv")
    assert len(weights.drop_duplicates(["layer", "sublayer"])) == 6 * LAYERS
    assert len(pd.read_csv(repo / "metrics/probe.csv")) >= LAYERS + 1


@pytest.mark.parametrize("kind", KINDS)
def test_every_family_goes_through_the_stages_from_a_local_folder(tmp_path, tiny_model_dir, kind):
    write_family_checkpoint(kind, tmp_path / "checkpoint", tiny_model_dir)
    repo = tmp_path / "repo"
    repo.mkdir()
    tiny_family_repo(repo, tmp_path / "checkpoint")
    whole = kind == WHOLE_PIPELINE
    run_stages_in_process(repo, STUDIES if whole else ("progressive",), to_the_end=whole)
    (check_outputs if whole else check_prepared_and_trained)(repo, kind, tmp_path / "checkpoint")


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_dvc_repro_of_a_tiny_study_from_a_local_folder(tmp_path, tiny_model_dir, kind):
    write_family_checkpoint(kind, tmp_path / "checkpoint", tiny_model_dir)
    repo = tmp_path / "repo"
    repo.mkdir()
    tiny_family_repo(repo, tmp_path / "checkpoint")
    dvc_out(repo, "repro")
    check_outputs(repo, kind, tmp_path / "checkpoint")
    assert (repo / "metrics/report.md").exists()
