"""Every "not run" row of the default's report names the command that adds its runs. Applied to params.yaml as
`dvc exp run -S` applies it, with every run of the design it gives faked as finished (tests/support.py
write_finished_design, as for test_preset_reports.py, here on the default's 6-layer model), each claim of the row
must get a verdict other than "not run": a command that trains for hours and leaves its claim not run is a result
silently missing, as one that adds 6-epoch runs at a size where no plain run of the default epochs pairs with them.
One aggregate and report per distinct command (25, about 4 minutes): `-m slow`. Each command reads GLUE from the
hub (no `data.glue_dir`), as docs/glue.md's example does, checked here through DVC's own `-S` parser.
"""

import re

import pytest
import yaml

from src.params.load import read_params, validate
from tests.support import (
    DEFAULT_MODEL,
    REPO,
    aggregate_and_report,
    exp_run_params,
    printed_verdicts,
    write_finished_design,
)

LAYERS = 6  # the embedded MiniLM's (12 heads, as bert-base): the commands name its ks
NOT_RUN_ROW = re.compile(r"^- \*\*Not run\*\*: (.*): needs `(dvc exp run [^`]*)`$", re.M)


def verdicts_of(params: dict, root, tiny_task_dir) -> tuple[dict[str, str], str]:
    """({claim id: verdict}, report.md) of `params`' design, every run faked as finished."""
    write_finished_design(root, params, tiny_task_dir, LAYERS)
    report = aggregate_and_report(root)
    # one printed line per claim: "<verdict>  <claim id>[  (<the planner's plan>)]"
    return printed_verdicts(report.stdout), (root / "metrics/report.md").read_text()


@pytest.mark.slow
def test_every_not_run_command_of_the_default_gives_its_claims_their_runs(tmp_path, tiny_task_dir):
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
        after = read_params(exp_run_params(command, params, folder))
        verdicts, _ = verdicts_of(after, folder, tiny_task_dir)
        if missing := [claim for claim in claims if verdicts[claim] == "not run"]:
            still_not_run[command] = missing
    assert still_not_run == {}


def test_the_glue_example_adds_a_glue_task_from_the_hub_to_the_shipped_params(tmp_path):
    (command,) = re.findall(r"```bash\n(dvc exp run .*?)```", (REPO / "docs/glue.md").read_text(), re.S)
    config = validate(read_params(exp_run_params(command, REPO / "params.yaml", tmp_path)), DEFAULT_MODEL)
    assert config.data.glue_dir is None and "sst2" in config.data.tasks and config.studies["blocks"].tasks == ("sst2",)
