"""What a finetuning run measures on its finished weights (docs/measures.md), one entry each:
the RunSettings flag that turns it on, the further settings its numbers depend on, and the
RunResult field that holds it.

Measuring never changes how a run trains, so a finished result that measured more than the
settings ask for now is still the run they describe: src/train/schedule.py keeps it and drops
the measurements no longer asked for, instead of training it again; one that measured less is
measured on its kept weights where it kept them (train.keep_weights), else trained again.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Measurement:
    setting: str  # the RunSettings flag that turns it on
    field: str  # the RunResult field that holds it (empty where the run did not measure it)
    parameters: tuple[str, ...] = ()  # the other RunSettings fields its numbers depend on
    # it reads the weights the final finetuning started from too, not only the finetuned ones
    # (which train.keep_weights keeps; the start is rebuilt from the condition unless a task came first)
    reads_start: bool = False


MEASUREMENTS = (
    Measurement("cka", "layer_cka"),  # src/measures/cka.py
    # rewinds each layer to its pretrained value and to its value at the start (src/measures/criticality.py)
    Measurement("criticality", "criticality", ("criticality_examples",), reads_start=True),
    # before and after finetuning (src/measures/heads.py)
    Measurement("head_importance", "head_importance", reads_start=True),
)
