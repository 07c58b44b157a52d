"""The studies' designs as presets (presets/*.yaml): each validates with the code that validates
params.yaml, offline, against bert-base's limits; each holds its study's design as the seeds state
it; and `dvc repro` of a preset here, without the hub, is refused in one line before any compute.

bench/cost.py projecting from the Tamkin et al. preset is tested in tests/unit/bench/test_cost.py.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bench.cost import BERT_BASE_LIMITS, load_preset
from src.conditions.studies import all_study_conditions
from src.params.load import read_params, validate
from tests.support import DEFAULT_MODEL, REPO, build_scratch_repo, exp_run_params, run_stage_in_process

PRESETS = REPO / "presets"
SQUAD = PRESETS / "huang2021_squad.yaml"
GLUE_PRESETS = sorted(p for p in PRESETS.glob("*.yaml") if p != SQUAD)
# GLUE train-set sizes (the official files; ../shared/glue/PROVENANCE.tsv lists the same counts)
GLUE_TRAIN = {"sst2": 67_349, "qnli": 104_743, "cola": 8_551, "mrpc": 3_668, "rte": 2_490, "wnli": 635, "stsb": 5_749}


def test_there_is_a_preset_per_study_design():
    assert [p.stem for p in GLUE_PRESETS] == [
        "gpu_first",  # not a study's design: a first GPU run, a part of tamkin2020's
        "huang2021",
        "huang2021_decisive",
        "singh_giovanardi",
        "tamkin2020",
    ]


@pytest.mark.parametrize("preset", GLUE_PRESETS, ids=lambda p: p.stem)
def test_each_preset_validates_offline_as_params_yaml_does(preset):
    config = load_preset(preset)
    assert config.model.name.startswith("bert-base-")  # the studies' model, from the hub
    assert config.data.glue_dir is None  # GLUE from the hub; -S data.glue_dir=... for a local copy
    for study in config.studies.values():  # every size fits its task's GLUE train set
        assert all(size <= GLUE_TRAIN[task] for task in study.tasks for size in study.sizes_of(task))


def test_the_squad_preset_validates():
    config = validate(read_params(SQUAD), BERT_BASE_LIMITS)
    assert config.studies["progressive"].tasks == ("squad_v2",) and config.model.max_length == 384


def test_singh_giovanardi_runs_1_10_and_100_percent():
    study = load_preset(PRESETS / "singh_giovanardi.yaml").studies["progressive"]
    for task in ("sst2", "qnli"):  # 4.3.1: 100%, 10%, 1%
        assert {round(GLUE_TRAIN[task] * f) for f in (0.01, 0.1, 1)} <= set(study.sizes_of(task))
    assert round(GLUE_TRAIN["qnli"] * 0.006) in study.sizes_of("qnli")  # 6.1.3: 0.6% of QNLI = 1% of SST-2
    assert study.sizes_of("cola") == (GLUE_TRAIN["cola"],)
    assert study.ks == tuple(range(13))


def test_huang_runs_full_training_sets_and_each_intermediate_task_on_its_full_set():
    config = load_preset(PRESETS / "huang2021.yaml")
    for name, study in config.studies.items():
        assert all(study.sizes_of(task) == (GLUE_TRAIN[task],) for task in study.tasks), name
    reported = all_study_conditions(config, 12)
    sequential = [c for c in reported["sequential"] if c.intermediate_task]
    # 5.5: 4 final tasks x the 3 other tasks first, each trained 3 epochs on its whole set
    assert len({(c.task, c.intermediate_task) for c in sequential}) == 4 * 3
    assert {(c.intermediate_size, c.intermediate_epochs, c.epochs) for c in sequential} == {("full", 3, 3)}
    chains = {c.intermediate_task for c in reported["chains"] if c.intermediate_task}
    assert chains == {"wnli+rte", "wnli+mrpc", "wnli+cola"}


def test_huang_reinitialises_every_head_of_layers_1_2_11_and_12_on_cola_and_stsb():
    # seed 004 4.3.1: "each attention head at a time for layers 1, 2, 11, and 12", 96 runs
    # (12 heads x 4 layers x 2 tasks); its Figs. 5-8 show those rows
    heads = [
        c for c in all_study_conditions(load_preset(PRESETS / "huang2021.yaml"), 12)["heads"] if c.scheme == "head"
    ]
    assert {(c.task, c.layer, c.head_index) for c in heads if c.trial == 0} == {
        (task, layer, head) for task in ("cola", "stsb") for layer in (1, 2, 11, 12) for head in range(12)
    }


def run_dvc(repo: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_HUB_OFFLINE="1", PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run([sys.executable, "-m", "dvc", *args], cwd=repo, env=env, capture_output=True, text=True)


@pytest.mark.slow  # a dvc repro per preset (15 s); test_prepare_model refuses an unreachable hub model the same way
def test_dvc_repro_of_each_preset_without_the_hub_is_refused_in_one_line(tmp_path):
    # The documented command, with each preset as params.yaml in turn: `validate` passes,
    # `prepare_model` refuses the hub model in one line, and nothing downstream (data, finetune) runs.
    build_scratch_repo(tmp_path, {})
    for preset in GLUE_PRESETS:
        (tmp_path / "params.yaml").write_text(preset.read_text())
        run = run_dvc(tmp_path, "repro")
        assert run.returncode != 0, preset.stem
        errors = [line for line in run.stderr.splitlines() if line.startswith("error: ")]
        name = load_preset(preset).model.name
        assert len(errors) == 1, (preset.stem, run.stderr[-2000:])
        assert errors[0].startswith(f"error: params.yaml: model.name = '{name}': could not load it"), errors
        assert "Traceback" not in run.stderr + run.stdout
        assert not (tmp_path / "data" / "tasks").exists() and not (tmp_path / "data" / "runs").exists()


def first_command(text: str) -> str:
    return text.split("```bash\n")[1].split("```")[0]


# the overrides of presets/tamkin2020.yaml that the timed first GPU run used (docs/gpu/first_run.sh)
TIMED_FIRST_GPU_RUN = (
    "dvc exp run -n sst2-500 -S train.pack=16 -S size=500 -S 'data.tasks=[sst2]' -S 'probe.tasks=[sst2]' "
    "-S 'studies.progressive.tasks=[sst2]' -S '~studies.progressive.sizes' -S '+studies.progressive.sizes=[500]' "
    "-S studies.progressive.trials=3 -S '~studies.blocks' -S '~studies.single_layer' -S '~studies.permutation' "
    "-S '~studies.lr_multiplier' -S '~studies.keep_layernorm' -S '~studies.epochs' -S '~studies.epochs_small'"
)


def test_readmes_first_gpu_run_is_one_preset_the_timed_progressive_study_on_sst2_at_500(tmp_path):
    text = (REPO / "README.md").read_text().split("**A first GPU run**")[1]
    assert first_command(text).strip() == "cp presets/gpu_first.yaml params.yaml && dvc exp run -n sst2-500"
    config = load_preset(PRESETS / "gpu_first.yaml")
    assert config == load_preset(exp_run_params(TIMED_FIRST_GPU_RUN, PRESETS / "tamkin2020.yaml", tmp_path))
    (study,) = config.studies.values()
    assert (study.name, study.tasks, study.sizes, study.trials, list(study.ks)) == (
        "progressive",
        ("sst2",),
        (500,),
        3,
        list(range(13)),
    )
    assert config.data.tasks == ("sst2",) and config.train.pack == 16 and config.train.epochs_for(500) == 5
    assert len(all_study_conditions(config, 12)["progressive"]) == 39  # the runs whose time README projects


@pytest.mark.parametrize(
    "doc, marker, glue_dir, carved",
    [
        ("README.md", "**The paper's tasks with the embedded model**", None, ()),  # GLUE from the hub
        ("docs/paper_tasks.md", "# The paper's tasks", "../shared/glue", ("qnli",)),  # the measured run's copy
    ],
)
def test_the_paper_tasks_command_runs_the_papers_design_from_the_shipped_params(
    doc, marker, glue_dir, carved, tmp_path
):
    """The command starts from the shipped params.yaml (the default), so each -S must apply to it: a `~` of a study
    the default does not have, or a key of one without `+`, stops `dvc exp run` before anything runs."""
    command = first_command((REPO / doc).read_text().split(marker)[1])
    config = validate(read_params(exp_run_params(command, REPO / "params.yaml", tmp_path)), DEFAULT_MODEL)
    assert (config.data.glue_dir, config.data.glue_carve_train_from_dev) == (glue_dir, carved)
    assert config.train.epochs_for(500) == 5  # the paper's 5 at 500
    assert set(config.studies) == {"progressive", "epochs", "sequential"}
    progressive, sequential = config.studies["progressive"], config.studies["sequential"]
    assert progressive.tasks == ("sst2", "cola", "qnli") and progressive.sizes == (500, 1000)
    assert sequential.tasks == ("mrpc", "rte") and sequential.intermediate_tasks == (("mrpc",), ("rte",))
    assert sequential.sizes == (500,)


def test_readmes_workflow_commands_apply_to_the_shipped_params(tmp_path):
    """Each `dvc exp run -S` of README's workflow block validates on the shipped params.yaml, and each stage it names
    is one the default's dvc.yaml has (finetune@<study> of a study the default runs)."""
    blocks = re.findall(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    block = next(b for b in blocks if b.startswith("dvc exp run -S k=3"))
    default = read_params(REPO / "params.yaml")
    commands = [line.split("  #")[0] for line in block.splitlines() if line.startswith("dvc ")]
    assert len(commands) >= 5
    for command in commands:
        for stage in re.findall(r"finetune@(\w+)", command):
            assert stage in default["studies"], command
        if command.startswith("dvc exp run") and "--queue" not in command:
            config = validate(read_params(exp_run_params(command, REPO / "params.yaml", tmp_path)), DEFAULT_MODEL)
            assert config.studies.keys() >= default["studies"].keys(), command


@pytest.mark.parametrize("preset", [*GLUE_PRESETS, SQUAD], ids=lambda p: p.stem)
def test_each_preset_validates_on_the_12_layer_embedded_model_before_it_is_downloaded(preset, tmp_path):
    """`-S model.name=embedded-base` on a preset: validate reads the model's depth and heads from
    src/model/embedded.py's pins, so the preset's ks, layers and heads (written for BERT-base's 12
    layers and 12 heads) are checked in a fresh clone, before the 470 MB download."""
    params = yaml.safe_load(preset.read_text())
    params["model"]["name"] = "embedded-base"
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run = run_stage_in_process(tmp_path, "stages.validate", "--model", "no_model_yet", "--out", "valid.txt")
    assert run.returncode == 0 and (tmp_path / "valid.txt").exists(), run.stderr[-3000:]
    assert "hub id" not in run.stderr  # the embedded model's shape is known: nothing left unchecked


def test_a_k_beyond_the_12_layer_embedded_model_is_refused_before_it_is_downloaded(tmp_path):
    params = yaml.safe_load((PRESETS / "tamkin2020.yaml").read_text())
    params["model"]["name"] = "embedded-base"
    params["k"] = 13
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run = run_stage_in_process(tmp_path, "stages.validate", "--model", "no_model_yet", "--out", "valid.txt")
    assert run.returncode == 1 and not (tmp_path / "valid.txt").exists()
    assert "params.yaml: k = 13 is invalid; allowed: 0..12" in run.stderr, run.stderr[-3000:]
