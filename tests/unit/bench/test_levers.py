"""bench/levers.py on the CPU with a tiny model: every lever's row is measured and written, and the
CKA row's two formulas agree (the device script runs the same module on a lent GPU)."""

import json

from bench import levers
from tests.support import REPO


def test_each_lever_row_is_measured_and_written(tmp_path):
    out = tmp_path / "levers.json"
    before = REPO / "src" / "train" / "stacked.py"  # any stacked.py: the before row's code path
    argv = ["--shape", "tiny", "--tasks", "sst2", "--widths", "64", "--packs", "2", "--before-stacked", str(before)]
    result = levers.main([*argv, "--out", str(out)])
    assert json.loads(out.read_text()) == result
    [cka] = result["cka_per_layer"]
    assert cka["n"] == levers.EVAL_EXAMPLES["sst2"] and cka["relative_difference"] < 1e-12
    assert cka["gram_s"] > 0 and cka["feature_s"] > 0
    assert [r["step"] for r in result["optimizer"]] == ["fused", "written out"]
    assert result["norms"][0]["matrices"] == 6 * 2  # the tiny model: 2 layers of 6 sublayer matrices
    assert [r["batch"] for r in result["eval"]] == [32, 256]
    assert result["checkpoint"][0]["bytes"] > 0 and result["device"].startswith("CPU")
