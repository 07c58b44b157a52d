"""Head importance (Michel, Levy & Neubig 2019, "Are sixteen heads really better than one?").

transformers v5 has no `head_mask`, so each head gets a gate of our own: a forward
pre-hook on every layer's attention output projection multiplies its input, viewed as
[..., heads, head_dim], by that layer's gates. Head h owns input columns h*d..(h+1)*d of
the projection in every supported family (src/model/families.py), and the projection is
where the heads are mixed back, so gate h scales exactly head h's contribution. With
every gate at 1 the model computes what it computes without them, bit for bit.

Importance of head h = the mean over training batches of |dL/dgate_h| (the batch's mean
loss, model in eval mode: no dropout), as the authors' code accumulates it; not
normalised per layer (their optional step), so layers stay comparable with the
head-reinit effect.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch
from torch import nn

from src.data.tokens import batches, collate
from src.model.families import config_of, family_of
from src.tasks.registry import TaskSpec
from src.tasks.splits import TokenizedSplit


@contextmanager
def head_gates(encoder: nn.Module):
    """Gates [layers, heads], all 1, on `encoder`'s heads while the context is open."""
    family, config = family_of(encoder), config_of(encoder)
    layers = family.layers(encoder)
    heads = config.num_attention_heads
    device = next(encoder.parameters()).device
    gates = torch.ones(len(layers), heads, device=device)

    def gate(position: int):
        def pre_hook(module, args):
            x = args[0]
            gated = (x.unflatten(-1, (heads, -1)) * gates[position, :, None].to(x.dtype)).flatten(-2)
            return (gated, *args[1:])

        return pre_hook

    handles = [
        layer.get_submodule(family.attention_output).register_forward_pre_hook(gate(i))
        for i, layer in enumerate(layers)
    ]
    try:
        yield gates
    finally:
        for handle in handles:
            handle.remove()


def head_importance(model: nn.Module, task: TaskSpec, split: TokenizedSplit, batch_size: int) -> list[list[float]]:
    """[layer][head] mean |dL/dgate| over `split` in batches of `batch_size` (fp32, eval mode).
    Only the gates' gradient is taken (torch.autograd.grad): no parameter's .grad is touched."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    with head_gates(model.get_submodule("encoder")) as gates:
        gates.requires_grad_(True)
        total = torch.zeros_like(gates)
        plan = batches(split.lengths, batch_size, None)
        for indices in plan:
            batch = {name: t.to(device) for name, t in collate(split, indices).items()}
            labels = batch.pop("labels")
            loss = task.kind.loss(model(**batch), labels)
            (gradient,) = torch.autograd.grad(loss, gates)
            total += gradient.abs()
    model.train(was_training)
    return (total / len(plan)).tolist()
