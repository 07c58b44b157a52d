"""What a "condition" is: the one definition every stage, table and figure shares.

A condition is one finetuning run: a task, a training-set size, a trial index, a
reinitialisation scheme with its arguments (src/schemes/registry.py), and the
modifiers of how the run trains. Everything random in it (training subset, fresh
weights, layer order, head, data order, dropout) is derived from these fields and one
base seed, so a condition is reproducible on its own, on any machine. Layers are
numbered 1..L like k.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

from src.core.checks import FULL
from src.core.seeds import derive_seed
from src.schemes.registry import WHOLE_LAYER_VARIANTS, scheme_of

# The sources of a run's randomness, each with its own seed stream (Dodge et al. 2020): which
# training examples it sees, the fresh encoder weights (and layer order), the new task head,
# the order of its batches and its dropout masks.
SEED_SOURCES = ("subset", "reinit", "head", "order", "dropout")


def crossed_streams(trial: int, design: tuple[int, int] | None) -> tuple[tuple[str, int], ...]:
    """A crossed design (subsets, seeds): trial t sees subset t // seeds and takes random draw
    t % seeds for every other source, so each draw meets each subset once. None: every stream
    is the trial's own (the subset and the draws vary together, one trial per pair)."""
    if design is None:
        return ()
    seeds = design[1]
    return (("subset", trial // seeds), *((source, trial % seeds) for source in SEED_SOURCES[1:]))


CHAIN = "+"  # joins a chain of intermediate tasks in Condition.intermediate_task: `mnli+rte`


@dataclass(frozen=True)
class Condition:
    task: str
    size: int
    trial: int
    epochs: int
    scheme: str = "progressive"  # a scheme variant (schemes.VARIANTS)
    k: int | None = None  # progressive: encoder layers 1..k keep pretrained weights
    layer: int | None = None  # block_*: first layer of the window; single_layer, head: the layer
    window: int | None = None  # block_*: how many consecutive layers
    head_index: int | None = None  # head: which attention head (0-based) of `layer`
    removal: str | None = None  # remove: top | bottom | alternate (Sajjad et al. 2020) | listed
    removed: tuple[int, ...] | None = None  # remove: the encoder layers deleted (1-based, ascending)
    lr_multiplier: float = 1.0  # App. E: reinitialised layers train at lr * lr_multiplier
    keep_layernorm: bool = False  # App. F: reinitialised layers keep their pretrained LayerNorm
    intermediate_task: str | None = None  # sequential finetuning: train on this task first (a chain: `a+b`, in order)
    intermediate_size: int | str | None = None  # each intermediate step's examples (`full`: its whole train set);
    intermediate_epochs: int | None = None  # None for both: the final task's size and epochs (Huang et al. 4.1)
    recipe: str = "paper"
    pooling: str = "mean"
    # (source, index) for the seed streams that do not follow the trial (crossed_streams)
    streams: tuple[tuple[str, int], ...] = ()

    def __post_init__(self):  # a result's JSON gives lists: a condition stays hashable
        object.__setattr__(self, "streams", tuple((str(s), int(i)) for s, i in self.streams))
        if self.removed is not None:
            object.__setattr__(self, "removed", tuple(self.removed))

    def stream(self, source: str) -> int:
        """The index of `source`'s seed stream (SEED_SOURCES): the trial unless a design sets it."""
        return dict(self.streams).get(source, self.trial)

    def check(self, num_layers: int, num_heads: int) -> None:
        """Refuse arguments the model cannot take, with one message, before any compute."""
        if not scheme_of(self.scheme).fits(self, num_layers, num_heads):
            raise ValueError(
                f"{self.describe()} does not fit a model with {num_layers} encoder layers and {num_heads} attention "
                "heads"
            )
        if self.scheme not in WHOLE_LAYER_VARIANTS and (self.lr_multiplier != 1.0 or self.keep_layernorm):
            raise ValueError(
                f"{self.describe()}: the lr multiplier and keep-LayerNorm modifiers apply to schemes that "
                f"reinitialise whole layers ({', '.join(WHOLE_LAYER_VARIANTS)})"
            )
        if self.lr_multiplier <= 0:
            raise ValueError(f"{self.describe()}: lr multiplier must be > 0")

    def reinit_layers(self, num_layers: int) -> list[int]:
        """0-based indices of the encoder layers that get entirely fresh weights."""
        return scheme_of(self.scheme).reinit_layers(self, num_layers)

    def removed_layers(self) -> list[int]:
        """0-based indices of the encoder layers deleted before finetuning."""
        return list(scheme_of(self.scheme).removed_layers(self))

    def reinit_heads(self) -> list[tuple[int, int]]:
        """(0-based layer, head) of each attention head given fresh q/k/v rows and output columns."""
        return list(scheme_of(self.scheme).reinit_heads(self))

    def scheme_seeds(self, base_seed: int) -> dict[str, int]:
        """The seeds of the draws its scheme makes beyond every run's (a permutation's layer order)."""
        return dict(scheme_of(self.scheme).seeds(self, base_seed))

    def training_run(self, num_layers: int) -> tuple:
        """What this condition's finetuning run does, and nothing else. Every random draw
        depends on the trial and the tensor, never on the scheme's name, so conditions
        with the same training run start from the same weights, see the same batches and
        end with the same result: at L=6, block_preserve 1-3, block_reinit 4-6 and
        progressive k=3 are one run, and the pipeline trains it once."""
        fresh = tuple(self.reinit_layers(num_layers))
        scheme = scheme_of(self.scheme)
        return (
            self.task,
            self.size,
            self.trial,
            self.epochs,
            self.recipe,
            self.pooling,
            self.intermediate_task,
            self.intermediate_size,
            self.intermediate_epochs,
            fresh,
            scheme.layer_order is not None,  # the order is drawn from (seed, trial)
            tuple(self.reinit_heads()) or None,
            # the modifiers act on reinitialised layers only: with none, they change nothing
            self.lr_multiplier if fresh else 1.0,
            self.keep_layernorm if fresh else False,
            self.removed or (),
            self.streams,
        )

    @property
    def intermediate_steps(self) -> tuple[str, ...]:
        """The intermediate tasks in the order they train (none: direct finetuning)."""
        return tuple(self.intermediate_task.split(CHAIN)) if self.intermediate_task else ()

    def steps(self, pool_size: Callable[[str], int]) -> list[tuple[str, int, int]]:
        """(task, examples, epochs) of every finetuning step, the final one last; `pool_size(task)`
        gives a task's training examples (what `full` means)."""
        size = self.size if self.intermediate_size is None else self.intermediate_size
        epochs = self.intermediate_epochs or self.epochs
        first = [(t, pool_size(t) if size == FULL else size, epochs) for t in self.intermediate_steps]
        # a size other than FULL is an int, which `size == FULL` does not tell mypy; casting it would change the
        # recipe's code hash (src/train/run.py fingerprint) and so retrain every finished run
        return [*first, (self.task, self.size, self.epochs)]  # type: ignore[list-item]

    def examples_trained(self, pool_size: Callable[[str], int]) -> int:
        """Examples the run passes through, every step's epochs included (a finetune stage
        submits the longest runs first)."""
        return sum(size * epochs for _, size, epochs in self.steps(pool_size))

    @property
    def modified(self) -> bool:
        """Trained differently from plain finetuning (App. E/F modifiers, or an intermediate task first)."""
        return self.lr_multiplier != 1.0 or self.keep_layernorm or self.intermediate_task is not None

    def is_plain(self, default_epochs: int) -> bool:
        """Unmodified: no modifier and the default epochs for its size (the conditions claims compare)."""
        return not self.modified and self.epochs == default_epochs

    def references(self, num_layers: int) -> dict[str, Condition]:
        """The conditions this one is compared with, paired by trial (same task, size,
        trial, epochs, recipe and pooling): the one definition that studies, tables,
        figures and claims use. `full` is k = L (nothing reinitialised), `scratch` k = 0;
        a modified condition of a scheme with a baseline (progressive) also has `baseline`,
        the same scheme fields trained plainly (for sequential finetuning: direct finetuning
        on the final task)."""
        plain = Condition(
            self.task,
            self.size,
            self.trial,
            self.epochs,
            recipe=self.recipe,
            pooling=self.pooling,
            streams=self.streams,
        )
        refs = {"full": replace(plain, k=num_layers), "scratch": replace(plain, k=0)}
        baseline = scheme_of(self.scheme).baseline
        if baseline is not None and self.modified:
            refs["baseline"] = replace(plain, **baseline(self))
        return refs

    def reported_references(self, num_layers: int) -> list[Condition]:
        """The references a study reports beside this condition (its figure draws them):
        full and scratch where its scheme's figure draws them, else the baseline of a modified
        condition, none for a plain progressive one (it is the curve)."""
        refs = self.references(num_layers)
        if scheme_of(self.scheme).reports_full_and_scratch:
            return [refs["full"], refs["scratch"]]
        return [refs["baseline"]] if "baseline" in refs else []

    def layer_order(self, num_layers: int, base_seed: int) -> list[int]:
        """Which pretrained layer sits at each position: its scheme's order (permutation: a
        shuffle drawn from (seed, trial) only, so trial n uses the same order on every task,
        paper §5), else the pretrained order."""
        order = scheme_of(self.scheme).layer_order
        return list(range(num_layers)) if order is None else order(self, num_layers, base_seed)

    def seed(self, base_seed: int, purpose: str, source: str) -> int:
        """Seeds for the trial's randomness, from `source`'s stream. They depend on the stream,
        not on the scheme, so the fresh weights of layer 5 are the same draw whether k is 2 or
        4: differences across conditions come from what is kept, not from a luckier
        initialisation. (Order and dropout share the purpose "train", as when one seed drove
        both: numpy draws the order and torch the masks, so the default's draws are unchanged.)"""
        return derive_seed(base_seed, purpose, self.stream(source))

    @property
    def slug(self) -> str:
        """The condition's name within its task and size (its result's folder)."""
        modifiers = [
            f"lr{self.lr_multiplier:g}x" if self.lr_multiplier != 1.0 else "",
            "keep_layernorm" if self.keep_layernorm else "",
            f"after_{self.intermediate_task}" if self.intermediate_task else "",
            f"n{self.intermediate_size}_e{self.intermediate_epochs}" if self.intermediate_size is not None else "",
            f"e{self.epochs}",
        ]
        return "_".join([scheme_of(self.scheme).slug(self), *filter(None, modifiers)])

    def describe(self) -> str:
        return f"{self.task} n={self.size} {self.slug} trial {self.trial}"

    def as_dict(self) -> dict:
        return {**asdict(self), "streams": [list(pair) for pair in self.streams]}  # as JSON reads it back
