"""Benchmark: this project's training and probing paths against what a user would run instead.

    python -m bench.run            # ~9 min on 2 CPU cores; writes bench/results.json

Baselines, measured side by side in one run on the embedded default (all-MiniLM-L6-v2,
rt_sentiment, k = L, batch 8, AdamW lr 2e-5, max length 128, same examples):
- finetuning: our loop at the pipeline's default (bf16 autocast of the forward pass)
  and in fp32 (the lever's effect), HF `Trainer` as `run_glue.py` configures it by default (padding to
  max_seq_length 128, linear decay, fp32), and `Trainer` at its best (dynamic padding,
  group_by_length, bf16 autocast); all three train the same module (our mean head),
  so only the training loop differs. Ratios are examples/s; scores are reported too,
  because equal accuracy is a condition of any win.
- probing: all L+1 layers from one cached forward pass (ours) against one run per
  layer that re-encodes the data every epoch (the released code's way).
- DVC overhead: no-op `dvc repro` and `dvc status` on this repo's pipeline.
- roofline: training FLOP/s (~6 x non-embedding parameters x real tokens) against the
  FLOP/s of a large fp32 matmul on the same threads (the practical peak).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np
import torch

from src import data
from src.condition import Condition
from src.model import build_finetuner, load_encoder, load_tokenizer
from src.probing import layer_features, train_probes
from src.tasks import get_task
from src.training import TrainConfig, evaluate, finetune

MODEL, TASK_DIR = Path("data/model"), Path("data/tasks/rt_sentiment")
TASK = get_task("rt_sentiment")


def splits(n_train: int, n_eval: int):
    pool = data.load_split(TASK_DIR / "tokens.npz", "train")
    eval_ = data.load_split(TASK_DIR / "tokens.npz", "eval")
    return pool.subset(data.training_subset(len(pool), n_train, TASK.name, 0, 0)), eval_.subset(np.arange(n_eval))


def fresh_model():
    model, _ = build_finetuner(MODEL, Condition(TASK.name, 0, 0, 1, k=6), TASK.num_labels, seed=0)
    return model


def run_ours(train, eval_, pad_id, precision: str) -> dict:
    model = fresh_model()
    cfg = TrainConfig(2e-5, 8, 1, 0.0, 128, group_by_length=True, precision=precision, checkpoint_every=0)
    outcome = finetune(model, TASK, train, cfg, pad_id, seed=0, desc=f"ours {precision}")
    return {"examples_per_s": len(train) / outcome["train_seconds"], "accuracy": evaluate(model, TASK, eval_, 128, pad_id, precision)["scores"]["accuracy"]}


class WithLoss(torch.nn.Module):
    """Our Finetuner as Trainer expects it: labels in, loss out."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, token_type_ids, labels=None):
        logits = self.model(input_ids, attention_mask, token_type_ids)
        loss = torch.nn.functional.cross_entropy(logits, labels) if labels is not None else None
        return {"loss": loss, "logits": logits}


def as_dataset(split):
    import datasets

    rows = [split.ids[split.offsets[i] : split.offsets[i + 1]].tolist() for i in range(len(split))]
    types = [split.type_ids[split.offsets[i] : split.offsets[i + 1]].tolist() for i in range(len(split))]
    return datasets.Dataset.from_dict({"input_ids": rows, "token_type_ids": types, "attention_mask": [[1] * len(r) for r in rows], "labels": split.labels.tolist()})


def run_trainer(train, eval_, best: bool, workdir: Path) -> dict:
    from transformers import DataCollatorWithPadding, Trainer, TrainingArguments

    tokenizer = load_tokenizer(MODEL)
    # run_glue.py default: pad_to_max_length=True, max_seq_length=128; best: pad per batch.
    collator = DataCollatorWithPadding(tokenizer, padding="longest" if best else "max_length", max_length=128)
    args = TrainingArguments(
        output_dir=str(workdir), per_device_train_batch_size=8, per_device_eval_batch_size=128, learning_rate=2e-5,
        weight_decay=0.0, num_train_epochs=1, train_sampling_strategy="group_by_length" if best else "random", bf16=best, use_cpu=True, report_to=[],
        save_strategy="no", logging_strategy="no", disable_tqdm=True, seed=0, dataloader_num_workers=0,
    )
    model = WithLoss(fresh_model())
    trainer = Trainer(model=model, args=args, train_dataset=as_dataset(train), eval_dataset=as_dataset(eval_), data_collator=collator)
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    predictions = trainer.predict(as_dataset(eval_)).predictions
    return {"examples_per_s": len(train) / seconds, "accuracy": float((predictions.argmax(-1) == eval_.labels).mean())}


def probing(n_train: int, n_eval: int, epochs: int, pad_id) -> dict:
    train, eval_ = splits(n_train, n_eval)
    encoder = load_encoder(MODEL, with_pooler=False)
    start = time.perf_counter()
    train_x, eval_x = layer_features(encoder, train, 64, pad_id), layer_features(encoder, eval_, 64, pad_id)
    ours = train_probes(TASK, train_x, train.labels, eval_x, eval_.labels, epochs, 1e-3, 64, seed=0)
    ours_s = time.perf_counter() - start
    # The released code's way: a separate run per layer, re-encoding every batch every epoch.
    start, per_layer = time.perf_counter(), []
    for layer in range(train_x.shape[1]):
        for _ in range(epochs):
            layer_features(encoder, train, 64, pad_id)  # the forward pass an uncached probe pays
        per_layer.append(train_probes(TASK, train_x[:, layer : layer + 1], train.labels, eval_x[:, layer : layer + 1], eval_.labels, epochs, 1e-3, 64, seed=0)[0])
    per_layer_s = time.perf_counter() - start
    return {
        "ours_seconds": ours_s, "per_layer_seconds": per_layer_s, "speedup": per_layer_s / ours_s,
        "ours_accuracy": [s["accuracy"] for s in ours], "per_layer_accuracy": [s["accuracy"] for s in per_layer],
    }


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - start


def matmul_flops() -> float:
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    a @ b
    start, reps = time.perf_counter(), 10
    for _ in range(reps):
        a @ b
    return reps * 2 * 2048**3 / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--train-examples", type=int, default=1024)
    parser.add_argument("--eval-examples", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--probe-examples", type=int, default=512)
    parser.add_argument("--out", type=Path, default=Path("bench/results.json"))
    args = parser.parse_args()

    subprocess.run([sys.executable, "-m", "dvc", "repro", "prepare_model", "data"], check=True)
    pad_id = load_tokenizer(MODEL).pad_token_id
    train, eval_ = splits(args.train_examples, args.eval_examples)
    run_ours(train.subset(np.arange(32)), eval_, pad_id, "bf16")  # warm-up: first-call costs are not throughput
    runs = {"ours": [], "ours_fp32": [], "trainer_run_glue_default": [], "trainer_best": []}
    for _ in range(args.repeats):  # interleaved, so drift hits every contender alike
        runs["ours"].append(run_ours(train, eval_, pad_id, "bf16"))  # the pipeline's default (train.precision)
        runs["ours_fp32"].append(run_ours(train, eval_, pad_id, "fp32"))
        runs["trainer_run_glue_default"].append(run_trainer(train, eval_, best=False, workdir=Path("/tmp/bench_trainer")))
        runs["trainer_best"].append(run_trainer(train, eval_, best=True, workdir=Path("/tmp/bench_trainer")))
    speed = {name: [r["examples_per_s"] for r in rs] for name, rs in runs.items()}
    ratios = {f"ours_vs_{name}": [min(speed["ours"]) / max(speed[name]), max(speed["ours"]) / min(speed[name])] for name in runs if name != "ours"}

    # 6 N FLOPs per token counts the matmul weights only: embedding lookups do no FLOPs.
    parameters = sum(p.numel() for name, p in fresh_model().named_parameters() if "embeddings" not in name)
    tokens_per_example = float(train.lengths.mean())
    achieved = 6 * parameters * tokens_per_example * float(np.median(speed["ours"]))
    peak = matmul_flops()
    results = {
        "date": str(date.today()), "machine": f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}",
        "finetune": {"train_examples": len(train), "runs": runs, "ratio_min_max": ratios},
        "probing": probing(args.probe_examples, args.eval_examples, 10, pad_id),
        "dvc_seconds": {"noop_repro": timed([sys.executable, "-m", "dvc", "repro"]), "status": timed([sys.executable, "-m", "dvc", "status"])},
        "roofline": {"train_flops_per_s": achieved, "matmul_fp32_flops_per_s": peak, "fraction": achieved / peak},
    }
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps({"finetune_ratios": ratios, "probing_speedup": results["probing"]["speedup"], "dvc_seconds": results["dvc_seconds"], "roofline_fraction": results["roofline"]["fraction"]}, indent=2))


if __name__ == "__main__":
    main()
