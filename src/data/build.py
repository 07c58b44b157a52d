"""A task's train and eval splits, as text (TSV, to read) and token ids (what every run trains on)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from src.config.schema import Config, DataConfig
from src.core.errors import ParamsError
from src.data import tokens
from src.tasks import embedded, glue, splits, squad
from src.tasks.registry import get_task


def build_splits(name: str, data: DataConfig) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """(train, eval, note) data frames for task `name`."""
    if get_task(name).source == "embedded":
        return embedded.build_embedded(name, data.eval_size, data.neutral_band, data.split_seed)
    if get_task(name).source == "squad":
        return squad.load_squad(data.squad_dir)
    splits = glue.load_glue(
        name, data.glue_dir, carve_train_from_dev=name in data.glue_carve_train_from_dev, seed=data.split_seed
    )
    source = f"GLUE {name} from {data.glue_dir or 'the Hugging Face hub'}; eval = {splits.eval_source}"
    return splits.train, splits.eval, f"{source}. {splits.note}".strip()


def checked_unknown_words(
    name: str, train: pd.DataFrame, eval_: pd.DataFrame, tokenizer, data: DataConfig
) -> tokens.UnknownWords:
    """The [UNK] words of a task's text, refused above data.max_unk_rate: a tokenizer that
    cannot spell the text (one of another model, or none) would train on [UNK] and report
    chance as a result."""
    # distinct texts: a SQuAD context repeats once per question (1.8M words for 11k questions)
    texts = list(
        dict.fromkeys(text for df in (train, eval_) for field in get_task(name).text_fields for text in df[field])
    )
    unknown = tokens.unknown_words(texts, tokenizer)
    if unknown.rate > data.max_unk_rate:
        raise ParamsError(
            f"params.yaml: data.max_unk_rate = {data.max_unk_rate}: task {name!r} has {unknown.rate:.1%} of its "
            f"{unknown.words} words mapped to {tokenizer.unk_token} (e.g. {', '.join(map(repr, unknown.examples))}): "
            "the prepared model's tokenizer does not fit this text"
        )
    return unknown


def write_task(
    name: str,
    train: pd.DataFrame,
    eval_: pd.DataFrame,
    note: str,
    unknown: tokens.UnknownWords,
    tokenizer,
    max_length: int,
    out: Path,
    data: DataConfig,
) -> dict:
    """Write <out>/{train,eval}.tsv, tokens.npz and info.json; return the info. Span QA
    tasks are cut into windows (data.qa_stride, data.qa_max_answer_tokens)."""
    spec = get_task(name)

    def tokenize(df: pd.DataFrame) -> splits.TokenizedSplit:
        if spec.kind.token_level:
            return tokens.tokenize_spans(df, tokenizer, max_length, data.qa_stride, data.qa_max_answer_tokens)
        return tokens.tokenize(df, spec.text_fields, spec.kind, tokenizer, max_length)

    tokenized = {split: tokenize(df) for split, df in (("train", train), ("eval", eval_))}
    out.mkdir(parents=True, exist_ok=True)
    train.to_csv(out / "train.tsv", sep="\t", index=False)
    eval_.to_csv(out / "eval.tsv", sep="\t", index=False)
    splits.save_splits(out / "tokens.npz", tokenized)
    classes = spec.kind.name == "classification"
    info = {
        "task": name,
        "train_examples": len(train),
        "eval_examples": len(eval_),
        "note": note,
        "label_counts": {
            split: df["label"].value_counts().sort_index().to_dict()
            for split, df in (("train", train), ("eval", eval_))
        }
        if classes
        else None,
        "answerable": {
            split: int(split_tokens.answerable.sum())
            for split, split_tokens in tokenized.items()
            if isinstance(split_tokens, splits.SpanSplit)  # every split of a token-level task
        }
        if spec.kind.token_level
        else None,
        "windows": {split: len(split_tokens) for split, split_tokens in tokenized.items()},
        "mean_tokens": {split: float(split_tokens.lengths.mean()) for split, split_tokens in tokenized.items()},
        "unk_rate": unknown.rate,  # share of the words (train and eval) the tokenizer maps to [UNK]
        "unk_examples": list(unknown.examples),
    }
    (out / "info.json").write_text(json.dumps(info, indent=2, default=int) + "\n")
    return info


def build_tasks(config: Config, tokenizer, out: Path) -> None:
    """Every task of data.tasks built, tokenised and written to out/<task>, with what it holds
    printed; every task is checked for unknown words before any is written."""
    built = {name: build_splits(name, config.data) for name in config.data.tasks}
    unknown = {
        name: checked_unknown_words(name, train, eval_, tokenizer, config.data)
        for name, (train, eval_, _) in built.items()
    }
    for name, (train, eval_, note) in built.items():
        info = write_task(
            name, train, eval_, note, unknown[name], tokenizer, config.model.max_length, out / name, config.data
        )
        print(f"{name}: {len(train)} train / {len(eval_)} eval examples; {note}")
        print(f"  [UNK] words {unknown[name].unknown} of {unknown[name].words} ({unknown[name].rate:.2%})")
        if info["label_counts"]:
            print(f"  label counts {info['label_counts']}")
        if info["answerable"]:
            print(f"  answerable questions {info['answerable']}, windows {info['windows']}")
