"""`python -m tools.prospective [--presets NAME ...] [--reps R] [--seed S]`: each preset's prospective table in
markdown (docs/presets.md holds its output), with how many of its paper's claims decide with probability >= 0.8
at each number of trials of table.TRIALS."""

from __future__ import annotations

import argparse
import datetime
import shlex
import sys
from pathlib import Path

from bench.cost import load_preset
from src.config.schema import Config
from tools.prospective import components as comp
from tools.prospective.table import (
    PAPER_OF_PRESET,
    POWER,
    TRIALS,
    Row,
    decided,
    family_size,
    gpu_hours,
    gpu_label,
    rows,
)

PRESETS = Path(__file__).resolve().parents[2] / "presets"


def pct(x: float) -> str:
    return f"{x:.2f}"


def three(o) -> str:
    return f"{pct(o.supported)} / {pct(o.contradicted)} / {pct(o.undecided)}" if o else "—"


def row_text(r: Row) -> str:
    kind = "universal" if r.claim.every else "existential"
    if r.claim.cannot:
        return f"| `{r.claim.id}` | {kind} | — | cannot be simulated here: {r.claim.cannot} | — | — | — |"
    if r.units == 0 and r.claim.build:
        return f"| `{r.claim.id}` | {kind} | 0 | not run on this preset (none of its units' conditions) | — | — | — |"
    if r.at_effect is None and r.at_zero is None:
        return f"| `{r.claim.id}` | {kind} | — | {r.claim.source}: not simulated | — | — | — |"
    if r.needs.startswith("an effect"):
        design = f"this design decides it with {r.needs}"
    elif r.cheapest is None:
        design = f"none of {TRIALS[0]}–{TRIALS[-1]} trials" + (f" ({r.needs})" if r.needs else "")
    else:
        hours = gpu_hours(r.runs, r.run_steps)
        design = f"{r.cheapest} trials: {r.runs:,} runs, {r.run_steps:,} run-steps, {hours:,.1f} GPU-h" + (
            f" ({r.needs})" if r.needs else ""
        )
    effect, zero = three(r.at_effect), three(r.at_zero)
    return f"| `{r.claim.id}` | {kind} | {r.units} | {r.claim.source} | {effect} | {zero} | {design} |"


HEADER = (
    "| claim | kind | units | effect from | this design, at the effect: P(supported) / P(not supported) / "
    "P(undecided) | at zero effect | fewest trials deciding it with ≥ 0.8 (its runs, run-steps, GPU-hours) |\n"
    "|---|---|---|---|---|---|---|"
)


def majority(table: list[Row], n_claims: int) -> tuple[int, bool]:
    reached = sum(1 for r in table if r.at_effect is not None and decided(r.at_effect) >= POWER)
    return reached, reached > n_claims / 2


def decisive_counts(table: list[Row]) -> str:
    """Claims deciding with >= POWER at each T of TRIALS, every study at T trials."""
    counts = {t: sum(1 for r in table if t in r.by_trials and decided(r.by_trials[t]) >= POWER) for t in TRIALS}
    return ", ".join(f"T = {t}: {n}" for t, n in counts.items())


def render(name: str, design: Config, reps: int, seed: int) -> str:
    paper = PAPER_OF_PRESET[name]
    table = rows(design, paper, reps, seed)
    reached, yes = majority(table, len(table))
    lines = [
        f"**`{name}.yaml`** (seed {paper}; its Holm family here: {family_size(design, paper)} unit tests): "
        f"{reached} of {len(table)} claims reach a verdict with probability ≥ {POWER} on this preset's design "
        f"({'a majority' if yes else 'not a majority'}).",
        "",
        HEADER,
        *(row_text(r) for r in table),
        "",
        f"Claims deciding with probability ≥ {POWER}, every study at T trials (T below the preset's keeps the "
        f"preset's): {decisive_counts(table)}.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.prospective", description=__doc__)
    parser.add_argument("--presets", nargs="+", default=list(PAPER_OF_PRESET))
    parser.add_argument("--reps", type=int, default=1000, help="simulated reports per unit and design")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"<!-- {now}: python -m tools.prospective {shlex.join(sys.argv[1:] if argv is None else argv)} -->")
    print(
        f"<!-- components: trial SD {comp.TRIAL_SD:.4f}; example SD "
        + ", ".join(f"{t} {c.example_sd:.3f}" for t, c in comp.MEASURED.items())
        + f"; GPU-hours: {gpu_label()} -->"
    )
    for name in args.presets:
        design = load_preset(PRESETS / f"{name}.yaml")
        print()
        print(render(name, design, args.reps, args.seed))


if __name__ == "__main__":
    main()
