"""Stage features@<task>: one forward pass of the frozen pretrained model over the task.

Caches, for every example, each layer's pooled hidden state (0 = embeddings .. L;
probe.pooling: the attention-masked mean, or the [CLS] state through the frozen pooler),
so probes can be retrained without touching the model again (src/probing/features.py).
"""

import argparse
from pathlib import Path

import numpy as np

from src.params.load import load_config
from src.params.stage import run_stage
from src.probing.features import task_features


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--tokens", type=Path, required=True, help="the task's tokens.npz")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    features = task_features(args.model, args.tokens, load_config().probe)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(args.out, **features)
    print(f"features {args.tokens.parent.name}: train {features['train'].shape}, eval {features['eval'].shape}")


if __name__ == "__main__":
    run_stage(main)
