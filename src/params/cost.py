"""What a params file will cost before anything trains: the runs its studies and focus condition
train, the runs whose result is already in data/runs (kept), and an estimate of the time the rest
take on this machine.

The estimate scales one measured run (RUN_SECONDS) by the examples each run passes through
(size x epochs, intermediate steps included) and by the model's size (layers x hidden^2, the
non-embedding compute per token), divided among train.workers processes. It leaves out what
does not scale so (model preparation, the data stage, probes, the report) and is an estimate,
not a measurement: the finetune stages print the measured time as they run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from src.artefacts.run_result import result_path
from src.conditions.condition import Condition
from src.conditions.studies import all_study_conditions, focus_conditions, trained_conditions
from src.config.schema import Config
from src.model.embedded import EMBEDDED_MODELS
from src.params.preflight import ModelShape, Pool

# One run of the default focus condition (subjectivity, 128 examples x 7 epochs, k = 6 with the measurements
# params.yaml switches on, train.threads 1, bf16 autocast) on the embedded model, measured on a 2-core Intel Xeon
# with AMX shared with other work: the CPU seconds of `python -m stages.finetune --focus` with trials: 1 (21.62 s
# user + sys by /usr/bin/time) less those of the same stage with the run kept (2.32 s), which is the run's wall
# time on a core of its own (its wall time beside other work at load average 8-10 was 57.7 s and 76.6 s).
RUN_SECONDS = 19.3
RUN_EXAMPLES = 128 * 7
MEASURED_ON = "a 2-core Intel Xeon with AMX"
REFERENCE = EMBEDDED_MODELS["embedded"]
# Scoring after every epoch (a study with `epochs:`): about 4 s per epoch per run on 500 sentences, derived in
# docs/results.md from the default's epochs study on a 2-core Intel Xeon without AMX (fp32), not measured here.
SCORE_SECONDS_PER_EXAMPLE = 4 / 500


@dataclass(frozen=True)
class Cost:
    runs: int  # training runs the studies and the focus condition need
    kept: int  # of them, those with a result file at their place in data/runs
    seconds: float | None  # estimated wall time of the rest; None: the model's size is not known here
    workers: int


def _sized(shape: ModelShape) -> float | None:
    """The model's compute per token relative to the measured one (layers x hidden^2)."""
    layers, hidden = shape.limits.num_layers, shape.hidden_size
    if layers is None or hidden is None:
        return None
    return layers * hidden**2 / (REFERENCE.num_layers * REFERENCE.hidden_size**2)


def run_seconds(condition: Condition, pools: dict[str, Pool], scale: float, scored_epochs: int, eval_size: int):
    """A run's estimated seconds: the measured run's, by examples x epochs and model size."""
    examples = condition.examples_trained(lambda task: pools[task].examples if task in pools else 0)
    return scale * (RUN_SECONDS * examples / RUN_EXAMPLES + SCORE_SECONDS_PER_EXAMPLE * eval_size * scored_epochs)


def cost(config: Config, shape: ModelShape, pools: dict[str, Pool], runs_dir: Path) -> Cost | None:
    """The runs params.yaml trains (as the finetune stages choose them: a run two studies share
    trains once, a focus trial a study trains is copied), those kept, and the estimate; None
    when the model's depth is not known (a hub id, before prepare_model)."""
    layers = shape.limits.num_layers
    if layers is None:
        return None
    reported = all_study_conditions(config, layers)
    studies_dir = runs_dir / "studies"
    done = sorted(p for p in studies_dir.iterdir() if p.is_dir()) if studies_dir.is_dir() else []
    runs: list[tuple[Condition, Path, int]] = []  # condition, its folder, epochs scored before the last
    for name, study in config.studies.items():
        # StudyConfig's fields are made from the scheme registry (make_dataclass): mypy cannot see them
        scored = 0 if study.epochs is None else study.epochs - 1  # type: ignore[attr-defined]
        runs += [(c, studies_dir / name, scored) for c in trained_conditions(reported, name, layers)]
    in_studies = {c for c, _, _ in runs}
    runs += [(c, runs_dir / "focus", 0) for c in focus_conditions(config) if c not in in_studies]
    kept = [any(result_path(folder, c).exists() for folder in [own, *done]) for c, own, _ in runs]
    scale = _sized(shape)
    seconds = (
        None
        if scale is None
        else sum(
            run_seconds(c, pools, scale, scored, config.data.eval_size)
            for (c, _, scored), is_kept in zip(runs, kept, strict=True)
            if not is_kept
        )
        / config.train.workers
    )
    return Cost(len(runs), sum(kept), seconds, config.train.workers)


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{max(minutes, 1)} min"


def cost_line(found: Cost | None, model: str) -> str:
    """The one line the validate stage prints."""
    if found is None:
        return f"cost: unknown until prepare_model has read {model!r} (its depth sets the runs)"
    line = f"cost: {found.runs} runs, {found.runs - found.kept} to train, {found.kept} kept (a result in data/runs)"
    if found.seconds is None:
        return f"{line}; no time estimate: {model!r}'s width is not known here"
    return (
        f"{line}; about {_duration(found.seconds)} of finetuning at train.workers {found.workers} (an estimate: one "
        f"run measured on {MEASURED_ON}, scaled by size x epochs and layers x hidden^2)"
    )
