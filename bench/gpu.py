"""GPU benchmark of the finetuning step: one bert-base run alone, N runs in N processes, and
packs of K = 8, 16, 32 runs in one stacked step (train.pack); the paper grid projected from it.

    python -m bench.gpu --out bench/gpu.json      # on one CUDA GPU: ~3-5 min on an H100, at most 8
    python -m bench.gpu --smoke                   # CPU, a tiny model, seconds (tests/unit/bench/test_gpu_smoke.py)

It needs torch, transformers and numpy only (no hub, no params file, no data): bert-base-shaped
random weights (transformers' default BertConfig is bert-base-uncased's shape; random weights
take as long as real ones) with the pipeline's own head (src/model/finetuner.Finetuner, mean
pooling, 2 labels) and the pipeline's own steps: src/train/alone.AlonePath (a run alone: torch's
fused AdamW, the step every unpacked run takes) and src/train/stacked.StackedPath (a pack),
in bf16 autocast as train.precision auto picks on Ampere and later, on random batches of 8
sequences of a fixed length without padding.

Measured per configuration: ms per step and per run-step (a step of one run), peak GPU memory,
achieved model FLOP/s and MFU (6 N per token plus attention's 12 L s^2 h per sequence; against
the GPU's bf16 dense peak where the script knows it), and the share of the memory floor: each
run-step must move at least FLOOR_BYTES_PER_PARAM bytes per parameter through HBM, at the copy
bandwidth measured on this GPU. Also: one eval batch (32 sequences, inference), the fixed cost
of a run (building bert-base and moving it to the GPU; a fresh process importing torch and
transformers), whether a pack's numbers for one run depend on the pack size (bit for bit), and
how far the stacked step is from the run alone after one step.

The projection: the tamkin2020 preset's training steps, eval batches and runs (bench/cost.json,
from bench/cost.py) times the measured step, eval batch and per-run times, for runs alone and
for each pack size, beside the memory floor of its training steps. Every number is written to
--out as it is measured, so a run cut short keeps what it measured.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import torch
from torch import nn

from src.model.finetuner import Finetuner
from src.train.alone import AlonePath
from src.train.stacked import StackedPath

REPO = Path(__file__).resolve().parents[1]
COST = REPO / "bench" / "cost.json"
# bf16 dense tensor-core peak (no sparsity), FLOP/s, by a word in torch.cuda.get_device_name: datasheets
PEAK_BF16 = {"H200": 989e12, "H100": 989e12, "A100": 312e12, "L40S": 362e12, "A10": 125e12, "L4": 121e12}
# The least HBM traffic of one run-step, bytes per parameter: AdamW reads the fp32 weight, gradient and
# both moments and writes the weight and moments (28); the backward writes the fp32 gradient (4); the
# forward and backward read the weights at least once each in bf16 (2 + 2). Activations are left out.
FLOOR_BYTES_PER_PARAM = 36
LABELS = 2


def loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(logits.float(), labels)  # the classification kind's loss


TASK = SimpleNamespace(kind=SimpleNamespace(loss=loss))


def bert_config(smoke: bool, attention: str | None = None):
    """bert-base-uncased's shape (transformers' default BertConfig: 12 layers, hidden 768, 12 heads,
    vocab 30,522), or a tiny one; `attention`: an attention implementation other than the default
    the pipeline loads with (sdpa)."""
    from transformers import BertConfig

    small = dict(vocab_size=200, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
    config = BertConfig(**small) if smoke else BertConfig()
    if attention is not None:
        config._attn_implementation = attention
    return config


def build(config, device: torch.device, seed: int = 0) -> Finetuner:
    from transformers import BertModel

    torch.manual_seed(seed)
    model = Finetuner(BertModel(config, add_pooling_layer=False), LABELS, "mean")
    return model.to(device).train()


def member(model: nn.Module, precision: str):
    """A run as the steps read it (src/train/loop.Member): bert-base's lr, no lr groups."""
    settings = SimpleNamespace(lr=2e-5, weight_decay=0.0, precision=precision)
    return SimpleNamespace(model=model, settings=settings, fresh=frozenset(), lr_multiplier=1.0)


def batch(config, size: int, length: int, device: torch.device, seed: int = 1) -> tuple[dict, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, config.vocab_size, (size, length), generator=generator)
    inputs = {
        "input_ids": ids,
        "attention_mask": torch.ones_like(ids),
        "token_type_ids": torch.zeros_like(ids),
    }
    labels = torch.randint(0, LABELS, (size,), generator=generator)
    return {k: v.to(device) for k, v in inputs.items()}, labels.to(device)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(step, device: torch.device, warmup: int, steps: int) -> float:
    """Seconds per call of `step`, after `warmup` calls."""
    for _ in range(warmup):
        step()
    sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    sync(device)
    return (time.perf_counter() - start) / steps


def flops_per_run_step(config, size: int, length: int) -> float:
    """Model FLOPs of one training step of one run: 6 N per token (N: the encoder's
    non-embedding parameters) plus attention's score and value products, 12 L s^2 h per sequence."""
    h, layers, ffn = config.hidden_size, config.num_hidden_layers, config.intermediate_size
    n = layers * (4 * h * h + 4 * h + 2 * h * ffn + ffn + h + 4 * h)
    return 6 * n * size * length + 12 * layers * length * length * h * size


def copy_bandwidth(device: torch.device, smoke: bool) -> float:
    """Bytes per second a device-to-device copy moves (read + write), the HBM bandwidth one can reach."""
    source = torch.empty(int(2**20 if smoke else 2**30) // 4, dtype=torch.float32, device=device)
    target = torch.empty_like(source)
    seconds = timed(lambda: target.copy_(source), device, 2, 3 if smoke else 20)
    return 2 * source.numel() * 4 / seconds


def memory_peak(device: torch.device) -> int | None:
    return torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None


def reset_memory(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def fingerprint_of(model: nn.Module) -> str:
    """sha256 of a run's weights, bit for bit."""
    digest = hashlib.sha256()
    for _, p in sorted(model.named_parameters()):
        digest.update(p.detach().float().cpu().numpy().tobytes())
    return digest.hexdigest()


def alone(config, device, precision, size, length, warmup, steps) -> dict:
    """One run stepped alone (AlonePath, torch's fused AdamW): the step of every unpacked run."""
    reset_memory(device)
    model = build(config, device)
    path = AlonePath([member(model, precision)], TASK)
    inputs, labels = batch(config, size, length, device)
    seconds = timed(lambda: path.step([0], inputs, labels), device, warmup, steps)
    result = {"k": 1, "path": "alone", "step_ms": seconds * 1e3, "run_step_ms": seconds * 1e3}
    result["peak_memory_gb"] = (memory_peak(device) or 0) / 1e9
    return result


def packed(config, device, precision, size, length, k, warmup, steps, start: nn.Module) -> dict:
    """K runs in one stacked step (StackedPath), each starting from `start`'s weights."""
    reset_memory(device)
    models = [copy.deepcopy(start) for _ in range(k)]
    path = StackedPath([member(m, precision) for m in models], TASK)
    inputs, labels = batch(config, size, length, device)
    live = list(range(k))
    torch.manual_seed(3)
    first_loss = float(path.step(live, inputs, labels)[0])  # one step from the start: the bits of run 0
    weights = fingerprint_of(models[0])
    seconds = timed(lambda: path.step(live, inputs, labels), device, warmup, steps)
    result = {"k": k, "path": "stacked", "step_ms": seconds * 1e3, "run_step_ms": seconds * 1e3 / k}
    result["peak_memory_gb"] = (memory_peak(device) or 0) / 1e9
    result["first_step"] = {"loss": first_loss, "run0_weights_sha256": weights}
    return result


def first_step_alone(start: nn.Module, device, precision, config, size, length) -> dict:
    """The reference for packed()'s first step: the same run, the same batch and dropout seed, alone."""
    model = copy.deepcopy(start)
    path = AlonePath([member(model, precision)], TASK)
    inputs, labels = batch(config, size, length, device)
    torch.manual_seed(3)
    first_loss = float(path.step([0], inputs, labels)[0])
    return {"loss": first_loss, "run0_weights_sha256": fingerprint_of(model), "model": model}


def eval_batch(config, device, precision, length, warmup, steps) -> float:
    from src.train.device import autocast

    model = build(config, device).eval()
    inputs, _ = batch(config, 32, length, device)

    @torch.inference_mode()
    def forward():
        with autocast(precision, device):
            model(**inputs)

    return timed(forward, device, warmup, steps)


def run_setup_seconds(config, device) -> float:
    """Building one bert-base run's model and moving it to the device (a worker does this per run;
    reading real weights from disk adds the file's read)."""
    sync(device)
    start = time.perf_counter()
    build(config, device, seed=5)
    sync(device)
    return time.perf_counter() - start


def process_start_seconds() -> float:
    """A fresh Python process importing torch and transformers and initialising CUDA where there is one."""
    code = "import torch, transformers; torch.cuda.is_available() and torch.zeros(1, device='cuda')"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


PROCESS_CHILD = """
import sys, time, torch
sys.path.insert(0, {repo!r})
from bench import gpu
config = gpu.bert_config({smoke}, {attention!r})
device = torch.device({device!r})
model = gpu.build(config, device)
path = gpu.AlonePath([gpu.member(model, {precision!r})], gpu.TASK)
inputs, labels = gpu.batch(config, {size}, {length}, device)
for _ in range({warmup}):
    path.step([0], inputs, labels)
gpu.sync(device)
print("ready", flush=True)
sys.stdin.readline()
start = time.perf_counter()
for _ in range({steps}):
    path.step([0], inputs, labels)
gpu.sync(device)
print(time.perf_counter() - start, flush=True)
"""


def processes(n: int, config_smoke: bool, attention, device, precision, size, length, warmup, steps) -> dict:
    """N processes, each one run alone, started together once all are warm (no MPS: the GPU's
    default time-slicing, as executor.runs_per_gpu gets without an MPS daemon)."""
    code = PROCESS_CHILD.format(
        repo=str(REPO),
        smoke=config_smoke,
        device=str(device),
        precision=precision,
        attention=attention,
        size=size,
        length=length,
        warmup=warmup,
        steps=steps,
    )
    children = [
        subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(n)
    ]
    for child in children:
        for line in child.stdout:  # whatever a library prints first, then "ready"
            if line.strip() == "ready":
                break
        else:
            raise RuntimeError("a benchmark process ended before it was ready")
    start = time.perf_counter()
    for child in children:
        child.stdin.write("go\n")
        child.stdin.flush()
    each = [float(child.stdout.readline()) for child in children]
    wall = time.perf_counter() - start
    for child in children:
        child.wait()
    run_steps = n * steps
    return {"k": n, "path": f"{n} processes", "step_ms": max(each) / steps * 1e3, "run_step_ms": wall / run_steps * 1e3}


def grid_projection(result: dict, cost: dict) -> dict:
    """The tamkin2020 grid's hours from the measured times: train steps x run-step time + eval
    batches x eval time + runs x per-run setup, per configuration, and its memory floor."""
    total = cost["total"]
    eval_s = result["eval_batch_ms"] / 1e3
    setup_s = result["run_setup_s"]
    rows = {}
    for row in result["configurations"]:
        if row.get("length") != result["grid_length"] or "run_step_ms" not in row:  # other length, or failed
            continue
        per_run = setup_s if row["path"] == "stacked" else setup_s + result["process_start_s"]
        seconds = total["train_steps"] * row["run_step_ms"] / 1e3 + total["eval_batches"] * eval_s
        rows[row["path"] if row["path"] != "stacked" else f"pack {row['k']}"] = (
            seconds + total["runs"] * per_run
        ) / 3600
    floor = total["train_steps"] * result["floor_bytes_per_run_step"] / result["copy_bandwidth_gbs"] / 1e9 / 3600
    return {
        "train_steps": total["train_steps"],
        "eval_batches": total["eval_batches"],
        "runs": total["runs"],
        "grid_length": result["grid_length"],
        "gpu_hours": rows,
        "memory_floor_gpu_hours": floor,
        "previous_projection_gpu_hours": total["gpu_hours_projected"],
    }


def table(result: dict) -> str:
    lines = [
        f"{result['device']} ({result['precision']}, torch {result['torch']}, transformers {result['transformers']})",
        f"copy bandwidth {result['copy_bandwidth_gbs']:.1f} GB/s; memory floor {result['floor_ms_per_run_step']:.2f} "
        "ms per run-step",
        "| seq | configuration | ms / step | ms / run-step | TFLOP/s | MFU | memory floor share | peak GB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in result["configurations"]:
        if "error" in row:
            lines.append(f"| {row.get('length', '')} | {row['path']} k={row['k']} | error: {row['error']} |")
            continue
        mfu = f"{row['mfu']:.1%}" if row.get("mfu") is not None else "-"
        lines.append(
            f"| {row['length']} | {row['path']}{'' if row['path'] != 'stacked' else ' K=' + str(row['k'])} | "
            f"{row['step_ms']:.2f} | {row['run_step_ms']:.2f} | {row['tflops']:.1f} | {mfu} | "
            f"{row['floor_share']:.1%} | {row.get('peak_memory_gb', 0):.1f} |"
        )
    grid = result.get("grid")
    if grid:
        lines += [
            "",
            f"tamkin2020 grid: {grid['runs']:,} runs, {grid['train_steps']:,} train steps, "
            f"{grid['eval_batches']:,} eval batches, at seq {grid['grid_length']} (the grid's mean length): "
            "GPU-hours on this device",
            "| configuration | GPU-h |",
            "|---|---|",
            *[f"| {name} | {hours:.2f} |" for name, hours in grid["gpu_hours"].items()],
            f"| memory floor | {grid['memory_floor_gpu_hours']:.2f} |",
            "| bench/cost.py's projection before (assumed, not measured) | "
            f"{grid['previous_projection_gpu_hours']:.1f} |",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:  # noqa: C901, PLR0915
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="CPU, a tiny model, a few steps: checks the script")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "gpu.json")
    parser.add_argument("--packs", type=int, nargs="+", default=None, help="pack sizes K (default 8 16 32; smoke 2 4)")
    parser.add_argument("--processes", type=int, nargs="*", default=None, help="N runs in N processes (default 4)")
    parser.add_argument(
        "--lengths", type=int, nargs="+", default=None, help="sequence lengths (default 128 and the grid's mean)"
    )
    parser.add_argument("--steps", type=int, default=None, help="timed steps per configuration (default 20; smoke 2)")
    parser.add_argument("--attention", choices=["sdpa", "eager"], help="attention implementation (default: sdpa)")
    parser.add_argument(
        "--budget-s", type=float, default=360.0, help="start no further configuration after this many seconds"
    )
    args = parser.parse_args(argv)

    smoke = args.smoke
    device = torch.device("cpu" if smoke else "cuda")
    if not smoke and not torch.cuda.is_available():
        raise SystemExit("bench.gpu: no CUDA device here; --smoke checks the script on the CPU")
    cost = json.loads(COST.read_text())
    total, size = cost["total"], cost["train"]["batch_size"]
    # the grid's mean tokens per example (222.8 per batch-8 step: 27.8), up to a multiple of 8
    grid_length = 8 * math.ceil(total["train_tokens"] / total["train_steps"] / size / 8)
    config = bert_config(smoke, args.attention)
    # bf16 as train.precision auto picks on Ampere and later; the smoke run in fp32 (bf16 is emulated on many CPUs)
    precision = "fp32" if smoke or not torch.cuda.is_bf16_supported() else "bf16"
    packs = args.packs or ([2, 4] if smoke else [8, 16, 32])
    process_counts = args.processes if args.processes is not None else ([] if smoke else [4])
    lengths = args.lengths or ([grid_length] if smoke else [128, grid_length])
    steps = args.steps or (1 if smoke else 20)
    warmup = 1 if smoke else 3
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({platform.processor() or 'cpu'})"
    peak = next((value for word, value in PEAK_BF16.items() if word in name), None)
    import transformers

    n_params = sum(p.numel() for p in build(config, torch.device("cpu")).parameters())
    result = {
        "label": "MEASURED" + (" (smoke: a tiny model on the CPU, not a benchmark)" if smoke else ""),
        "device": name,
        "precision": precision,
        "attention": config._attn_implementation,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "batch_size": size,
        "params": n_params,
        "peak_bf16_flops": peak,
        "floor_bytes_per_run_step": FLOOR_BYTES_PER_PARAM * n_params,
        "grid_length": grid_length,
        "configurations": [],
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        args.out.write_text(json.dumps(result, indent=1))

    bandwidth = copy_bandwidth(device, smoke)
    result["copy_bandwidth_gbs"] = bandwidth / 1e9
    result["floor_ms_per_run_step"] = result["floor_bytes_per_run_step"] / bandwidth * 1e3
    result["process_start_s"] = 0.0 if smoke else process_start_seconds()
    result["run_setup_s"] = run_setup_seconds(config, device)
    result["eval_batch_ms"] = eval_batch(config, device, precision, grid_length, warmup, steps) * 1e3
    save()

    began = time.perf_counter()

    def in_budget(what: str, length: int) -> bool:
        """Whether there is time left for `what` (the lent GPU's command limit is 8 minutes)."""
        if time.perf_counter() - began < args.budget_s:
            return True
        result["configurations"].append({"k": 0, "path": what, "length": length, "error": "skipped: time budget"})
        return False

    def add(row: dict, length: int) -> None:
        row["length"] = length
        if "error" not in row:
            row["tflops"] = flops_per_run_step(config, size, length) / (row["run_step_ms"] / 1e3) / 1e12
            row["mfu"] = row["tflops"] * 1e12 / peak if peak else None
            row["floor_share"] = result["floor_ms_per_run_step"] / row["run_step_ms"]
        result["configurations"].append(row)
        save()
        print(json.dumps(row), flush=True)

    for length in lengths:
        add(alone(config, device, precision, size, length, warmup, steps), length)
        start = build(config, device, seed=7)
        reference = first_step_alone(start, device, precision, config, size, length)
        reference_model = reference.pop("model")
        del reference_model
        bits = {}
        for k in packs:
            if not in_budget(f"pack {k}", length):
                continue
            try:
                row = packed(config, device, precision, size, length, k, warmup, steps, start)
            except torch.OutOfMemoryError as error:
                row = {"k": k, "path": "stacked", "error": f"out of memory ({str(error).splitlines()[0][:80]})"}
            except Exception as error:  # noqa: BLE001 - an op vmap cannot batch on this GPU: say which, go on
                row = {
                    "k": k,
                    "path": "stacked",
                    "error": f"{type(error).__name__}: {str(error).splitlines()[0][:160]}",
                }
            if "first_step" in row:
                bits[k] = row["first_step"]["run0_weights_sha256"]
                row["first_step"]["loss_minus_alone"] = row["first_step"]["loss"] - reference["loss"]
                row["first_step"]["weights_equal_alone"] = bits[k] == reference["run0_weights_sha256"]
            add(row, length)
        result.setdefault("pack_size_moves_bits", {})[str(length)] = len(set(bits.values())) > 1
        del start
        for n in process_counts:
            if not in_budget(f"{n} processes", length):
                continue
            try:
                row = processes(n, smoke, args.attention, device, precision, size, length, warmup, steps)
            except (RuntimeError, ValueError, OSError) as error:
                row = {"k": n, "path": f"{n} processes", "error": str(error)[:120]}
            add(row, length)
    result["grid"] = grid_projection(result, cost)
    result["finished"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    save()
    print(table(result), flush=True)
    return result


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
