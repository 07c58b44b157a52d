"""What each per-run measurement (docs/measures.md) costs: the CPU time of one full-model run
(k = L) with the measurement on against the same run with every measurement off, as a ratio.

    python -m bench.measure_cost [--repeats 2] [--task rt_sentiment] [--size 128]

Needs a finished `dvc repro` (data/model, data/tasks). Each run is a fresh process
(bench.run.in_fresh_processes: one torch thread, `precision: auto`), the contenders
interleaved round by round, so drift and background load hit them alike; CPU time (user +
system of the run) is reported beside wall time, since CPU time moves less when the machine is
shared. The score must be identical across contenders (the measurements never touch training):
the script stops if it is not.
"""

from __future__ import annotations

import argparse
import dataclasses
import resource
import sys
import time
from pathlib import Path

from bench.run import in_fresh_processes

REPO = Path(__file__).resolve().parents[1]
CONTENDERS = {  # name -> the RunSettings measurement fields it turns on (all others off)
    "off": {},
    "cka": {"cka": True},
    "criticality (100 examples)": {"criticality": True, "criticality_examples": 100},
    "head_importance": {"head_importance": True},
}


def one_run(task: str, size: int, fields: dict) -> dict:
    """Train and score the full-model condition once in this process; its CPU and wall seconds."""
    from src.artefacts.base_model import BaseModelRecord
    from src.conditions.condition import Condition
    from src.params.load import load_config
    from src.train.run import run_condition
    from src.train.schedule import run_settings

    config = load_config()
    num_layers = BaseModelRecord.read(REPO / "data/model").num_layers
    off = {"cka": False, "criticality": False, "criticality_examples": 0, "head_importance": False}
    settings = dataclasses.replace(run_settings(config, config.train.epochs, full_model=True), **{**off, **fields})
    condition = Condition(task, size, 0, config.train.epochs, k=num_layers)
    before, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    result = run_condition(condition, settings, REPO / "data/model", REPO / "data/tasks")
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {
        "cpu_s": round(cpu, 2),
        "wall_s": round(time.perf_counter() - wall, 2),
        "score": result.scores[result.metric],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--task", default="rt_sentiment")
    parser.add_argument("--size", type=int, default=128)
    args = parser.parse_args()
    times = {name: [] for name in CONTENDERS}
    for _ in range(args.repeats):
        for name, fields in CONTENDERS.items():  # interleaved: round by round, every contender once
            times[name] += in_fresh_processes(one_run, (args.task, args.size, fields), threads=1)
    scores = {run["score"] for runs in times.values() for run in runs}
    if len(scores) != 1:
        sys.exit(f"the measurements changed the score: {sorted(scores)}")
    base = sum(run["cpu_s"] for run in times["off"]) / args.repeats
    print(f"{args.task}, {args.size} examples, k = L, {args.repeats} rounds; score {scores.pop():.4f} in every run")
    print("| measurement | CPU s (each round) | wall s | CPU ratio to off |\n|---|---|---|---|")
    for name, runs in times.items():
        cpu = [run["cpu_s"] for run in runs]
        wall = [run["wall_s"] for run in runs]
        print(
            f"| {name} | {', '.join(map(str, cpu))} | {', '.join(map(str, wall))} | {sum(cpu) / len(cpu) / base:.2f} |"
        )


if __name__ == "__main__":
    main()
