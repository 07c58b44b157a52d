"""Bad model folders through `dvc exp run -S model.name=<folder>`: each is refused in one line
by prepare_model (or the data stage, for a tokenizer that cannot spell the task), and every
output that was there before is still there. Part of the bad-input tests
(unit/params/test_bad_params.py lists the others)."""

import json
import os
import re
import shutil
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import torch

from src.artefacts import base_model as record
from src.artefacts.base_model import BaseModelRecord
from src.core.errors import ModelError
from src.model.export import TOKENIZER_VOCABULARIES, export_base_model
from tests.support import (
    WORDS,
    assert_kept,
    exp_run,
    ok,
    ran_stages,
)

# --- model folders, through `dvc exp run -S model.name=<folder>` ----------------------------------
# One scratch repository holds the real pipeline, finished with placeholders (the placeholder_template
# fixture); each case runs in a copy of it, so a refused model is seen exactly as a user sees it, with
# every output that was there before still there.

TINY_WORDS = ("the", "a")  # the vocabulary of the tokenizer that cannot spell the task's text


def copy_of_tiny_model(folder: Path, tiny_model_dir: Path) -> Path:
    shutil.copytree(tiny_model_dir, folder, ignore=shutil.ignore_patterns(record.FILENAME))
    return folder


def without_tokenizer(folder: Path) -> str:
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        (folder / name).unlink(missing_ok=True)
    return (
        f"{folder} has no tokenizer files (none of {', '.join(TOKENIZER_VOCABULARIES)}): every word would become "
        "[UNK]; save the model's tokenizer into the folder (tokenizer.save_pretrained)"
    )


def tokenizer_of(folder: Path, words: list[str]) -> None:
    from transformers import BertTokenizerFast

    vocab = {token: i for i, token in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words])}
    (folder / "tokenizer.json").unlink()
    BertTokenizerFast(vocab=vocab, do_lower_case=True).save_pretrained(folder)


def with_a_larger_vocabulary(folder: Path) -> str:
    rows = json.loads((folder / "config.json").read_text())["vocab_size"]
    tokenizer_of(folder, [*WORDS, *(f"word{i}" for i in range(10))])
    return (
        f"the tokenizer has {rows + 10} tokens, more than the {rows} embedding rows in {folder}/model.safetensors: "
        f"ids {rows}..{rows + 9} have no embedding; use the tokenizer saved with this model"
    )


def with_special_tokens_only(folder: Path) -> str:
    tokenizer_of(folder, [])
    return (
        "the tokenizer has only its 5 special tokens and no vocabulary: every word would become [UNK]; "
        "use the tokenizer saved with this model"
    )


def with_a_config_that_does_not_fit(folder: Path) -> str:
    config = json.loads((folder / "config.json").read_text())
    rows = config["vocab_size"]
    (folder / "config.json").write_text(json.dumps({**config, "vocab_size": rows + 10}))
    return (
        f"{folder}/model.safetensors does not fit config.json: embeddings.word_embeddings.weight has shape "
        f"[{rows}, 64] where config.json asks for [{rows + 10}, 64] (1 tensor(s) differ)"
    )


def truncated(folder: Path) -> str:
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])  # a download cut short
    return (
        f"{weights} is not a complete safetensors file (Error while deserializing header: incomplete metadata, "
        "file not fully covered): it may be cut short; download or save it again"
    )


def no_model_at_all(folder: Path) -> str:
    for item in folder.iterdir():
        if item.name != "tokenizer.json":
            item.unlink()
    (folder / "notes.txt").write_text("not a model\n")
    return (
        f"{folder} is not a model folder: it has no config.json (a model folder holds config.json, "
        "model.safetensors or pytorch_model.bin, and the tokenizer's files)"
    )


def a_config_without_model_type(folder: Path) -> str:
    (folder / "config.json").write_text(json.dumps({"hidden_size": 64}))
    return f"{folder}/config.json is not a transformers model config (a JSON object with a model_type)"


class RunsCode:
    """Unpickling this runs a command: what a pickle checkpoint can carry."""

    def __reduce__(self):
        return (os.system, ("touch pwned",))


def a_pickle_that_runs_code(folder: Path) -> str:
    from transformers import BertModel

    state = BertModel.from_pretrained(folder).state_dict()
    (folder / "model.safetensors").unlink()
    torch.save({**state, "extra": RunsCode()}, folder / "pytorch_model.bin")
    return (
        f"{folder}/pytorch_model.bin holds more than tensors, so it is not loaded (a pickle can run code on load; "
        "Trying to load unsupported GLOBAL posix.system whose module posix is blocked)"
    )


def a_pickle_of_other_objects(folder: Path) -> str:
    (folder / "model.safetensors").unlink()
    torch.save({"embeddings.word_embeddings.weight": torch.zeros(2, 2), "step": 3}, folder / "pytorch_model.bin")
    return f"{folder}/pytorch_model.bin holds more than tensors: a state dict maps names to tensors only"


# Every bad folder's message is checked through the export in process (the test below); through DVC
# (about 12 s each on a loaded 2-core machine), where the stage must print that message in one line and
# keep every output, the pickle that runs code in the default run and the other kinds with `-m slow`.
THROUGH_DVC_SLOW = [without_tokenizer, with_a_larger_vocabulary, truncated, no_model_at_all]


@pytest.mark.parametrize(
    "make_bad", [*(pytest.param(make, marks=pytest.mark.slow) for make in THROUGH_DVC_SLOW), a_pickle_that_runs_code]
)
def test_a_bad_model_folder_stops_prepare_model_in_one_line_and_every_output_stays(
    placeholder_template, tiny_model_dir, tmp_path, make_bad
):
    folder = copy_of_tiny_model(tmp_path / "model", tiny_model_dir)
    message = f"params.yaml: model.name = {str(folder)!r}: {make_bad(folder)}"
    run, before, root = exp_run(placeholder_template, tmp_path, "-S", f"model.name={folder}", "prepare_model")
    output = run.stdout + run.stderr
    assert run.returncode != 0 and "Traceback" not in output, output[-3000:]
    assert [line for line in output.splitlines() if line.startswith("error: ")] == [f"error: {message}"], output[-3000:]
    assert ran_stages(run.stdout) == ["Running stage 'validate':", "Running stage 'prepare_model':"]
    assert_kept(root, before, ran=("data/model",))
    assert not (root / "pwned").exists() and not (tmp_path / "pwned").exists()


@pytest.mark.parametrize(
    "make_bad",
    [
        *THROUGH_DVC_SLOW,
        with_special_tokens_only,
        with_a_config_that_does_not_fit,
        a_config_without_model_type,
        a_pickle_of_other_objects,
    ],
)
def test_a_bad_model_folder_is_refused_by_the_export_before_anything_is_written(tiny_model_dir, tmp_path, make_bad):
    folder = copy_of_tiny_model(tmp_path / "model", tiny_model_dir)
    message = f"params.yaml: model.name = {str(folder)!r}: {make_bad(folder)}"
    with pytest.raises(ModelError) as error:
        export_base_model(str(folder), tmp_path / "out")
    assert str(error.value) == message
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.slow  # a second model format through prepare_model and data (13 s)
def test_a_checkpoint_with_only_pytorch_model_bin_is_stored_as_safetensors(
    placeholder_template, tiny_model_dir, tmp_path
):
    from safetensors.torch import load_file
    from transformers import BertForPreTraining, BertModel

    # the MultiBERTs layout: a pretraining model's state dict (bert.* and cls.* heads), pickled
    folder = copy_of_tiny_model(tmp_path / "model", tiny_model_dir)
    pretraining = BertForPreTraining(BertModel.from_pretrained(folder).config)
    pretraining.bert.load_state_dict(BertModel.from_pretrained(folder).state_dict())
    (folder / "model.safetensors").unlink()
    torch.save(pretraining.state_dict(), folder / "pytorch_model.bin")

    run, _, root = exp_run(placeholder_template, tmp_path, "-S", f"model.name={folder}", "prepare_model")
    assert ran_stages(ok(run)) == ["Running stage 'validate':", "Running stage 'prepare_model':"]
    stored = root / "data" / "model"
    assert (stored / "model.safetensors").exists() and not (stored / "pytorch_model.bin").exists()
    assert BaseModelRecord.read(stored).source == (
        f"local folder {folder} (pytorch_model.bin read as tensors only, stored as model.safetensors)"
    )
    expected = load_file(tiny_model_dir / "model.safetensors")
    weights = load_file(stored / "model.safetensors")
    assert weights.keys() == expected.keys() and all(torch.equal(weights[k], expected[k]) for k in expected)


@pytest.mark.slow  # the data stage's unk check through dvc (18 s); its rule has a unit test
def test_a_tokenizer_that_cannot_spell_the_task_stops_the_data_stage_with_its_unk_rate(
    placeholder_template, tiny_model_dir, tmp_path
):
    folder = copy_of_tiny_model(tmp_path / "model", tiny_model_dir)
    tokenizer_of(folder, list(TINY_WORDS))
    root = placeholder_template[0]
    words = [
        w
        for name in ("train.tsv", "dev.tsv")
        for s in pd.read_csv(root / "glue/SST-2" / name, sep="\t")["sentence"]
        for w in s.split()
    ]
    unknown = [w for w in words if w not in TINY_WORDS]
    run, before, root = exp_run(placeholder_template, tmp_path, "-S", f"model.name={folder}", "data")
    output = run.stdout + run.stderr
    assert run.returncode != 0 and "Traceback" not in output, output[-3000:]
    errors = [line for line in output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and re.fullmatch(
        re.escape(
            f"error: params.yaml: data.max_unk_rate = 0.05: task 'sst2' has {len(unknown) / len(words):.1%} of its "
            f"{len(words)} words mapped to [UNK] (e.g. "
        )
        + r"('\w+', ){4}'\w+'"
        + re.escape("): the prepared model's tokenizer does not fit this text"),
        errors[0],
    ), output[-3000:]
    examples = re.findall(r"'(\w+)'", errors[0].split("(e.g. ")[1])
    assert set(examples) <= set(unknown) and examples[0] == Counter(unknown).most_common(1)[0][0]
    assert ran_stages(run.stdout) == [f"Running stage '{s}':" for s in ("validate", "prepare_model", "data")]
    assert_kept(root, before, ran=("data/model", "data/tasks"))


# --- checkpoints as users save them: a training wrapper's prefix, shards, half precision ----------------


def saved_with_prefix(prefix: str, sharded: bool = False, pickled: bool = False):
    """A folder's weights as a state dict saved from a training wrapper: every key prefixed `prefix`, in one
    model.safetensors, in shards with their index (as save_pretrained shards them), or as pytorch_model.bin."""

    def make(folder: Path) -> str:
        from safetensors.torch import load_file, save_file

        state = {prefix + key: tensor for key, tensor in load_file(folder / "model.safetensors").items()}
        (folder / "model.safetensors").unlink()
        if pickled:
            torch.save(state, folder / "pytorch_model.bin")
            return "pytorch_model.bin"
        if not sharded:
            save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
            return "model.safetensors"
        names = sorted(state)
        shards = {f"model-0000{i + 1}-of-00002.safetensors": names[i::2] for i in range(2)}
        for shard, keys in shards.items():
            save_file({key: state[key] for key in keys}, str(folder / shard), metadata={"format": "pt"})
        index = {"metadata": {}, "weight_map": {key: shard for shard, keys in shards.items() for key in keys}}
        (folder / "model.safetensors.index.json").write_text(json.dumps(index))
        return "model.safetensors"

    return make


@pytest.mark.parametrize(
    "prefix, make, wrapper",
    [
        ("module.", saved_with_prefix("module."), "a DataParallel / DistributedDataParallel wrapper"),
        ("module.", saved_with_prefix("module.", sharded=True), "a DataParallel / DistributedDataParallel wrapper"),
        ("module.", saved_with_prefix("module.", pickled=True), "a DataParallel / DistributedDataParallel wrapper"),
        (
            "module._orig_mod.",
            saved_with_prefix("module._orig_mod."),
            "a DataParallel / DistributedDataParallel wrapper around a torch.compile wrapper",
        ),
    ],
    ids=["safetensors", "sharded", "pytorch_model.bin", "compiled-in-DataParallel"],
)
def test_weights_saved_from_a_training_wrapper_load_with_its_prefix_stripped_and_say_so(
    tiny_model_dir, tmp_path, capsys, prefix, make, wrapper
):
    from safetensors.torch import load_file

    folder = copy_of_tiny_model(tmp_path / "model", tiny_model_dir)
    weights = make(folder)
    stored = export_base_model(str(folder), tmp_path / "out")

    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note: ")]
    assert notes == [
        f"note: params.yaml: model.name = {str(folder)!r}: every key of {folder}/{weights} starts with {prefix!r} "
        f"(saved from {wrapper}): loaded with the prefix stripped"
    ]
    assert f"the keys' {prefix!r} prefix stripped" in stored.source
    expected, written = load_file(tiny_model_dir / "model.safetensors"), load_file(tmp_path / "out/model.safetensors")
    assert written.keys() == expected.keys() and all(torch.equal(written[k], expected[k]) for k in expected)


def test_a_sharded_checkpoint_is_stored_whole_with_every_tensor(tiny_model_dir, tmp_path):
    from safetensors.torch import load_file
    from transformers import BertModel

    folder = copy_of_tiny_model(tmp_path / "model", tiny_model_dir)
    (folder / "model.safetensors").unlink()
    BertModel.from_pretrained(tiny_model_dir).save_pretrained(folder, max_shard_size="100KB")
    assert len(list(folder.glob("model-*.safetensors"))) > 1 and (folder / "model.safetensors.index.json").exists()

    assert export_base_model(str(folder), tmp_path / "out").source == f"local folder {folder}"
    expected, written = load_file(tiny_model_dir / "model.safetensors"), load_file(tmp_path / "out/model.safetensors")
    assert written.keys() == expected.keys() and all(torch.equal(written[k], expected[k]) for k in expected)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_half_precision_checkpoint_is_stored_as_float32_and_said_so(tiny_model_dir, tmp_path, dtype):
    # Every run trains float32 master weights under autocast; a checkpoint saved in half precision is widened
    # once, exactly, at export, not trained in half precision.
    from safetensors.torch import load_file
    from transformers import BertModel

    from src.model.base import load_encoder

    folder = copy_of_tiny_model(tmp_path / "model", tiny_model_dir)
    BertModel.from_pretrained(tiny_model_dir).to(dtype).save_pretrained(folder)
    assert {t.dtype for t in load_file(folder / "model.safetensors").values()} == {dtype}

    name = str(dtype).removeprefix("torch.")
    assert (
        export_base_model(str(folder), tmp_path / "out").source == f"local folder {folder} ({name} stored as float32)"
    )
    expected, written = load_file(folder / "model.safetensors"), load_file(tmp_path / "out/model.safetensors")
    assert written.keys() == expected.keys()
    assert all(written[k].dtype == torch.float32 and torch.equal(written[k], expected[k].float()) for k in expected)
    assert {p.dtype for p in load_encoder(tmp_path / "out", with_pooler=True).parameters()} == {torch.float32}
