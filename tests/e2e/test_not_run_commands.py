"""Every "not run" row of the default's report names the command that adds its runs. Applied to params.yaml as
`dvc exp run -S` applies it, with every run of the design it gives faked as finished (as
test_preset_reports.py fakes them, here on the default's 6-layer model), each claim of the row must get a verdict
other than "not run": a command that trains for hours and leaves its claim not run is a result silently missing.
Before this test, epochs_beyond_3_do_not_help_with_plenty_of_data's command asked for 6-epoch runs at 256 examples
and no plain run there to pair them with. One aggregate and report per distinct command: `-m slow`.
"""

import re
import shutil

import pytest
import yaml

from src.artefacts.base_model import BaseModelRecord
from src.params.load import read_params, validate
from src.tasks import splits
from tests.e2e import test_preset_reports as fake
from tests.support import REPO, exp_run_params

LAYERS, HEADS = 6, 12  # the embedded MiniLM's shape: the commands name its ks
NOT_RUN_ROW = re.compile(r"^- \*\*Not run\*\*: (.*): needs `(dvc exp run [^`]*)`$", re.M)


def verdicts_of(params: dict, root, tiny_task_dir) -> tuple[dict[str, str], str]:
    """({claim id: verdict}, report.md) of `params`' design, every run faked as finished."""
    config = validate(params)
    (root / "data/model").mkdir(parents=True)
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    BaseModelRecord(params["model"]["name"], "test", "bert", LAYERS, 384, HEADS, "fake", 512).write(root / "data/model")
    for task in config.data.tasks:  # the toy task's eval labels stand in for each task's
        (root / "data/tasks" / task).mkdir(parents=True)
        shutil.copy(tiny_task_dir / "tokens.npz", root / "data/tasks" / task / "tokens.npz")
    eval_labels = splits.load_split(tiny_task_dir / "tokens.npz", "eval").example_labels
    (root / "data/runs/probe").mkdir(parents=True)
    fake.write_runs(root, config, eval_labels)
    fake.write_probes(root, config, eval_labels)
    aggregate = fake.run_stage(
        root,
        "stages.aggregate",
        *("--runs", "data/runs/studies", "--probe", "data/runs/probe", "--model", "data/model"),
        *("--tasks", "data/tasks", "--tables", "metrics", "--figures", "plots/figures"),
        *("--plot-data", "plots/progressive.csv", "--predictions", "data/predictions.npz"),
    )
    assert aggregate.returncode == 0, aggregate.stderr[-3000:]
    report = fake.run_stage(
        root,
        "stages.report",
        *("--tables", "metrics", "--predictions", "data/predictions.npz", "--figures", "plots/figures"),
        *("--model", "data/model", "--markdown", "metrics/report.md", "--html", "metrics/report.html"),
        *("--agreement", "metrics/agreement.csv", "--verdicts", "metrics/verdicts.json"),
    )
    assert report.returncode == 0, report.stderr[-3000:]
    # one printed line per claim: "<verdict>  <claim id>[  (decided by …)]"
    lines = [line.split("  (decided by")[0].rsplit(None, 1) for line in report.stdout.splitlines() if line.strip()]
    return {claim: verdict.strip() for verdict, claim in lines}, (root / "metrics/report.md").read_text()


@pytest.mark.slow
def test_every_not_run_command_of_the_default_gives_its_claims_their_runs(monkeypatch, tmp_path, tiny_task_dir):
    monkeypatch.setattr(fake, "LAYERS", LAYERS)
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["report"]["bootstrap_resamples"] = 100  # the least the schema takes: the verdicts are not the point
    before, markdown = verdicts_of(params, tmp_path / "default", tiny_task_dir)
    rows = {}  # command: its claims (two rows, of two studies, can name one command)
    for claims, command in NOT_RUN_ROW.findall(markdown):
        rows.setdefault(command, []).extend(re.findall(r"\[(\w+)\]", claims))
    assert sorted(c for claims in rows.values() for c in claims) == sorted(
        c for c, v in before.items() if v == "not run"
    )
    still_not_run = {}
    for i, (command, claims) in enumerate(rows.items()):
        folder = tmp_path / f"command{i}"
        folder.mkdir()
        after = read_params(exp_run_params(command.replace("<folder with the GLUE TSVs>", str(folder)), params, folder))
        verdicts, _ = verdicts_of(after, folder, tiny_task_dir)
        if missing := [claim for claim in claims if verdicts[claim] == "not run"]:
            still_not_run[command] = missing
    assert still_not_run == {}
