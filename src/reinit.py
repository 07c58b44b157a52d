"""Replace chosen encoder layers with fresh random weights.

transformers v5 skips re-initialising tensors it marks as loaded from a checkpoint,
so `model._init_weights` / `post_init` would silently leave pretrained weights in
place. We write every tensor ourselves with `torch.nn.init`, each from its own
generator seeded by (base seed, trial, tensor name), and report what we wrote.

Recipes:
- `paper` (Tamkin et al. App. A, BERT's own init): Linear weights ~ N(0, sigma)
  truncated to [-2 sigma, 2 sigma] = [-0.04, 0.04]; Linear biases 0; LayerNorm 1 / 0.
- `authors_code` (what the released code did): `scipy.stats.truncnorm(-2*sigma,
  2*sigma, scale=sigma)` puts the bounds in units of sigma, i.e. weights clipped at
  +-2 sigma^2 = +-0.0008 (std ~0.00046, nearly uniform); Linear biases keep their
  pretrained values; LayerNorm reset to 1 / 0.
"""

from __future__ import annotations

import torch
from torch import nn

from src.condition import derive_seed
from src.errors import ModelError


def _generator(seed: int, trial: int, name: str) -> torch.Generator:
    return torch.Generator().manual_seed(derive_seed(seed, "reinit", trial, name))


def _weight_bound(recipe: str, sigma: float) -> float:
    return 2 * sigma if recipe == "paper" else 2 * sigma * sigma


def init_module(module: nn.Module, prefix: str, recipe: str, sigma: float, seed: int, trial: int, keep_layernorm: bool = False) -> list[dict]:
    """Re-initialise every Linear (and, unless `keep_layernorm`, every LayerNorm) inside
    `module` by `recipe`; return one manifest entry per tensor written (name, shape,
    init, resulting mean and std)."""
    written = []
    with torch.no_grad():
        for sub_name, sub in module.named_modules():
            base = f"{prefix}.{sub_name}" if sub_name else prefix
            if isinstance(sub, nn.Linear):
                bound = _weight_bound(recipe, sigma)
                nn.init.trunc_normal_(sub.weight, 0.0, sigma, -bound, bound, generator=_generator(seed, trial, f"{base}.weight"))
                written.append(_entry(f"{base}.weight", sub.weight, f"trunc_normal(0, {sigma}, +-{bound:g})"))
                if sub.bias is not None and recipe == "paper":
                    nn.init.zeros_(sub.bias)
                    written.append(_entry(f"{base}.bias", sub.bias, "zeros"))
            elif isinstance(sub, nn.LayerNorm) and not keep_layernorm:
                nn.init.ones_(sub.weight)
                nn.init.zeros_(sub.bias)
                written.append(_entry(f"{base}.weight", sub.weight, "ones"))
                written.append(_entry(f"{base}.bias", sub.bias, "zeros"))
    return written


def _entry(name: str, tensor: torch.Tensor, init: str) -> dict:
    return {
        "name": name,
        "shape": list(tensor.shape),
        "init": init,
        "mean": float(tensor.mean()),
        "std": float(tensor.std()) if tensor.numel() > 1 else 0.0,
    }


def encoder_layers(encoder: nn.Module) -> nn.ModuleList:
    """The stack of transformer layers of a BERT-family encoder (refuses anything else)."""
    layers = getattr(getattr(encoder, "encoder", None), "layer", None)
    if not isinstance(layers, nn.ModuleList) or len(layers) == 0:
        raise ModelError(f"{type(encoder).__name__} has no encoder.layer stack to reinitialise; use a BERT-family model")
    return layers


def reinit_layers(encoder: nn.Module, layers: list[int], recipe: str, seed: int, trial: int, keep_layernorm: bool = False) -> list[dict]:
    """Fresh weights for encoder layers `layers` (0-based); embeddings and other layers untouched."""
    stack = encoder_layers(encoder)
    sigma = encoder.config.initializer_range
    manifest = []
    for index in layers:
        manifest += init_module(stack[index], f"encoder.layer.{index}", recipe, sigma, seed, trial, keep_layernorm)
    return manifest


def reinit_head(encoder: nn.Module, layer: int, head: int, recipe: str, seed: int, trial: int) -> list[dict]:
    """Fresh weights for one attention head of encoder layer `layer` (0-based): its rows of
    the query, key and value projections (weights and, for `paper`, biases) and its input
    columns of the attention output projection (Huang et al. §4.3). The output bias is
    shared by all heads, so it stays."""
    block = encoder_layers(encoder)[layer].attention
    width = encoder.config.hidden_size // encoder.config.num_attention_heads
    rows = slice(head * width, (head + 1) * width)
    sigma, bound = encoder.config.initializer_range, _weight_bound(recipe, encoder.config.initializer_range)
    prefix = f"encoder.layer.{layer}.attention"
    slices = [(f"{prefix}.self.{name}.weight", getattr(block.self, name).weight, rows) for name in ("query", "key", "value")]
    slices.append((f"{prefix}.output.dense.weight", block.output.dense.weight, (slice(None), rows)))
    written = []
    with torch.no_grad():
        for name, weight, index in slices:
            fresh = torch.empty_like(weight[index])
            nn.init.trunc_normal_(fresh, 0.0, sigma, -bound, bound, generator=_generator(seed, trial, f"{name}[head {head}]"))
            weight[index] = fresh
            written.append(_entry(f"{name}[head {head}]", fresh, f"trunc_normal(0, {sigma}, +-{bound:g})"))
        if recipe == "paper":
            for name in ("query", "key", "value"):
                bias = getattr(block.self, name).bias
                bias[rows] = 0
                written.append(_entry(f"{prefix}.self.{name}.bias[head {head}]", bias[rows], "zeros"))
    return written


def permute_layers(encoder: nn.Module, order: list[int]) -> None:
    """Put pretrained layer order[i] at position i (paper §5); weights are untouched."""
    stack = encoder_layers(encoder)
    if sorted(order) != list(range(len(stack))):
        raise ValueError(f"layer order {order} is not a permutation of 0..{len(stack) - 1}")
    encoder.encoder.layer = nn.ModuleList([stack[i] for i in order])


def pooler_looks_untrained(encoder: nn.Module) -> bool:
    """Sentence-embedding checkpoints (MiniLM here) ship a pooler that was never trained:
    its bias is exactly zero. A `cls` head on it would start from noise, so we re-init it."""
    pooler = getattr(encoder, "pooler", None)
    return pooler is not None and bool(torch.all(pooler.dense.bias == 0))
