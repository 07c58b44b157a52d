"""A finished run's result file: the one writer (`RunResult.write`) and reader (`read`).

data/runs/studies/<study>/<task>/n<size>/<slug>/trial<t>.json holds one RunResult: scores,
eval loss, per-example eval predictions, per-step and per-epoch losses (and eval), the weight change
(and by step), the layer order, the depth audit, every reinitialised tensor, the subset hash, every setting
the run trained with, the seeds it drew from, each intermediate step of a sequential run (task,
size, epochs, losses), the fingerprint of its inputs, and the digest of the code that made
each of its measurements.
"""

from __future__ import annotations

import base64
import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from src.conditions.condition import Condition
from src.core.files import write_json_atomically
from src.tasks.kinds import decode_predictions

# The digest of each measurement's code at commit 83d6513 (src/train/reuse.measurement_code
# over that commit's files): what made the measurements of a result written before results
# recorded theirs.
LEGACY_MEASUREMENT_CODE = {
    "cka": "3fbab72875b5cbd12b187b914dd7ad9ef0b9ddb58cb11e14b381a81f3a82bec1",
    "criticality": "1f71907be5e3120c8b3b8cfeeed9dceb7de3baac59e6fae0959b94dec72ba4dd",
    "head_importance": "049e0d5a1672083c5641214bd79c818e3540f949b4b79c36392a6ae8b8ad3984",
}
# How a table cell lists a run's or a probed task's fallbacks (metrics/runs.csv, metrics/probe.csv): "" for none.
FALLBACK_SEPARATOR = "; "


def fallbacks_in(cell) -> list[str]:
    """The fallbacks a table cell lists (a cell read back from CSV is NaN where it listed none)."""
    return [f for f in cell.split(FALLBACK_SEPARATOR) if f] if isinstance(cell, str) else []


# What a packed run's pack did after a failure, as RunResult.pack_fallback records it
PACK_FALLBACKS = {
    "retried": "tried again after a failure",
    "split": "split in two after running out of memory",
    "alone": "each run trained as a pack of one after a second failure",
}
# In a finetune stage's output folder: each measurement's digest (setting -> digest) as the
# stage last ran it, what a result's measurements are stale against (stale_measurements)
MEASUREMENT_CODE_FILE = "measurement_code.json"


@dataclass(frozen=True)
class RunResult:
    condition: dict  # Condition.as_dict()
    fingerprint: str
    status: str  # ok | diverged
    metric: str  # the task's headline metric
    scores: dict[str, float]
    eval_loss: float | None
    majority_share: float | None
    predictions: dict | None  # TaskKind.encode_predictions
    epoch_losses: list[float]
    epoch_eval: list[dict]
    train_seconds: float
    weight_change: list[dict]
    steps: int | None
    layer_change_by_step: list[dict]
    settings: dict  # RunSettings: lr, batch size, epochs, precision as resolved, threads, seed, device
    seeds: dict[str, int | str]  # every seed the run drew from, by purpose
    reinitialised: list[dict] = field(default_factory=list)
    layer_order: list[int] = field(default_factory=list)
    # every step's training loss of the task trained last, float16 base64 (2 bytes a step): step_loss_values()
    step_losses: dict | None = None
    depth: dict | None = None  # the depth audit (src/model/reinit.py): layers, kept and removed (1-based)
    train_subset_sha256: str | None = None
    eval_examples: int | None = None
    base_weights_sha256: str | None = None
    device: str | None = None
    torch: str | None = None
    # Measurements of the finished run (docs/measures.md); empty where the run did not make them.
    layer_cka: list[float] = field(default_factory=list)  # layer 0 (embeddings)..L: finetuned vs pretrained
    criticality: list[dict] = field(default_factory=list)  # layer, rewound_to (pretrained|initial), score, drop
    head_importance: dict = field(default_factory=dict)  # before / after: [layer][head] mean |dL/dgate|
    # span QA: "no answer" when null - best span score exceeds it, fitted on this many training
    # questions the run did not train on (tokens.held_out_subset)
    null_threshold: float | None = None
    null_threshold_questions: int | None = None
    intermediate_steps: list[dict] = field(default_factory=list)  # sequential: task, size, epochs, losses per step
    # the fingerprint of the same run with no measurement (RunSettings.unmeasured): a result whose
    # training fingerprint matches trained exactly as asked, whatever it measured
    training_fingerprint: str | None = None
    weights_sha256: str | None = None  # train.keep_weights: the finetuned weights kept beside it (weights_path)
    # setting -> the digest of the code that made that measurement (src/train/reuse.measurement_code);
    # a measurement made before results recorded it: LEGACY_MEASUREMENT_CODE
    measurement_code: dict[str, str] = field(default_factory=dict)
    # Each fallback the run took where what params.yaml asked could not be applied as asked, said in a `note:` line
    # when taken (docs/bad_input.md): src/model/finetuner.py POOLER_REINITIALISED
    fallbacks: list[str] = field(default_factory=list)
    # train.pack: [first step, pack size] from each start of the run's stacked training, in order (a run
    # resumed or retried in a pack of another size has two or more); its fingerprint holds them
    # (src/train/packed.keys_as_trained). Empty: trained alone, unstacked.
    pack_sizes: list[list[int]] = field(default_factory=list)
    # the pack fallback the run trained after (src/train/schedule.execute_packs; PACK_FALLBACKS), None: none
    pack_fallback: str | None = None

    @property
    def cond(self) -> Condition:
        return Condition(**self.condition)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def made_by(self, setting: str) -> str:
        """The digest of the code that made measurement `setting` (a RunSettings flag)."""
        return self.measurement_code.get(setting, LEGACY_MEASUREMENT_CODE[setting])

    def stale_measurements(self, code: dict[str, str]) -> list[str]:
        """The measurements this finished run made by other code than `code` (setting -> digest)."""
        return [s for s in code if self.ok and self.settings.get(s) and self.made_by(s) != code[s]]

    def eval_predictions(self) -> np.ndarray | None:
        return decode_predictions(self.predictions) if self.predictions else None

    def step_loss_values(self) -> np.ndarray:
        return decode_predictions(self.step_losses) if self.step_losses else np.empty(0, dtype=np.float16)

    def write(self, path: Path) -> None:
        write_json_atomically(path, asdict(self))

    def save_finished(self, path: Path, training_key: str) -> RunResult:
        """This finished run written at `path` with the fingerprint of its training alone, its
        resume point (.ckpt) and failure note (.failed) removed: what a finetune stage does as
        each run finishes, and a pack as each member leaves it, so a kill loses no finished run."""
        result = replace(self, training_fingerprint=training_key)
        result.write(path)
        path.with_suffix(".ckpt").unlink(missing_ok=True)
        path.with_suffix(".failed").unlink(missing_ok=True)
        return result

    @classmethod
    def read(cls, path: Path) -> RunResult:
        return cls(**json.loads(Path(path).read_text()))


def encode_step_losses(losses: list[float]) -> dict:
    """Per-step losses in the compact form of a result's predictions (src/tasks/kinds.py): float16, base64."""
    return {"dtype": "float16", "base64": base64.b64encode(np.asarray(losses, dtype=np.float16).tobytes()).decode()}


def result_path(study_dir: Path, condition: Condition) -> Path:
    """Where a condition's result lives inside its study's output folder."""
    return Path(study_dir) / condition.task / f"n{condition.size}" / condition.slug / f"trial{condition.trial}.json"


def readable(path: Path) -> RunResult | None:
    """The complete result at `path`, whatever its inputs; None if there is none."""
    try:
        return RunResult.read(path)
    except (OSError, ValueError, TypeError):  # absent, cut short, or of an older layout: compute it again
        return None


def weights_path(result_file: Path) -> Path:
    """Where train.keep_weights keeps a run's finetuned weights: beside its result."""
    return Path(result_file).with_suffix(".weights.safetensors")


def read_results(root: Path) -> list[RunResult]:
    """Every finished result under `root`."""
    return [RunResult.read(p) for p in sorted(Path(root).rglob("trial*.json"))]


def stage_measurement_code(out: Path) -> dict[str, str]:
    """Each measurement's digest as the finetune stage writing `out` last ran it (empty before any)."""
    path = Path(out) / MEASUREMENT_CODE_FILE
    return json.loads(path.read_text()) if path.exists() else {}


def stale_results(runs_dir: Path) -> list[tuple[Path, list[str]]]:
    """(result file, its stale measurements) of each result under `runs_dir` (a folder per
    finetune stage) that made one by other code than its stage last ran."""
    found = []
    for study in sorted(p for p in Path(runs_dir).iterdir() if p.is_dir()):
        code = stage_measurement_code(study)
        for path in sorted(study.rglob("trial*.json")):
            if stale := RunResult.read(path).stale_measurements(code):
                found.append((path, stale))
    return found
