"""Module criticality without retraining (Chatterji, Neyshabur & Sedghi 2020).

For a finetuned model, put one encoder layer at a time back to an earlier value of its
weights, evaluate, and restore it: the score drop says how much finetuning relied on
changing that layer. Two earlier values:

- `pretrained`: the base model's layer at that position (the caller passes, for a shallower
  model, the pretrained layer each position kept);
- `initial`: what the layer held when this finetuning started. For a pretrained layer
  that is the pretrained value, so only layers the condition changed get a second
  evaluation: reinitialised layers (their random init), the permuted layers (the
  pretrained layer the permutation put there), a layer with one head reinitialised,
  and, after an intermediate task, every layer (the intermediate task's weights).

L evaluations (plus one per layer whose two values differ), no training, inside the
worker at the end of the run: the finetuned weights are not kept afterwards.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from src.model.families import family_of

LayerStates = list[dict[str, torch.Tensor]]


def layer_states(encoder: nn.Module) -> LayerStates:
    """A copy of every encoder layer's parameters and buffers, by position."""
    layers = family_of(encoder).layers(encoder)
    return [{name: t.detach().clone() for name, t in layer.state_dict().items()} for layer in layers]


def same_state(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[n], b[n].to(a[n].device)) for n in a)


def rewind_drops(
    encoder: nn.Module, pretrained: LayerStates, initial: LayerStates, score: Callable[[], float], finetuned: float
) -> list[dict]:
    """Per layer (1..L) and earlier value: the score with that layer rewound, and the drop
    `finetuned - score` (positive: finetuning's change of this layer matters). Every layer
    is restored before the next is rewound; the model leaves as it came."""
    layers = family_of(encoder).layers(encoder)
    rows = []
    for position, layer in enumerate(layers):
        kept = {name: t.detach().clone() for name, t in layer.state_dict().items()}
        scored: dict[str, float] = {}
        for target, states in (("pretrained", pretrained), ("initial", initial)):
            state = states[position]
            if target == "initial" and same_state(state, pretrained[position]):
                value = scored["pretrained"]  # the same weights: the same score, not evaluated twice
            else:
                layer.load_state_dict(state)
                value = score()
                layer.load_state_dict(kept)
            scored[target] = value
            rows.append(
                {
                    "layer": position + 1,
                    "rewound_to": target,
                    "score": round(value, 6),
                    "drop": round(finetuned - value, 6),
                }
            )
    return rows
