"""The runs table's conditions: each row read back as the Condition that ran it (from the results table in
memory and from runs.csv), and `plain` as Condition.is_plain decides it."""

from dataclasses import replace

import pandas as pd

from src.artefacts.evidence import EvidenceTables, condition_of, plain
from src.conditions.condition import Condition
from src.results.tables import results_table
from tests.support import stub_result

L = 4
BASE = Condition("sst2", 80, 1, 2)
CONDITIONS = [
    replace(BASE, k=2),
    replace(BASE, k=2, epochs=6),
    replace(BASE, k=0, lr_multiplier=5.0),
    replace(BASE, k=0, keep_layernorm=True),
    replace(BASE, k=L, intermediate_task="wnli+qnli", intermediate_size="full", intermediate_epochs=1),
    replace(BASE, k=L, intermediate_task="wnli", intermediate_size=16),
    replace(BASE, scheme="remove", removal="listed", removed=(1, 2)),
    replace(BASE, scheme="head", layer=1, head_index=3),
    replace(BASE, scheme="block_preserve", layer=2, window=2, streams=(("subset", 0), ("reinit", 1))),
]


def runs_table() -> pd.DataFrame:
    results = [stub_result(c.as_dict(), scores={"accuracy": 0.8}) for c in CONDITIONS]
    return results_table(results, "study", L)


def test_a_rows_condition_is_the_condition_that_ran_it_but_its_seed_streams(tmp_path):
    table = runs_table()
    empty = pd.DataFrame({"task": []})
    EvidenceTables(table, empty, empty, empty).write(tmp_path)
    read = EvidenceTables.read(tmp_path).runs
    for rows in (table, read):
        assert [condition_of(row) for row in rows.to_dict("records")] == [replace(c, streams=()) for c in CONDITIONS]


def test_plain_rows_are_those_of_conditions_condition_calls_plain(config):
    table = pd.concat([runs_table()] * 2, ignore_index=True)
    found = plain(table, replace(config.train, epochs=2), ["task", "size", "slug", "trial"])
    assert found["slug"].tolist() == [c.slug for c in CONDITIONS if c.is_plain(2)]
    assert found["slug"].tolist() == ["k2_e2", "remove_1_2_e2", "layer1_head3_e2", "block_preserve2-3_e2"]
