"""The finished runs whose measurements are stale, and refreshing them.

A measurement made by other code than its finetune stage last ran (src/train/reuse.py) is made
again on the run's kept weights where they were kept; without them the result is kept as it is,
stale, and never trains again on its own. This lists those results (each study's folder under
--runs, as the report counts them: run_result.stale_results); with --delete it
deletes them, so that the next `dvc repro` trains them again, with today's measurement code:

    python -m tools.stale_runs --delete && dvc repro
"""

from __future__ import annotations

import argparse
from pathlib import Path

from src.artefacts.run_result import stale_results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=Path, default=Path("data/runs/studies"), help="the finetune stages' outputs")
    parser.add_argument("--delete", action="store_true", help="delete them, so that `dvc repro` trains them again")
    args = parser.parse_args()
    found = stale_results(args.runs)
    for path, stale in found:
        print(f"{path}: {', '.join(stale)} stale")
        if args.delete:
            for suffix in (".json", ".ckpt", ".log"):
                path.with_suffix(suffix).unlink(missing_ok=True)
    print(f"{len(found)} results with stale measurements{', deleted' if args.delete and found else ''}")


if __name__ == "__main__":
    main()
