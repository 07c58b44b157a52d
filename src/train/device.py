"""Which device and precision a run trains with, known before it starts (both are in its fingerprint),
and the autocast that applies the precision."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}

if TYPE_CHECKING:  # the fingerprint hashes what a run imports; the params schema changes no number
    from src.config.schema import ExecutorConfig


def run_device(executor: ExecutorConfig) -> str:
    """Local runs use CUDA when this machine has it; SLURM and Ray runs when they ask for GPUs."""
    if executor.kind == "local":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return "cuda" if executor.gpus_per_run > 0 else "cpu"


def resolve_precision(precision: str, device_type: str) -> str:
    """`auto`: the fastest precision that is native on the device. bf16 autocast pays on a
    CPU with AMX or AVX-512 BF16 (1.35x per run there) but is emulated elsewhere: fp32 trained
    ~10x faster on an AVX2-only CPU and 2.75x faster on an AVX-512 CPU without BF16. A GPU gets
    bf16 where it has it (Ampere and later), else fp16 with loss scaling; a GPU that is not on
    this machine (a SLURM or Ray worker) is taken to have bf16: set fp16 for older GPUs."""
    if precision != "auto":
        return precision
    if device_type == "cuda":
        return "bf16" if not torch.cuda.is_available() or torch.cuda.is_bf16_supported() else "fp16"
    return "bf16" if native_cpu_bf16() else "fp32"


def native_cpu_bf16() -> bool:
    """Whether this CPU has bf16 instructions (AVX-512 BF16 or AMX). Not oneDNN's
    `_is_mkldnn_bf16_supported`: it is true on any AVX-512 CPU, where oneDNN emulates bf16."""
    checks = (getattr(torch.cpu, "_is_avx512_bf16_supported", None), getattr(torch.cpu, "_is_amx_tile_supported", None))
    return any(check is not None and bool(check()) for check in checks)


def autocast(precision: str, device: torch.device):
    # Only around forward + loss: with the optimizer step inside autocast too, Adam's
    # update ran in bf16 and lr 2e-5 steps vanished (the loss stayed at ln 2). fp16 is for
    # GPUs before Ampere, which have no bf16: its gradients need a GradScaler (finetune).
    return torch.autocast(device.type, dtype=AUTOCAST_DTYPES.get(precision), enabled=precision in AUTOCAST_DTYPES)


def device_of(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device
