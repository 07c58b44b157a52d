"""The checks a params.yaml value must pass, each with the one message it fails with.

A check is a function (value, key) -> value that raises ParamsError naming the key, the
value and what is allowed. Config sections (src/config/schema.py) attach one to every
field, so a knob's type, range, help text and error live in one line.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable
from typing import Any

from src.core.errors import ParamsError

Check = Callable[[Any, str], Any]


def refuse(key: str, value, allowed: str):
    raise ParamsError(f"params.yaml: {key} = {value!r} is invalid; allowed: {allowed}")


def require(ok: bool, key: str, value, allowed: str) -> None:
    if not ok:
        refuse(key, value, allowed)


def is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # YAML `true` is not a count


def is_number(value) -> bool:
    return is_int(value) or (isinstance(value, float) and math.isfinite(value))  # YAML 1.2 reads .nan and .inf


def nearest(name, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(str(name), list(known), n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def integer(minimum: int) -> Check:
    def check(value, key):
        require(is_int(value) and value >= minimum, key, value, f"an integer >= {minimum}")
        return value

    return check


def positive(value, key):
    require(is_number(value) and value > 0, key, value, "a number > 0")
    return value


def non_negative(value, key):
    require(is_number(value) and value >= 0, key, value, "a number >= 0")
    return value


def open_unit(value, key):
    require(is_number(value) and 0 < value < 1, key, value, "a number in (0, 1)")
    return value


def unit_interval(value, key):
    require(is_number(value) and 0 <= value <= 1, key, value, "a number in [0, 1]")
    return value


def boolean(value, key):
    require(isinstance(value, bool), key, value, "true | false")
    return value


def choice(options: Iterable[str]) -> Check:
    options = tuple(options)

    def check(value, key):
        require(value in options, key, value, " | ".join(options))
        return value

    return check


def text(allowed: str, nullable: bool = False) -> Check:
    """A non-blank string (or, if `nullable`, null)."""

    def check(value, key):
        require((nullable and value is None) or (isinstance(value, str) and value.strip() != ""), key, value, allowed)
        return value

    return check


def listing(item: Check, allow_empty: bool = False, empty_allowed: str = "a non-empty list") -> Check:
    """A list without duplicates whose every item passes `item`; returned as a tuple."""

    def check(value, key):
        require(isinstance(value, list) and (allow_empty or len(value) > 0), key, value, empty_allowed)
        require(len(set(map(str, value))) == len(value), key, value, "a list without duplicates")
        return tuple(item(v, f"{key}[{i}]") for i, v in enumerate(value))

    return check


def member_of(options: Iterable[str], allowed: str) -> Check:
    options = tuple(options)

    def check(value, key):
        require(value in options, key, value, allowed)
        return value

    return check


def increasing_percentages(value, key):
    """Strictly increasing percentages in (0, 100] that end at 100 (or an empty list)."""
    allowed = "an empty list or strictly increasing percentages in (0, 100] ending at 100"
    require(isinstance(value, list), key, value, allowed)
    require(all(is_number(v) and 0 < v <= 100 for v in value), key, value, allowed)
    require(all(a < b for a, b in zip(value, value[1:], strict=False)), key, value, allowed)
    require(not value or value[-1] == 100, key, value, allowed)
    return tuple(float(v) for v in value)


def crossed_design(value, key):
    """{subsets: S, seeds: D}, both integers >= 2 (a factor with one level has no variance to split);
    returned as (S, D)."""
    allowed = "a mapping {subsets: S, seeds: D} of integers >= 2"
    require(isinstance(value, dict) and set(value) == {"subsets", "seeds"}, key, value, allowed)
    require(all(is_int(v) and v >= 2 for v in value.values()), key, value, allowed)
    return value["subsets"], value["seeds"]


def chains(item: Check) -> Check:
    """A non-empty list of chains trained in order: each entry a task (a chain of one) or a
    non-empty list of tasks; returned as tuples of tasks."""

    def check(value, key):
        require(
            isinstance(value, list) and len(value) > 0,
            key,
            value,
            "a non-empty list of tasks or of task lists (chains)",
        )
        found = tuple(
            listing(item)(chain, f"{key}[{i}]") if isinstance(chain, list) else (item(chain, f"{key}[{i}]"),)
            for i, chain in enumerate(value)
        )
        require(len(set(found)) == len(found), key, value, "a list without duplicate chains")
        return found

    return check


FULL = "full"  # a training size: the task's whole training set


def count_or_full(value, key):
    require((is_int(value) and value >= 1) or value == FULL, key, value, f"an integer >= 1 | {FULL} (the whole set)")
    return value
