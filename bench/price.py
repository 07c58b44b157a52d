"""The tamkin2020 grid's price on one GPU with every per-run cost the pipeline pays, from the real
pack sizes (bench/cost.py writes it into bench/cost.json as "price"; `python -m bench.cost`).

Each line is a count this pipeline makes (runs, steps, eval batches, packs, checkpoints: from
src/conditions/studies.py, src/train/schedule.packs and the preset) times a time that was
MEASURED (bench/gpu.json: bert-base on an NVIDIA H200; bench/levers_cpu.json: this repository's
CPU, one thread) or DERIVED (the derivation named beside it). Every line says which.

Packs are as src/train/schedule.packs makes them: runs of one pack_key (task, size, trial) within
one finetune stage (each study is its own stage), split as evenly as can be at train.pack. A
pack steps until its longest member ends; members that end earlier leave and the pack steps on
at the smaller K. Its step time at K live members is read off the measured step times (K = 1
alone, 8, 16, 32 at the grid's mean length), linearly between them (DERIVED).
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

from src.config.schema import Config
from src.train.packed import pack_key
from src.train.schedule import is_full_model, packs, run_settings

REPO = Path(__file__).resolve().parents[1]
LEVERS_CPU = REPO / "bench" / "levers_cpu.json"
LAYERS = 12
FEATURE_LAYERS = LAYERS + 1  # CKA compares the embeddings and every layer
SUBLAYER_MATRICES = 6 * LAYERS  # weight_change: Q, K, V, attention output, intermediate, output
CHECKPOINT_BYTES_PER_PARAM = 12  # fp32 weights and both Adam moments (src/train/stacked.state)
# HBM traffic of one AdamW update per parameter, fp32: the written-out step of 78fdc7e read and wrote
# lerp m (12), mul v (8), addcmul v (12), sqrt (8), div (8), add (8), step*m (8), /denom (12), p.sub_ (12);
# the fused kernel reads p, g, m, v and writes p, m, v once (28)
WRITTEN_OUT_ADAMW_BYTES, FUSED_ADAMW_BYTES = 88, 28
PCIE_BYTES_S = 25e9  # a GPU-to-host copy (PCIe Gen4/5 x16 in practice; DERIVED, the device script measures it)
CHECKPOINT_WALL_S = 600  # the remaining lever: a member's checkpoint every 10 minutes, not every 500 steps
H100_BANDWIDTH_RATIO = 4.8 / 3.35  # H200 / H100 SXM HBM bandwidth (datasheets): the memory-bound share slows
EIGVALSH_S = 7.5e-3  # one torch.linalg.eigvalsh of 768 x 768 on a GPU (cuSOLVER syevd; DERIVED, not measured)
NORM_SYNC_S = 50e-6  # one Frobenius norm read to the host (a kernel and a sync; DERIVED, not measured)
MFU_BOUND = 0.4  # the remaining dispatch lever's bound: a step at 40% of bf16 peak (DERIVED, not measured)


def step_ms(gpu: dict) -> dict[int, float]:
    """Measured ms per pack step at the grid's length, by K (K = 1: a run alone)."""
    rows = [r for r in gpu["configurations"] if r.get("length") == gpu["grid_length"] and "error" not in r]
    times = {r["k"]: r["step_ms"] for r in rows if r["path"] in ("alone", "stacked")}
    return dict(sorted(times.items()))


def interpolate(times: dict[int, float], k: int) -> float:
    """ms per step at K live members, linear between the measured K (beyond the last: its slope)."""
    ks = list(times)
    if k in times:
        return times[k]
    low = max((x for x in ks if x < k), default=ks[0])
    high = min((x for x in ks if x > k), default=None)
    if high is None:
        low, high = ks[-2], ks[-1]
    return times[low] + (times[high] - times[low]) * (k - low) / (high - low)


def pack_seconds(member_steps: list[int], times: dict[int, float], saved_ms_per_member: float = 0.0) -> float:
    """A pack's training: each segment of steps at the K still live (members leave as they end)."""
    total, done = 0.0, 0
    ordered = sorted(member_steps)
    for i, steps in enumerate(ordered):
        live = len(ordered) - i
        total += (steps - done) * (interpolate(times, live) - saved_ms_per_member * live) / 1e3
        done = steps
    return total


def grid_packs(design: Config, runs: dict, stats: dict, size: int, across_trials: bool = False) -> dict:
    """Per study (stage): its packs, each a list of conditions, as the stage makes them at pack `size`
    (`across_trials`: runs of several trials in one pack, a lever not built)."""
    by_study, settings = {}, functools.cache(lambda epochs, full: run_settings(design, epochs, full))
    for name, study in runs.items():
        conditions = sorted(
            study["trained"], key=lambda c: -c.examples_trained(lambda task: stats[task]["train_examples"])
        )
        keys = []
        for c in conditions:
            key = pack_key(c, settings(c.epochs, is_full_model(c, LAYERS)), design.seed)
            keys.append(None if key is None else (key[0], key[1], *(key[5:] if across_trials else key[2:])))
        by_study[name] = [[conditions[i] for i in pack] for pack in packs(keys, size)]
    return by_study


def price(design: Config, runs: dict, stats: dict, gpu: dict, levers: dict, size: int = 16) -> dict:  # noqa: PLR0914
    """The grid's GPU-hours at train.pack `size`, line by line, before and after the levers landed
    (the fused AdamW step, CKA in feature space), and what each remaining lever would take off."""
    times = step_ms(gpu)
    params, bandwidth = gpu["params"], gpu["copy_bandwidth_gbs"] * 1e9
    fused_saving_ms = (WRITTEN_OUT_ADAMW_BYTES - FUSED_ADAMW_BYTES) * params / bandwidth * 1e3  # per member-step
    eval_s = gpu["eval_batch_ms"] / 1e3
    by_study = grid_packs(design, runs, stats, size)
    every = [c for study in by_study.values() for pack in study for c in pack]
    steps_of = {id(c): steps_of_condition(c, design, stats) for c in every}

    def evals(c, name) -> int:
        per_pass = math.ceil(stats[c.task]["dev_examples"] / design.train.eval_batch_size)
        return per_pass * (1 + (c.epochs if design.studies[name].epochs is not None else 0))

    train_before = sum(pack_seconds([steps_of[id(c)] for c in p], times) for s in by_study.values() for p in s)
    train_after = sum(
        pack_seconds([steps_of[id(c)] for c in p], times, fused_saving_ms) for s in by_study.values() for p in s
    )
    eval_batches = sum(evals(c, name) for name, s in by_study.items() for p in s for c in p)
    full_model = [c for c in every if is_full_model(c, LAYERS)]
    criticality_batches = 2 * LAYERS * math.ceil(design.train.criticality_examples / design.train.eval_batch_size)
    cka_runs = every if design.train.cka else []
    cka_gram = sum(FEATURE_LAYERS * cka_layer_row(levers, c.task)["gram_s"] for c in cka_runs)
    cka_feature = sum(FEATURE_LAYERS * cka_layer_row(levers, c.task)["feature_s"] for c in cka_runs)
    sides = {(name, c.task) for name, s in by_study.items() for p in s for c in p}  # once per stage and task
    cka_feature += sum(FEATURE_LAYERS * cka_layer_row(levers, task)["pretrained_side_s"] for _, task in sides)
    tracker_calls = sum(int(math.log2(max(steps_of[id(c)], 1))) + 1 for c in every)
    checkpoint = levers["checkpoint"][0]
    write_s = CHECKPOINT_BYTES_PER_PARAM * params / (checkpoint["bytes"] / checkpoint["save_s"])
    copy_s = CHECKPOINT_BYTES_PER_PARAM * params / PCIE_BYTES_S
    checkpoints = sum(steps_of[id(c)] // design.train.checkpoint_every for c in every)
    pack_walls = [pack_seconds([steps_of[id(c)] for c in p], times) for s in by_study.values() for p in s]
    member_counts = [len(p) for s in by_study.values() for p in s]
    by_wall = sum(int(w // CHECKPOINT_WALL_S) * m for w, m in zip(pack_walls, member_counts))
    features_examples = sum(s["train_examples"] + s["dev_examples"] for s in stats.values())
    cpu, dev = levers["device"], gpu["device"]
    lines = [
        line(
            "training steps",
            train_before,
            train_after,
            f"packs as src/train/schedule.packs makes them at pack {size}; step times MEASURED on {dev} at seq "
            f"{gpu['grid_length']} (bench/gpu.json, the written-out AdamW), linear in K between them (DERIVED); "
            f"after: the fused AdamW saves {WRITTEN_OUT_ADAMW_BYTES - FUSED_ADAMW_BYTES} B/param of HBM traffic per "
            f"member-step at the measured copy bandwidth, {fused_saving_ms:.2f} ms (DERIVED; launches saved not "
            "counted)",
        ),
        line(
            "eval",
            eval_batches * eval_s,
            eval_batches * eval_s,
            f"{eval_batches:,} eval batches of 32 x {gpu['eval_batch_ms']:.2f} ms MEASURED on {dev}",
        ),
        line(
            "criticality (full-model runs)",
            len(full_model) * criticality_batches * eval_s,
            len(full_model) * criticality_batches * eval_s,
            f"{len(full_model)} runs x {criticality_batches} eval batches (2 rewinds x {LAYERS} layers x "
            f"{design.train.criticality_examples} examples) x the MEASURED eval batch (DERIVED count)",
        ),
        line(
            "CKA",
            cka_gram,
            cka_feature,
            f"{len(cka_runs):,} runs x {FEATURE_LAYERS} layers x the per-layer time at the task's eval size, "
            "width 768, "
            f"MEASURED on {cpu}, one thread (bench/levers_cpu.json; on the GPU machine's host CPU, while the GPU "
            "waits); before: n x n Grams; after: feature space, the pretrained side once per stage and task",
        ),
        line(
            "weight-change norms",
            len(every) * SUBLAYER_MATRICES * EIGVALSH_S + tracker_calls * SUBLAYER_MATRICES * NORM_SYNC_S,
            len(every) * SUBLAYER_MATRICES * EIGVALSH_S + tracker_calls * SUBLAYER_MATRICES * NORM_SYNC_S,
            f"{len(every):,} runs x {SUBLAYER_MATRICES} eigvalsh of a 768 x 768 Gram on the GPU at "
            f"{EIGVALSH_S * 1e3:.1f} ms + {tracker_calls:,} layer-change calls x {SUBLAYER_MATRICES} norms with a "
            f"host sync at {NORM_SYNC_S * 1e6:.0f} us (DERIVED: cuSOLVER's syevd and a CUDA sync's usual latencies; "
            "bench/device_check.sh measures the row)",
        ),
        line(
            "checkpoints",
            checkpoints * (copy_s + write_s),
            checkpoints * (copy_s + write_s),
            f"{checkpoints:,} member checkpoints (every {design.train.checkpoint_every} steps) of "
            f"{CHECKPOINT_BYTES_PER_PARAM * params / 1e9:.2f} GB: copy to host at {PCIE_BYTES_S / 1e9:.0f} GB/s "
            f"(DERIVED) + save at {checkpoint['bytes'] / checkpoint['save_s'] / 1e9:.2f} GB/s MEASURED on this "
            "machine's disk",
        ),
        line(
            "model building",
            len(every) * gpu["run_setup_s"],
            len(every) * gpu["run_setup_s"],
            f"{len(every):,} runs x {gpu['run_setup_s']:.2f} s MEASURED on {dev} (bert-base built, moved to the GPU)",
        ),
        line(
            "process starts",
            len(by_study) * gpu["process_start_s"],
            len(by_study) * gpu["process_start_s"],
            f"{len(by_study)} finetune stages x one worker process ({gpu['process_start_s']:.1f} s MEASURED on {dev}); "
            "the local executor keeps its worker for the stage",
        ),
        line(
            "features (probe stage)",
            features_examples / 32 * eval_s,
            features_examples / 32 * eval_s,
            f"{features_examples:,} examples, one forward each at the MEASURED eval batch time (DERIVED; the linear "
            "probes on cached features are not priced)",
        ),
    ]
    before = sum(r["before_gpu_h"] for r in lines)
    after = sum(r["after_gpu_h"] for r in lines)
    thin = grid_packs(design, runs, stats, size, across_trials=True)
    thin_train = sum(
        pack_seconds([steps_of_condition(c, design, stats) for c in p], times, fused_saving_ms)
        for s in thin.values()
        for p in s
    )
    bound_ms = gpu["floor_ms_per_run_step"] + flops_ms(gpu, MFU_BOUND)
    run_steps = sum(steps_of.values())
    forward_ms = times[max(times)] / max(times) / 3 / design.train.batch_size  # per sequence, from the K=32 step
    remaining = [
        lever(
            "dispatch gone (CUDA graphs or torch.compile on the stacked step)",
            train_after - run_steps * bound_ms / 1e3,
            f"at most: each run-step down to the memory floor ({gpu['floor_ms_per_run_step']:.2f} ms MEASURED "
            f"bandwidth) + its FLOPs at {MFU_BOUND:.0%} MFU ({flops_ms(gpu, MFU_BOUND):.2f} ms), DERIVED",
        ),
        lever(
            "packs across trials (HFTA-style: the K = 3 tails merge)",
            train_after - thin_train,
            f"the same packs keyed without the trial at pack {size}, priced as above (DERIVED)",
        ),
        lever(
            "checkpoints every 10 min by a background writer",
            checkpoints * (copy_s + write_s) - by_wall * copy_s,
            f"{by_wall:,} checkpoints, only their copy to the host on the critical path (DERIVED)",
        ),
        lever(
            "eval at batch 256",
            eval_batches * (eval_s - design.train.eval_batch_size * forward_ms / 1e3),
            f"a forward at the K = {max(times)} step's throughput: a third of its ms per sequence "
            f"({forward_ms:.3f} ms; DERIVED)",
        ),
        lever(
            "the next pack's models built while one trains",
            sum(len(p) for s in by_study.values() for p in s[1:]) * gpu["run_setup_s"],
            "every build but each stage's first pack off the critical path (DERIVED)",
        ),
    ]
    floor_share = gpu["floor_ms_per_run_step"] * run_steps / 1e3 / train_after
    return {
        "label": f"PRICE: counts from the preset and the code; times MEASURED on {dev} and {cpu} or DERIVED, per line",
        "pack": size,
        "packs": {name: sorted({len(p) for p in s}, reverse=True) for name, s in by_study.items()},
        "runs": len(every),
        "run_steps": run_steps,
        "lines": lines,
        "before_gpu_h": before,
        "after_gpu_h": after,
        "remaining_levers": remaining,
        # the two training levers overlap (with dispatch gone a step costs its bound at any K): the larger counts
        "after_all_levers_gpu_h": after
        - sum(r["takes_off_gpu_h"] for r in remaining[2:])
        - max(r["takes_off_gpu_h"] for r in remaining[:2]),
        "h100": {
            "after_gpu_h": after + train_after * floor_share * (H100_BANDWIDTH_RATIO - 1) / 3600,
            "source": f"DERIVED: the training's memory-floor share ({floor_share:.0%}) slower by the HBM bandwidth "
            f"ratio {H100_BANDWIDTH_RATIO:.2f}; dispatch-bound time the same",
        },
    }


def pool(stats: dict):
    return lambda task: stats[task]["train_examples"]


def steps_of_condition(c, design: Config, stats: dict) -> int:
    return sum(math.ceil(n / design.train.batch_size) * e for _, n, e in c.steps(pool(stats)))


def cka_layer_row(levers: dict, task: str) -> dict:
    return next(r for r in levers["cka_per_layer"] if r["task"] == task and r["width"] == 768)


def flops_ms(gpu: dict, mfu: float) -> float:
    """ms of one run-step's FLOPs at `mfu` of the GPU's bf16 peak (bench/gpu.py's count)."""
    row = next(r for r in gpu["configurations"] if r["path"] == "alone" and r["length"] == gpu["grid_length"])
    flops = row["tflops"] * 1e12 * row["run_step_ms"] / 1e3
    return flops / (gpu["peak_bf16_flops"] * mfu) * 1e3


def line(item: str, before_s: float, after_s: float, source: str) -> dict:
    return {"item": item, "before_gpu_h": before_s / 3600, "after_gpu_h": after_s / 3600, "source": source}


def lever(name: str, seconds: float, source: str) -> dict:
    return {"lever": name, "takes_off_gpu_h": seconds / 3600, "source": source}


def table(result: dict) -> str:
    lines = [
        result["label"],
        f"pack {result['pack']}: pack sizes per stage {result['packs']}",
        "| line | GPU-h before | GPU-h after the landed levers | source |",
        "|---|---|---|---|",
        *[
            f"| {r['item']} | {r['before_gpu_h']:.2f} | {r['after_gpu_h']:.2f} | {r['source']} |"
            for r in result["lines"]
        ],
        f"| **total** | **{result['before_gpu_h']:.1f}** | **{result['after_gpu_h']:.1f}** | |",
        "",
        "| remaining lever | takes off GPU-h | source |",
        "|---|---|---|",
        *[f"| {r['lever']} | {r['takes_off_gpu_h']:.2f} | {r['source']} |" for r in result["remaining_levers"]],
        f"| all of them (the two training levers overlap: the larger counted) | "
        f"{result['after_gpu_h'] - result['after_all_levers_gpu_h']:.1f} | -> {result['after_all_levers_gpu_h']:.1f} "
        "GPU-h |",
    ]
    return "\n".join(lines)
