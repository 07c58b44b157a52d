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

from src.core.seeds import derive_seed
from src.model.families import config_of, family_of, fused_rows, linear


def _generator(seed: int, trial: int, name: str) -> torch.Generator:
    return torch.Generator().manual_seed(derive_seed(seed, "reinit", trial, name))


def _weight_bound(recipe: str, sigma: float) -> float:
    return 2 * sigma if recipe == "paper" else 2 * sigma * sigma


def init_module(
    module: nn.Module, prefix: str, recipe: str, sigma: float, seed: int, trial: int, keep_layernorm: bool = False
) -> list[dict]:
    """Re-initialise every Linear (and, unless `keep_layernorm`, every LayerNorm) inside
    `module` by `recipe`; return one manifest entry per tensor written (name, shape,
    init, resulting mean and std)."""
    written = []
    with torch.no_grad():
        for sub_name, sub in module.named_modules():
            base = f"{prefix}.{sub_name}" if sub_name else prefix
            if isinstance(sub, nn.Linear):
                bound = _weight_bound(recipe, sigma)
                nn.init.trunc_normal_(
                    sub.weight, 0.0, sigma, -bound, bound, generator=_generator(seed, trial, f"{base}.weight")
                )
                written.append(_entry(f"{base}.weight", sub.weight, f"trunc_normal(0, {sigma}, +-{bound:g})"))
                if sub.bias is not None and recipe == "paper":
                    nn.init.zeros_(sub.bias)
                    written.append(_entry(f"{base}.bias", sub.bias, "zeros"))
            elif isinstance(sub, nn.LayerNorm) and not keep_layernorm:
                nn.init.ones_(sub.weight)
                written.append(_entry(f"{base}.weight", sub.weight, "ones"))
                if sub.bias is not None:  # ModernBERT's LayerNorms have none
                    nn.init.zeros_(sub.bias)
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
    """The stack of transformer layers of a supported encoder (src/model/families.py; refuses others)."""
    return family_of(encoder).layers(encoder)


def reinit_layers(
    encoder: nn.Module, layers: list[int], recipe: str, seed: int, trial: int, keep_layernorm: bool = False
) -> list[dict]:
    """Fresh weights for encoder layers `layers` (0-based); embeddings and other layers untouched.
    Manifest names are the base model's parameter names."""
    family = family_of(encoder)
    stack_path, stack = family.stack, family.layers(encoder)
    sigma = config_of(encoder).initializer_range
    manifest = []
    for index in layers:
        manifest += init_module(stack[index], f"{stack_path}.{index}", recipe, sigma, seed, trial, keep_layernorm)
    return manifest


def reinit_head(encoder: nn.Module, layer: int, head: int, recipe: str, seed: int, trial: int) -> list[dict]:
    """Fresh weights for one attention head of encoder layer `layer` (0-based): its rows of
    the query, key and value projections (weights and, for `paper`, biases; in a fused
    q/k/v matrix, its rows of each third) and its input columns of the attention output
    projection (Huang et al. §4.3). The output bias is shared by all heads, so it stays."""
    family = family_of(encoder)
    block = family.layers(encoder)[layer]
    config = config_of(encoder)
    heads = config.num_attention_heads
    prefix = f"{family.stack}.{layer}"
    # (manifest name, which head, Linear, index of the head in its weight, its bias rows or None)
    targets: list[tuple[str, str, nn.Linear, slice | tuple[slice, slice], slice | None]] = []
    for path, part in family.head_projections(block):
        projection = linear(block, path)
        if part is None:
            width = projection.out_features // heads
            rows, label = slice(head * width, (head + 1) * width), f"head {head}"
        else:
            width = projection.out_features // (3 * heads)
            rows, label = fused_rows(part, head, width, heads * width), f"{part} head {head}"
        targets.append((f"{prefix}.{path}", label, projection, rows, rows))
    output = linear(block, family.attention_output)
    width = output.in_features // heads
    targets.append(
        (
            f"{prefix}.{family.attention_output}",
            f"head {head}",
            output,
            (slice(None), slice(head * width, (head + 1) * width)),
            None,
        )
    )
    sigma, bound = config.initializer_range, _weight_bound(recipe, config.initializer_range)
    written = []
    with torch.no_grad():
        for name, label, projection, index, _ in targets:
            fresh = torch.empty_like(projection.weight[index])
            nn.init.trunc_normal_(
                fresh, 0.0, sigma, -bound, bound, generator=_generator(seed, trial, f"{name}.weight[{label}]")
            )
            projection.weight[index] = fresh
            written.append(_entry(f"{name}.weight[{label}]", fresh, f"trunc_normal(0, {sigma}, +-{bound:g})"))
        for name, label, projection, _, bias_rows in targets:
            if recipe == "paper" and bias_rows is not None and projection.bias is not None:
                projection.bias[bias_rows] = 0
                written.append(_entry(f"{name}.bias[{label}]", projection.bias[bias_rows], "zeros"))
    return written


def permute_layers(encoder: nn.Module, order: list[int]) -> None:
    """Put pretrained layer order[i] at position i (paper §5); weights are untouched. What
    belongs to a position rather than to weights (the family's position_attributes, e.g.
    ModernBERT's global/local attention schedule and layer index) stays at the position."""
    family = family_of(encoder)
    stack = family.layers(encoder)
    if sorted(order) != list(range(len(stack))):
        raise ValueError(f"layer order {order} is not a permutation of 0..{len(stack) - 1}")
    positional = [{path: getattr(*_owner(layer, path)) for path in family.position_attributes} for layer in stack]
    permuted = nn.ModuleList([stack[i] for i in order])
    for layer, attributes in zip(permuted, positional):
        for path, value in attributes.items():
            setattr(*_owner(layer, path), value)
    encoder.set_submodule(family.stack, permuted)


def remove_layers(encoder: nn.Module, removed: list[int]) -> dict:
    """Delete encoder layers `removed` (0-based; Huang et al. 6.2, Sajjad et al. 2020): the
    kept pretrained layers stay in their order, with their weights and what belongs to them
    (ModernBERT's global/local attention type), and the config's depth follows, so the model
    is a shallower encoder of the same family. Returns the depth audit, checked."""
    family = family_of(encoder)
    stack = family.layers(encoder)
    drop = set(removed)
    if not drop <= set(range(len(stack))) or len(drop) >= len(stack):
        raise ValueError(f"cannot remove layers {sorted(drop)} of {len(stack)}: each must exist and one must stay")
    kept = [i for i in range(len(stack)) if i not in drop]
    encoder.set_submodule(family.stack, nn.ModuleList([stack[i] for i in kept]))
    config = config_of(encoder)
    config.num_hidden_layers = len(kept)
    if isinstance(getattr(config, "layer_types", None), list):  # ModernBERT's per-layer attention schedule
        config.layer_types = [config.layer_types[i] for i in kept]
    return depth_audit(encoder, stack, kept)


def depth_audit(encoder: nn.Module, original: nn.ModuleList, kept: list[int]) -> dict:
    """What a run's encoder is made of: its depth, and the original (1-based) index of each
    layer it has. Refuses a model whose stack is not exactly those pretrained layers, in
    that order, or whose config disagrees with its depth."""
    stack = encoder_layers(encoder)
    if [id(layer) for layer in stack] != [id(original[i]) for i in kept]:
        raise RuntimeError(f"the encoder's layers are not the kept layers {[i + 1 for i in kept]}")
    depth = config_of(encoder).num_hidden_layers
    if depth != len(stack):
        raise RuntimeError(f"config.num_hidden_layers = {depth}, but {len(stack)} layers")
    return {
        "layers": len(stack),
        "kept": [i + 1 for i in kept],
        "removed": [i + 1 for i in range(len(original)) if i not in kept],
    }


def _owner(layer: nn.Module, path: str) -> tuple[nn.Module, str]:
    """(the submodule holding attribute `path`, the attribute's name): "attn.layer_idx" -> (layer.attn, "layer_idx")."""
    owner, _, name = path.rpartition(".")
    return layer.get_submodule(owner), name


def pooler_looks_untrained(encoder: nn.Module) -> bool:
    """Sentence-embedding checkpoints (MiniLM here) ship a pooler that was never trained:
    its bias is exactly zero. A `cls` head on it would start from noise, so we re-init it."""
    return family_of(encoder).pooler and bool(torch.all(linear(encoder, "pooler.dense").bias == 0))
