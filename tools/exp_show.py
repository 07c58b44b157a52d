"""`dvc exp show` narrowed to what tells experiments apart, so that it reads whole at 120 columns.

Plain `dvc exp show` has a column for every param of params.yaml (78 leaves, all shown, since
DVC lists every param of a params file a stage reads), every metric (16) and every stage
dependency's hash (73), and collapses columns from the right: at 80, 120 or 200 columns it
prints only "…". No DVC setting narrows it by default, and the flags that do take two regexes,
so this runs DVC's own table with them and prints the command it runs:

    python -m tools.exp_show [dvc exp show options]       (-n 3, -A, --csv, --sort-by mean, ...)

It keeps the experiments, the params they change (`--only-changed`), the focus condition's mean
and CI, the full model's and scratch's scores and the count of supported claims. It drops every
column named by a path (the dependencies' hashes, and focus.json's copies of the params task,
size and k), `Created`, and the other metrics (`dvc metrics show` prints them all).
"""

from __future__ import annotations

import shlex
import subprocess
import sys

# metric keys of metrics/focus.json, headline.json and verdicts.json, each either kept or hidden
# (tests/contract/test_exp_show_columns.py checks that every key their writers write is one of them)
KEPT_METRICS = ("mean", "ci95", "full", "scratch", "supported")
HIDDEN_METRICS = (
    "metric",
    "n",
    "diverged",
    "ci95_note",
    "full_minus_scratch",
    "contradicted",
    "inconclusive",
    "no_verdict",
    "not_run",
)


def command(options: list[str]) -> list[list[str]]:
    """The `dvc exp show` command of this view, then `options`, one flag and its value a line (DVC
    matches each regex from a column name's start)."""
    return [
        ["dvc", "exp", "show", "--only-changed"],
        ["--keep", f"({'|'.join(KEPT_METRICS)})$"],
        ["--drop", f".*/|Created$|({'|'.join(HIDDEN_METRICS)})$"],
        *([options] if options else []),
    ]


def main(argv: list[str] | None = None) -> int:
    lines = command(sys.argv[1:] if argv is None else argv)
    print("$ " + " \\\n  ".join(map(shlex.join, lines)), file=sys.stderr)  # as a shell takes it, within 120 columns
    return subprocess.call([sys.executable, "-m", *(word for line in lines for word in line)])


if __name__ == "__main__":
    sys.exit(main())
