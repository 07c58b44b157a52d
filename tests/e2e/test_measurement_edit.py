"""An edit to the CKA code retrains nothing through a real `dvc repro`: the finetune stage
reruns (its code changed), keeps every finished run, and calls their CKA stale; the
fingerprint is the training recipe's alone (src/train/run.py RECIPE)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from src.artefacts.run_result import RunResult, stage_measurement_code
from tests.support import REPO, finetune_workspace, result_files, stage_command, tiny_params


def test_an_edit_to_the_cka_code_retrains_nothing_in_dvc_repro(tmp_path, tiny_model_dir, tiny_task_dir):
    study = {"scheme": "progressive", "tasks": ["rt_sentiment"], "sizes": [40], "ks": [0, 3], "trials": 1}
    root = finetune_workspace(tmp_path / "repo", tiny_task_dir, tiny_params(study, workers=1, cka=True))
    for folder in ("src", "stages"):  # the stage runs this copy of the code, which the test edits
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    stage = {
        "cmd": " ".join(["python", *stage_command(tiny_model_dir)[1:]]),
        "deps": ["src", "stages"],
        "outs": [{"out": {"persist": True}}],
    }
    (root / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"finetune": stage}}))
    env = dict(
        os.environ,
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        PYTHONPATH=str(root),
        DVC_NO_ANALYTICS="1",
        OMP_NUM_THREADS="1",
        TQDM_DISABLE="1",
    )

    def repro() -> str:
        run = subprocess.run(
            [sys.executable, "-m", "dvc", "repro"], cwd=root, env=env, capture_output=True, text=True, timeout=600
        )
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        return run.stdout

    subprocess.run([sys.executable, "-m", "dvc", "init", "--no-scm", "-q"], cwd=root, env=env, check=True)
    first = repro()
    assert first.count(": ok {") == 2, first
    trained = {name: path.read_text() for name, path in result_files(root / "out").items()}

    cka = root / "src/measures/cka.py"
    cka.write_text(cka.read_text().replace("import numpy as np", "import numpy as np\n\nEPSILON = 1e-12", 1))
    second = repro()
    assert "Running stage 'finetune'" in second and ": ok {" not in second, second
    assert second.count("its cka made by older code, stale") == 2, second
    assert {name: path.read_text() for name, path in result_files(root / "out").items()} == trained
    code = stage_measurement_code(root / "out")
    assert all(RunResult(**json.loads(text)).stale_measurements(code) == ["cka"] for text in trained.values())
