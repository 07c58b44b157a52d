"""Trial variance split by source (Dodge et al. 2020): each source of a run's randomness has its
own seed stream, and a crossed design pairs every random draw with every training subset."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from src.conditions.condition import SEED_SOURCES, Condition
from src.conditions.studies import all_study_conditions
from src.core.errors import ParamsError
from src.params.load import validate
from src.results.aggregate import variance_components
from src.stats.components import crossed_components
from tests.support import grid_params
from tests.support import train_condition as run

BASE = Condition("rt_sentiment", 48, trial=0, epochs=1, k=1)  # 3-layer tiny model: layers 2-3 reinitialised


def drawn(result) -> dict:
    """What each source decides in a finished run, as the run recorded it."""
    manifest = result.reinitialised
    return {
        "subset": result.train_subset_sha256,
        "reinit": [(e["name"], e["mean"], e["std"]) for e in manifest if not e["name"].startswith("classifier")],
        "head": [(e["name"], e["mean"], e["std"]) for e in manifest if e["name"].startswith("classifier")],
        "order": result.seeds["order"],
        "dropout": result.seeds["dropout"],
    }


def test_each_seed_stream_changes_only_its_own_source(tiny_model_dir, tiny_tasks_root):
    base = run(BASE, tiny_model_dir, tiny_tasks_root)
    assert set(drawn(base)) == set(SEED_SOURCES)
    for source in SEED_SOURCES:
        other = run(replace(BASE, streams=((source, 1),)), tiny_model_dir, tiny_tasks_root)
        before, after = drawn(base), drawn(other)
        assert before[source] != after[source], source
        assert {s: before[s] for s in before if s != source} == {s: after[s] for s in after if s != source}, source
        assert other.epoch_losses != base.epoch_losses, source  # and the draw reaches the training run


def test_the_default_design_keeps_every_stream_on_the_trial():
    condition = replace(BASE, trial=2)
    assert condition.streams == () and all(condition.stream(source) == 2 for source in SEED_SOURCES)


def crossed_params(**design) -> dict:
    params = grid_params()
    params["studies"] = {
        "progressive": params["studies"]["progressive"],
        "crossed": {
            "scheme": "progressive",
            "ks": [0, 3],
            "tasks": ["rt_sentiment"],
            "sizes": [32],
            "trials": 6,
            "seed_design": {"subsets": 3, "seeds": 2, **design},
        },
    }
    return params


def test_a_crossed_design_meets_every_draw_with_every_subset():
    conditions = all_study_conditions(validate(crossed_params()), 6)["crossed"]
    k3 = sorted((c for c in conditions if c.k == 3), key=lambda c: c.trial)
    pairs = [(c.stream("subset"), c.stream("reinit")) for c in k3]
    assert pairs == [(s, d) for s in range(3) for d in range(2)]  # 3 subsets x 2 draws, each once
    assert all(c.stream(source) == c.stream("reinit") for c in k3 for source in SEED_SOURCES[1:])
    full = k3[3].references(6)["full"]  # references are paired by trial: the same subset and draws
    assert full.streams == k3[3].streams and full.k == 6


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"subsets": 2},
            "params.yaml: studies.crossed.trials = 6 is invalid; allowed: subsets x seeds of seed_design = 4",
        ),
        (
            {"seeds": 1},
            "params.yaml: studies.crossed.seed_design = {'subsets': 3, 'seeds': 1} is invalid; allowed: a mapping "
            "{subsets: S, seeds: D} of integers >= 2",
        ),
    ],
)
def test_a_bad_seed_design_is_refused_in_one_line(change, message):
    with pytest.raises(ParamsError) as error:
        validate(crossed_params(**change))
    assert str(error.value) == message


def test_crossed_components_match_a_hand_computed_two_way_table():
    # subsets (rows) x draws (columns): grand mean 4, row means 2 4 6, column means 7/3 17/3.
    # MS_subset = 2 * 8 / 2 = 8, MS_draws = 3 * 50/9 = 50/3, SS_residual = 34 - 16 - 50/3 = 4/3 on 2 df.
    table = [[1, 3], [2, 6], [4, 8]]
    cells = pd.DataFrame(
        [{"subset": s, "draws": d, "value": v} for s, row in enumerate(table) for d, v in enumerate(row)]
    )
    found = crossed_components(cells)
    assert found["ms_subset"] == pytest.approx(8) and found["ms_draws"] == pytest.approx(50 / 3)
    assert found["ms_residual"] == pytest.approx(2 / 3)
    assert found["var_subset"] == pytest.approx((8 - 2 / 3) / 2)  # (MS_subset - MS_residual) / seeds
    assert found["var_draws"] == pytest.approx((50 / 3 - 2 / 3) / 3)  # (MS_draws - MS_residual) / subsets
    assert found["share_draws"] == pytest.approx((16 / 3) / (29 / 3))
    assert found["p_subset"] == pytest.approx(1 / 13)  # F(2, 2) = 12: P(F > f) = 1 / (1 + f)
    assert found["p_draws"] == pytest.approx(stats.f.sf(25, 1, 2))


def test_the_aggregate_splits_a_crossed_studys_spread_by_source():
    config = validate(crossed_params())
    conditions = [c for c in all_study_conditions(config, 6)["crossed"] if c.k == 3]
    rng = np.random.default_rng(0)
    subset_effect, draw_effect = rng.normal(0, 1, 3), rng.normal(0, 0.01, 2)  # the subsets dominate
    runs = pd.DataFrame(
        {
            "task": c.task,
            "size": c.size,
            "slug": c.slug,
            "status": "ok",
            "subset_stream": c.stream("subset"),
            "draws_stream": c.stream("reinit"),
            "value": subset_effect[c.stream("subset")] + draw_effect[c.stream("reinit")] + rng.normal(0, 0.01),
        }
        for c in conditions
    )
    [row] = variance_components(runs).to_dict("records")
    assert row["runs"] == 6 and row["subsets"] == 3 and row["seeds"] == 2
    assert row["share_subset"] > 0.9 and row["share_draws"] < 0.05
    failed = variance_components(runs.assign(status=["ok"] * 5 + ["diverged"]))
    assert failed["share_subset"].isna().all()  # an incomplete table: no components, the row says how many runs
