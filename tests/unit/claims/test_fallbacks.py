"""Every fallback a run or a probe took (said in a `note:` line when taken, recorded in its result) is counted
in the report's first screen: from the results through the aggregate's tables (runs.csv, probe.csv, read back
from CSV) to the evidence and its one line."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from src.artefacts.probe_result import ProbeLayer, ProbeResult
from src.conditions.condition import Condition
from src.model.finetuner import POOLER_REINITIALISED
from src.probing.features import CLS_READ_RAW
from src.results.aggregate import probe_table
from src.results.tables import results_table
from tests.fake_evidence import RISING, Builder, L, probe_evidence, render
from tests.support import stub_result


def through_csv(table: pd.DataFrame, path) -> pd.DataFrame:
    table.to_csv(path, index=False)
    return pd.read_csv(path)


def probe_of(task: str, fallbacks: list[str]) -> ProbeResult:
    layers = [ProbeLayer(layer, 0, {"accuracy": 0.7}, {"accuracy": 0.5}, None) for layer in range(L + 1)]
    return ProbeResult(task, "accuracy", "cls", 100, 50, [0], [], None, layers, fallbacks)


def test_the_tables_carry_each_fallback_and_the_report_counts_them(tmp_path):
    conditions = [Condition("sst2", 500, trial, 3, k=k, pooling="cls") for trial in range(3) for k in (0, L)]
    results = [
        stub_result(c.as_dict(), scores={"accuracy": 0.8}, fallbacks=[POOLER_REINITIALISED] if c.k else [])
        for c in conditions
    ]
    runs = through_csv(results_table(results, "progressive", L), tmp_path / "runs.csv")
    for task, fallbacks in (("sst2", [CLS_READ_RAW]), ("cola", [])):
        probe_of(task, fallbacks).write(tmp_path / f"{task}.json")
    probe = through_csv(probe_table(tmp_path, ["sst2", "cola"]), tmp_path / "probe.csv")

    builder = Builder().curve(RISING, trials=3)
    cells = {(int(k), int(trial)): cell for k, trial, cell in zip(runs["k"], runs["trial"], runs["fallbacks"])}
    for row in builder.rows:  # the runs table's cells, as read back, on the claims' evidence of the same runs
        row["fallbacks"] = cells.get((row["k"], row["trial"]))
    counted = {(POOLER_REINITIALISED, "run"): 3, (CLS_READ_RAW, "probed task"): 1}
    assert builder.evidence(probe=probe).fallback_counts() == counted

    # rendered where the probe has its predictions (sst2's, as probe_evidence plants them)
    evidence = probe_evidence(builder, [0.6, 0.7, 0.7, 0.8, 0.8], seeds=1)
    evidence = replace(
        evidence, probe=evidence.probe.assign(fallbacks=probe.loc[probe["task"] == "sst2", "fallbacks"].iloc[0])
    )
    assert evidence.fallback_counts() == counted
    first_screen = render(evidence, tmp_path).split("\n## ")[0]
    assert (
        "**Fallbacks** (each said in a `note:` line when taken; docs/bad_input.md): pooler reinitialised in 3 runs; "
        "raw [CLS] read in 1 probed task." in first_screen
    )


def test_a_report_whose_runs_took_no_fallback_has_no_fallbacks_line(tmp_path):
    evidence = Builder().curve(RISING, trials=3).evidence()
    assert evidence.fallback_counts() == {}
    assert "**Fallbacks**" not in render(evidence, tmp_path)
