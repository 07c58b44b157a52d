"""Faults a long run meets: a kill mid-study, a resumed checkpoint, divergence and collapse,
runs that fail inside the workers, a study that shrinks, and a fingerprint that must follow
exactly what shapes a result.

The stage runs for real on the tiny 3-layer model of conftest.py in scratch folders, so the
kill, the resume and the cleanup are the pipeline's own code paths: as `python -m
stages.finetune` where a process of its own matters (a kill, a pool of worker processes), else
through its entry point in this process (tests/support.py run_stage_in_process), which spares an
interpreter importing torch.
"""

import copy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from src.artefacts.base_model import BaseModelRecord
from src.artefacts.run_result import read_results, readable
from src.conditions.condition import Condition
from src.core.codehash import code_files
from src.core.files import sha256_of
from src.data import tokens
from src.measures import MEASUREMENTS
from src.model.finetuner import build_finetuner
from src.params.load import validate
from src.results.tables import results_table, summarise
from src.tasks import splits
from src.tasks.registry import get_task
from src.train.loop import finetune
from src.train.reuse import measurement_files
from src.train.run import NOT_RECIPE, PACKED_RECIPE, RECIPE, fingerprint, run_condition
from src.train.schedule import run_settings
from src.train.stacked import SIMULATE_OOM_ABOVE
from tests.support import (
    REPO,
    TINY_STUDY,
    finetune_workspace,
    result_files,
    run_stage_in_process,
    stage_command,
    stage_env,
    stub_result,
    tiny_params,
)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Two torch threads on two cores shared with other work thrash (100x slower steps)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tasks_dir(tmp_path_factory, tiny_task_dir):
    """The data stage's layout: <tasks>/<task>/tokens.npz."""
    root = tmp_path_factory.mktemp("tasks")
    (root / "rt_sentiment").mkdir()
    shutil.copy(tiny_task_dir / "tokens.npz", root / "rt_sentiment" / "tokens.npz")
    return root


# --- a scratch pipeline folder around the tiny model ---------------------------------------


def settings(params: dict, epochs: int):
    """The RunSettings a finetune stage gives a run of `epochs` under these params."""
    return run_settings(validate(params), epochs)


def run_stage(root: Path, model_dir: Path) -> str:
    run = subprocess.run(
        stage_command(model_dir), cwd=root, env=stage_env(), capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, f"stage failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    return run.stdout


def kept_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.endswith("finished earlier, kept")]


def trained_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if re.match(r"\[\d+/\d+\] .*: (ok|diverged) ", line)]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, tiny_model_dir, tiny_task_dir):
    """The study run once from start to end, without checkpoints: the reference."""
    root = finetune_workspace(tmp_path_factory.mktemp("faults") / "uninterrupted", tiny_task_dir, tiny_params())
    stdout = run_stage(root, tiny_model_dir)
    assert len(trained_lines(stdout)) == 8 and not kept_lines(stdout)
    results = {name: json.loads(p.read_text()) for name, p in result_files(root / "out").items()}
    assert len(results) == 8 and all(r["status"] == "ok" for r in results.values())
    return root, results


# --- 1. kill the stage mid-study, run it again ---------------------------------------------


@pytest.mark.slow  # two finetune stages and a kill (35 s); checkpoint resume and reuse have their own tests here
def test_killed_study_resumes_keeps_finished_conditions_and_matches_an_uninterrupted_run(
    tmp_path, tiny_model_dir, tiny_task_dir, uninterrupted
):
    _, reference = uninterrupted
    # Checkpoints every 2 steps (10 per condition): a kill mid-condition resumes from one.
    # checkpoint_every is not part of the fingerprint, so the results must still be identical.
    root = finetune_workspace(tmp_path / "killed", tiny_task_dir, tiny_params(checkpoint_every=2))
    out = root / "out"  # not made yet: the first checkpoint creates its folders
    log = (tmp_path / "first.log").open("w")
    proc = subprocess.Popen(
        stage_command(tiny_model_dir), cwd=root, env=stage_env(), stdout=log, stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 120
    try:
        # kill once 2 conditions finished and a later one is mid-training with a checkpoint
        while (
            (len(result_files(out)) < 2 or not list(out.rglob("*.ckpt")))
            and proc.poll() is None
            and time.monotonic() < deadline
        ):
            time.sleep(0.01)
        proc.kill()  # SIGKILL: no handler, no cleanup, like an OOM kill or a lost machine
    finally:
        proc.wait()
        log.close()
    assert proc.returncode == -signal.SIGKILL, (
        f"the stage ended on its own before the kill:\n{(tmp_path / 'first.log').read_text()[-2000:]}"
    )

    before = result_files(out)
    assert 2 <= len(before) < 8, f"{len(before)} results at the kill"
    snapshot = {}
    for name, path in before.items():
        result = json.loads(path.read_text())  # a kill leaves no partial result: every file parses
        assert result["fingerprint"] == reference[name]["fingerprint"] and result["status"] == "ok"
        snapshot[name] = (path.stat().st_mtime_ns, path.read_bytes())
    checkpoints = sorted(str(p.relative_to(out)) for p in out.rglob("*.ckpt"))
    assert checkpoints and not set(checkpoints) & {str(Path(name).with_suffix(".ckpt")) for name in before}
    for name in checkpoints:  # the rerun must find them resumable: the condition's own fingerprint, mid-epoch
        saved = torch.load(out / name, weights_only=True)
        assert (
            saved["key"] == reference[str(Path(name).with_suffix(".json"))]["fingerprint"]
            and saved["state"]["step"] > 0
        )

    # A kill during write_json_atomically (src/core/files.py) leaves trial*.json.tmp: never read as a result.
    todo = sorted(set(reference) - set(before))
    leftover = (out / todo[-1]).with_suffix(".json.tmp")
    leftover.parent.mkdir(parents=True, exist_ok=True)
    leftover.write_text('{"condition": {"task": "rt_sentiment", "size": 80, "tri')
    assert len(read_results(out)) == len(before)

    stdout = run_stage(root, tiny_model_dir)
    kept, trained = kept_lines(stdout), trained_lines(stdout)
    measured = (
        f"kept {len(kept)} conditions finished before the kill, recomputed {len(trained)} "
        f"(of which {len(checkpoints)} resumed from its checkpoint {checkpoints})"
    )
    print(measured)
    assert (len(kept), len(trained)) == (len(before), 8 - len(before)), measured
    for name, (mtime, content) in snapshot.items():
        path = out / name
        assert (path.stat().st_mtime_ns, path.read_bytes()) == (mtime, content), f"{name} was rewritten; {measured}"
    assert not leftover.exists() and not list(out.rglob("*.ckpt")) and not list(out.rglob("*.tmp")), measured

    after = {name: json.loads(p.read_text()) for name, p in result_files(out).items()}
    assert after.keys() == reference.keys()
    for name, result in after.items():
        expected = reference[name]
        for field in (
            "fingerprint",
            "status",
            "scores",
            "epoch_losses",
            "step_losses",
            "eval_loss",
            "majority_share",
            "weight_change",
            "train_subset_sha256",
        ):
            assert result[field] == expected[field], f"{name}: {field} differs from the uninterrupted run; {measured}"


# --- 2. a checkpoint resumes to the same weights ---------------------------------------------


class Interrupt(Exception):
    pass


@pytest.fixture(scope="module")
def toy_training(tiny_model_dir, tiny_task_dir):
    task = get_task("rt_sentiment")
    pool = splits.load_split(tiny_task_dir / "tokens.npz", "train")
    train = pool.subset(tokens.training_subset(len(pool), 40, task.name, 0, 0))  # 5 steps of 8
    eval_split = splits.load_split(tiny_task_dir / "tokens.npz", "eval")
    condition = Condition("rt_sentiment", 40, 0, 2, k=1)
    cfg = settings(tiny_params(checkpoint_every=3), epochs=2)

    def run(checkpoint=None, key="", fail_at=None):
        """Finetune a fresh starting model; with `fail_at`, the fail_at-th batch raises."""
        model, record = build_finetuner(tiny_model_dir, condition, task.num_labels, 0)
        fresh = {f"encoder.{e['name']}" for e in record["reinitialised"] if e["name"].startswith("encoder.layer.")}
        calls = []
        real_collate = tokens.collate

        def counting_collate(*args, **kwargs):
            calls.append(1)
            if fail_at is not None and len(calls) == fail_at:
                raise Interrupt
            return real_collate(*args, **kwargs)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr("src.train.loop.collate", counting_collate)
            outcome = finetune(
                model,
                task,
                train,
                cfg,
                1234,
                fresh,
                5.0,
                eval_split=eval_split,
                checkpoint=checkpoint,
                checkpoint_key=key,
            )
        return model.state_dict(), outcome, len(calls)

    weights, outcome, calls = run()
    assert outcome["status"] == "ok" and len(outcome["epoch_losses"]) == 2
    return run, (weights, outcome, calls)


def assert_same_training(got, expected):
    (weights, outcome, _), (ref_weights, ref_outcome, _) = got, expected
    assert weights.keys() == ref_weights.keys()
    different = [name for name in weights if not torch.equal(weights[name], ref_weights[name])]
    assert not different, f"{len(different)} tensors differ, e.g. {different[:3]}"
    assert outcome["epoch_losses"] == ref_outcome["epoch_losses"]
    assert outcome["step_losses"] == ref_outcome["step_losses"] and len(outcome["step_losses"]) == 10
    assert outcome["epoch_eval"] == ref_outcome["epoch_eval"]


def test_a_run_resumed_from_its_checkpoint_ends_with_the_uninterrupted_weights(tmp_path, toy_training):
    run, reference = toy_training
    checkpoint = tmp_path / "trial0.ckpt"
    # Per epoch: 5 training batches, 1 eval batch. Batch 10 is step 4 of epoch 2; the last
    # checkpoint was written after step 3 of epoch 2 (checkpoint_every = 3).
    with pytest.raises(Interrupt):
        run(checkpoint, key="fingerprint-a", fail_at=10)
    saved = torch.load(checkpoint, weights_only=True)
    assert saved["key"] == "fingerprint-a" and (saved["state"]["epoch"], saved["state"]["step"]) == (1, 3)
    assert len(saved["state"]["epoch_losses"]) == 1 and len(saved["state"]["epoch_eval"]) == 1
    assert len(saved["state"]["step_losses"]) == 5 + 3  # epoch 1 and the 3 steps of epoch 2 before the checkpoint

    resumed = run(checkpoint, key="fingerprint-a")
    assert resumed[2] == 2 + 1, "the resumed run should train only steps 4-5 of epoch 2 (+1 eval batch)"
    assert_same_training(resumed, reference)


def test_a_checkpoint_with_another_key_is_ignored(tmp_path, toy_training):
    run, reference = toy_training
    checkpoint = tmp_path / "trial0.ckpt"
    with pytest.raises(Interrupt):
        run(checkpoint, key="old-fingerprint", fail_at=4)  # checkpoint after step 3 of epoch 1
    assert torch.load(checkpoint, weights_only=True)["key"] == "old-fingerprint"
    fresh = run(checkpoint, key="new-fingerprint")
    assert fresh[2] == reference[2], "a checkpoint of another fingerprint must not be resumed"
    assert_same_training(fresh, reference)


def test_a_checkpoint_into_a_folder_not_made_yet(tmp_path, toy_training):
    # The stage's first condition of a fresh study: out/<task>/n<size>/<slug>/ does not exist
    # until its first checkpoint or result is written: checkpointing must create it.
    run, reference = toy_training
    assert_same_training(run(tmp_path / "out" / "rt_sentiment" / "n40" / "k1_e2" / "trial0.ckpt", key="k"), reference)


# --- 3. divergence and collapse --------------------------------------------------------------


def test_diverged_runs_are_counted_but_not_averaged_and_collapsed_runs_are_averaged(
    tmp_path, tiny_model_dir, tasks_dir
):
    ok = [
        run_condition(
            Condition("rt_sentiment", 80, trial, 3, k=1), settings(tiny_params(), 3), tiny_model_dir, tasks_dir
        )
        for trial in (0, 1)
    ]
    diverged = run_condition(
        Condition("rt_sentiment", 80, 2, 3, k=1), settings(tiny_params(lr=1e12), 3), tiny_model_dir, tasks_dir
    )
    assert [r.status for r in ok] == ["ok", "ok"]
    assert diverged.status == "diverged" and diverged.scores == {} and diverged.majority_share is None
    assert not np.isfinite(diverged.epoch_losses[-1])
    # what the stage writes, read back as aggregate reads it (NaN losses included)
    for i, result in enumerate([*ok, diverged]):
        result.write(tmp_path / "runs" / f"trial{i}.json")
    results = read_results(tmp_path / "runs")
    assert [r.status for r in results] == ["ok", "ok", "diverged"]

    by = ["study", "task", "size", "slug"]
    headline = lambda table: table[table["headline"]]  # noqa: E731
    table = headline(results_table(results, "progressive", 3))
    assert len(table) == 3 and table["value"].isna().sum() == 1
    row = summarise(table, by).iloc[0]
    values = [r.scores["accuracy"] for r in ok]
    assert (row["n"], row["diverged"]) == (2, 1)
    assert row["mean"] == pytest.approx(np.mean(values)) and np.isfinite(row["ci_high"])

    # Collapse (one class for everything) is an outcome: the run stays in the mean, and is counted.
    assert results[0].majority_share < 0.99, "trial 0 was meant to learn the toy task"
    collapsed = [
        results[0],
        replace(results[1], majority_share=1.0, scores={**results[1].scores, "accuracy": 0.5}),
        results[2],
    ]
    table = headline(results_table(collapsed, "progressive", 3))
    assert table.set_index("trial")["status"].to_dict() == {0: "ok", 1: "ok", 2: "diverged"}
    row = summarise(table, by).iloc[0]
    assert (row["n"], row["collapsed"], row["diverged"]) == (2, 1, 1)
    assert row["mean"] == pytest.approx((values[0] + 0.5) / 2)


# --- 4. a study that shrinks -----------------------------------------------------------------


def test_conditions_no_longer_asked_for_are_removed_and_the_rest_reused(tmp_path, tiny_model_dir, uninterrupted):
    source, reference = uninterrupted
    root = tmp_path / "shrunk"
    shutil.copytree(source, root, symlinks=True)
    out = root / "out"
    stale_checkpoint = (
        out / "rt_sentiment" / "n80" / "k2_e1" / "trial1.ckpt"
    )  # a half-done condition dropped from the study
    stale_checkpoint.write_bytes(b"checkpoint")
    before = {name: (p.stat().st_mtime_ns, p.read_bytes()) for name, p in result_files(out).items()}
    (root / "params.yaml").write_text(yaml.safe_dump(tiny_params({**TINY_STUDY, "ks": [0, 3]}), sort_keys=False))

    run = run_stage_in_process(root, *stage_command(tiny_model_dir)[2:])  # nothing to train: no worker starts
    assert run.returncode == 0, run.stderr[-3000:]
    stdout = run.stdout
    assert len(kept_lines(stdout)) == 4 and not trained_lines(stdout), stdout
    after = result_files(out)
    assert sorted(after) == sorted(name for name in reference if "/k0_e1/" in name or "/k3_e1/" in name)
    for name, path in after.items():
        assert (path.stat().st_mtime_ns, path.read_bytes()) == before[name]
    assert sorted(p.name for p in (out / "rt_sentiment" / "n80").iterdir()) == [
        "k0_e1",
        "k3_e1",
    ]  # emptied folders go too
    assert not stale_checkpoint.exists()


@pytest.mark.slow  # four finetune stages (16 s)
def test_a_result_that_measured_more_than_asked_is_kept_without_the_rest_and_one_that_measured_less_trains(
    tmp_path, tiny_model_dir, uninterrupted
):
    # Measuring never changes training, so turning a measurement off keeps every run (its field emptied);
    # asking for one the runs did not make, or with another parameter, trains the runs it applies to.
    source, reference = uninterrupted
    root = tmp_path / "measured"
    shutil.copytree(source, root, symlinks=True)
    out = root / "out"
    assert all(r["layer_cka"] for r in reference.values())  # the grid measures CKA on every run

    (root / "params.yaml").write_text(yaml.safe_dump(tiny_params(cka=False, workers=1), sort_keys=False))
    stdout = run_stage(root, tiny_model_dir)
    dropped = [line for line in stdout.splitlines() if "kept (the measurements no longer asked for dropped)" in line]
    assert len(dropped) == 8 and not trained_lines(stdout), stdout
    for name, path in result_files(out).items():
        now, before = json.loads(path.read_text()), reference[name]
        assert now["layer_cka"] == [] and now["settings"]["cka"] is False and "cka" not in now["measurement_code"]
        assert (
            now["training_fingerprint"] == before["training_fingerprint"]
            and now["fingerprint"] != before["fingerprint"]
        )
        same = {key for key in before if key not in ("layer_cka", "settings", "fingerprint", "measurement_code")}
        assert {key: now[key] for key in same} == {key: before[key] for key in same}, name
    assert len(kept_lines(run_stage(root, tiny_model_dir))) == 8  # rewritten with the new fingerprint: exact now

    # criticality of the full model's runs (k = 3 = L) on 20 examples, where they measured it on all: they train
    (root / "params.yaml").write_text(
        yaml.safe_dump(tiny_params(cka=False, criticality_examples=20, workers=1), sort_keys=False)
    )
    stdout = run_stage(root, tiny_model_dir)
    trained = trained_lines(stdout)
    assert len(kept_lines(stdout)) == 6 and len(trained) == 2 and all(" k3_e1 " in line for line in trained), stdout


@pytest.mark.slow  # seven finetune stages (54 s); the focus stage's copy of kept weights stays in the default run
def test_measurements_added_later_are_made_on_kept_weights_and_equal_those_made_while_training(
    tmp_path, tiny_model_dir, tiny_task_dir
):
    # Every k of the tiny study once (the trial is only a seed): 4 runs per full stage instead of 8; in the stage's
    # own process (no worker spawns) except where the kept weights are measured, which the pool does as well.
    study = {**TINY_STUDY, "trials": 1}
    runs = len(study["ks"])

    def params(workers=1, **train) -> dict:
        return tiny_params(study, workers=workers, **train)

    measured = {"cka": True, "criticality": "full_model", "head_importance": "full_model"}
    reference_root = finetune_workspace(tmp_path / "reference", tiny_task_dir, params(**measured))
    run_stage(reference_root, tiny_model_dir)
    reference = {name: json.loads(p.read_text()) for name, p in result_files(reference_root / "out").items()}

    # Trained with no measurement, keeping the weights; then every measurement asked for: none trains.
    root = finetune_workspace(tmp_path / "kept", tiny_task_dir, params(keep_weights=True, cka=False, criticality="off"))
    assert len(trained_lines(run_stage(root, tiny_model_dir))) == runs
    out = root / "out"
    for path in result_files(out).values():
        kept = path.with_suffix(".weights.safetensors")
        assert json.loads(path.read_text())["weights_sha256"] == sha256_of(kept)
    (root / "params.yaml").write_text(yaml.safe_dump(params(2, keep_weights=True, **measured), sort_keys=False))
    stdout = run_stage(root, tiny_model_dir)
    assert not trained_lines(stdout) and stdout.count("measured on its kept weights, not trained") == runs, stdout
    for name, path in result_files(out).items():
        now, then = json.loads(path.read_text()), reference[name]
        for field in ("layer_cka", "criticality", "head_importance", "scores", "predictions", "fingerprint"):
            assert now[field] == then[field], (name, field)
    assert json.loads((out / "rt_sentiment/n80/k3_e1/trial0.json").read_text())["head_importance"]["before"]

    # Weights that are not the file the run recorded are never measured: that run trains again.
    (root / "params.yaml").write_text(yaml.safe_dump(params(keep_weights=True, cka=False), sort_keys=False))
    run_stage(root, tiny_model_dir)  # back to fewer measurements: kept, nothing trains
    kept = out / "rt_sentiment/n80/k1_e1/trial0.weights.safetensors"
    kept.write_bytes(kept.read_bytes()[:-8] + bytes(8))
    (root / "params.yaml").write_text(yaml.safe_dump(params(keep_weights=True), sort_keys=False))
    stdout = run_stage(root, tiny_model_dir)
    assert [line.split("] ")[1].split(": ")[0] for line in trained_lines(stdout)] == ["rt_sentiment n=80 k1_e1 trial 0"]
    assert json.loads(kept.with_name("trial0.json").read_text())["weights_sha256"] == sha256_of(kept)

    # Without keep_weights the stage keeps no weights; with it, a result without its weights trains again.
    (root / "params.yaml").write_text(yaml.safe_dump(params(keep_weights=False), sort_keys=False))
    run_stage(root, tiny_model_dir)
    assert not list(out.rglob("*.safetensors"))
    (root / "params.yaml").write_text(yaml.safe_dump(params(keep_weights=True), sort_keys=False))
    stdout = run_stage(root, tiny_model_dir)
    assert len(trained_lines(stdout)) == runs and stdout.count("without its weights; trains again to keep them") == runs


def test_the_focus_stage_copies_a_study_run_with_its_kept_weights_and_trains_one_that_kept_none(
    tmp_path, tiny_model_dir, tiny_task_dir
):
    # the study's k = 3 runs (the only ones the focus reuses), in the stage's own process
    study = {**TINY_STUDY, "ks": [3]}
    params = {**tiny_params(study, keep_weights=True, workers=1), "size": 80, "k": 3, "trials": 2}
    root = finetune_workspace(tmp_path / "focus", tiny_task_dir, params)
    (root / "runs").mkdir()
    focus = [*stage_command(tiny_model_dir)[:3], "--focus", *stage_command(tiny_model_dir)[5:-2]]
    focus += ["--out", "focus", "--reuse", "runs"]
    study = [*stage_command(tiny_model_dir)[:-1], "runs/progressive"]

    def run(command) -> str:  # one worker: the stage trains in its own process, here this one
        done = run_stage_in_process(root, *command[2:])
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    run(study)
    stdout = run(focus)
    assert stdout.count(", copied") == 2 and not trained_lines(stdout), stdout
    for trial in (0, 1):
        copied = root / f"focus/rt_sentiment/n80/k3_e1/trial{trial}.weights.safetensors"
        assert copied.read_bytes() == (root / f"runs/progressive/rt_sentiment/n80/k3_e1/{copied.name}").read_bytes()

    for kept in (root / "runs").rglob("*.safetensors"):  # a study that kept no weights: the focus trains its own
        kept.unlink()
    shutil.rmtree(root / "focus")
    stdout = run(focus)
    assert stdout.count("without its weights; trains again to keep them") == 2 and len(trained_lines(stdout)) == 2
    assert len(list((root / "focus").rglob("*.weights.safetensors"))) == 2


def test_kept_weights_give_a_sequential_run_only_the_measurements_that_read_no_starting_weights(tmp_path):
    # criticality rewinds to the start of the final finetuning, which after an intermediate task was not kept
    from dataclasses import replace

    from src.train.schedule import measurable_from_weights

    asked = run_settings(validate(tiny_params(criticality="all")), 1, full_model=True)
    weights = tmp_path / "trial0.weights.safetensors"
    weights.write_bytes(b"weights")

    def kept(condition, **measured_then):
        recorded = asdict(replace(asked, **measured_then))
        fields = dict(status="ok", settings=recorded, training_fingerprint="t", weights_sha256=sha256_of(weights))
        return stub_result(condition.as_dict(), **fields)

    plain = Condition("rt_sentiment", 80, 0, 1, k=3)
    sequential = replace(plain, intermediate_task="subjectivity")
    assert measurable_from_weights(kept(plain, criticality=False), plain, asked, "t", weights)
    assert not measurable_from_weights(kept(sequential, criticality=False), sequential, asked, "t", weights)
    assert measurable_from_weights(kept(sequential, cka=False), sequential, asked, "t", weights)  # CKA: final only
    assert not measurable_from_weights(kept(plain, cka=False), plain, asked, "another training", weights)
    assert not measurable_from_weights(kept(plain, cka=False), plain, asked, "t", tmp_path / "absent")
    result = kept(plain, cka=False)
    weights.write_bytes(b"other weights")  # not the file the run recorded
    assert not measurable_from_weights(result, plain, asked, "t", weights)


def test_one_worker_and_two_workers_give_the_same_results(tmp_path, tiny_model_dir, tiny_task_dir, uninterrupted):
    # The reference ran with the train.workers of the params.yaml it wrote (a pool of worker
    # processes); this one runs every condition in the stage's own process, the stage run in
    # this one (no second interpreter importing torch), on half the study: k = 0 and 3, both trials.
    source, reference = uninterrupted
    params = yaml.safe_load((source / "params.yaml").read_text())
    assert params["train"]["workers"] > 1, "the reference must have run in a pool of worker processes"
    params["train"]["workers"] = 1
    params["studies"]["progressive"]["ks"] = [0, 3]
    root = finetune_workspace(tmp_path / "one_worker", tiny_task_dir, params)
    run = run_stage_in_process(root, *stage_command(tiny_model_dir)[2:])
    assert run.returncode == 0, run.stderr[-3000:]
    results = {name: json.loads(p.read_text()) for name, p in result_files(root / "out").items()}
    assert sorted(results) == sorted(name for name in reference if "/k0_e1/" in name or "/k3_e1/" in name)
    for name, result in results.items():  # everything but the clock: scores, losses, weight changes
        assert {**result, "train_seconds": None} == {**reference[name], "train_seconds": None}, name


# --- 5. the fingerprint ----------------------------------------------------------------------


@pytest.fixture
def fingerprint_inputs(tmp_path, tasks_dir):
    model = tmp_path / "model"
    model.mkdir()
    BaseModelRecord("m", "test", "bert", 3, 64, 4, "a", 64).write(model)
    condition = Condition("rt_sentiment", 80, 0, 1, k=2)

    def key(params, condition=condition):
        return fingerprint(condition, settings(params, condition.epochs), model, tasks_dir)

    return key, model


def test_fingerprint_follows_what_changes_a_result_and_nothing_else(fingerprint_inputs):
    key, model = fingerprint_inputs
    params = tiny_params()
    base = key(params)
    assert key(copy.deepcopy(params)) == base
    assert key(tiny_params(checkpoint_every=25)) == base  # checkpoints never change a result
    assert key(tiny_params(workers=1)) == base  # nor does the number of processes sharing the work
    on_ray = tiny_params()
    on_ray["executor"].update(kind="ray", gpus_per_run=0)
    assert key(on_ray) == base  # nor the executor a CPU run goes through
    changed = {
        "train.lr": key(tiny_params(lr=2e-3)),
        "train.batch_size": key(tiny_params(batch_size=16)),
        "train.precision": key(tiny_params(precision="bf16")),
        "train.threads": key(tiny_params(threads=2)),
        "seed": key({**params, "seed": 1}),
        "condition trial": key(params, Condition("rt_sentiment", 80, 1, 1, k=2)),
        "condition k": key(params, Condition("rt_sentiment", 80, 0, 1, k=3)),
    }
    assert base not in changed.values() and len(set(changed.values())) == len(changed)
    BaseModelRecord("m", "test", "bert", 3, 64, 4, "b", 64).write(model)
    assert key(params) != base  # other base weights


def test_every_recipe_file_is_a_dep_of_the_finetune_and_focus_stages():
    # dvc.yaml lists code by package folder (src/train) or file (stages/finetune.py).
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    for name, deps in (("finetune", stages["finetune"]["do"]["deps"]), ("focus", stages["focus"]["deps"])):
        missing = [f for f in PACKED_RECIPE if not any(f == dep or f.startswith(f"{dep}/") for dep in deps)]
        assert not missing, f"dvc.yaml stage {name} lacks deps {missing}"
    assert "src/train/run.py" in RECIPE and all((REPO / f).is_file() for f in RECIPE)


# Repo files the finetune stage imports that the fingerprint leaves out, and why none of
# them can change a stored result.
NOT_FINGERPRINTED = {
    "stages/finetune.py": "picks the conditions; each condition's fields are in its fingerprint",
    "src/conditions/studies.py": "params -> conditions; the condition is fingerprinted",
    "src/params/load.py": "reads and checks params.yaml; the values a run uses are its RunSettings, fingerprinted",
    "src/config/schema.py": "the same",
    "src/train/schedule.py": "run_settings builds the RunSettings (fingerprinted); the rest is bookkeeping",
    "src/train/executors.py": "where runs execute; the thread count it sets is in the RunSettings",
    "src/train/progress.py": "the stage's progress lines",
    "src/params/stage.py": "the entry point: error messages, dying with the parent",
    "src/core/process.py": "dying with the parent process",
    "src/stats/intervals.py": "the focus summary, recomputed every run",
    "src/artefacts/focus.py": "the focus summary, recomputed every run",
}


def test_every_repo_file_the_finetune_stage_imports_is_fingerprinted_or_cannot_change_a_result():
    stage = set(code_files("stages.finetune"))
    assert set(RECIPE) <= set(PACKED_RECIPE) <= stage  # a packed run's recipe adds the stacked step
    # the measurement code is digested per measurement, beside its numbers, not in the training fingerprint
    measured = {file for m in MEASUREMENTS for file in measurement_files(m)}
    assert not measured & set(PACKED_RECIPE)
    assert sorted(stage - set(PACKED_RECIPE)) == sorted(set(NOT_FINGERPRINTED) | set(NOT_RECIPE) | measured)


def test_fingerprint_does_not_depend_on_the_working_directory(fingerprint_inputs, tmp_path, monkeypatch):
    key, _ = fingerprint_inputs
    expected = key(tiny_params())
    monkeypatch.chdir(tmp_path)
    assert key(tiny_params()) == expected


def test_a_truncated_result_file_is_recomputed_not_fatal(tmp_path):
    path = tmp_path / "trial0.json"
    path.write_text("")  # a result cut short (e.g. by a crash of the file system)
    assert readable(path) is None


# --- 6. a damaged checkpoint, and a kill of DVC itself ---------------------------------------


def test_a_damaged_checkpoint_is_discarded_with_a_warning_and_the_run_restarts(tmp_path, tiny_model_dir, tiny_task_dir):
    study = {**TINY_STUDY, "sizes": [40], "ks": [3], "trials": 1}
    root = finetune_workspace(tmp_path / "damaged", tiny_task_dir, tiny_params(study, checkpoint_every=2))
    checkpoint = Path("out/rt_sentiment/n40/k3_e1/trial0.ckpt")
    (root / checkpoint).parent.mkdir(parents=True)
    (root / checkpoint).write_bytes(b"PK\x03\x04 garbage: a zip cut short")
    run = run_stage_in_process(root, *stage_command(tiny_model_dir)[2:])  # one run: the stage trains it in process
    assert run.returncode == 0, run.stderr[-3000:]
    warning = [line for line in run.stderr.splitlines() if line.startswith("warning: checkpoint")]
    assert (
        len(warning) == 1
        and warning[0].startswith(f"warning: checkpoint {root.resolve() / checkpoint} cannot be read (")
        and warning[0].endswith("); discarded, the run restarts from scratch")
    ), run.stderr[-3000:]
    assert "weights_only=False" not in run.stderr
    result = json.loads((root / checkpoint.with_suffix(".json")).read_text())
    assert result["status"] == "ok" and not (root / checkpoint).exists()


def dvc_finetune_project(root: Path, model_dir: Path) -> dict:
    """`root` (a finetune_workspace) as a DVC project whose one stage is the finetune stage of study
    `progressive`; the environment `dvc repro` runs it in."""
    stage = {"cmd": " ".join(["python", *stage_command(model_dir)[1:]]), "outs": [{"out": {"persist": True}}]}
    (root / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"finetune": stage}}))
    env = dict(stage_env(), PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", DVC_NO_ANALYTICS="1")
    env["SHELL"] = "/bin/sh"  # DVC runs the stage with $SHELL -c; Debian's sh (dash) forks it and waits
    subprocess.run([sys.executable, "-m", "dvc", "init", "--no-scm", "-q"], cwd=root, env=env, check=True)
    return env


def dvc_repro(root: Path, env: dict, *args: str) -> str:
    """`dvc repro <args>` in `root`, which must succeed: its stdout and stderr together."""
    run = subprocess.run(
        [sys.executable, "-m", "dvc", "repro", *args], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, f"dvc repro failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    return run.stdout + run.stderr


def _process_tree(pid: int) -> set[int]:
    """pid and every live descendant (from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree, todo = set(), [pid]
    while todo:
        tree.add(todo[-1])
        todo.extend(children.get(todo.pop(), []))
    return tree


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text(errors="replace").replace("\0", " ")
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:  # a zombie has finished: only its exit status is left for a parent that may never reap it
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_kill_9_of_dvc_repro_leaves_no_stage_or_worker_running(tmp_path, tiny_model_dir, tiny_task_dir):
    root = finetune_workspace(
        tmp_path / "killed_dvc", tiny_task_dir, tiny_params({**TINY_STUDY, "trials": 4}, checkpoint_every=2)
    )  # 16 conditions, 2 workers
    env = dvc_finetune_project(root, tiny_model_dir)
    log = (tmp_path / "dvc.log").open("w")
    dvc = subprocess.Popen(
        [sys.executable, "-m", "dvc", "repro"], cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    tree: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while dvc.poll() is None and time.monotonic() < deadline:  # dvc, the stage, its 2 workers
            tree = _process_tree(dvc.pid)
            workers = [p for p in tree if "spawn_main" in _cmdline(p)]
            if len(workers) >= 2 and list((root / "out").rglob("*.ckpt")):  # both workers started, training under way
                break
            time.sleep(0.2)
        assert dvc.poll() is None, f"dvc repro ended before the kill:\n{(tmp_path / 'dvc.log').read_text()[-3000:]}"
        tree = _process_tree(dvc.pid) - {dvc.pid}
        dvc.kill()  # SIGKILL: DVC cannot pass anything on
        dvc.wait()
        deadline = time.monotonic() + 5
        while any(map(_alive, tree)) and time.monotonic() < deadline:
            time.sleep(0.1)
        survivors = {p: _cmdline(p)[:120] for p in tree if _alive(p)}
        assert not survivors, f"still running 5 s after kill -9 of dvc: {survivors}"
    finally:
        log.close()
        for pid in tree | {dvc.pid}:  # leave nothing behind, whatever failed
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


# --- runs that fail inside the workers ----------------------------------------------------------


def test_the_stage_exits_non_zero_naming_every_failed_condition_and_keeps_the_finished_ones(
    tmp_path, tiny_model_dir, tiny_task_dir
):
    # Two tasks; the second one's token file is corrupt, so its runs fail inside the workers.
    params = tiny_params(
        {"scheme": "progressive", "tasks": ["rt_sentiment", "bigram_shift"], "sizes": [40], "ks": [0, 3], "trials": 1}
    )
    params["data"]["tasks"] = ["rt_sentiment", "bigram_shift"]
    root = finetune_workspace(tmp_path / "failing", tiny_task_dir, params)
    shutil.copytree(root / "tasks" / "rt_sentiment", root / "tasks" / "bigram_shift")
    (root / "tasks" / "bigram_shift" / "tokens.npz").write_bytes(b"not a zip file")
    run = subprocess.run(
        stage_command(tiny_model_dir), cwd=root, env=stage_env(), capture_output=True, text=True, timeout=300
    )
    assert run.returncode != 0, run.stdout
    failed_lines = [line for line in run.stderr.splitlines() if line.startswith("  bigram_shift")]
    assert "2 of 4 runs failed" in run.stderr and len(failed_lines) == 2, run.stderr[-2000:]
    assert all(": ValueError: This file contains pickled" in line for line in failed_lines), failed_lines
    out = root / "out"
    assert sorted(result_files(out)) == ["rt_sentiment/n40/k0_e1/trial0.json", "rt_sentiment/n40/k3_e1/trial0.json"]
    records = [json.loads(p.read_text()) for p in sorted(out.rglob("*.failed"))]
    assert len(records) == 2 and all(
        r["condition"]["task"] == "bigram_shift" and r["cause"].startswith("ValueError: This file contains pickled")
        for r in records
    )
    assert all(
        (p.with_suffix(".log")).read_text().count("epoch 1/1") == 1 for p in result_files(out).values()
    )  # per-run detail

    # Repaired: the rerun keeps both finished runs, trains the two failed ones, and drops their records. One
    # worker (not part of a run's fingerprint): the stage trains in its own process, run here in this one.
    shutil.copy(root / "tasks" / "rt_sentiment" / "tokens.npz", root / "tasks" / "bigram_shift" / "tokens.npz")
    params["train"]["workers"] = 1
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    rerun = run_stage_in_process(root, *stage_command(tiny_model_dir)[2:])
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert (
        rerun.stdout.count("finished earlier, kept") == 2
        and len(result_files(out)) == 4
        and not list(out.rglob("*.failed"))
    )


# --- packs that fail safely (train.pack) --------------------------------------------------------

PACKED = dict(pack=4, workers=1, cka=False, criticality="off", head_importance="off")
TRAINED = ("status", "scores", "epoch_losses", "step_losses", "eval_loss", "predictions", "weight_change")


def test_a_pack_out_of_memory_is_split_said_and_recorded_and_its_runs_are_kept_by_the_next_repro(
    tmp_path, tiny_model_dir, tiny_task_dir
):
    study = {**TINY_STUDY, "ks": [0, 1, 2], "sizes": [40], "trials": 1}  # one pack of 3
    root = finetune_workspace(tmp_path / "oom", tiny_task_dir, tiny_params(study, **PACKED))
    env = dvc_finetune_project(root, tiny_model_dir)
    output = dvc_repro(root, {**env, SIMULATE_OOM_ABOVE: "1"})  # a stacked step of 2 or more runs fails
    notes = [line for line in output.splitlines() if line.startswith("note:")]
    assert len(notes) == 2 and all("split in two after running out of memory" in note for note in notes), output
    assert "torch.OutOfMemoryError" in notes[0] and "as packs of 2, 1;" in notes[0] and "as packs of 1, 1;" in notes[1]
    assert output.count("warning: params.yaml: train.pack = 4 on a CPU") == 1
    results = {name: json.loads(path.read_text()) for name, path in result_files(root / "out").items()}
    assert len(results) == 3 and not list((root / "out").rglob("*.failed"))
    assert all(r["status"] == "ok" and r["pack_fallback"] == "split" for r in results.values())
    assert all(r["pack_sizes"] == [[0, 1]] for r in results.values())
    again = dvc_repro(root, env, "-f")  # no hook: each result is current at the pack size it trained at
    assert len(kept_lines(again)) == 3 and not trained_lines(again), again
    assert {name: json.loads(path.read_text()) for name, path in result_files(root / "out").items()} == results
