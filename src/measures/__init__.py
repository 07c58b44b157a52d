"""What a finetuning run measures on its finished weights (docs/measures.md), one entry each:
the RunSettings flag that turns it on, the further settings its numbers depend on, and the
RunResult field that holds it.

Measuring never changes how a run trains, so a finished result that measured more than the
settings ask for now is still the run they describe: src/train/schedule.py keeps it and drops
the measurements no longer asked for, instead of training it again.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Measurement:
    setting: str  # the RunSettings flag that turns it on
    field: str  # the RunResult field that holds it (empty where the run did not measure it)
    parameters: tuple[str, ...] = ()  # the other RunSettings fields its numbers depend on


MEASUREMENTS = (
    Measurement("cka", "layer_cka"),  # src/measures/cka.py
    Measurement("criticality", "criticality", ("criticality_examples",)),  # src/measures/criticality.py
    Measurement("head_importance", "head_importance"),  # src/measures/heads.py
)
