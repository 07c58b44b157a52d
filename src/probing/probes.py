"""Linear probes on the frozen pretrained model (paper §3), with the controls a referee asks for.

One forward pass gives every layer's hidden states (0 = embeddings, 1..L = encoder
layers); we keep one pooled vector per layer (`mean`: the attention-masked mean, the
paper's text; `cls`: the [CLS] state through the frozen pooler, the authors' code), then
train all L+1 probes at once as one batched linear map. Summing the per-layer losses
keeps the probes independent (each probe's gradient only sees its own loss), so this
equals L+1 separate runs at a fraction of the cost.

Each probe seed (its init and data order) gives, per layer:
- the task score on the eval split, and the per-example eval predictions;
- the control score (Hewitt & Liang 2019): the same probe trained on control labels, a
  fixed random function of each sentence with the task's label balance; selectivity =
  task score - control score says how much of the score the probe did not just memorise;
- the online codelength (Voita & Titov 2020): the train set in a seeded order, cut at
  growing portions; the first block is coded uniformly, every later block with a probe
  trained on all examples before it. Compression = uniform codelength / online codelength.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from src.artefacts.probe_result import ProbeLayer, ProbeResult, features_fallbacks
from src.core.seeds import derive_seed
from src.tasks import splits
from src.tasks.metrics import score
from src.tasks.registry import TaskSpec, get_task
from src.tasks.splits import TokenizedSplit

if TYPE_CHECKING:  # annotations only: probe code stays out of the config's import closure
    from pathlib import Path

    from src.config.schema import Config, ProbeConfig


def control_labels(splits: list[TokenizedSplit], balance: np.ndarray, seed: int) -> list[np.ndarray]:
    """Hewitt & Liang's control task at the sentence level: each sentence's label is a fixed
    random function of its tokens (the same sentence gets the same label in every split), drawn
    from the empirical distribution of `balance` (the task's train labels), so the control task
    has the task's label balance and nothing a probe could learn except by memorising."""

    def uniform(split: TokenizedSplit, i: int) -> float:
        start, end = split.offsets[i], split.offsets[i + 1]
        text = hashlib.sha256(split.ids[start:end].tobytes() + split.type_ids[start:end].tobytes()).hexdigest()
        return derive_seed(seed, "control", text) / 2**63

    return [
        np.quantile(balance, [uniform(split, i) for i in range(len(split))], method="inverted_cdf").astype(
            balance.dtype
        )
        for split in splits
    ]


class LayerProbes(nn.Module):
    """One linear probe per label set and layer: logits[n, g, l] = features[n, l] @ weight[g, l] + bias[g, l].
    Label set g is the task's labels or its control labels: both trained in one pass."""

    def __init__(self, num_sets: int, num_layers: int, hidden: int, num_labels: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(num_sets, num_layers, hidden, num_labels))
        self.bias = nn.Parameter(torch.zeros(num_sets, num_layers, num_labels))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return torch.einsum("nlh,glhc->nglc", features, self.weight) + self.bias


def _device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _loss(task: TaskSpec, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The summed losses of every (label set, layer): one loss each, so the probes stay independent.
    logits [n, sets, layers, outputs], target [n, sets]."""
    target = target[:, :, None].expand(-1, -1, logits.shape[2])
    if task.kind.name == "regression":
        return nn.functional.mse_loss(logits.squeeze(-1), target.float(), reduction="sum")
    return nn.functional.cross_entropy(logits.permute(0, 3, 1, 2), target, reduction="sum")


def fit_probes(task: TaskSpec, x: np.ndarray, y: np.ndarray, probe: ProbeConfig, seed: int) -> LayerProbes:
    """Probes trained with Adam on `x` [n, layers, hidden] for each label set in `y` [n, sets]
    (on the GPU when there is one); `seed` fixes the init and the data order."""
    torch.manual_seed(seed)
    order = np.random.default_rng(seed)
    device = _device()
    probes = LayerProbes(y.shape[1], x.shape[1], x.shape[2], task.kind.head_outputs(task.num_labels)).to(
        device
    )  # drawn on the CPU: the same start on every device
    optimizer = torch.optim.Adam(probes.parameters(), lr=probe.lr)
    features, labels = torch.from_numpy(x.astype(np.float32)).to(device), torch.from_numpy(y).to(device)
    for _ in range(probe.epochs):
        for indices in np.array_split(order.permutation(len(x)), max(1, len(x) // probe.train_batch_size)):
            picked = torch.from_numpy(indices).to(device)
            loss = _loss(task, probes(features[picked]), labels[picked])
            optimizer.zero_grad(set_to_none=True)
            (loss / len(indices)).backward()
            optimizer.step()
    return probes


@torch.inference_mode()
def _logits(probes: LayerProbes, x: np.ndarray) -> torch.Tensor:
    return probes(torch.from_numpy(x.astype(np.float32)).to(_device())).float().cpu()


def train_probes(
    task: TaskSpec, train_x: np.ndarray, train_y: np.ndarray, eval_x: np.ndarray, probe: ProbeConfig, seed: int
) -> np.ndarray:
    """[sets, layers, eval examples] predictions of probes trained on (train_x, train_y [n, sets])."""
    probes = fit_probes(task, train_x, train_y, probe, seed)
    return task.kind.predict(_logits(probes, eval_x)).transpose(1, 2, 0)


def portion_ends(n: int, portions_percent: tuple[float, ...]) -> list[int]:
    """Example counts at each portion boundary (at least 1 example in the first block)."""
    return sorted({max(1, min(n, round(n * p / 100))) for p in portions_percent})


def online_codelength(
    task: TaskSpec, x: np.ndarray, y: np.ndarray, probe: ProbeConfig, seed: int
) -> tuple[np.ndarray, float]:
    """(online codelength in bits per layer, uniform codelength in bits) of the labels `y`
    given `x` (Voita & Titov 2020), with the examples in an order drawn from `seed`."""
    order = np.random.default_rng(derive_seed(seed, "mdl-order")).permutation(len(x))
    x, y = x[order], y[order]
    ends = portion_ends(len(x), probe.mdl_portions)
    bits_per_label = math.log2(task.num_labels)
    online = np.full(x.shape[1], ends[0] * bits_per_label)  # the first block, coded uniformly
    for start, end in zip(ends, ends[1:], strict=False):
        probes = fit_probes(task, x[:start], y[:start, None], probe, derive_seed(seed, "mdl", start))
        log_p = torch.log_softmax(_logits(probes, x[start:end])[:, 0], dim=-1)  # [block, layers, classes]
        target = torch.from_numpy(y[start:end])[:, None, None].expand(-1, x.shape[1], 1)
        online -= log_p.gather(-1, target).squeeze(-1).sum(0).numpy() / math.log(2)
    return online, ends[-1] * bits_per_label


@dataclass(frozen=True)
class ProbeSeed:
    """One probe seed's outcome, per layer."""

    scores: list[dict[str, float]]
    control_scores: list[dict[str, float]]
    predictions: np.ndarray  # [layers, eval examples]
    codelength_bits: np.ndarray | None  # None: no online code (regression, or mdl_portions empty)
    uniform_bits: float | None


def probe_seed(
    task: TaskSpec,
    features: dict[str, np.ndarray],
    labels: dict[str, np.ndarray],
    control: dict[str, np.ndarray],
    probe: ProbeConfig,
    seed: int,
) -> ProbeSeed:
    """Task probes, control probes and the online code of one probe seed."""
    both = np.stack([labels["train"], control["train"]], axis=1)
    predictions, control_predictions = train_probes(task, features["train"], both, features["eval"], probe, seed)
    # MDL codes class labels; a regression target has no uniform code to compare with.
    coded = task.kind.name == "classification" and probe.mdl_portions
    online, uniform = (
        online_codelength(task, features["train"], labels["train"], probe, seed) if coded else (None, None)
    )
    return ProbeSeed(
        scores=[score(task.metrics, p, labels["eval"]) for p in predictions],
        control_scores=[score(task.metrics, p, control["eval"]) for p in control_predictions],
        predictions=predictions,
        codelength_bits=online,
        uniform_bits=uniform,
    )


def probe_task(name: str, tokens: Path, features: Path, config: Config) -> tuple[ProbeResult, np.ndarray]:
    """Every probe seed of task `name` on its cached frozen features: the per-layer scores and
    the eval predictions [seeds, layers, examples] (src/artefacts/probe_result.py)."""
    probe, task = config.probe, get_task(name)
    split = {part: splits.load_split(tokens, part) for part in ("train", "eval")}
    labels = {part: s.labels for part, s in split.items()}
    # One control task per (seed, task): every probe seed is trained on the same control labels.
    control = dict(
        zip(split, control_labels(list(split.values()), labels["train"], derive_seed(config.seed, task.name)))
    )
    with np.load(features) as cached:
        layers, fallbacks = {part: cached[part] for part in split}, features_fallbacks(cached)
    # Seed 0 is the base seed, as the single probe before probe seeds existed: its numbers stay.
    seeds = [config.seed] + [derive_seed(config.seed, "probe", task.name, s) for s in range(1, probe.seeds)]
    outcomes = [probe_seed(task, layers, labels, control, probe, seed) for seed in seeds]
    rows = [
        ProbeLayer(
            layer=layer,
            seed=s,
            scores=outcome.scores[layer],
            control_scores=outcome.control_scores[layer],
            codelength_bits=None if outcome.codelength_bits is None else float(outcome.codelength_bits[layer]),
        )
        for s, outcome in enumerate(outcomes)
        for layer in range(len(outcome.scores))
    ]
    result = ProbeResult(
        task=name,
        metric=task.headline,
        pooling=probe.pooling,
        train_examples=len(labels["train"]),
        eval_examples=len(labels["eval"]),
        seeds=seeds,
        mdl_portions=list(probe.mdl_portions),
        uniform_bits=outcomes[0].uniform_bits,
        layers=rows,
        fallbacks=fallbacks,
    )
    return result, np.stack([outcome.predictions for outcome in outcomes])
