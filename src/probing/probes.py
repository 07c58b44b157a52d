"""Linear probes on the frozen pretrained model (paper §3).

One forward pass gives every layer's hidden states (0 = embeddings, 1..L = encoder
layers); we keep the attention-masked mean of each, then train all L+1 probes at
once as one batched linear map. Summing the per-layer losses keeps the probes
independent (each probe's gradient only sees its own loss), so this equals L+1
separate runs at a fraction of the cost.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from src.data.tokens import TokenizedSplit, batches, collate
from src.model.finetuner import encode, masked_mean
from src.tasks.metrics import score
from src.tasks.registry import TaskSpec


@torch.inference_mode()
def layer_features(encoder: nn.Module, split: TokenizedSplit, batch_size: int, desc: str = "") -> np.ndarray:
    """[examples, layers + 1, hidden] masked-mean features, float16 to halve the cache."""
    encoder.eval()
    config, device = encoder.config, next(encoder.parameters()).device
    features = np.empty((len(split), config.num_hidden_layers + 1, config.hidden_size), dtype=np.float16)
    for indices in tqdm(batches(split.lengths, batch_size, None), desc=desc, leave=False, mininterval=5):
        batch = {name: t.to(device) for name, t in collate(split, indices).items()}
        batch.pop("labels")
        hidden = encode(encoder, **batch, output_hidden_states=True).hidden_states
        pooled = torch.stack([masked_mean(h, batch["attention_mask"]) for h in hidden], dim=1)
        features[indices] = pooled.float().cpu().numpy().astype(np.float16)
    return features


class LayerProbes(nn.Module):
    """One linear probe per layer: logits[n, l] = features[n, l] @ weight[l] + bias[l]."""

    def __init__(self, num_layers: int, hidden: int, num_labels: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(num_layers, hidden, num_labels))
        self.bias = nn.Parameter(torch.zeros(num_layers, num_labels))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return torch.einsum("nlh,lhc->nlc", features, self.weight) + self.bias


def train_probes(
    task: TaskSpec,
    train_x: np.ndarray,
    train_y: np.ndarray,
    eval_x: np.ndarray,
    eval_y: np.ndarray,
    epochs: int,
    lr: float,
    batch_size: int,
    seed: int,
) -> list[dict[str, float]]:
    """Train the probes with Adam (on the GPU when there is one); return each layer's
    metrics on the eval split."""
    torch.manual_seed(seed)
    order = np.random.default_rng(seed)
    num_layers, hidden = train_x.shape[1:]
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    probes = LayerProbes(num_layers, hidden, task.num_labels).to(
        device
    )  # drawn on the CPU: the same start on every device
    optimizer = torch.optim.Adam(probes.parameters(), lr=lr)
    x, y = torch.from_numpy(train_x.astype(np.float32)).to(device), torch.from_numpy(train_y).to(device)
    for _ in range(epochs):
        for indices in np.array_split(order.permutation(len(x)), max(1, len(x) // batch_size)):
            picked = torch.from_numpy(indices).to(device)
            logits = probes(x[picked])  # [n, layers, labels]
            target = y[picked]
            if task.kind.name == "regression":  # one loss per layer, summed: the probes stay independent
                loss = nn.functional.mse_loss(
                    logits.squeeze(-1), target[:, None].expand(-1, num_layers).float(), reduction="sum"
                )
            else:
                loss = nn.functional.cross_entropy(
                    logits.transpose(1, 2), target[:, None].expand(-1, num_layers), reduction="sum"
                )
            optimizer.zero_grad(set_to_none=True)
            (loss / len(indices)).backward()
            optimizer.step()
    with torch.inference_mode():
        logits = probes(torch.from_numpy(eval_x.astype(np.float32)).to(device)).cpu()
    per_layer = task.kind.predict(logits)
    return [score(task.metrics, per_layer[:, layer], eval_y) for layer in range(num_layers)]
