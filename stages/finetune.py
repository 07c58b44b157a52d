"""Stage finetune@<study> and stage focus: run every condition of a study (or the focus
condition's trials), one result JSON per condition.

Finished conditions survive a kill: each result is written atomically with the
fingerprint of everything it depends on, the stage's output is `persist` in dvc.yaml,
and a rerun reuses every result whose fingerprint still matches, resumes a half-done
condition from its checkpoint (train.checkpoint_every), and trains the rest. Files of
conditions the params no longer ask for are removed at the end.

A study trains only the conditions whose training run no earlier study trains
(src/studies.py: trained_conditions). The focus stage copies a study's result when it
has the same fingerprint (--reuse): with the defaults, every focus trial is a
progressive-study run.
"""

import argparse
import json
from pathlib import Path

from src.condition import Condition
from src.errors import run_stage
from src.executors import Failure, Progress, concurrency
from src.experiment import fingerprint, run_conditions, write_json_atomically
from src.model import model_shape
from src.params import ParamsError, load_params
from src.stats import mean_ci
from src.studies import focus_condition, trained_conditions
from src.tasks import get_task


def check_sizes(conditions, tasks_dir: Path, where: str) -> None:
    """Every training size must fit its task's pool: fail before the first condition trains."""
    for condition in conditions:
        for task in filter(None, (condition.task, condition.intermediate_task)):
            pool = json.loads((tasks_dir / task / "info.json").read_text())["train_examples"]
            if condition.size > pool:
                raise ParamsError(f"params.yaml: {where} asks for {condition.size} training examples of task {task!r}, which has {pool}")


def finished(path: Path, key: str) -> dict | None:
    """The result at `path` if it is complete and was computed from exactly these inputs."""
    try:
        result = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):  # absent, or cut short: compute it again
        return None
    return result if result.get("fingerprint") == key else None


def finished_in_studies(studies_dir: Path, condition: Condition, key: str) -> tuple[dict, Path] | None:
    """(result, its file) of a study that finished this exact run (same fingerprint), if any."""
    for study in sorted(p for p in studies_dir.iterdir() if p.is_dir()):
        path = condition.result_path(study)
        if (result := finished(path, key)) is not None:
            return result, path
    return None


def examples_trained(condition: Condition) -> int:
    """Examples a condition's run passes through, its intermediate task's included."""
    return condition.size * condition.epochs * (2 if condition.intermediate_task else 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--study", help="a section of studies: in params.yaml")
    group.add_argument("--focus", action="store_true", help="the focus condition (task, size, k, trials)")
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--tasks", type=Path, required=True, help="the data stage's output folder")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--summary", type=Path, help="write mean and CI here (focus stage)")
    parser.add_argument("--reuse", type=Path, help="the studies' output folder: copy a result found there with the same fingerprint")
    args = parser.parse_args()

    num_layers, num_heads = model_shape(args.model)
    params = load_params(num_layers=num_layers, num_heads=num_heads)
    if args.focus:
        conditions, where, log_epochs = [focus_condition(params, t) for t in range(params["trials"])], "the focus condition", False
    else:
        conditions, where = trained_conditions(params, args.study, num_layers), f"studies.{args.study}"
        log_epochs = "epochs" in params["studies"][args.study]
    for condition in conditions:
        condition.check(num_layers, num_heads)
    check_sizes(conditions, args.tasks, where)

    paths = [condition.result_path(args.out) for condition in conditions]
    keys = [fingerprint(condition, params, args.model, args.tasks) for condition in conditions]
    results = []
    for i, (condition, path, key) in enumerate(zip(conditions, paths, keys), 1):
        result = finished(path, key)
        if result is not None:
            print(f"[{i}/{len(conditions)}] {condition.describe()}: finished earlier, kept")
        elif args.reuse is not None and (twin := finished_in_studies(args.reuse, condition, key)) is not None:
            result, source = twin
            write_json_atomically(path, result)
            print(f"[{i}/{len(conditions)}] {condition.describe()}: the same run as in {source}, copied")
        results.append(result)
    # Longest runs first, so that a stage ends on a short one and the other workers idle less.
    todo = sorted((i for i, result in enumerate(results) if result is None), key=lambda i: -examples_trained(conditions[i]))
    # Absolute paths: SLURM and Ray workers do not start in this folder (it must be on a shared filesystem).
    jobs = [(conditions[i], paths[i].with_suffix(".ckpt").resolve(), keys[i], paths[i].with_suffix(".log").resolve()) for i in todo]
    progress = Progress([examples_trained(conditions[i]) for i in todo], concurrency(params))
    failed = []
    for done, (job, result) in enumerate(run_conditions(jobs, params, args.model.resolve(), args.tasks.resolve(), log_epochs), 1):
        i = todo[job]
        line = f"[{len(conditions) - len(todo) + done}/{len(conditions)}] {conditions[i].describe()}"
        if isinstance(result, Failure):  # recorded with its cause; the other runs go on
            write_json_atomically(paths[i].with_suffix(".failed"), {"condition": conditions[i].as_dict(), "fingerprint": keys[i], "attempts": result.attempts, "cause": result.cause})
            failed.append(f"{conditions[i].describe()}: {result.cause}")
            progress.finished(job, f"{line}: failed after {result.attempts} attempt(s): {result.cause}", failed=True)
            continue
        write_json_atomically(paths[i], result)  # saved as soon as it finishes: a kill loses only runs in flight
        paths[i].with_suffix(".ckpt").unlink(missing_ok=True)
        paths[i].with_suffix(".failed").unlink(missing_ok=True)
        results[i] = result
        progress.finished(job, f"{line}: {result['status']} {result['scores']} ({result['train_seconds']} s)")

    args.out.mkdir(parents=True, exist_ok=True)  # DVC's output, even for a study whose runs all belong to others
    kept = {path.with_suffix(suffix) for path in paths for suffix in (".json", ".ckpt", ".log", ".failed")}
    for stale in [p for p in args.out.rglob("*") if p.is_file() and p not in kept]:
        stale.unlink()
    for folder in sorted((p for p in args.out.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()

    if failed:  # every finished result is saved above; a rerun trains only these
        raise SystemExit(f"finetune {where}: {len(failed)} of {len(conditions)} runs failed (their causes are in <run>.failed next to each result):\n  " + "\n  ".join(failed))

    if args.summary:
        metric = get_task(params["task"]).metrics[0]
        mean, half, n = mean_ci([r["scores"][metric] for r in results if r["status"] == "ok"])
        # an undefined statistic is null (NaN is not JSON), with the reason beside it
        summary = {"task": params["task"], "size": params["size"], "k": params["k"], "metric": metric, "mean": mean if n else None, "ci95": half if n >= 2 else None, "n": n, "diverged": len(results) - n}
        if n < 2:
            summary["ci95_note"] = f"a confidence interval needs at least 2 finished runs; this condition has {n}"
        write_json_atomically(args.summary, summary)


if __name__ == "__main__":
    run_stage(main)
