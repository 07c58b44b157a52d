"""SQuAD 2.0 (Rajpurkar, Jia & Liang 2018): from a local folder in the official JSON layout
(train-v2.0.json, dev-v2.0.json) or from the Hugging Face hub (`rajpurkar/squad_v2`).

Both paths return one frame per split with the columns the span tokeniser reads (id,
question, context, answers: the gold texts, [] when unanswerable, answer_start: the first
gold's character offset or -1), so nothing downstream cares where the data came from.
Evaluation is on dev (SQuAD's test set is hidden); a file that does not fit the layout is
refused with one line naming the file and what is wrong, before anything is tokenised.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from src.core.errors import UserError

HF_DATASET = "rajpurkar/squad_v2"
FILES = {"train": "train-v2.0.json", "eval": "dev-v2.0.json"}
COLUMNS = ["id", "question", "context", "answers", "answer_start"]


class SquadFormatError(UserError, ValueError):
    """A SQuAD folder or file is missing or not in the official layout."""


def load_squad(squad_dir: str | None) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """(train, eval, note): eval is the whole dev file."""
    if squad_dir is None:
        train, eval_ = _load_hub()
        source = f"the Hugging Face hub ({HF_DATASET})"
    else:
        folder = Path(squad_dir)
        if not folder.is_dir():
            raise SquadFormatError(f"data.squad_dir = {squad_dir}: the folder does not exist")
        train, eval_ = (read_squad_json(folder / FILES[split], "data.squad_dir") for split in ("train", "eval"))
        source = str(folder)
    return train, eval_, f"SQuAD 2.0 from {source}; eval = dev"


def read_squad_json(path: Path, key: str) -> pd.DataFrame:
    """One file of the official layout: {"data": [{"paragraphs": [{"context", "qas": [{"id",
    "question", "is_impossible", "answers": [{"text", "answer_start"}]}]}]}]}."""
    if not path.is_file():
        raise SquadFormatError(f"{path} not found ({key} must hold {' and '.join(FILES.values())})")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SquadFormatError(f"{path}: not UTF-8 JSON ({error})") from None
    rows = []
    seen: dict[str, str] = {}  # question id -> where it was first asked
    try:
        for a, article in enumerate(data["data"]):
            for p, paragraph in enumerate(article["paragraphs"]):
                paragraph_at = f"data[{a}].paragraphs[{p}]"
                context = paragraph["context"]
                if not isinstance(context, str) or not context.strip():
                    # its questions could only be "no answer": a free point for a model that says so
                    raise SquadFormatError(
                        f"{path}: {paragraph_at}: context = {context!r} is invalid; allowed: a non-empty text"
                    )
                for question in paragraph["qas"]:
                    where = f"{path}: {paragraph_at}, question {question.get('id')!r}"
                    # the official evaluation keys predictions by id: a question asked twice would be
                    # scored twice here and once there
                    if question["id"] in seen:
                        raise SquadFormatError(
                            f"{where}: id {question['id']!r} again (first at {seen[question['id']]})"
                        )
                    seen[question["id"]] = paragraph_at
                    rows.append(_row(question, context, where))
    except (KeyError, TypeError) as error:
        raise SquadFormatError(
            f"{path}: not the SQuAD 2.0 layout (data[].paragraphs[].context / qas[] with id, question, "
            f"is_impossible, answers[].text / answer_start; missing or malformed: {error})"
        ) from None
    if not rows:
        raise SquadFormatError(f"{path}: no questions")
    return pd.DataFrame(rows, columns=COLUMNS)


def _row(question: dict, context: str, where: str) -> tuple:
    answers = question["answers"]
    impossible = question["is_impossible"]
    if not impossible and not answers:
        raise SquadFormatError(f"{where}: marked answerable (is_impossible false) but has no answers")
    if impossible and answers:
        raise SquadFormatError(f"{where}: marked unanswerable (is_impossible true) but has answers")
    for answer in answers:
        start, text = answer["answer_start"], answer["text"]
        if not isinstance(start, int) or isinstance(start, bool) or start < 0:  # a negative start slices from the end
            raise SquadFormatError(f"{where}: answer_start = {start!r} is invalid; allowed: an integer >= 0")
        if context[start : start + len(text)] != text:
            raise SquadFormatError(f"{where}: answer {text!r} is not at answer_start {start} of its context")
    texts = [a["text"] for a in answers]
    return question["id"], question["question"], context, texts, answers[0]["answer_start"] if answers else -1


def _load_hub() -> tuple[pd.DataFrame, pd.DataFrame]:
    # Imported here: `datasets` is slow to import and not needed for a local folder.
    import datasets

    from src.core.downloads import hub_reachable

    unreachable = (
        f"could not load {HF_DATASET}: the Hugging Face hub is unreachable. Set data.squad_dir to a folder "
        f"with {' and '.join(FILES.values())} (the official layout) instead."
    )
    if not hub_reachable():  # fail in seconds, not after the hub client's retries
        raise SquadFormatError(unreachable)
    try:
        ds = datasets.load_dataset(HF_DATASET)
    except (ConnectionError, OSError) as error:
        raise SquadFormatError(f"{unreachable} ({type(error).__name__}: {error})") from error

    def to_frame(split: str) -> pd.DataFrame:
        rows = [
            (
                r["id"],
                r["question"],
                r["context"],
                list(r["answers"]["text"]),
                r["answers"]["answer_start"][0] if r["answers"]["text"] else -1,
            )
            for r in ds[split]
        ]
        return pd.DataFrame(rows, columns=COLUMNS)

    return to_frame("train"), to_frame("validation")
