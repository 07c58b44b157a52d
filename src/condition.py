"""What a "condition" is: the one definition every stage, table and figure shares.

A condition is one finetuning run: a task, a training-set size, a reinitialisation
scheme with its argument, and a trial index. Everything random in it (training
subset, fresh weights, head, data order, dropout) is derived from these fields and
one base seed, so a condition is reproducible on its own, on any machine.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass

SCHEMES = ("progressive",)
RECIPES = ("paper", "authors_code")
HEADS = ("mean", "cls")


def derive_seed(*parts) -> int:
    """A stable 63-bit seed from any printable parts (Python's hash() is salted per process)."""
    digest = hashlib.sha256("/".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


@dataclass(frozen=True)
class Condition:
    task: str
    size: int
    k: int  # progressive: encoder layers 1..k keep pretrained weights
    trial: int
    scheme: str = "progressive"
    recipe: str = "paper"
    head: str = "mean"

    def reinit_layers(self, num_layers: int) -> list[int]:
        """0-based indices of the encoder layers that get fresh weights."""
        if not 0 <= self.k <= num_layers:
            raise ValueError(f"k={self.k} is outside 0..{num_layers} for a model with {num_layers} encoder layers")
        return list(range(self.k, num_layers))

    def seed(self, base_seed: int, purpose: str) -> int:
        """Seeds for the trial's randomness. They depend on the trial, not on k, so the
        fresh weights of layer 5 are the same draw whether k is 2 or 4: differences
        across k come from what is kept, not from a luckier initialisation."""
        return derive_seed(base_seed, purpose, self.trial)

    def as_dict(self) -> dict:
        return asdict(self)
