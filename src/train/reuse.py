"""Reusing a finished result for a run asked with other measurement settings (src/measures):
measuring never changes how a run trains, so a result that trained identically is the same
run, whatever it measured."""

from __future__ import annotations

from dataclasses import asdict, replace

from src.artefacts.run_result import RunResult
from src.measures import MEASUREMENTS


def with_measurements_of(result: RunResult | None, settings, key: str, training_key: str) -> RunResult | None:
    """`result` as a run with `settings` (RunSettings; fingerprint `key`, training fingerprint
    `training_key`) records it, where it can be: the result itself if its fingerprint is
    `key`; else, if it trained identically and measured at least what `settings` ask for
    (with the same parameters), the result without the measurements they do not ask for.
    None where it cannot (the run must train, or measure its kept weights)."""
    if result is None or result.fingerprint == key:
        return result
    if result.training_fingerprint != training_key or missing_measurements(result, settings):
        return None
    return measured_as(result, settings, key, {m.field: getattr(result, m.field) for m in MEASUREMENTS})


def missing_measurements(result: RunResult, settings) -> list[str]:
    """The measurements `settings` ask for that `result` did not make with the same parameters."""
    recorded = result.settings
    return [
        m.setting
        for m in MEASUREMENTS
        if getattr(settings, m.setting)
        and not (recorded.get(m.setting) and all(recorded.get(p) == getattr(settings, p) for p in m.parameters))
    ]


def measured_as(result: RunResult, settings, key: str, measured: dict) -> RunResult:
    """The same training run recorded under `settings` (fingerprint `key`): each measurement they
    ask for from `measured` (RunResult field -> value), every other measurement empty."""
    empty = RunResult.__dataclass_fields__
    fields = {
        m.field: measured[m.field] if getattr(settings, m.setting) else empty[m.field].default_factory()
        for m in MEASUREMENTS
    }
    return replace(result, fingerprint=key, settings=asdict(settings), **fields)
