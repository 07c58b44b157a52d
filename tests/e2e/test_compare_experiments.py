"""README's commands that compare experiments, run as printed on a repository with two experiments: each
prints whole in an 80-column terminal (no column cut to "…", no line wider) and shows what the two changed.
A copy of the real dvc.yaml with placeholder outputs (the placeholder_template fixture) and small real
metrics files; the experiments are `dvc exp save`d, so nothing trains. About a minute on 2 loaded cores."""

import json
import shlex

import pytest
from dvc.utils.hydra import apply_overrides

from tests.support import REPO, commit, copy_repo, dvc, ok

NAMES = {"<a>": "k3", "<b>": "k5", "main": "HEAD"}  # README's placeholders and branch, as in this repository


def readme_commands() -> list[list[str]]:
    """The `dvc` commands of README's compare block, without their comments."""
    text = (REPO / "README.md").read_text()
    block = text.split("Comparing experiments")[1].split("```bash\n")[1].split("```")[0]
    commands = [shlex.split(line, comments=True) for line in block.splitlines()]
    return [[NAMES.get(word, word) for word in words] for words in commands if words[0] == "dvc"]


def write_metrics(root, k: int, mean: float, supported: int) -> None:
    metrics = {
        "focus": {"task": "sst2", "size": 64, "k": k, "metric": "accuracy", "mean": mean, "ci95": 0.1, "n": 3},
        "headline": {"full": 0.8, "scratch": 0.6, "full_minus_scratch": 0.2},
        "verdicts": {"supported": supported, "contradicted": 2, "inconclusive": 14, "no_verdict": 9, "not_run": 5},
    }
    for name, values in metrics.items():
        (root / "metrics" / f"{name}.json").write_text(json.dumps(values))


@pytest.fixture(scope="module")
def two_experiments(tmp_path_factory, placeholder_template):
    root = copy_repo(placeholder_template[0], tmp_path_factory.mktemp("compare"))
    write_metrics(root, 6, 0.69, 5)
    commit(root, "the baseline's metrics")
    for name, k, mean, supported in (("k3", 3, 0.71, 6), ("k5", 5, 0.74, 7)):
        apply_overrides(root / "params.yaml", [f"k={k}"])  # what `dvc exp run -S k=...` writes
        write_metrics(root, k, mean, supported)
        ok(dvc(root, "exp", "save", "-n", name))
    return root


@pytest.mark.parametrize("command", readme_commands(), ids=" ".join)
def test_readmes_compare_commands_print_whole_at_80_columns(two_experiments, command, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = ok(dvc(two_experiments, *command[1:]))
    assert "…" not in out and max(map(len, out.splitlines())) <= 80, out
    if command[1] == "plots":
        return
    assert "0.71" in out or "0.74" in out, out  # the focus condition's score
    if command[1] == "exp":  # the param the experiments changed, and the verdict tally it moved
        assert {"k", "params.yaml:k"} & set(out.split()) and "supported" in out and "0.74" in out, out
