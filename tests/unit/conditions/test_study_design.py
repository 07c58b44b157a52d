"""A study's exact design: sizes per task, trials per size, and sequential finetuning with an
intermediate size of its own and chains of intermediate tasks.

Config shapes are checked through `validate` (one line naming key, value and what is allowed),
the conditions through `study_conditions`, and a chain through a tiny real run of `run_condition`.
"""

import json
import shutil

import pytest

from src.conditions.condition import Condition
from src.conditions.studies import all_study_conditions, trained_conditions
from src.core.errors import ParamsError
from src.params.load import read_params, validate
from src.train.run import run_condition
from src.train.schedule import check_sizes, run_settings
from tests.support import DEFAULT_MODEL, grid_params, with_change

L = 6
TASKS = ["rt_sentiment", "subjectivity", "tweet_sentiment"]


def design_params(**study) -> dict:
    """The test grid with one progressive study of `study`'s keys and three tasks."""
    params = grid_params()
    params["data"]["tasks"] = TASKS
    params["train"].update(epochs=3, small_size=64, small_epochs=5)
    params["studies"] = {
        "progressive": {"scheme": "progressive", "ks": [0, 6], "tasks": TASKS, "sizes": [64], "trials": 2, **study}
    }
    return params


def conditions_of(**study) -> list[Condition]:
    return all_study_conditions(validate(design_params(**study), DEFAULT_MODEL), L)["progressive"]


def refusal(params: dict) -> str:
    with pytest.raises(ParamsError) as error:
        validate(params, DEFAULT_MODEL)
    return str(error.value)


# --- sizes per task and trials per size (Tamkin et al. App. B) ----------------------------------


def test_sizes_per_task_and_trials_per_size_give_the_papers_grid():
    conditions = conditions_of(
        sizes={"rt_sentiment": [64, 128, 256], "subjectivity": [64, 128], "tweet_sentiment": [64, 128, 256]},
        trials={64: 5, 128: 3, 256: 2},
    )
    counts = {}
    for c in conditions:
        counts[(c.task, c.size)] = counts.get((c.task, c.size), 0) + 1
    per_k = {key: n // 2 for key, n in counts.items()}  # k = 0 and k = 6
    assert per_k == {
        ("rt_sentiment", 64): 5,
        ("rt_sentiment", 128): 3,
        ("rt_sentiment", 256): 2,
        ("subjectivity", 64): 5,
        ("subjectivity", 128): 3,  # no 256 for this task (as CoLA has no 50k)
        ("tweet_sentiment", 64): 5,
        ("tweet_sentiment", 128): 3,
        ("tweet_sentiment", 256): 2,
    }
    assert {c.epochs for c in conditions if c.size == 64} == {5}  # small_size 64: small_epochs
    assert {c.epochs for c in conditions if c.size > 64} == {3}


def test_a_list_and_an_int_still_mean_every_task_and_every_size():
    plain = conditions_of(sizes=[64, 128], trials=2)
    mapped = conditions_of(sizes={t: [64, 128] for t in TASKS}, trials={64: 2, 128: 2})
    assert plain == mapped and len(plain) == 3 * 2 * 2 * 2


@pytest.mark.parametrize(
    "key, value, message",
    [
        (
            "sizes",
            {"rt_sentiment": [64], "subjectivity": [64]},
            "studies.progressive.sizes = {'rt_sentiment': [64], 'subjectivity': [64]} is invalid; allowed: a list of "
            "sizes for every task, or a mapping with one list of sizes per task of the study "
            "['rt_sentiment', 'subjectivity', 'tweet_sentiment']",
        ),
        (
            "sizes",
            {"rt_sentiment": [64], "subjectivity": [64], "tweet_sentiment": [64, -1]},
            "studies.progressive.sizes.tweet_sentiment[1] = -1 is invalid; allowed: an integer >= 1",
        ),
        (
            "trials",
            {64: 5, "default": 3},
            "studies.progressive.trials = {64: 5, 'default': 3} is invalid; allowed: an integer >= 1, or a mapping "
            "with one count per size of the study [64]",
        ),
        (
            "trials",
            {64: 0},
            "studies.progressive.trials.64 = 0 is invalid; allowed: an integer >= 1",
        ),
        (
            "intermediate_tasks",
            [["rt_sentiment", "cola"]],
            "studies.progressive.intermediate_tasks[0][1] = 'cola' is invalid; allowed: tasks listed in data.tasks "
            "['rt_sentiment', 'subjectivity', 'tweet_sentiment']",
        ),
        (
            "intermediate_tasks",
            [["subjectivity"], "subjectivity"],
            "studies.progressive.intermediate_tasks = [['subjectivity'], 'subjectivity'] is invalid; allowed: a list "
            "without duplicate chains",
        ),
        (
            "intermediate_size",
            "all",
            "studies.progressive.intermediate_size = 'all' is invalid; allowed: an integer >= 1 | full (the whole set)",
        ),
    ],
)
def test_bad_study_designs_are_refused_in_one_line(key, value, message):
    params = design_params(**({"intermediate_tasks": ["subjectivity"]} if key == "intermediate_size" else {}))
    text = refusal(with_change(f"studies.progressive.{key}", value, params))
    assert text == f"params.yaml: {message}" and "\n" not in text


def test_dvc_exp_run_set_param_writes_the_new_shapes_as_the_validator_reads_them(tmp_path):
    # dvc.utils.hydra.apply_overrides is what `dvc exp run -S` does to params.yaml (Hydra's
    # override grammar: {k: v} is a mapping, [[a, b], c] a list of lists). A list cannot be
    # merged into a mapping: `~key` first, then `+key={...}`.
    from dvc.utils.hydra import apply_overrides
    from dvc.utils.serialize import dumps_yaml

    path = tmp_path / "params.yaml"
    path.write_text(dumps_yaml(design_params()))
    apply_overrides(
        path,
        [
            "~studies.progressive.sizes",
            "+studies.progressive.sizes={rt_sentiment: [64, 128], subjectivity: [64], tweet_sentiment: [64]}",
            "studies.progressive.trials={64: 3, 128: 2}",
            "+studies.progressive.intermediate_tasks=[[subjectivity, tweet_sentiment], rt_sentiment]",
            "+studies.progressive.intermediate_size=full",
        ],
    )
    study = validate(read_params(path), DEFAULT_MODEL).studies["progressive"]
    assert study.sizes_of("rt_sentiment") == (64, 128) and study.sizes_of("subjectivity") == (64,)
    assert (study.trials_at(64), study.trials_at(128)) == (3, 2)
    assert study.intermediate_tasks == (("subjectivity", "tweet_sentiment"), ("rt_sentiment",))
    assert study.intermediate_size == "full"
    apply_overrides(path, ["studies.progressive.trials=4"])  # back to one count for every size
    assert validate(read_params(path), DEFAULT_MODEL).studies["progressive"].trials == 4


def test_trials_per_size_must_name_every_size_of_the_study():
    params = design_params(sizes={"rt_sentiment": [64, 128], "subjectivity": [64], "tweet_sentiment": [64]})
    assert refusal(with_change("studies.progressive.trials", {64: 5}, params)) == (
        "params.yaml: studies.progressive.trials = {64: 5} is invalid; allowed: an integer >= 1, or a mapping with "
        "one count per size of the study [64, 128]"
    )


def test_an_intermediate_size_needs_intermediate_tasks():
    assert refusal(design_params(intermediate_size="full")) == (
        "params.yaml: studies.progressive.intermediate_size = 'full' is invalid; allowed: only in a study with "
        "intermediate_tasks"
    )


# --- sequential: an intermediate size of its own, and chains (Huang et al. 4.1, 6.1, 7.1) -------


def test_a_flat_list_keeps_todays_conditions_and_slugs():
    conditions = conditions_of(ks=[6], intermediate_tasks=["rt_sentiment", "subjectivity"], trials=1)
    sequential = sorted((c.task, c.slug) for c in conditions if c.intermediate_task)
    assert sequential == [
        ("rt_sentiment", "k6_after_subjectivity_e5"),
        ("subjectivity", "k6_after_rt_sentiment_e5"),
        ("tweet_sentiment", "k6_after_rt_sentiment_e5"),
        ("tweet_sentiment", "k6_after_subjectivity_e5"),
    ]
    assert all(c.intermediate_size is None and c.intermediate_epochs is None for c in conditions)
    # an intermediate size equal to the final one, at the same epochs, is the same run as before
    assert conditions_of(
        ks=[6], intermediate_tasks=["rt_sentiment", "subjectivity"], trials=1, intermediate_size=64
    ) == (conditions)


def test_chains_and_an_intermediate_size_of_their_own():
    conditions = conditions_of(
        ks=[6],
        trials=1,
        sizes=[64],
        tasks=["rt_sentiment"],
        intermediate_tasks=[["subjectivity", "tweet_sentiment"], "subjectivity", ["rt_sentiment"]],
        intermediate_size="full",
    )
    sequential = sorted(c.slug for c in conditions if c.intermediate_task)
    # the chain of the final task alone is its diagonal (direct finetuning), as a plain task is
    assert sequential == ["k6_after_subjectivity+tweet_sentiment_nfull_e3_e5", "k6_after_subjectivity_nfull_e3_e5"]
    chain = next(c for c in conditions if c.intermediate_task == "subjectivity+tweet_sentiment")
    assert chain.intermediate_steps == ("subjectivity", "tweet_sentiment")
    assert chain.steps({"subjectivity": 900, "tweet_sentiment": 700}.get) == [
        ("subjectivity", 900, 3),
        ("tweet_sentiment", 700, 3),
        ("rt_sentiment", 64, 5),
    ]
    assert chain.examples_trained({"subjectivity": 900, "tweet_sentiment": 700}.get) == 900 * 3 + 700 * 3 + 64 * 5
    # the direct run is the reference (`baseline`) of each sequential condition, reported once
    assert sum(1 for c in conditions if not c.intermediate_task) == 1
    numbered = conditions_of(
        ks=[6], trials=1, tasks=["rt_sentiment"], intermediate_tasks=["subjectivity"], intermediate_size=500
    )
    assert {c.slug for c in numbered if c.intermediate_task} == {"k6_after_subjectivity_n500_e3_e5"}
    runs = {c.training_run(L) for c in numbered}
    assert len(runs) == len(numbered)  # another intermediate size is another training run


def test_a_chain_that_ends_in_the_final_task_is_skipped_as_its_diagonal_is():
    # [tweet_sentiment, rt_sentiment] before rt_sentiment would train rt_sentiment twice on its
    # subset: skipped for that final task, as a plain rt_sentiment entry is (direct finetuning)
    conditions = conditions_of(
        ks=[6],
        trials=1,
        tasks=["rt_sentiment", "subjectivity"],
        intermediate_tasks=[["tweet_sentiment", "rt_sentiment"], ["tweet_sentiment", "subjectivity"]],
    )
    assert sorted((c.task, c.intermediate_task or "direct") for c in conditions) == [
        ("rt_sentiment", "direct"),
        ("rt_sentiment", "tweet_sentiment+subjectivity"),
        ("subjectivity", "direct"),
        ("subjectivity", "tweet_sentiment+rt_sentiment"),
    ]
    # a study of that chain alone on that task is the direct run
    alone = conditions_of(
        ks=[6], trials=1, tasks=["rt_sentiment"], intermediate_tasks=[["tweet_sentiment", "rt_sentiment"]]
    )
    assert [(c.task, c.intermediate_task) for c in alone] == [("rt_sentiment", None)]


def test_an_intermediate_size_larger_than_its_pool_is_refused_before_training(tmp_path):
    for task, n in (("rt_sentiment", 200), ("subjectivity", 100)):
        (tmp_path / task).mkdir()
        (tmp_path / task / "info.json").write_text(json.dumps({"train_examples": n}))
    too_big = Condition("rt_sentiment", 64, 0, 5, k=6, intermediate_task="subjectivity", intermediate_size=150)
    with pytest.raises(ParamsError, match="asks for 150 training examples of task 'subjectivity', which has 100"):
        check_sizes([too_big], tmp_path, "studies.sequential")
    full = Condition("rt_sentiment", 64, 0, 5, k=6, intermediate_task="subjectivity", intermediate_size="full")
    check_sizes([full], tmp_path, "studies.sequential")


@pytest.fixture(scope="module")
def three_tasks(tmp_path_factory, tiny_tasks_root):
    """The toy task under three task names (two intermediate steps and the final task)."""
    root = tmp_path_factory.mktemp("three_tasks")
    for task in TASKS:
        shutil.copytree(tiny_tasks_root / "rt_sentiment", root / task)
    return root


def test_a_chain_trains_every_step_with_a_fresh_head_and_records_it(tiny_model_dir, three_tasks):
    condition = Condition(
        "rt_sentiment",
        32,
        0,
        2,
        k=3,
        intermediate_task="subjectivity+tweet_sentiment",
        intermediate_size="full",
        intermediate_epochs=1,
    )
    params = grid_params()
    params["data"]["tasks"] = TASKS
    result = run_condition(condition, run_settings(validate(params), condition.epochs), tiny_model_dir, three_tasks)
    assert result.ok
    steps = [{k: s[k] for k in ("task", "size", "epochs", "status", "steps")} for s in result.intermediate_steps]
    assert steps == [  # the toy pool has 200 examples: `full` is 200, batch 8, one epoch
        {"task": "subjectivity", "size": 200, "epochs": 1, "status": "ok", "steps": 25},
        {"task": "tweet_sentiment", "size": 200, "epochs": 1, "status": "ok", "steps": 25},
    ]
    assert all(len(s["epoch_losses"]) == 1 for s in result.intermediate_steps)
    assert result.steps == 4 * 2 and len(result.epoch_losses) == 2  # the final task: 32 examples, 2 epochs
    heads = [e for e in result.reinitialised if e["name"] == "classifier.weight"]
    assert len(heads) == 3  # one fresh head per step: two intermediate, one final
    assert set(result.seeds) >= {"order_intermediate", "dropout_intermediate_1", "subset_intermediate_1"}


def test_the_papers_grid_trains_each_shared_run_once():
    config = validate(
        design_params(
            sizes={"rt_sentiment": [64, 128], "subjectivity": [64], "tweet_sentiment": [64]}, trials={64: 3, 128: 2}
        ),
        DEFAULT_MODEL,
    )
    reported = all_study_conditions(config, L)
    assert len(trained_conditions(reported, "progressive", L)) == len(reported["progressive"]) == 2 * (3 * 3 + 2)
