"""Each lever of the grid's price (bench/cost.py `price`), timed on this machine, before and after:

    python -m bench.levers --out bench/levers_cpu.json                      # CPU, one thread
    python -m bench.levers --device cuda --out $OUT/levers.json             # a lent GPU (bench/device_check.sh)
    git show 78fdc7e:src/train/stacked.py > /tmp/stacked_before.py          # the written-out AdamW step, for
    python -m bench.levers --before-stacked /tmp/stacked_before.py ...      # the optimizer's before row

Rows: CKA per layer at each task's eval size (the n x n Gram formula, gram_cka, against
src/measures/cka.py's feature space; numpy on the host in float64 in both, as a run measures it,
the pretrained side prepared once per task); the packed optimizer step (StackedPath._adamw: the
fused kernel, and the written-out step of --before-stacked where given); the weight-change norms of
one run (src/train/weights.weight_change on bert-base's 72 sublayer matrices); one eval batch at
batch 32 and at 256; one member's checkpoint (its training state copied to the host and saved).
Every number is written to --out as it is measured.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from types import ModuleType

import numpy as np
import torch
from threadpoolctl import threadpool_limits  # scikit-learn's dependency

from bench import gpu
from src.measures.cka import Side, linear_cka
from src.train import stacked
from src.train.device import autocast
from src.train.weights import layer_change_tracker, layer_weights, weight_change

# the eval examples CKA compares at, per task of the tamkin2020 grid (GLUE dev files; QNLI's is
# carved from its dev set as the preset reads it)
EVAL_EXAMPLES = {"sst2": 872, "cola": 1043, "qnli": 5463}
BERT_BASE_HIDDEN = 768
# --rows: the JSON key each row kind is written under
KINDS = {"cka": "cka_per_layer", "optimizer": "optimizer", "norms": "norms", "eval": "eval", "checkpoint": "checkpoint"}
ROWS, KIND_ROWS = tuple(KINDS), {key: row for row, key in KINDS.items()}
# the torch rows' model: bert-base (the grid's), the embedded default's MiniLM shape, or a tiny one
SHAPES = {
    "bert-base": {},
    "minilm": {"hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 1536},
    "tiny": {},
}


def gram_hsic(k: np.ndarray, l: np.ndarray) -> float:  # noqa: E741 - the paper's name for the second Gram
    """The unbiased HSIC (Song et al. 2012, eq. 5) from two n x n Gram matrices: how
    src/measures/cka.py computed it before it worked in feature space, the reference the
    feature-space form is held to (tests/unit/measures/test_measures.py) and timed against."""
    n = k.shape[0]
    k, l = k.copy(), l.copy()  # noqa: E741
    np.fill_diagonal(k, 0.0)
    np.fill_diagonal(l, 0.0)
    trace = float(np.sum(k * l))
    sums = float(k.sum()) * float(l.sum()) / ((n - 1) * (n - 2))
    cross = 2.0 * float(k.sum(0) @ l.sum(1)) / (n - 2)
    return (trace + sums - cross) / (n * (n - 3))


def gram_cka(x: np.ndarray, y: np.ndarray) -> float:
    """Linear CKA through the n x n Grams of the centred float64 features (gram_hsic)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    x, y = x - x.mean(0), y - y.mean(0)
    k, l = x @ x.T, y @ y.T  # noqa: E741
    return gram_hsic(k, l) / float(np.sqrt(gram_hsic(k, k) * gram_hsic(l, l)))


def seconds(call, repeat: int = 1, clock=time.perf_counter) -> float:
    """Seconds per call after a warm-up call, by `clock`: wall time, or time.process_time for host
    work on one thread (the CPU time it takes, whatever else shares the machine)."""
    call()  # warm: allocations, BLAS threads, kernels
    start = clock()
    for _ in range(repeat):
        call()
    return (clock() - start) / repeat


def cka_row(task: str, width: int) -> dict:
    """One layer's CKA of a finetuned and a pretrained [n, width] float32 feature matrix, both ways:
    CPU seconds on one thread (host work, whatever else the machine runs)."""
    rng = np.random.default_rng(0)
    pretrained = rng.normal(size=(EVAL_EXAMPLES[task], width)).astype(np.float32)
    finetuned = (0.8 * pretrained + 0.6 * rng.normal(size=pretrained.shape)).astype(np.float32)
    side = Side.of(pretrained)  # once per task and process (cka.pretrained_sides)
    before, after = gram_cka(finetuned, pretrained), linear_cka(finetuned, side)
    return {
        "task": task,
        "n": EVAL_EXAMPLES[task],
        "width": width,
        "gram_s": seconds(lambda: gram_cka(finetuned, pretrained), clock=time.process_time),
        "feature_s": seconds(lambda: linear_cka(finetuned, side), 3, clock=time.process_time),
        "pretrained_side_s": seconds(lambda: Side.of(pretrained), clock=time.process_time),
        "relative_difference": abs(after - before) / abs(before),
    }


def stacked_module(path: Path | None) -> ModuleType:
    if path is None:
        return stacked
    spec = importlib.util.spec_from_file_location("stacked_before", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def adamw_row(config, device: torch.device, k: int, module: ModuleType, label: str) -> dict:
    """StackedPath._adamw of `module` on a pack of k members with fixed gradients."""
    start = gpu.build(config, device)
    path = module.StackedPath([gpu.member(copy.deepcopy(start), "fp32") for _ in range(k)], gpu.TASK)
    grads = {n: torch.randn_like(p) for n, p in path.params.items()}

    def step():
        with torch.no_grad():
            path._adamw(grads)
        gpu.sync(device)

    return {"k": k, "step": label, "optimizer_ms": seconds(step, 3) * 1e3}


def norms_row(config, device: torch.device) -> dict:
    """weight_change (Frobenius and spectral norms) of one run's 72 sublayer matrices, and one call
    of the layer-change tracker a run makes at steps 1, 2, 4, ..."""
    model = gpu.build(config, device)
    before = layer_weights(model.encoder)
    after = {key: w + 1e-3 * torch.randn_like(w) for key, w in before.items()}
    tracker = layer_change_tracker(lambda: layer_weights(model.encoder))
    return {
        "matrices": len(before),
        "weight_change_s": seconds(lambda: weight_change(before, after)),
        "tracker_call_s": seconds(tracker, 3),
    }


def eval_rows(config, device: torch.device, precision: str, length: int) -> list[dict]:
    rows = []
    for size in (32, 256):
        model = gpu.build(config, device).eval()
        inputs, _ = gpu.batch(config, size, length, device)

        @torch.inference_mode()
        def forward(model=model, inputs=inputs):
            with autocast(precision, device):
                model(**inputs)
            gpu.sync(device)

        rows.append({"batch": size, "length": length, "ms_per_example": seconds(forward, 3) * 1e3 / size})
    return rows


def checkpoint_row(config, device: torch.device) -> dict:
    """One member's training state (weights and both Adam moments) copied to the host, then saved."""
    model = gpu.build(config, device)
    state = {n: p.detach() for n, p in model.state_dict().items()}
    state |= {f"exp_avg.{n}": torch.zeros_like(p) for n, p in model.named_parameters()}
    state |= {f"exp_avg_sq.{n}": torch.zeros_like(p) for n, p in model.named_parameters()}
    size = sum(t.numel() * t.element_size() for t in state.values())
    copy_s = seconds(lambda: {n: t.to("cpu", copy=True) for n, t in state.items()})
    host = {n: t.to("cpu", copy=True) for n, t in state.items()}
    with tempfile.TemporaryDirectory(prefix="levers_") as tmp:
        target = Path(tmp) / "member.ckpt"

        def save():
            torch.save(host, target)
            with open(target, "rb+") as file:
                os.fsync(file.fileno())

        save_s = seconds(save)
    return {"bytes": size, "copy_to_host_s": copy_s, "save_s": save_s}


def cpu_name() -> str:
    """This machine's CPU model and core count (Linux's /proc/cpuinfo, else the platform's word)."""
    info = Path("/proc/cpuinfo")
    lines = info.read_text().splitlines() if info.is_file() else []
    models = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    model = models[0] if models else platform.processor() or platform.machine()
    return f"CPU ({model}, {os.cpu_count()} cores)"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--before-stacked", type=Path, help="a stacked.py of the written-out AdamW step")
    parser.add_argument("--packs", type=int, nargs="+", default=[4], help="pack sizes the optimizer step is timed at")
    parser.add_argument("--tasks", nargs="+", default=list(EVAL_EXAMPLES), help="CKA rows: tasks (eval sizes)")
    parser.add_argument("--widths", type=int, nargs="+", default=[384, BERT_BASE_HIDDEN], help="CKA rows: widths")
    parser.add_argument(
        "--shape", choices=list(SHAPES), default="bert-base", help="the torch rows' model (tiny: checks the script)"
    )
    parser.add_argument("--rows", nargs="+", choices=ROWS, default=list(ROWS), help="which rows (default all)")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    torch.set_num_threads(1)  # the host work of a run: one thread (train.threads); numpy's BLAS too
    threadpool_limits(1)
    config = gpu.bert_config(args.shape == "tiny")
    for key, value in SHAPES[args.shape].items():
        setattr(config, key, value)
    precision = "bf16" if device.type == "cuda" and torch.cuda.is_bf16_supported() else "fp32"
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_name()
    # rows of the kinds not asked for now are kept from an earlier --out of this device
    earlier = json.loads(args.out.read_text()) if args.out.is_file() else {}
    kept = {kind: rows for kind, rows in earlier.items() if kind in KINDS.values() and KIND_ROWS[kind] not in args.rows}
    result: dict = {"label": "MEASURED", "device": name, "torch": torch.__version__, "precision": precision, **kept}
    result["shape"] = {**earlier.get("shape", {}), args.shape: args.rows}  # the torch rows' model, by run
    result["started"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())

    def add(key: str, row) -> None:
        result.setdefault(key, []).append(row)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        print(key, json.dumps(row), flush=True)

    if "cka" in args.rows:
        for task in args.tasks:
            for width in args.widths:
                add("cka_per_layer", cka_row(task, width))
    for k in args.packs if "optimizer" in args.rows else []:
        add("optimizer", adamw_row(config, device, k, stacked, "fused"))
        if args.before_stacked:
            add("optimizer", adamw_row(config, device, k, stacked_module(args.before_stacked), "written out"))
    if "norms" in args.rows:
        add("norms", norms_row(config, device))
    for row in eval_rows(config, device, precision, 32) if "eval" in args.rows else []:
        add("eval", row)
    if "checkpoint" in args.rows:
        add("checkpoint", checkpoint_row(config, device))
    result["finished"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
