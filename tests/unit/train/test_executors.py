"""The executor layer on this CPU machine: GPU placement with fake GPU ids, failed runs
kept as failures while the others finish, progress lines, and the CUDA-only paths of
training checked the way they would fail on a GPU.

No SLURM or Ray here (tests/e2e/test_cluster.py starts them, marked slow); the stage's exit
naming every failed condition is in tests/e2e/test_faults.py."""

import io
import time

import numpy as np
import pytest
import torch
from fake_runs import fail_odd, note_slot, take_steps

from src.artefacts.run_result import result_path
from src.conditions.condition import Condition
from src.conditions.studies import all_study_conditions, trained_conditions
from src.core.errors import ParamsError
from src.data import tokens
from src.model.finetuner import build_finetuner, new_task_head
from src.params.load import validate
from src.tasks import splits
from src.tasks.registry import get_task
from src.train import executors, loop
from src.train import progress as progress_module
from src.train.executors import Failure
from src.train.progress import LaterWork, Progress
from src.train.schedule import later_work
from tests.support import L, grid_params, most_at_once


def local_params(workers: int = 2, **executor) -> dict:
    """The test grid with these executor settings; `workers` processes of one thread each."""
    params = grid_params()
    params["executor"].update(executor)
    params["train"].update(workers=workers, threads=1)
    return params


def execute(run, runs, params: dict, gpus=None) -> dict:
    """Every outcome of `runs` on the executor `params` configures, by run index."""
    config = validate(params)
    return dict(executors.execute(run, runs, config.executor, config.train, gpus=gpus))


def run_settings(**changes) -> loop.RunSettings:
    fields = dict(lr=1e-3, batch_size=8, epochs=1, weight_decay=0.0, eval_batch_size=64, group_by_length=True)
    fields.update(precision="fp32", checkpoint_every=0, threads=1, seed=0, device="cpu")
    return loop.RunSettings(**{**fields, **changes})


def test_local_runs_are_pinned_to_one_gpu_each_and_no_gpu_holds_more_than_runs_per_gpu(tmp_path):
    # Two fake GPUs with ids 3 and 5 (as CUDA_VISIBLE_DEVICES=3,5 would give), two runs per GPU:
    # four workers, and the first four runs wait until all four are in flight.
    outcomes = execute(
        note_slot, [(i, 0.3, str(tmp_path), 4) for i in range(10)], local_params(runs_per_gpu=2), gpus=["3", "5"]
    )
    assert sorted(outcomes) == list(range(10)) and all(outcome["run"] == i for i, outcome in outcomes.items())
    slots = {i: outcome["slot"] for i, outcome in outcomes.items()}
    assert set(slots.values()) <= {"3", "5"}, f"every run must see exactly one of the GPUs: {slots}"
    for gpu in ("3", "5"):
        runs = [o for o in outcomes.values() if o["slot"] == gpu]
        assert most_at_once([(o["start"], o["end"]) for o in runs]) <= 2, f"GPU {gpu} held more than 2 runs at once"
        assert len({o["pid"] for o in runs}) <= 2, f"GPU {gpu} had more than 2 worker processes"
    assert most_at_once([(o["start"], o["end"]) for o in outcomes.values()]) == 4


def test_on_a_cpu_machine_the_pool_is_train_workers_and_sets_no_gpu(tmp_path):
    if executors.visible_gpus():
        pytest.skip("this machine has a GPU")
    # The first two runs wait for each other: both workers of the pool must be running at once.
    outcomes = execute(note_slot, [(i, 0.2, str(tmp_path), 2) for i in range(4)], local_params(workers=2))
    assert {o["slot"] for o in outcomes.values()} == {None}
    assert len({o["pid"] for o in outcomes.values()}) == 2


@pytest.mark.parametrize("workers", [1, 2])
def test_a_run_that_raises_is_a_failure_with_its_cause_and_the_others_finish(workers):
    outcomes = execute(fail_odd, [(i,) for i in range(4)], local_params(workers=workers))
    assert outcomes[0] == {"run": 0} and outcomes[2] == {"run": 2}
    assert outcomes[1] == Failure("ValueError: run 1 is odd", 1) and outcomes[3] == Failure(
        "ValueError: run 3 is odd", 1
    )


def test_progress_in_a_log_is_one_plain_line_per_finished_run():
    stream = io.StringIO()
    progress = Progress([100, 100, 50, 50], concurrency=2, stream=stream)
    progress.finished(0, "[1/4] a: ok")
    progress.finished(2, "[2/4] c: failed after 3 attempt(s): boom", failed=True)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and "\r" not in stream.getvalue()
    assert (
        lines[0].startswith("[1/4] a: ok | 1 done, 2 running, 0 failed, 1 queued; ") and "examples/s, ETA " in lines[0]
    )
    assert lines[1].startswith("[2/4] c: failed after 3 attempt(s): boom | 1 done, 2 running, 1 failed, 0 queued; ")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_one_live_line_shows_runs_and_steps_moving_while_runs_train(monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(progress_module, "POLL_SECONDS", 0.01)
    stream = Terminal()
    with Progress([100, 100], concurrency=2, steps=[13, 7], label="finetune studies.progressive", stream=stream) as p:
        p.steps.value = 5  # a worker's steps, before any run finished
        deadline = time.monotonic() + 10
        while "5/20" not in stream.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert "finetune studies.progressive" in stream.getvalue() and "runs 0/2" in stream.getvalue()
        assert "5/20" in stream.getvalue()  # moved with no run finished
        p.steps.value = 13
        p.finished(0, "[1/2] a: ok")
    text = stream.getvalue()
    assert "[1/2] a: ok\n" in text and "13/20" in text and "runs 1/2" in text and "\r" in text


def test_on_a_terminal_runs_that_count_no_steps_show_runs_only(monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.delenv("CI", raising=False)
    stream = Terminal()
    with Progress([100], concurrency=None, steps=None, stream=stream) as p:  # SLURM, Ray
        p.finished(0, "[1/1] a: ok")
    assert "[1/1] a: ok\n" in stream.getvalue() and "runs 1/1" in stream.getvalue() and "/0" not in stream.getvalue()


@pytest.mark.parametrize("quiet", [{"TQDM_DISABLE": "1"}, {"CI": "true"}])
def test_in_ci_a_terminal_gets_plain_lines(monkeypatch, quiet):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.delenv("CI", raising=False)
    for name, value in quiet.items():
        monkeypatch.setenv(name, value)
    stream = Terminal()
    with Progress([100, 100], concurrency=2, steps=[13, 7], stream=stream) as p:
        p.steps.value = 13
        p.finished(0, "[1/2] a: ok")
    assert "\r" not in stream.getvalue()
    assert stream.getvalue().startswith("[1/2] a: ok | 1 done, 1 running, 0 failed, 0 queued; steps 13/20; ")


@pytest.mark.parametrize("workers", [1, 2])
def test_workers_report_every_optimizer_step_to_the_stage(workers):
    config = validate(local_params(workers=workers))
    progress = Progress([1, 1, 1], concurrency=workers, steps=[3, 5, 7], stream=io.StringIO())
    runs = [(i, steps) for i, steps in enumerate((3, 5, 7))]
    outcomes = dict(executors.execute(take_steps, runs, config.executor, config.train, steps=progress.steps))
    assert outcomes == {i: {"run": i} for i in range(3)} and progress.steps.value == 15
    take_steps(0, 2)  # in this process, after the stage's runs: counted for no one
    assert progress.steps.value == 15


def test_a_runs_steps_are_its_batches_in_every_epoch_of_every_finetuning_step():
    plan = tokens.batches(np.arange(20), 8, np.random.default_rng(0), group_by_length=True)
    assert progress_module.optimizer_steps(Condition("rt_sentiment", 20, 0, 3, k=2), lambda task: 500, 8) == 3 * len(
        plan
    )
    sequential = Condition("rt_sentiment", 20, 0, 3, k=6, intermediate_task="subjectivity", intermediate_size=100)
    assert progress_module.optimizer_steps(sequential, lambda task: 500, 8) == 3 * 13 + 3 * 3


def test_executor_params_slurm_takes_whole_gpus_ray_a_fraction():
    validate(local_params(kind="ray", gpus_per_run=0.5))
    with pytest.raises(ParamsError, match=r"executor.gpus_per_run = 0.5 is invalid; allowed: .*SLURM: an integer"):
        validate(local_params(kind="slurm", gpus_per_run=0.5))


# --- CUDA paths, checked on the CPU the way they fail on a GPU ---------------------------------


def test_a_new_task_head_is_initialised_on_the_cpu_then_moved_to_the_models_device(tiny_model_dir, monkeypatch):
    # On CUDA, reinit's CPU torch.Generator is refused for a CUDA tensor. `meta` stands in for
    # the GPU here: the head must be drawn on the CPU and end up on the model's device.
    model, _ = build_finetuner(tiny_model_dir, Condition("rt_sentiment", 40, 0, 1, k=1), 2, 0)
    reference = new_task_head(model, 3, Condition("rt_sentiment", 40, 0, 1, k=1), 0, 0.02)
    weight = model.classifier.weight.detach().clone()
    real_init = new_task_head.__globals__["reinit"].init_module
    devices = []

    def init_module(module, *args, **kwargs):
        devices.extend(p.device.type for p in module.parameters())
        return real_init(module, *args, **kwargs)

    monkeypatch.setattr("src.model.reinit.init_module", init_module)
    model.to("meta")
    written = new_task_head(model, 3, Condition("rt_sentiment", 40, 0, 1, k=1), 0, 0.02)
    assert devices and set(devices) == {"cpu"}, f"the head was initialised on {set(devices)}"
    assert model.classifier.weight.device.type == "meta" and model.classifier.weight.shape == weight.shape
    assert written == reference  # same draws whatever the model's device


def test_checkpoints_carry_the_cuda_rng_states_and_a_resume_restores_them(
    tmp_path, tiny_model_dir, tiny_task_dir, monkeypatch
):
    fake_cuda_states = [torch.tensor([7, 7, 7], dtype=torch.uint8), torch.tensor([9], dtype=torch.uint8)]
    restored = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_rng_state_all", lambda: fake_cuda_states)
    monkeypatch.setattr(torch.cuda, "set_rng_state_all", restored.append)
    task = get_task("rt_sentiment")
    pool = splits.load_split(tiny_task_dir / "tokens.npz", "train")
    train = pool.subset(tokens.training_subset(len(pool), 24, task.name, 0, 0))  # 3 steps of 8
    cfg = run_settings(checkpoint_every=1)
    checkpoint = tmp_path / "trial0.ckpt"

    class Stop(Exception):
        pass

    def stop_after_first_checkpoint(*args, **kwargs):
        real_save(*args, **kwargs)
        raise Stop

    real_save = loop._save_checkpoint
    monkeypatch.setattr(loop, "_save_checkpoint", stop_after_first_checkpoint)
    model, _ = build_finetuner(tiny_model_dir, Condition("rt_sentiment", 24, 0, 1, k=1), 2, 0)
    with pytest.raises(Stop):
        loop.finetune(model, task, train, cfg, 1, checkpoint=checkpoint, checkpoint_key="k")
    saved = torch.load(checkpoint, weights_only=True)
    assert [t.tolist() for t in saved["rng"]["cuda"]] == [[7, 7, 7], [9]] and saved["state"]["step"] == 1

    monkeypatch.setattr(loop, "_save_checkpoint", real_save)
    model, _ = build_finetuner(tiny_model_dir, Condition("rt_sentiment", 24, 0, 1, k=1), 2, 0)
    assert loop.finetune(model, task, train, cfg, 1, checkpoint=checkpoint, checkpoint_key="k")["status"] == "ok"
    assert len(restored) == 1 and [t.tolist() for t in restored[0]] == [[7, 7, 7], [9]]


def test_fp16_trains_with_a_grad_scaler(tiny_model_dir, tiny_task_dir):
    task = get_task("rt_sentiment")
    pool = splits.load_split(tiny_task_dir / "tokens.npz", "train")
    train = pool.subset(tokens.training_subset(len(pool), 40, task.name, 0, 0))
    model, _ = build_finetuner(tiny_model_dir, Condition("rt_sentiment", 40, 0, 1, k=1), 2, 0)
    outcome = loop.finetune(model, task, train, run_settings(epochs=2, precision="fp16"), 1)
    assert outcome["status"] == "ok" and outcome["epoch_losses"][1] < outcome["epoch_losses"][0]
    assert all(p.dtype == torch.float32 for p in model.parameters())  # autocast only: weights stay fp32


def test_a_stage_names_the_finetune_stages_after_it_and_the_eta_to_their_end():
    stream = io.StringIO()
    progress = Progress([100, 100], concurrency=2, stream=stream, later=LaterWork(stages=2, runs=6, examples=600))
    progress.start -= 10  # 10 s in: 100 examples trained, 100 + 600 left at 10 examples/s
    progress.finished(0, "[1/2] a: ok")
    assert stream.getvalue().rstrip().endswith("ETA 0m10s; then 6 runs in 2 finetune stage(s), ETA to their end 1m10s")
    nothing_after = io.StringIO()
    Progress([100], concurrency=1, stream=nothing_after, later=LaterWork(0, 0, 0)).finished(0, "[1/1] a: ok")
    assert "then" not in nothing_after.getvalue()


def test_the_work_after_a_stage_is_the_later_studies_runs_without_a_result_yet(tmp_path):
    config = validate(grid_params())
    names = list(config.studies)
    tasks = tmp_path / "tasks"
    for task in config.data.tasks:
        (tasks / task).mkdir(parents=True)
        (tasks / task / "info.json").write_text('{"train_examples": 1000}')
    reported = all_study_conditions(config, L)
    after_first = [(n, c) for n in names[1:] for c in trained_conditions(reported, n, L)]
    everything = later_work(config, L, names[0], tmp_path / "studies", tasks)
    assert (everything.stages, everything.runs) == (len(names) - 1, len(after_first))
    assert everything.examples == sum(c.examples_trained(lambda task: 1000) for _, c in after_first)
    name, done = after_first[0]
    result_path(tmp_path / "studies" / name, done).parent.mkdir(parents=True)
    result_path(tmp_path / "studies" / name, done).write_text("{}")
    assert later_work(config, L, names[0], tmp_path / "studies", tasks).runs == len(after_first) - 1
    assert later_work(config, L, names[-1], tmp_path / "studies", tasks) == LaterWork(0, 0, 0)
