"""Bad input stops a stage (python -m stages.<name>) in one line, before any compute, and a bug
keeps its traceback: the validate, build_data and finetune stages, and a result that cannot be
written. Each stage runs through its entry point in this process (tests/support.py
run_stage_in_process: the same exit code and output, without an interpreter that imports torch per
case); one refusal runs as a subprocess, the way DVC starts a stage. Part of the bad-input tests
(unit/params/test_bad_params.py lists the others)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from src.tasks import splits
from tests.support import (
    REPO,
    build_scratch_repo,
    dvc,
    grid_params,
    ran_stages,
    run_stage_in_process,
    stage_command,
    stage_params,
)


def test_the_validate_stage_checks_max_length_against_the_prepared_model(tmp_path, tiny_model_dir):
    params = stage_params({})
    params["model"].update(
        name="tiny", max_length=128
    )  # base.json of the tiny model names it "tiny"; it has 64 positions
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    run = run_stage_in_process(tmp_path, "stages.validate", "--model", str(tiny_model_dir), "--out", "valid.txt")
    assert_one_line_error(
        run, "params.yaml: model.max_length = 128 is invalid; allowed: 8..64 (the model has 64 positions)"
    )
    assert not (tmp_path / "valid.txt").exists()


def test_dvc_repro_stops_at_validate_on_a_size_the_task_does_not_have_before_any_model_is_prepared(tmp_path):
    """In a fresh clone nothing is prepared: the size is refused from the task's pinned count, and
    prepare_model, which would download and export the model, never starts."""
    params = grid_params()
    params["size"] = 100000
    repo = build_scratch_repo(tmp_path, params)
    run = dvc(repo, "repro", "prepare_model")  # validate, then prepare_model (which downloads and exports)
    assert run.returncode != 0
    output = run.stdout + run.stderr
    assert ran_stages(output) == ["Running stage 'validate':"], output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    assert [line for line in output.splitlines() if line.startswith("error: ")] == [
        "error: params.yaml: size = 100000 is invalid; allowed: an integer from 1 to 9560: rt_sentiment has 9560 "
        "(9610 labelled at data.neutral_band 0.8, less data.eval_size 50)"
    ]
    assert not (repo / "data" / "model").exists()


# --- one line for a user error, a traceback for a bug -------------------------------------------------


def assert_one_line_error(run: subprocess.CompletedProcess, message: str) -> None:
    assert run.returncode == 1, f"exit {run.returncode}:\n{run.stderr[-3000:]}"
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    errors = [line for line in run.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [f"error: {message}"], run.stderr[-3000:]


def test_a_bad_value_stops_the_validate_stage_in_one_line(tmp_path, params):
    params["tirals"] = params.pop("trials")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    run = subprocess.run(  # as DVC starts a stage: `python -m`, a process of its own (the other cases run in process)
        [sys.executable, "-m", "stages.validate", "--model", "no_model_yet", "--out", "valid.txt"],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    known = "data, executor, k, model, pooling, probe, recipe, report, seed, size, studies, task, train, trials"
    assert_one_line_error(
        run, f"params.yaml: tirals = 2 is invalid; allowed: the keys known here: {known} (did you mean trials?)"
    )
    assert not (tmp_path / "valid.txt").exists()


def test_the_validate_stage_warns_in_one_line_of_a_study_below_the_calibrated_trials(tmp_path):
    params = stage_params({"trials": 1})  # valid, but no test of its claims is calibrated at one trial
    params["studies"] = {"progressive": params["studies"]["progressive"]}
    params["trials"] = 2  # the focus condition's interval needs 2 (tests/unit/params/test_preflight.py)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    run = run_stage_in_process(tmp_path, "stages.validate", "--model", "no_model_yet", "--out", "valid.txt")
    assert run.returncode == 0 and (tmp_path / "valid.txt").exists(), run.stderr[-3000:]
    assert [line for line in run.stderr.splitlines() if line.startswith("warning: ")] == [
        "warning: studies.progressive.trials = 1 is below 3, the fewest trials the report's tests are calibrated at "
        "(docs/calibration.md): claims read from this study's runs give no verdict there"
    ]


def test_a_non_utf8_glue_file_names_file_line_and_byte_offset_in_one_line(tmp_path, tiny_model_dir):
    folder = tmp_path / "glue" / "SST-2"
    folder.mkdir(parents=True)
    (folder / "train.tsv").write_bytes(
        "sentence\tlabel\ngood movie\t1\ncaf\u00e9 ok\t1\n".encode("latin-1")
    )  # é as one byte: 0xe9
    (folder / "dev.tsv").write_text("sentence\tlabel\ngood movie\t1\nbad movie\t0\n")
    params = stage_params({})
    params["model"]["max_length"] = 32
    params["data"].update(tasks=["sst2"], glue_dir="glue")
    params["probe"]["tasks"] = ["sst2"]
    params.update(task="sst2")
    params["studies"]["progressive"]["tasks"] = ["sst2"]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    run = run_stage_in_process(tmp_path, "stages.build_data", "--model", str(tiny_model_dir), "--out", "tasks")
    assert_one_line_error(
        run, f"{Path('glue/SST-2/train.tsv')}, line 3: not UTF-8 (byte 0xe9 at byte offset 31); GLUE files are UTF-8"
    )
    assert not (tmp_path / "tasks").exists()


def test_a_bug_keeps_its_traceback(tmp_path):
    code = "from src.params.stage import run_stage\ndef main():\n    {}['missing']\nrun_stage(main)\n"
    run = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 1 and "Traceback" in run.stderr and "KeyError: 'missing'" in run.stderr


def test_the_stage_refuses_a_size_larger_than_the_pool_before_training(tmp_path, tiny_model_dir, tiny_task_dir):
    task = tmp_path / "tasks" / "rt_sentiment"
    task.mkdir(parents=True)
    shutil.copy(tiny_task_dir / "tokens.npz", task / "tokens.npz")
    pool = len(splits.load_split(task / "tokens.npz", "train"))
    (task / "info.json").write_text(json.dumps({"task": "rt_sentiment", "train_examples": pool}))
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(stage_params({"sizes": [40, pool + 1]})))
    run = run_stage_in_process(tmp_path, *stage_command(tiny_model_dir)[2:])
    message = (
        f"params.yaml: studies.progressive asks for {pool + 1} "
        f"training examples of task 'rt_sentiment', which has {pool}"
    )
    assert_one_line_error(run, message)
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("*")), (
        "nothing may be written, not even the size-40 conditions"
    )


# --- a result that cannot be written --------------------------------------------------------------

WRITE_RESULT = """
import resource, signal, sys
from pathlib import Path
from src.core.files import write_json_atomically
from src.params.stage import run_stage
if sys.argv[2] == "file-size-limit":  # the kernel refuses to grow any file past 4 KiB (EFBIG)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
run_stage(lambda: write_json_atomically(Path(sys.argv[1]), {"predictions": list(range(30000))}))
"""


@pytest.fixture
def full_disk(tmp_path):
    """A 64 KiB tmpfs: a result of ~200 KiB meets ENOSPC (root only, as on this machine)."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("mounting a tmpfs needs root")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


@pytest.mark.parametrize("limit", ["file-size-limit", "full-disk"])
def test_a_result_that_cannot_be_written_fails_in_one_line_and_leaves_no_temporary_file(tmp_path, limit, request):
    folder = request.getfixturevalue("full_disk") if limit == "full-disk" else tmp_path / "out"
    result = folder / "runs" / "trial0.json"
    run = subprocess.run(
        [sys.executable, "-c", WRITE_RESULT, str(result), limit],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    cause = "No space left on device" if limit == "full-disk" else "File too large"
    assert_one_line_error(run, f"{result}: could not be written ({cause})")
    assert list(result.parent.iterdir()) == []  # neither the result nor its .tmp
