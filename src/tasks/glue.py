"""Load GLUE tasks either from the Hugging Face hub or from a local folder in the
original GLUE TSV layout (as written by the old `download_glue_data.py`).

Both paths return pandas frames with the HF `glue` column names and label ids, so the
rest of the pipeline does not care where the data came from. Evaluation is always on
the GLUE dev split, because GLUE test labels are not public.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from src.core.errors import UserError
from src.tasks.registry import TASKS

HF_DATASET = "nyu-mll/glue"

# Raw label strings in the TSV files -> HF `glue` label ids. The HF dataset maps
# entailment=0, not_entailment=1 for QNLI/RTE; binary tasks keep their 0/1 ints.
_BINARY = {"0": 0, "1": 1}
_ENTAILMENT = {"entailment": 0, "not_entailment": 1}


@dataclass(frozen=True)
class GlueFormat:
    """How one GLUE task is named on the hub and laid out in the original TSV files."""

    hf_name: str  # config name of nyu-mll/glue
    folder: str  # task folder inside a local GLUE dir
    # File layout. `header=None` means the file has no header line (CoLA) and columns
    # are addressed by position; otherwise columns are addressed by header name.
    header: tuple[str, ...] | None
    text_columns: tuple[str | int, ...]  # where each text field lives in the file
    label_column: str | int
    # STS-B's header has many bookkeeping columns that differ between GLUE releases,
    # so only the named columns we read are required to be present.
    header_exact: bool = True
    n_columns: int | None = None  # column count of a header-less file
    label_values: dict[str, int] | None = None  # None: float score (regression)

    @property
    def text_fields(self) -> tuple[str, ...]:
        """HF column names, in HF order: the task's text fields (src/tasks/registry.py)."""
        return TASKS[self.hf_name].text_fields

    @property
    def label_kind(self) -> str:
        return TASKS[self.hf_name].kind.name


GLUE_TASKS: dict[str, GlueFormat] = {
    "sst2": GlueFormat(
        "sst2",
        "SST-2",
        header=("sentence", "label"),
        text_columns=("sentence",),
        label_column="label",
        label_values=_BINARY,
    ),
    # CoLA: source, label, original acceptability mark, sentence; no header line.
    "cola": GlueFormat(
        "cola",
        "CoLA",
        header=None,
        n_columns=4,
        text_columns=(3,),
        label_column=1,
        label_values=_BINARY,
    ),
    "mrpc": GlueFormat(
        "mrpc",
        "MRPC",
        header=("Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"),
        text_columns=("#1 String", "#2 String"),
        label_column="Quality",
        label_values=_BINARY,
    ),
    "qnli": GlueFormat(
        "qnli",
        "QNLI",
        header=("index", "question", "sentence", "label"),
        text_columns=("question", "sentence"),
        label_column="label",
        label_values=_ENTAILMENT,
    ),
    "rte": GlueFormat(
        "rte",
        "RTE",
        header=("index", "sentence1", "sentence2", "label"),
        text_columns=("sentence1", "sentence2"),
        label_column="label",
        label_values=_ENTAILMENT,
    ),
    "wnli": GlueFormat(
        "wnli",
        "WNLI",
        header=("index", "sentence1", "sentence2", "label"),
        text_columns=("sentence1", "sentence2"),
        label_column="label",
        label_values=_BINARY,
    ),
    "stsb": GlueFormat(
        "stsb",
        "STS-B",
        header=("sentence1", "sentence2", "score"),
        header_exact=False,
        text_columns=("sentence1", "sentence2"),
        label_column="score",
    ),
}

STSB_SCORE_RANGE = (0.0, 5.0)


class GlueFormatError(UserError, ValueError):
    """A GLUE folder or file is missing or malformed (message names file and line)."""


@dataclass
class GlueSplits:
    train: pd.DataFrame  # text fields + "label"
    eval: pd.DataFrame  # always drawn from GLUE dev
    eval_source: str  # "dev", or a description of the carved part of dev
    note: str = ""  # non-empty when train was carved from dev


def load_glue(
    task: str,
    glue_dir: str | Path | None,
    carve_train_from_dev: bool = False,
    eval_fraction: float = 0.5,
    seed: int = 0,
) -> GlueSplits:
    """Load `task` from `glue_dir` (original GLUE TSV layout) or, if None, the hub.

    With `carve_train_from_dev=True` the train split is NOT read: dev is split by a
    seeded permutation into train (1 - eval_fraction) and eval, so a task whose train
    file is unavailable (QNLI here) can still be run, with that fact reported in
    `eval_source` and `note`.
    """
    fmt = task_format(task)
    if carve_train_from_dev and not 0.0 < eval_fraction < 1.0:
        raise GlueFormatError(f"eval_fraction must be in (0, 1), got {eval_fraction}")
    if glue_dir is None:
        train, dev = _load_hub(fmt, need_train=not carve_train_from_dev)
    else:
        train, dev = _load_local(task, fmt, Path(glue_dir), need_train=not carve_train_from_dev)
    if carve_train_from_dev:
        return _carve(task, dev, eval_fraction, seed)
    return GlueSplits(train=train, eval=dev, eval_source="dev")


def task_format(task: str) -> GlueFormat:
    try:
        return GLUE_TASKS[task]
    except KeyError:
        raise GlueFormatError(f"unknown GLUE task {task!r}; known tasks: {', '.join(GLUE_TASKS)}") from None


# --- local TSV folder --------------------------------------------------------------


def _load_local(task: str, fmt: GlueFormat, glue_dir: Path, need_train: bool):
    if not glue_dir.is_dir():
        raise GlueFormatError(f"GLUE folder {glue_dir} does not exist")
    folder = glue_dir / fmt.folder
    if not folder.is_dir():
        raise GlueFormatError(
            f"task folder {folder} not found (GLUE task {task!r} expects "
            f"{fmt.folder}/train.tsv and {fmt.folder}/dev.tsv under {glue_dir})"
        )
    train_path, dev_path = folder / "train.tsv", folder / "dev.tsv"
    if need_train and not train_path.is_file():
        raise GlueFormatError(
            f"{train_path} not found (GLUE task {task!r}). Evaluation always uses "
            f"dev.tsv; add {task!r} to data.glue_carve_train_from_dev in params.yaml "
            f"(carve_train_from_dev=True) to carve train/eval out of dev instead "
            f"(seeded split, reported in eval_source/note)."
        )
    if not dev_path.is_file():
        raise GlueFormatError(
            f"{dev_path} not found (GLUE task {task!r}); evaluation needs the GLUE dev "
            f"split because GLUE test labels are not public"
        )
    train = read_glue_tsv(train_path, fmt) if need_train else None
    return train, read_glue_tsv(dev_path, fmt)


def read_glue_tsv(path: Path, fmt: GlueFormat) -> pd.DataFrame:
    """Parse one GLUE TSV file into text fields + label, validating every row."""
    # GLUE text contains unbalanced quotes, so split on tabs only (QUOTE_NONE
    # semantics). utf-8-sig drops the BOM that MRPC files start with; CRLF copies of
    # the files are read like the originals.
    raw = Path(path).read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        offset = error.start + (3 if raw.startswith(b"\xef\xbb\xbf") else 0)  # the decoder does not count the BOM
        at = raw.count(b"\n", 0, offset) + 1
        raise GlueFormatError(
            f"{path}, line {at}: not UTF-8 (byte {raw[offset]:#04x} at byte offset {offset}); GLUE files are UTF-8"
        ) from None
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    while lines and lines[-1] == "":  # final newline (CoLA dev has none)
        lines.pop()

    if fmt.header is None:
        n_columns = fmt.n_columns
        header: list[str] = []
        body_start = 0
    else:
        if not lines:
            raise GlueFormatError(f"{path}: file is empty, expected a header line")
        found = lines[0].split("\t")
        missing = [c for c in fmt.header if c not in found]
        if (fmt.header_exact and tuple(found) != fmt.header) or missing:
            want = "exactly" if fmt.header_exact else "at least the columns"
            raise GlueFormatError(f"{path}, line 1: unexpected header {found}; expected {want} {list(fmt.header)}")
        n_columns = len(found)
        header = found
        body_start = 1
    text_idx = [_position(c, header) for c in fmt.text_columns]
    label_idx = _position(fmt.label_column, header)

    texts: list[list[str]] = [[] for _ in text_idx]
    labels: list = []
    for lineno, line in enumerate(lines[body_start:], start=body_start + 1):
        cols = line.split("\t")
        if len(cols) != n_columns:
            raise GlueFormatError(
                f"{path}, line {lineno}: expected {n_columns} tab-separated columns, found {len(cols)}"
            )
        for field, i, out in zip(fmt.text_fields, text_idx, texts):
            if not cols[i].strip():
                raise GlueFormatError(f"{path}, line {lineno}: empty text field {field!r}")
            out.append(cols[i])
        labels.append(_parse_label(cols[label_idx], fmt, path, lineno))
    if not labels:
        raise GlueFormatError(f"{path}: no data rows")

    frame: dict[str, list[str] | np.ndarray] = dict(zip(fmt.text_fields, texts))
    frame["label"] = np.asarray(labels, dtype=_label_dtype(fmt))
    return pd.DataFrame(frame)


def _position(column: str | int, header: list[str]) -> int:
    """Where `column` is in a row: a headerless format gives the index, a named column is looked up in the header."""
    return column if isinstance(column, int) else header.index(column)


def _parse_label(raw: str, fmt: GlueFormat, path: Path, lineno: int):
    if fmt.label_values is not None:
        try:
            return fmt.label_values[raw]
        except KeyError:
            raise GlueFormatError(
                f"{path}, line {lineno}: unknown label {raw!r}; allowed values: {', '.join(fmt.label_values)}"
            ) from None
    try:
        score = float(raw)
    except ValueError:
        raise GlueFormatError(f"{path}, line {lineno}: STS-B score {raw!r} is not a number") from None
    lo, hi = STSB_SCORE_RANGE
    if not (math.isfinite(score) and lo <= score <= hi):  # catches nan/inf too
        raise GlueFormatError(f"{path}, line {lineno}: STS-B score {raw!r} is outside [{lo:g}, {hi:g}]")
    return score


def _label_dtype(fmt: GlueFormat) -> str:
    return "int64" if fmt.label_kind == "classification" else "float64"


# --- Hugging Face hub ---------------------------------------------------------------


def _load_hub(fmt: GlueFormat, need_train: bool):
    """`fmt`'s config of the hub dataset, through `datasets.load_dataset` and its cache: a config loaded once is
    read from the cache; with HF_HUB_OFFLINE=1 (or HF_DATASETS_OFFLINE=1) only from the cache, the hub never asked."""
    # Imported here: `datasets` is slow to import and not needed for local folders.
    import datasets

    from src.core.downloads import hub_reachable

    where = f"{HF_DATASET}/{fmt.hf_name}"
    instead = "set a local GLUE folder (data.glue_dir, original GLUE TSV layout) or use the embedded offline tasks"
    offline = datasets.config.HF_HUB_OFFLINE  # what load_dataset itself reads
    if not offline and not hub_reachable():  # fail in seconds, not after the hub client's ~30 s of retries
        raise GlueFormatError(f"could not load {where}: the Hugging Face hub is unreachable; {instead}")
    # offline, a config not in the cache is a ConnectionError, or a ValueError when another config of it is cached
    errors = (ConnectionError, OSError, ValueError) if offline else (ConnectionError, OSError)
    try:
        ds = datasets.load_dataset(HF_DATASET, fmt.hf_name)
    except errors as e:  # requests/hub network errors are OSErrors
        if offline:
            raise GlueFormatError(
                f"could not load {where}: offline mode is on (HF_HUB_OFFLINE or HF_DATASETS_OFFLINE) and it is not "
                f"in the datasets cache {datasets.config.HF_DATASETS_CACHE}; load it once online, or {instead}"
            ) from None
        raise GlueFormatError(
            f"could not load {where}: the Hugging Face hub is unreachable ({type(e).__name__}: {e}); {instead}"
        ) from e
    columns = [*fmt.text_fields, "label"]

    def to_frame(split: str) -> pd.DataFrame:
        df = ds[split].to_pandas()[columns]  # drops `idx`
        return df.astype({"label": _label_dtype(fmt)}).reset_index(drop=True)

    return (to_frame("train") if need_train else None), to_frame("validation")


# --- carving train out of dev -------------------------------------------------------


def _carve(task: str, dev: pd.DataFrame, eval_fraction: float, seed: int) -> GlueSplits:
    n = len(dev)
    n_train = int(round(n * (1.0 - eval_fraction)))
    if not 0 < n_train < n:
        raise GlueFormatError(
            f"cannot carve {task} dev ({n} rows) with eval_fraction={eval_fraction}: train or eval would be empty"
        )
    perm = np.random.default_rng(seed).permutation(n)
    # Sorted so each part keeps dev-file order (easier to inspect); the split itself
    # is decided by the seeded permutation.
    train = dev.iloc[np.sort(perm[:n_train])].reset_index(drop=True)
    eval_ = dev.iloc[np.sort(perm[n_train:])].reset_index(drop=True)
    note = (
        f"{task}: GLUE train split not used; train = {n_train} of {n} dev rows, "
        f"eval = the other {n - n_train} dev rows (numpy default_rng({seed}) "
        f"permutation, eval_fraction={eval_fraction}). Scores are not comparable "
        f"with results evaluated on the full GLUE dev set."
    )
    return GlueSplits(
        train=train,
        eval=eval_,
        eval_source=f"dev rows not used for train (train carved from dev, seed {seed})",
        note=note,
    )
