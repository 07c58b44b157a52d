"""The stacked path's optimizer step (src/train/stacked.py StackedPath._adamw) against the one-run
path's (src/train/alone.py: torch.optim.AdamW(fused=True) over parameter_groups): given the same
gradients, every member's weights and Adam moments come out bit for bit the same, with and without
weight decay, with members at different lrs and an lr multiplier on fresh parameters."""

import pytest
import torch
from torch import nn

from src.train.alone import AlonePath, parameter_groups
from src.train.loop import Member, RunSettings
from src.train.stacked import StackedPath

# (lr, lr multiplier on the fresh parameters) of each member: three distinct lrs in all
MEMBERS = [(1e-3, 1.0), (1e-3, 5.0), (3e-4, 1.0)]
FRESH = frozenset({"1.weight", "1.bias"})


def model(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 5), nn.Linear(5, 3))


def members(weight_decay: float) -> list[Member]:
    settings = dict(batch_size=4, epochs=1, eval_batch_size=4, group_by_length=False, precision="fp32")
    settings.update(checkpoint_every=0, threads=1, seed=0, device="cpu", weight_decay=weight_decay)
    return [
        Member(model(i), RunSettings(lr=lr, **settings), FRESH, multiplier)
        for i, (lr, multiplier) in enumerate(MEMBERS)
    ]


def gradient(shape: torch.Size, generator: torch.Generator) -> torch.Tensor:
    if len(shape) < 3:
        return torch.randn(shape, generator=generator)
    return torch.randn(shape[0], shape[2], shape[1], generator=generator).transpose(1, 2)


@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_the_stacked_adamw_step_is_the_one_run_adamw_bit_for_bit(weight_decay):
    stacked = StackedPath(members(weight_decay), task=None)
    alone_members = members(weight_decay)
    optimizers = [
        torch.optim.AdamW(
            parameter_groups(m.model, set(m.fresh), m.settings.lr, m.lr_multiplier),
            lr=m.settings.lr,
            weight_decay=weight_decay,
            fused=True,
        )
        for m in alone_members
    ]
    assert AlonePath(alone_members, task=None).optimizers[0].defaults["fused"]  # the one-run path's optimizer
    generator = torch.Generator().manual_seed(0)
    for _ in range(4):
        # transposed views where a weight is a matrix, as autograd hands some gradients back
        grads = {n: gradient(p.shape, generator) for n, p in stacked.params.items()}
        stacked._adamw(grads)
        for slot, (m, optimizer) in enumerate(zip(alone_members, optimizers)):
            for n, p in m.model.named_parameters():
                p.grad = grads[n][slot].contiguous()  # as autograd accumulates p.grad: laid out as p
            optimizer.step()
    for slot, (m, optimizer) in enumerate(zip(alone_members, optimizers)):
        for n, p in m.model.named_parameters():
            assert torch.equal(stacked.params[n][slot], p), n
            state = optimizer.state[p]
            assert torch.equal(stacked.exp_avg[n][slot], state["exp_avg"]), n
            assert torch.equal(stacked.exp_avg_sq[n][slot], state["exp_avg_sq"]), n
    assert not torch.equal(stacked.params["0.weight"][0], model(0)[0].weight)  # it did step
