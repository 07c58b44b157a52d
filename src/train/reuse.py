"""Reusing a finished result for a run asked with other measurement settings (src/measures):
measuring never changes how a run trains, so a result that trained identically is the same
run, whatever it measured.

Each measurement's code has a digest of its own (`measurement_code`), recorded beside its
numbers (RunResult.measurement_code). One made by other code than today's is made again
on the run's kept weights where they were kept (train.keep_weights); else the result is kept
as it is (`kept_stale`) and the report says which measurement is stale on how many runs. A
stale measurement never trains a run again.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import asdict, replace

from src.artefacts.run_result import RunResult
from src.core.codehash import code_digest, code_files
from src.measures import MEASUREMENTS, Measurement

MEASUREMENTS_MODULE = "src.measures"
MEASUREMENT_CODE = MEASUREMENTS_MODULE.replace(".", "/") + "/"  # its files, as code_files names them
# Measurement digests declared equivalent to today's code of the same measurement: a result that
# recorded one is current, and is recorded again with today's digest. A digest goes here only when a
# test proves that the code it hashed and today's give the same numbers.
EQUIVALENT_MEASUREMENT_CODE = {  # digest -> the code it hashed, and the proof
    "3fbab72875b5cbd12b187b914dd7ad9ef0b9ddb58cb11e14b381a81f3a82bec1": (
        "cka at 78fdc7e (n x n Gram matrices): equal to the feature-space CKA within 1e-12 relative "
        "(tests/unit/measures/test_measures.py, against bench/levers.py gram_cka)"
    ),
}


def measurement_files(measurement: Measurement) -> list[str]:
    """The measurement code `measurement` runs: src/measures/__init__.py (the MEASUREMENTS table
    and its functions) and the src/measures modules whose functions those call (with the
    src/measures modules they import). The code it shares with training (the model, tokens,
    evaluation) is the recipe's (src/train/run.py RECIPE), whose changes retrain, or are
    proven by the golden runs, which pin the measurements too, to change no number."""
    modules, seen = set(), set()
    todo = [f for f in (measurement.at_end, measurement.at_start) if f is not None]
    while todo:
        function = todo.pop()
        if function in seen:
            continue
        seen.add(function)
        names = set(function.__code__.co_names).union(
            *(c.co_names for c in function.__code__.co_consts if inspect.iscode(c))
        )
        for value in (function.__globals__.get(name) for name in names):
            if inspect.isfunction(value) and value.__module__ == MEASUREMENTS_MODULE:  # a helper of the table
                todo.append(value)
            elif inspect.isfunction(value) and value.__module__.startswith(f"{MEASUREMENTS_MODULE}."):
                modules.add(value.__module__)
    files = {f for module in modules for f in code_files(module) if f.startswith(MEASUREMENT_CODE)}
    return [f"{MEASUREMENT_CODE}__init__.py", *sorted(files)]


@functools.cache
def measurement_code() -> dict[str, str]:
    """Each measurement's setting -> the digest of its code as it is now (measurement_files)."""
    return {m.setting: code_digest(measurement_files(m)) for m in MEASUREMENTS}


def as_current(result: RunResult | None, equivalent: dict[str, str]) -> RunResult | None:
    """`result` with each fingerprint it holds that a recipe declared equivalent made
    (`equivalent`: run.equivalent_fingerprints, old -> current), and each measurement digest declared
    equivalent (EQUIVALENT_MEASUREMENT_CODE), read as the current one."""
    if result is None:
        return None
    training, now = result.training_fingerprint, measurement_code()
    return replace(
        result,
        fingerprint=equivalent.get(result.fingerprint, result.fingerprint),
        training_fingerprint=None if training is None else equivalent.get(training, training),
        measurement_code={  # a result from before results recorded them made its own by LEGACY_MEASUREMENT_CODE
            **result.measurement_code,
            **{
                setting: digest
                for setting, digest in now.items()
                if result.settings.get(setting) and result.made_by(setting) in EQUIVALENT_MEASUREMENT_CODE
            },
        },
    )


def with_measurements_of(result: RunResult | None, settings, key: str, training_key: str) -> RunResult | None:
    """`result` as a run with `settings` (RunSettings; fingerprint `key`, training fingerprint
    `training_key`) records it, where it can be: the result itself if its fingerprint is
    `key` and no measurement it made is stale; else, if it trained identically and measured
    at least what `settings` ask for (with the same parameters, by today's code), the result
    without the measurements they do not ask for. None where it cannot (the run must train,
    measure its kept weights, or be kept stale: kept_stale)."""
    if result is None or (result.fingerprint == key and not stale_measurements(result, settings)):
        return result
    if result.training_fingerprint != training_key or missing_measurements(result, settings):
        return None
    return measured_as(result, settings, key, {m.field: getattr(result, m.field) for m in MEASUREMENTS})


def kept_stale(result: RunResult | None, settings, key: str, training_key: str) -> RunResult | None:
    """`result` as a run with `settings` records it, when it trained identically and all it
    lacks is measurements made by today's code: kept with the stale ones rather than trained
    again (a stale measurement never retrains). None otherwise."""
    if result is None or result.training_fingerprint != training_key or not stale_measurements(result, settings):
        return None
    if set(missing_measurements(result, settings)) != set(stale_measurements(result, settings)):
        return None  # it also lacks a measurement it never made with these parameters
    if result.fingerprint == key:
        return result
    return measured_as(result, settings, key, {m.field: getattr(result, m.field) for m in MEASUREMENTS})


def _made_as_asked(result: RunResult, settings, measurement) -> bool:
    recorded = result.settings
    return bool(recorded.get(measurement.setting)) and all(
        recorded.get(p) == getattr(settings, p) for p in measurement.parameters
    )


def stale_measurements(result: RunResult, settings) -> list[str]:
    """The measurements `settings` ask for that `result` made with the same parameters, but by
    other code than today's."""
    stale = set(result.stale_measurements(measurement_code()))
    return [
        m.setting
        for m in MEASUREMENTS
        if getattr(settings, m.setting) and m.setting in stale and _made_as_asked(result, settings, m)
    ]


def missing_measurements(result: RunResult, settings) -> list[str]:
    """The measurements `settings` ask for that `result` did not make with the same parameters
    by today's code (the stale ones included): what measuring its kept weights makes."""
    stale = set(result.stale_measurements(measurement_code()))
    return [
        m.setting
        for m in MEASUREMENTS
        if getattr(settings, m.setting) and (m.setting in stale or not _made_as_asked(result, settings, m))
    ]


def measured_as(result: RunResult, settings, key: str, measured: dict) -> RunResult:
    """The same training run recorded under `settings` (fingerprint `key`): each measurement they
    ask for from `measured` (RunResult field -> value, and `measurement_code`: setting -> the
    digest of the code that made those made now), every other measurement empty."""
    fields = {  # an empty list or dict where not asked for
        m.field: measured[m.field] if getattr(settings, m.setting) else type(getattr(result, m.field))()
        for m in MEASUREMENTS
    }
    made = {**result.measurement_code, **measured.get("measurement_code", {})}
    code = {setting: digest for setting, digest in made.items() if getattr(settings, setting)}
    return replace(result, fingerprint=key, settings=asdict(settings), measurement_code=code, **fields)


def made_now(settings) -> dict[str, str]:
    """setting -> the digest of today's code, for each measurement `settings` ask for: what a
    result records of the measurements made now."""
    now = measurement_code()
    return {m.setting: now[m.setting] for m in MEASUREMENTS if getattr(settings, m.setting)}
