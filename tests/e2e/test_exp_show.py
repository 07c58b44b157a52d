"""README's `python -m tools.exp_show`, run as printed on a repository with experiments: it prints whole in a
120-column terminal (no column cut to "…", no line wider), names each experiment, the params it changed
and the focus condition's score, and its columns are exactly those (so the view cannot grow back). The
real dvc.yaml with placeholder outputs (the placeholder_template fixture), metrics files written by their
writers' keys; experiments `dvc exp save`d, so nothing trains. One changes a study's trials and its runs,
so the dependencies' hashes change too (the columns plain `dvc exp show --only-changed` would add)."""

import json
import os
import subprocess
import sys

import pytest
from dvc.utils.hydra import apply_overrides

from src.artefacts.focus import FocusSummary
from stages.report import verdict_tally
from tests.support import REPO, commit, copy_repo, dvc, ok

VIEW = ["Experiment", "rev", "typ", "mean", "ci95", "full", "scratch", "supported"]  # and the params changed


def write_metrics(root, k: int, mean: float, full: float, supported: int) -> None:
    FocusSummary("sst2", 16, k, "accuracy", mean, 0.0123456, 2, 0).write(root / "metrics/focus.json")
    headline = {"full": full, "scratch": 0.6, "full_minus_scratch": round(full - 0.6, 5)}
    (root / "metrics/headline.json").write_text(json.dumps(headline))
    (root / "metrics/verdicts.json").write_text(json.dumps({**verdict_tally([]), "supported": supported}))


@pytest.fixture(scope="module")
def experiments(tmp_path_factory, placeholder_template):
    root = copy_repo(placeholder_template[0], tmp_path_factory.mktemp("exp_show"))
    write_metrics(root, 3, 0.69, 0.8, 5)  # the template's focus condition: k = 3, its study 1 trial
    commit(root, "the baseline's metrics")
    for name, overrides, mean, full, supported in (
        ("k1", ["k=1"], 0.71, 0.8, 5),
        ("trials3", ["k=3", "studies.progressive.trials=3"], 0.7, 0.82, 6),
    ):
        apply_overrides(root / "params.yaml", overrides)  # what `dvc exp run -S ...` writes
        write_metrics(root, 1 if name == "k1" else 3, mean, full, supported)
        if name == "trials3":  # more runs: the finetune stage's output and the tables after it change
            for output in ("data/runs/studies/progressive/placeholder", "metrics/runs.csv", "data/predictions.npz"):
                with open(root / output, "a") as file:
                    file.write("3 trials\n")
        ok(dvc(root, "exp", "save", "-n", name))
    return root


def exp_show(root, *options: str) -> str:
    env = dict(os.environ, COLUMNS="120", PYTHONPATH=str(REPO), DVC_NO_ANALYTICS="1")
    run = subprocess.run(
        [sys.executable, "-m", "tools.exp_show", *options], cwd=root, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0 and run.stderr.startswith("$ dvc exp show --only-changed"), run.stderr
    assert max(map(len, run.stderr.splitlines())) <= 120, run.stderr  # the command it runs, as printed
    return run.stdout


def test_the_view_prints_whole_at_120_columns_with_the_experiments_their_params_and_scores(experiments):
    out = exp_show(experiments)
    assert "…" not in out and max(map(len, out.splitlines())) <= 120, out
    header = out.splitlines()[1].split()
    assert header == [*VIEW[:1], *VIEW[3:], "params.yaml:k", "studies.progressive.trials"], out
    rows = {line.split()[2]: line.split()[3:] for line in out.splitlines() if "── " in line and "[" in line}
    # mean, ci95, full, scratch, supported, then k and the progressive study's trials
    assert rows == {
        "[trials3]": ["0.7", "0.012346", "0.82", "0.6", "6", "3", "3"],
        "[k1]": ["0.71", "0.012346", "0.8", "0.6", "5", "1", "1"],
    }, out


def test_the_views_columns_are_the_kept_metrics_and_the_changed_params(experiments):
    plain = ok(dvc(experiments, "exp", "show", "--csv")).splitlines()[0].split(",")
    view = exp_show(experiments, "--csv").splitlines()[0].split(",")
    assert view == [*VIEW, "params.yaml:k", "studies.progressive.trials"]
    assert len(plain) > 100 and "data/runs/studies" in plain  # every param, metric and dependency
