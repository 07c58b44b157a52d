"""bench/price.py, the grid's price: packs as the finetune stages make them, a pack's steps at the K
still live, and every line's source labelled. Token and dev-set counts from bench/cost.json (no GLUE)."""

import json

import pytest

from bench import cost, price
from tests.support import REPO

STATS = json.loads((REPO / "bench" / "cost.json").read_text())["token_stats"]
GPU = json.loads((REPO / "bench" / "gpu.json").read_text())


@pytest.fixture(scope="module")
def grid():
    design = cost.load_preset()
    return design, cost.grid_runs(design)


def test_the_grid_packs_as_each_stage_packs_its_runs(grid):
    design, runs = grid
    packed = price.grid_packs(design, runs, STATS, 16)
    largest = {name: max(len(p) for p in packs) for name, packs in packed.items()}
    # a pack holds runs of one (task, size, trial) within one stage: 13 ks, 11 single layers, the 18
    # windows split 9 + 9 at 16, 3 epoch counts
    assert largest == {
        "progressive": 13,
        "blocks": 9,
        "single_layer": 11,
        "permutation": 3,
        "lr_multiplier": 12,
        "keep_layernorm": 12,
        "epochs": 3,
        "epochs_small": 3,
    }
    assert sum(len(p) for packs in packed.values() for p in packs) == sum(len(r["trained"]) for r in runs.values())
    across = price.grid_packs(design, runs, STATS, 16, across_trials=True)
    assert max(len(p) for p in across["epochs"]) > 3  # several trials in one pack: the lever not built


def test_a_pack_steps_at_the_k_still_live():
    times = {1: 10.0, 8: 80.0, 16: 100.0}
    assert price.interpolate(times, 12) == pytest.approx(90.0)
    assert price.interpolate(times, 32) == pytest.approx(140.0)  # beyond the last: its slope
    # three members of 10, 10 and 30 steps: 10 steps at K = 3, then 20 at K = 1 (ms -> s)
    k3 = price.interpolate(times, 3)
    assert price.pack_seconds([30, 10, 10], times) == pytest.approx((10 * k3 + 20 * 10.0) / 1e3)
    # a saving per member-step comes off each live member
    assert price.pack_seconds([10, 10], times, 1.0) == pytest.approx(10 * (price.interpolate(times, 2) - 2) / 1e3)


def test_every_line_and_lever_names_its_source(grid):
    design, runs = grid
    levers = {
        "device": "CPU (test)",
        "cka_per_layer": [
            {"task": t, "width": 768, "gram_s": 2.0, "feature_s": 0.5, "pretrained_side_s": 0.3} for t in STATS
        ],
        "checkpoint": [{"bytes": 1e9, "save_s": 1.0}],
    }
    priced = price.price(design, runs, STATS, GPU, levers, 16)
    assert all(("MEASURED" in r["source"]) or ("DERIVED" in r["source"]) for r in priced["lines"])
    assert all("DERIVED" in r["source"] for r in priced["remaining_levers"])
    cka = next(r for r in priced["lines"] if r["item"] == "CKA")
    assert cka["after_gpu_h"] < cka["before_gpu_h"] / 3
    assert priced["after_gpu_h"] == pytest.approx(sum(r["after_gpu_h"] for r in priced["lines"]))
    assert priced["after_gpu_h"] < priced["before_gpu_h"]
