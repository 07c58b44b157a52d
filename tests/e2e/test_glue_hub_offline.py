"""GLUE from the Hugging Face hub (data.glue_dir empty), end to end without the network: `datasets`' own cache
holds a small fixture of the hub dataset nyu-mll/glue (its config names, columns and features, ClassLabel names
included, and its train / validation / test splits with the test labels hidden as -1), written by a `datasets`
builder to the path a hub download writes (<cache>/nyu-mll___glue/<config>/0.0.0/<hash>/), and the data stage
(`python -m stages.build_data`, a fresh interpreter) reads it under HF_HUB_OFFLINE=1 through
src/tasks/glue.py's hub branch, `datasets.load_dataset` included: nothing is patched. The live hub is not
exercised here; a config missing from the cache is refused in one line naming the cache."""

import json
import subprocess
import sys

import datasets
import pandas as pd
import pytest
import yaml

from src.tasks.glue import GLUE_TASKS, HF_DATASET
from tests.support import WORDS, build_scratch_repo, dvc_out, grid_params, stage_env

# each config's label names on the hub (its dataset card); None: STS-B's float score
LABEL_NAMES = {
    "sst2": ["negative", "positive"],
    "cola": ["unacceptable", "acceptable"],
    "mrpc": ["not_equivalent", "equivalent"],
    "qnli": ["entailment", "not_entailment"],
    "rte": ["entailment", "not_entailment"],
    "wnli": ["not_entailment", "entailment"],
    "stsb": None,
}
SPLITS = {"train": 24, "validation": 12, "test": 6}
CACHED = ("sst2", "qnli", "stsb")  # one sentence; a pair with entailment = 0; a regression


def features(config: str) -> datasets.Features:
    names = LABEL_NAMES[config]
    label = datasets.Value("float32") if names is None else datasets.ClassLabel(names=names)
    texts = {field: datasets.Value("string") for field in GLUE_TASKS[config].text_fields}
    return datasets.Features({**texts, "label": label, "idx": datasets.Value("int32")})


def rows(config: str, split: str) -> list[dict]:
    """Sentences of the tiny tokenizer's words; labels alternate (scores step by 0.5), -1 on the hidden test split."""
    out = []
    for i in range(SPLITS[split]):
        label = -1 if split == "test" else (i % 5 * 0.5 if LABEL_NAMES[config] is None else i % 2)
        texts = {
            field: " ".join(WORDS[(i + 5 * f + j) % len(WORDS)] for j in range(4 + i % 3))
            for f, field in enumerate(GLUE_TASKS[config].text_fields)
        }
        out.append(texts | {"label": label, "idx": i})
    return out


class HubGlue(datasets.GeneratorBasedBuilder):
    """Writes one config's splits where and how `load_dataset(HF_DATASET, config)` caches a download."""

    def __init__(self, config: str, **kwargs):
        self.glue_config = config
        super().__init__(dataset_name="glue", repo_id=HF_DATASET, config_name=config, hash="fixture", **kwargs)

    def _info(self):
        return datasets.DatasetInfo(features=features(self.glue_config))

    def _split_generators(self, dl_manager):
        return [datasets.SplitGenerator(name=split, gen_kwargs={"split": split}) for split in SPLITS]

    def _generate_examples(self, split):
        yield from enumerate(rows(self.glue_config, split))


@pytest.fixture(scope="module")
def hub_cache(tmp_path_factory):
    cache = tmp_path_factory.mktemp("hf_datasets_cache")
    for config in CACHED:
        HubGlue(config, cache_dir=str(cache)).download_and_prepare()
    return cache


def offline(cache) -> dict:
    """Offline: `cache` only; the endpoint a closed local port, so a request that slipped through would fail."""
    return {"HF_HUB_OFFLINE": "1", "HF_DATASETS_CACHE": str(cache), "HF_ENDPOINT": "http://127.0.0.1:9"}


def data_stage(root, cache, tasks: list[str], model) -> subprocess.CompletedProcess:
    """The data stage in `root` on `tasks`, GLUE from the hub (data.glue_dir empty), offline, on `cache`."""
    params = grid_params()
    params.update(task=tasks[0], k=3)  # the tiny model has 3 layers
    params["data"].update(tasks=tasks, glue_dir=None)
    params["model"]["max_length"] = 64  # the tiny model's positions
    params["probe"]["tasks"] = [tasks[0]]
    params["studies"] = {
        "progressive": {"scheme": "progressive", "tasks": [tasks[0]], "sizes": [8], "ks": [0, 3], "trials": 3}
    }
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return subprocess.run(
        [sys.executable, "-m", "stages.build_data", "--model", str(model), "--out", "tasks"],
        cwd=root,
        env=stage_env() | offline(cache),
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_data_stage_reads_glue_from_the_hubs_cache_with_no_folder_and_no_network(
    tmp_path, hub_cache, tiny_model_dir
):
    run = data_stage(tmp_path, hub_cache, list(CACHED), tiny_model_dir)
    assert run.returncode == 0, run.stderr[-3000:]
    for config in CACHED:
        info = json.loads((tmp_path / "tasks" / config / "info.json").read_text())
        assert (info["train_examples"], info["eval_examples"]) == (SPLITS["train"], SPLITS["validation"])
        assert info["note"].startswith(f"GLUE {config} from the Hugging Face hub; eval = dev"), info["note"]
        columns = [*GLUE_TASKS[config].text_fields, "label"]
        for split, source in (("train", "train"), ("eval", "validation")):  # GLUE's dev is the eval split
            written = pd.read_csv(tmp_path / "tasks" / config / f"{split}.tsv", sep="\t", keep_default_na=False)
            expected = pd.DataFrame(rows(config, source))[columns]  # the label ids as the hub numbers them
            pd.testing.assert_frame_equal(written[columns], expected, check_dtype=False)


def test_a_config_missing_from_the_cache_offline_is_refused_in_one_line(tmp_path, hub_cache, tiny_model_dir):
    run = data_stage(tmp_path, hub_cache, ["sst2", "cola"], tiny_model_dir)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr[-3000:]
    errors = [line for line in run.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [
        f"error: could not load {HF_DATASET}/cola: offline mode is on (HF_HUB_OFFLINE or HF_DATASETS_OFFLINE) and "
        f"it is not in the datasets cache {hub_cache}; load it once online, or set a local GLUE folder "
        "(data.glue_dir, original GLUE TSV layout) or use the embedded offline tasks"
    ], run.stderr[-3000:]


@pytest.mark.slow  # every stage of a tiny grid through `dvc repro`, a fresh interpreter each: minutes here
def test_dvc_repro_trains_and_reports_a_glue_task_from_the_hubs_cache(tmp_path, hub_cache, tiny_model_dir):
    params = grid_params()
    params.update(task="sst2", size=8, k=3, trials=1)  # the tiny model has 3 layers
    params["model"].update(name=str(tiny_model_dir), max_length=32)
    params["data"].update(tasks=["sst2"], glue_dir=None)
    params["train"].update(epochs=1, small_epochs=1, workers=1, threads=1)
    params["probe"].update(epochs=1, tasks=["sst2"])
    params["studies"] = {
        "progressive": {"scheme": "progressive", "tasks": ["sst2"], "sizes": [8], "ks": [0, 3], "trials": 1}
    }
    build_scratch_repo(tmp_path, params)
    dvc_out(tmp_path, "repro", env=offline(hub_cache))
    info = json.loads((tmp_path / "data/tasks/sst2/info.json").read_text())
    assert info["note"].startswith("GLUE sst2 from the Hugging Face hub") and info["eval_examples"] == 12
    runs = pd.read_csv(tmp_path / "metrics/runs.csv")
    assert (set(runs["task"]), len(runs), set(runs["status"])) == ({"sst2"}, 2, {"ok"})
    assert (tmp_path / "metrics/report.md").exists()
