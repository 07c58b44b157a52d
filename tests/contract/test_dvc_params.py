"""params.yaml through DVC itself: `dvc exp run -S` sweeps as DVC writes them, keys DVC
lets through, the validate stage that stops `dvc repro` before any output is removed, and
the params each stage reads against those its dvc.yaml stage declares.

Two scratch git + DVC repositories, so nothing trains: one whose dvc.yaml is the real validate
stage alone, with a params.yaml written from the test grid, and copies of the real pipeline whose
outputs are placeholders recorded with `dvc commit` (a finished pipeline of the real shape: the
placeholder_template fixture). A `dvc exp run` costs seconds of DVC and interpreter start-up, so only the cases
that need DVC itself (the one-line diff, a refusal that keeps every output) run it; the sweeps and
refused keys go through DVC's own override function and the validate stage's entry point in
process, as do the stages that train nothing, on the tiny model.
"""

import json
import shlex
import subprocess
from importlib.util import find_spec
from pathlib import Path

import pytest
import yaml

from src.params.load import read_params
from tests.support import (
    COMMENTS,
    REPO,
    build_scratch_repo,
    commit,
    copy_repo,
    dvc,
    every_output,
    exp_run_params,
    grid_params,
    grid_params_yaml,
    ok,
    ran_stages,
    run_stage_in_process,
    with_change,
)


def restore(root: Path) -> None:
    """Back to the last commit (an experiment run in the workspace leaves its changes there)."""
    subprocess.run(["git", "reset", "-q", "--hard"], cwd=root, check=True)  # DVC stages params.yaml in git's index


# --- the validate stage alone: sweeps as DVC writes them --------------------------------------------


@pytest.fixture(scope="module")
def validate_repo(tmp_path_factory):
    real = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    root = build_scratch_repo(
        tmp_path_factory.mktemp("validate_only"),
        grid_params_yaml(),
        stages={"validate": real["validate"]},
        message=None,
    )
    ok(dvc(root, "repro"))
    commit(root, "validated")
    return root


@pytest.mark.parametrize(
    "override, key, value",
    [
        pytest.param("train.lr=3e-5", ("train", "lr"), 3e-5, id="lr-scientific"),  # DVC writes 3e-05
        pytest.param("train.lr=0.00003", ("train", "lr"), 3e-5, id="lr-decimal"),
        pytest.param("probe.lr=3e-5", ("probe", "lr"), 3e-5, id="probe-lr-scientific"),
    ],
)
def test_a_float_sweep_in_either_notation_passes_validation(override, key, value, tmp_path):
    # params.yaml as `dvc exp run -S` writes it (DVC's CLI parser and its override function, in process), then
    # the validate stage's entry point; a real `dvc exp run` of that stage is the one-line test below.
    start = tmp_path / "start.yaml"
    start.write_text(grid_params_yaml())
    params = exp_run_params(f"dvc exp run -S {override}", start, tmp_path)
    run = run_stage_in_process(tmp_path, "stages.validate", "--model", "data/model", "--out", "valid.txt")
    assert run.returncode == 0 and (tmp_path / "valid.txt").exists(), run.stderr[-3000:]
    section, name = key
    assert read_params(params)[section][name] == value


def test_exp_run_with_one_value_changes_one_line_of_params_yaml(validate_repo):
    try:
        ok(dvc(validate_repo, "exp", "run", "-S", "k=3"))
        diff = subprocess.run(
            ["git", "diff", "--numstat", "--", "params.yaml"],
            cwd=validate_repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert diff.split()[:2] == ["1", "1"], subprocess.run(
            ["git", "diff", "--", "params.yaml"], cwd=validate_repo, capture_output=True, text=True
        ).stdout
        comments = lambda text: [line.split("#", 1)[1] for line in text.splitlines() if "#" in line]  # noqa: E731
        assert comments((validate_repo / "params.yaml").read_text()) == comments(grid_params_yaml())
        assert len(comments(grid_params_yaml())) == 1 + len(COMMENTS)
    finally:
        restore(validate_repo)


@pytest.mark.parametrize(
    "override, message",
    [
        pytest.param(
            "+train.max_steps=10",
            "params.yaml: train.max_steps = 10 is invalid; allowed: the keys known here:",
            id="new-key-in-a-section",
        ),
        pytest.param(
            "+tirals=5", "params.yaml: tirals = 5 is invalid; allowed: the keys known here:", id="new-top-level-key"
        ),
    ],
)
def test_exp_run_with_a_key_or_value_the_schema_refuses_fails_in_validate(override, message, tmp_path):
    # DVC's override function writes the new key (in process, as in the float sweeps); the validate stage refuses it.
    # Through `dvc exp run` itself a refusal is test_a_bad_value_stops_dvc_in_validate_and_every_output_stays.
    start = tmp_path / "start.yaml"
    start.write_text(grid_params_yaml())
    exp_run_params(f"dvc exp run -S {override}", start, tmp_path)
    run = run_stage_in_process(tmp_path, "stages.validate", "--model", "data/model", "--out", "valid.txt")
    assert run.returncode == 1 and f"error: {message}" in run.stderr, run.stderr[-3000:]
    assert "Traceback" not in run.stderr + run.stdout and not (tmp_path / "valid.txt").exists()


# --- the real pipeline, finished with placeholders: a refusal removes nothing ----------------------


BACKENDS = (("slurm", "submitit"), ("ray", "ray"))  # executor.kind and the package its backend imports
PAST_THE_MODEL = "params.yaml: k = 7 is invalid; allowed: 0..6 (the model has 6 encoder layers)"


def missing_backend(kind: str, module: str) -> str:
    return (
        f"params.yaml: executor.kind = {kind!r} needs the Python package {module}, which is not installed: "
        "pip install -r requirements-cluster.txt"
    )


@pytest.mark.parametrize(
    "kind, module",
    [
        pytest.param(kind, module, marks=pytest.mark.skipif(find_spec(module) is not None, reason=f"{module} here"))
        for kind, module in BACKENDS
    ],
)
def test_an_executor_whose_package_is_missing_is_refused_in_one_line(kind, module):
    from src.core.errors import UserError
    from src.params.load import check_backend_installed, validate

    config = validate(with_change("executor.kind", kind))
    with pytest.raises(UserError) as error:
        check_backend_installed(config.executor)
    assert str(error.value) == missing_backend(kind, module)


@pytest.mark.parametrize(
    "command, override, message",
    [
        pytest.param(
            "exp run",
            "trials=0",
            "params.yaml: trials = 0 is invalid; allowed: an integer >= 1",
            id="exp-run-focus-trials-zero",
        ),
        # A value checked against the prepared model, and each missing backend, through DVC with `-m slow`
        # (a `dvc exp run` each); their messages through the validate stage in process below.
        pytest.param(
            "exp run",
            "k=7",
            PAST_THE_MODEL,
            id="exp-run-focus-k-beyond-the-prepared-model",
            marks=pytest.mark.slow,
        ),
        *(
            pytest.param(
                "exp run",
                f"executor.kind={kind}",
                missing_backend(kind, module),
                id=f"exp-run-{kind}-without-{module}",
                marks=[
                    pytest.mark.skipif(find_spec(module) is not None, reason=f"{module} is installed here"),
                    pytest.mark.slow,
                ],
            )
            for kind, module in BACKENDS
        ),
        # `dvc repro`: `dvc exp run` first checks out the workspace, which unlinks the outputs
        # of stages gone from dvc.yaml (an empty matrix has none) before any stage runs.
        pytest.param(
            "repro",
            "probe.tasks=[]",
            "params.yaml: probe.tasks = [] is invalid; allowed: a non-empty list",
            id="repro-empty-probe-tasks",
        ),
    ],
)
def test_a_bad_value_stops_dvc_in_validate_and_every_output_stays(
    placeholder_template, command, override, message, tmp_path
):
    from dvc.utils.hydra import apply_overrides

    template, outs = placeholder_template
    # a copy per case: a failed `dvc exp run` leaves experiment state that the next one in
    # the same repo would pick up (its -S values applied again)
    root = copy_repo(template, tmp_path)
    before = every_output(root, outs)
    assert "metrics/focus.json" in before and len(before) == len(outs), sorted(set(outs) - set(before))
    try:
        if command == "repro":
            apply_overrides(root / "params.yaml", [override])  # what `-S` writes
            run = dvc(root, "repro")
        else:
            run = dvc(root, "exp", "run", "-S", override)
        assert run.returncode != 0 and f"error: {message}" in run.stderr + run.stdout, (
            run.stdout[-3000:] + run.stderr[-3000:]
        )
        assert ran_stages(run.stdout) == ["Running stage 'validate':"], run.stdout[-3000:]
        assert every_output(root, outs) == before
    finally:
        restore(root)


def test_a_focus_k_beyond_the_prepared_model_stops_the_validate_stage(placeholder_template, tmp_path):
    # the limits of the prepared model params.yaml names (data/model: a placeholder of 6 layers)
    from dvc.utils.hydra import apply_overrides

    root = copy_repo(placeholder_template[0], tmp_path)
    apply_overrides(root / "params.yaml", ["k=7"])  # what `dvc exp run -S k=7` writes
    command = shlex.split(yaml.safe_load((root / "dvc.yaml").read_text())["stages"]["validate"]["cmd"])
    run = run_stage_in_process(root, *command[2:])
    assert run.returncode == 1 and f"error: {PAST_THE_MODEL}" in run.stderr, run.stderr[-3000:]


# --- the params a stage reads: each one within its dvc.yaml stage's `params:` ---------------------

# The stages that train nothing, run on the tiny model (tests/e2e/test_pipeline.py records the others).
UNTRAINED = ("validate", "prepare_model", "data", "features", "probe")


def declared_params(stage: dict) -> list[str]:
    """A dvc.yaml stage's `params:` as dotted keys; "" for the whole of params.yaml."""
    return ["" if isinstance(p, dict) and "params.yaml" in p else p for p in stage.get("params", [])]


def covered(key: str, declared: list[str]) -> bool:
    """A declared key covers itself and, if a section, every key in it ("" covers everything)."""
    return any(d == "" or key == d or key.startswith(f"{d}.") for d in declared)


def test_each_untrained_stage_reads_only_the_params_it_declares(tmp_path, tiny_model_dir, monkeypatch):
    params = grid_params()
    params.update(task="sst2", size=8, k=3, trials=1)
    params["model"].update(name=str(tiny_model_dir), max_length=32)
    params["data"].update(tasks=["sst2"], glue_dir="glue", max_unk_rate=0.5)  # the tiny vocabulary has no numbers
    params["probe"].update(tasks=["sst2"], epochs=2)
    params["studies"] = {
        "progressive": {"scheme": "progressive", "tasks": ["sst2"], "sizes": [8], "ks": [0, 3], "trials": 1}
    }
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    (tmp_path / "glue" / "SST-2").mkdir(parents=True)
    for name, rows in (("train.tsv", 40), ("dev.tsv", 20)):
        lines = [f"{'a good film' if i % 2 else 'a bad film'} {i}\t{i % 2}" for i in range(rows)]
        (tmp_path / "glue" / "SST-2" / name).write_text("sentence\tlabel\n" + "\n".join(lines) + "\n")

    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    reads = tmp_path / "reads"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFER_RECORD_PARAMS", str(reads))
    module_of = {}
    for name in UNTRAINED:  # in pipeline order: each stage's outputs are the next one's inputs
        command = shlex.split(stages[name]["cmd"].replace("${item.task}", "sst2"))
        assert command[:2] == ["python", "-m"], command
        module_of[command[2].split(".")[-1]] = name
        run = run_stage_in_process(tmp_path, *command[2:])  # the stage's entry point, which records the keys it read
        assert run.returncode == 0, f"{name}: {run.stderr[-3000:]}"

    read = {}
    for record in map(json.loads, (p.read_text() for p in reads.glob("*.json"))):
        read[module_of[record["argv"][0]]] = record["read"]
    assert set(read) == set(UNTRAINED)
    for name in UNTRAINED:
        declared = declared_params(stages[name])
        assert [key for key in read[name] if not covered(key, declared)] == [], (
            f"{name} reads undeclared params (it read {read[name]})"
        )
        # ... and nothing it declares goes unread (validate declares the whole file: it checks it all)
        unread = [d for d in declared if d and not any(covered(key, [d]) for key in read[name])]
        assert unread == [], f"dvc.yaml stage {name} declares params it never reads (it read {read[name]})"


def test_reads_are_the_stages_own_not_the_checks_even_across_a_second_validation(params):
    from src.config.schema import forget_keys_read, keys_read
    from src.params.load import validate

    forget_keys_read()  # a stage process starts with none; this one has run other tests
    config = validate(params)
    assert keys_read() == set()  # validating reads every key; none of that is the stage's
    name = config.model.name  # noqa: F841 - prepare_model reads this, then validates against the model
    validate(params)
    assert keys_read() == {"model.name"}
