"""Bad input on the surfaces of SQuAD files and chains, through `dvc exp run` as a
user runs it: a SQuAD file with a negative answer_start, an empty context or a question id
seen twice stops the data stage in one line naming the file and what is allowed, with no
traceback and every other output kept; `probe.pooling: cls` on a checkpoint without
pooler tensors reads the raw [CLS] state, not a pooler drawn at random; a chain that
ends in the final task is said in one line by the validate stage, before any compute (that stage
alone: its entry point in process, on params.yaml as `dvc exp run -S` writes it).
The per-task sizes form through the report is tests/e2e/test_preset_reports.py.

Each case runs in a copy of one scratch repository of the real pipeline whose outputs are
committed placeholders (the placeholder_template fixture), so a refusal is seen with every
output that was there before it.
"""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.support import (
    assert_kept,
    exp_run,
    exp_run_params,
    ok,
    ran_stages,
    run_stage_in_process,
    write_tiny_squad,
)

SQUAD_TRAIN = Path("squad") / "train-v2.0.json"


def first_paragraph(squad: dict) -> dict:
    return squad["data"][0]["paragraphs"][0]


def a_negative_answer_start(squad: dict) -> str:
    paragraph = next(p for p in squad["data"][0]["paragraphs"] if p["qas"][0]["answers"])
    answer, qid = paragraph["qas"][0]["answers"][0], paragraph["qas"][0]["id"]
    # Python slices from the end: this start still finds the answer's text
    answer["answer_start"] -= len(paragraph["context"])
    at = squad["data"][0]["paragraphs"].index(paragraph)
    return (
        f"{SQUAD_TRAIN}: data[0].paragraphs[{at}], question {qid!r}: answer_start = {answer['answer_start']} "
        "is invalid; allowed: an integer >= 0"
    )


def an_empty_context(squad: dict) -> str:
    paragraph = first_paragraph(squad)
    paragraph["context"] = ""
    paragraph["qas"][0].update(answers=[], is_impossible=True)  # a free "no answer"
    return f"{SQUAD_TRAIN}: data[0].paragraphs[0]: context = '' is invalid; allowed: a non-empty text"


def a_duplicate_id(squad: dict) -> str:
    squad["data"].append(json.loads(json.dumps(squad["data"][0])))  # an article present twice
    qid = first_paragraph(squad)["qas"][0]["id"]
    return f"{SQUAD_TRAIN}: data[1].paragraphs[0], question {qid!r}: id {qid!r} again (first at data[0].paragraphs[0])"


# Each message is checked in process by unit/tasks/test_span_qa.py; through DVC (17 s each), where the
# data stage must print it in one line and keep every output, one case in the default run, the others
# with `-m slow`.
@pytest.mark.parametrize(
    "make_bad",
    [
        pytest.param(a_negative_answer_start, marks=pytest.mark.slow),
        pytest.param(an_empty_context, marks=pytest.mark.slow),
        a_duplicate_id,
    ],
)
def test_a_bad_squad_file_stops_the_data_stage_in_one_line_and_every_output_stays(
    placeholder_template, tmp_path, make_bad
):
    write_tiny_squad(tmp_path / "squad")
    squad = json.loads((tmp_path / SQUAD_TRAIN).read_text())
    message = make_bad(squad)

    def write_bad_squad(root: Path) -> None:  # untracked: a folder params.yaml names, as ../shared/squad is
        shutil.copytree(tmp_path / "squad", root / "squad")
        (root / SQUAD_TRAIN).write_text(json.dumps(squad))

    run, before, root = exp_run(
        placeholder_template,
        tmp_path,
        "-S",
        "data.tasks=[sst2,squad_v2]",
        "-S",
        "data.squad_dir=squad",
        "-S",
        "data.qa_stride=8",
        "data",
        prepare=write_bad_squad,
    )
    output = run.stdout + run.stderr
    assert run.returncode != 0 and "Traceback" not in output, output[-3000:]
    errors = [line for line in output.splitlines() if line.startswith("error: ")]
    assert errors == [f"error: {message}"], output[-3000:]
    assert ran_stages(run.stdout) == [f"Running stage '{s}':" for s in ("validate", "prepare_model", "data")]
    assert_kept(root, before, ran=("data/model", "data/tasks"))


def test_a_chain_ending_in_the_final_task_is_said_by_the_validate_stage_before_any_compute(
    placeholder_template, tmp_path
):
    # [rt_sentiment, sst2] before sst2 would train sst2 twice on its subset. The template's params.yaml as
    # `dvc exp run -S` writes it (DVC's override function), then the validate stage's entry point in process:
    # `dvc exp run ... validate` runs that stage alone, so DVC itself adds nothing to check here.
    command = (
        "dvc exp run -S data.tasks=[sst2,rt_sentiment] -S +studies.progressive.intermediate_tasks=[[rt_sentiment,sst2]]"
    )
    exp_run_params(command, placeholder_template[0] / "params.yaml", tmp_path)
    shutil.copytree(placeholder_template[0] / "glue", tmp_path / "glue")  # data.glue_dir: validate reads it
    run = run_stage_in_process(tmp_path, "stages.validate", "--model", "data/model", "--out", "valid.txt")
    assert run.returncode == 0, run.stderr[-3000:]
    notes = [line for line in run.stdout.splitlines() if line.startswith("note: ")]
    assert notes == [
        "note: studies.progressive.intermediate_tasks[0] = [rt_sentiment, sst2] ends in the final task 'sst2': "
        "not run before sst2 (it would train sst2 twice on one subset), as an entry equal to the final task is not"
    ], run.stdout[-3000:]


@pytest.mark.slow  # features and probe through dvc (26 s)
def test_a_cls_probe_of_a_checkpoint_without_a_pooler_reads_the_raw_first_token(
    placeholder_template, tiny_model_dir, tmp_path
):
    from safetensors.torch import load_file, save_file

    from src.artefacts.probe_result import features_fallbacks
    from src.data import tokens
    from src.model.base import load_encoder
    from src.probing.features import CLS_READ_RAW
    from src.tasks import splits

    folder = tmp_path / "no_pooler"  # transformers would draw a pooler for it, bias 0
    shutil.copytree(tiny_model_dir, folder)
    weights = load_file(str(folder / "model.safetensors"))
    save_file(
        {name: t for name, t in weights.items() if not name.startswith("pooler.")}, str(folder / "model.safetensors")
    )
    run, _, root = exp_run(
        placeholder_template, tmp_path, "-S", f"model.name={folder}", "-S", "probe.pooling=cls", "features@sst2"
    )
    assert [f"Running stage '{s}':" for s in ("validate", "prepare_model", "data", "features@sst2")] == ran_stages(
        ok(run)
    )
    # the fallback said once by the features stage, and recorded beside the features for the probe's result
    notes = [line for line in (run.stdout + run.stderr).splitlines() if line.startswith("note: probe.pooling")]
    assert notes == [
        "note: probe.pooling = 'cls' on sst2: the pooler of data/model was never trained (bias exactly 0, or no "
        "pooler tensors in the checkpoint): its probes read the raw [CLS] state instead"
    ], run.stderr[-3000:]
    with np.load(root / "data/features/sst2.npz") as written:
        assert features_fallbacks(written) == [CLS_READ_RAW]
    features = np.load(root / "data/features/sst2.npz")["eval"]
    split = splits.load_split(root / "data/tasks/sst2/tokens.npz", "eval")
    encoder = load_encoder(tiny_model_dir, with_pooler=False)
    with torch.no_grad():
        for i in (0, len(split) - 1):
            batch = tokens.collate(split, np.array([i]))
            hidden = encoder(
                input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], output_hidden_states=True
            ).hidden_states
            for layer, state in enumerate(hidden):
                np.testing.assert_allclose(features[i, layer], state[0, 0].numpy(), rtol=1e-2, atol=1e-2)
