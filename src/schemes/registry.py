"""The registry of reinitialisation schemes and of the modifiers of how a run trains.

One entry per scheme holds everything the pipeline knows about it: its params.yaml name
and keys (each a `Key`: type, check, help text and the model limit it must fit; the
config schema's StudyConfig is generated from them), the condition variants it expands
to, what it changes in the model (whole layers given fresh weights, single heads, the
layer order, removed layers), how its conditions are named (slug), which references they
are compared with and which their figure draws, its figure and its extra tables. Adding
a scheme is one entry here plus, if it touches weights in a new way, its function in
src/model/reinit.py (and a drawing in src/figures/studies.py if it brings a new figure).

Layers are numbered 1..L like k; `reinit_layers` returns 0-based indices.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from src.core import checks


def _largest_value(value) -> int:
    return max(value) if isinstance(value, tuple) else value


@dataclass(frozen=True)
class Limit:
    """A scheme key's range on the model: `largest(value)` (the largest number in it, by
    default) must be at most `bound(L, H)`."""

    bound: Callable[[int, int], int]
    allowed: Callable[[int, int], str]
    largest: Callable = _largest_value


@dataclass(frozen=True)
class Key:
    """A study key of params.yaml, defined once: the type of its value (StudyConfig's field
    is this or None), its check (None: the loader checks it against data.tasks), its help
    text and, for a scheme key, its range on the model (checked once the model is known)."""

    type: Any
    check: checks.Check | None
    help: str
    limit: Limit | None = None


def _no_change(*_) -> tuple:
    return ()


@dataclass(frozen=True)
class Scheme:
    name: str  # `scheme:` in a study of params.yaml
    help: str
    keys: dict[str, Key]  # the study keys it takes beside scheme, tasks, sizes, trials
    variants: tuple[str, ...]  # Condition.scheme values it expands to
    expand: Callable  # (study, L) -> the scheme fields of each condition of one (task, size, trial)
    fits: Callable  # (condition, L, H) -> bool
    reinit_layers: Callable  # (condition, L) -> 0-based layers given entirely fresh weights
    slug: Callable  # (condition) -> the scheme part of the condition's name
    whole_layers: bool  # it reinitialises whole layers: the lr and LayerNorm modifiers apply
    figure: str  # src/figures/studies.py draws a study of this scheme with this figure
    reports_full_and_scratch: bool  # its figure draws the k = L and k = 0 references
    alters_model: bool  # it changes the pretrained model beyond whole reinitialised layers (their order,
    # one head, removed layers): none of its conditions is the plain full model
    per_head: bool = False  # its conditions act on single attention heads: with `train.head_importance:
    # head_studies` its full-model references measure head importance, to set against the heads' effects
    # What else it changes in the pretrained model (src/model/finetuner.py applies each):
    reinit_heads: Callable = _no_change  # (condition) -> (0-based layer, head) pairs whose q/k/v rows and
    # output columns get fresh weights
    removed_layers: Callable = _no_change  # (condition) -> 0-based encoder layers deleted before finetuning
    layer_order: Callable | None = None  # (condition, L, base seed) -> the pretrained layer at each position,
    # drawn from (seed, trial); None: the pretrained order
    seeds: Callable = lambda c, base_seed: {}  # (condition, base seed) -> {name: seed} of the draws it makes
    # beyond every run's (a run's record lists them)
    baseline: Callable | None = None  # (condition) -> the scheme fields of the plain twin a modified condition
    # is compared with (reference `baseline`); None: a modified condition has no baseline
    tables: tuple[str, ...] = ()  # the extra tables src/results/aggregate.py builds from its studies' runs

    @property
    def limits(self) -> dict[str, Limit]:
        """key -> its range on the model, for the keys that have one."""
        return {name: key.limit for name, key in self.keys.items() if key.limit is not None}


def _layers_fit(condition, L: int) -> bool:
    return condition.layer is not None and 1 <= condition.layer <= L


def _block_fits(c, L, H) -> bool:
    return c.window is not None and c.layer is not None and 1 <= c.window <= L and 1 <= c.layer <= L - c.window + 1


def _block_layers(c, L) -> list[int]:
    window = set(range(c.layer - 1, c.layer - 1 + c.window))
    keep = c.scheme == "block_preserve"
    return [i for i in range(L) if (i in window) != keep]


# Layer removal (Huang et al. 6.2; Sajjad et al. 2020, "On the effect of dropping layers of
# pre-trained transformer models"): an entry of `removals` is a pattern with a count, or
# the layers listed.
REMOVAL = re.compile(r"(top|bottom|alternate)([1-9][0-9]*)")
REMOVAL_ALLOWED = (
    "top<n> | bottom<n> | alternate<n> (n >= 1 layers: the top n, the bottom n, every other layer from the top), "
    "or a list of layer numbers >= 1 such as [9, 10, 11]"
)


def removal_entry(value, key):
    """One entry of a remove study's `removals` (a check): the pattern, or the listed layers ascending."""
    if isinstance(value, str):
        checks.require(REMOVAL.fullmatch(value) is not None, key, value, REMOVAL_ALLOWED)
        return value
    return tuple(sorted(checks.listing(checks.integer(1), empty_allowed=REMOVAL_ALLOWED)(value, key)))


def _removal(entry: str) -> tuple[str, int]:
    """(pattern, n) of a checked removal entry: "top3" -> ("top", 3)."""
    match = REMOVAL.fullmatch(entry)
    if match is None:
        raise ValueError(f"{entry!r} is not a removal ({REMOVAL_ALLOWED})")
    pattern, n = match.groups()
    return pattern, int(n)


def removed_layers(entry, L: int) -> tuple[int, ...]:
    """The 1-based layers `entry` removes from an L-layer encoder: top n = L-n+1..L, bottom
    n = 1..n, alternate n = L, L-2, ..., L-2(n-1) (Sajjad et al.'s alternate dropping,
    counted from the top layer), a list = those layers."""
    if not isinstance(entry, str):
        return tuple(entry)
    pattern, n = _removal(entry)
    spans = {"top": range(L - n + 1, L + 1), "bottom": range(1, n + 1), "alternate": range(L - 2 * (n - 1), L + 1, 2)}
    return tuple(spans[pattern])


def _removal_depth(entries) -> int:
    """The fewest encoder layers a model needs for every entry to name layers it has and keep one."""

    def depth(entry) -> int:
        if not isinstance(entry, str):
            return max(max(entry), len(entry) + 1)
        pattern, n = _removal(entry)
        return max(2 * n - 1, n + 1) if pattern == "alternate" else n + 1

    return max(depth(entry) for entry in entries)


def _removal_fits(c, L, H) -> bool:
    return bool(c.removed) and c.removal is not None and all(1 <= i <= L for i in c.removed) and len(c.removed) < L


def _removal_slug(c) -> str:
    if c.removal == "listed":
        return "remove_" + "_".join(map(str, c.removed))
    return f"remove_{c.removal}{len(c.removed)}"


_LAYER_RANGE = Limit(lambda L, H: L, lambda L, H: f"0..{L} (the model has {L} encoder layers)")
_LAYERS_RANGE = Limit(lambda L, H: L, lambda L, H: f"layers 1..{L} (the model has {L} encoder layers)")

# The scheme keys, each defined once (a key two schemes take is the same Key in both).
KS = Key(
    tuple[int, ...],
    checks.listing(checks.integer(0)),
    "the k of each condition: keep encoder layers 1..k pretrained, reinitialise k+1..L (0..L)",
    _LAYER_RANGE,
)
WINDOW = Key(
    int,
    checks.integer(1),
    "layers in each window (1..L): every window reinitialised, and alone preserved",
    Limit(lambda L, H: L, lambda L, H: f"1..{L} (the model has {L} encoder layers)"),
)
LAYERS = Key(
    tuple[int, ...],
    checks.listing(checks.integer(1)),
    "the layers (1..L) it acts on, one condition each (with each of `heads`, in a head study)",
    _LAYERS_RANGE,
)
HEADS = Key(
    tuple[int, ...],
    checks.listing(checks.integer(0)),
    "the attention heads (0..H-1) reinitialised in each of `layers`, one condition each",
    Limit(lambda L, H: H - 1, lambda L, H: f"heads 0..{H - 1} (the model has {H} attention heads per layer)"),
)
REMOVALS = Key(
    tuple[str | tuple[int, ...], ...],
    checks.listing(removal_entry),
    "the layers each condition deletes: top<n> | bottom<n> | alternate<n> (from the top) | a list of layer numbers",
    Limit(
        lambda L, H: L,
        lambda L, H: (
            f"removals that leave at least one of the model's {L} encoder layers: listed layers "
            f"1..{L}, top<n> or bottom<n> with n <= {L - 1}, alternate<n> with 2n-1 <= {L} and n <= {L - 1}"
        ),
        _removal_depth,
    ),
)


def _permutation_seed(c, base_seed: int) -> int:
    """The seed of a permutation's layer order: (seed, trial) only, so trial n uses the same
    order on every task (paper §5)."""
    return c.seed(base_seed, "permutation", "reinit")


def _shuffled(c, L: int, base_seed: int) -> list[int]:
    return np.random.default_rng(_permutation_seed(c, base_seed)).permutation(L).tolist()


SCHEMES: dict[str, Scheme] = {
    scheme.name: scheme
    for scheme in (
        Scheme(
            "progressive",
            "Fig. 1: keep layers 1..k, reinitialise k+1..L",
            keys={"ks": KS},
            variants=("progressive",),
            expand=lambda study, L: [{"k": k} for k in study.ks],
            fits=lambda c, L, H: c.k is not None and 0 <= c.k <= L,
            reinit_layers=lambda c, L: list(range(c.k, L)),
            slug=lambda c: f"k{c.k}",
            whole_layers=True,
            figure="progressive",
            reports_full_and_scratch=False,
            alters_model=False,
            baseline=lambda c: {"k": c.k},
        ),
        Scheme(
            "block",
            "Fig. 2: every window of `window` layers reinitialised, and alone preserved",
            keys={"window": WINDOW},
            variants=("block_reinit", "block_preserve"),
            expand=lambda study, L: [
                {"scheme": s, "layer": start, "window": study.window}
                for start in range(1, L - study.window + 2)
                for s in ("block_reinit", "block_preserve")
            ],
            fits=_block_fits,
            reinit_layers=_block_layers,
            slug=lambda c: f"{c.scheme}{c.layer}-{c.layer + c.window - 1}",
            whole_layers=True,
            figure="blocks",
            reports_full_and_scratch=True,
            alters_model=False,
        ),
        Scheme(
            "single_layer",
            "App. C, Fig. 5: one layer reinitialised",
            keys={"layers": LAYERS},
            variants=("single_layer",),
            expand=lambda study, L: [{"scheme": "single_layer", "layer": layer} for layer in study.layers],
            fits=lambda c, L, H: _layers_fit(c, L),
            reinit_layers=lambda c, L: [c.layer - 1],
            slug=lambda c: f"single{c.layer}",
            whole_layers=True,
            figure="single_layer",
            reports_full_and_scratch=True,
            alters_model=False,
        ),
        Scheme(
            "permutation",
            "Fig. 3, Table 1: pretrained layers in a shuffled order (the same per trial on every task)",
            keys={},
            variants=("permutation",),
            expand=lambda study, L: [{"scheme": "permutation"}],
            fits=lambda c, L, H: True,
            reinit_layers=lambda c, L: [],
            slug=lambda c: "permutation",
            whole_layers=False,
            figure="permutation",
            reports_full_and_scratch=True,
            alters_model=True,
            layer_order=_shuffled,
            seeds=lambda c, base_seed: {"permutation": _permutation_seed(c, base_seed)},
            tables=("permutation_correlations",),
        ),
        Scheme(
            "head",
            "Huang et al. 4.3: one attention head's q/k/v rows (and its output columns) reinitialised",
            keys={"layers": LAYERS, "heads": HEADS},
            variants=("head",),
            expand=lambda study, L: [
                {"scheme": "head", "layer": layer, "head_index": head} for layer in study.layers for head in study.heads
            ],
            fits=lambda c, L, H: _layers_fit(c, L) and c.head_index is not None and 0 <= c.head_index < H,
            reinit_layers=lambda c, L: [],
            slug=lambda c: f"layer{c.layer}_head{c.head_index}",
            whole_layers=False,
            figure="heads",
            reports_full_and_scratch=True,
            alters_model=True,
            per_head=True,
            reinit_heads=lambda c: ((c.layer - 1, c.head_index),),
            tables=("heads_summary",),
        ),
        Scheme(
            "remove",
            "Huang et al. 6.2, Sajjad et al. 2020: encoder layers deleted, the shallower model finetuned",
            keys={"removals": REMOVALS},
            variants=("remove",),
            expand=lambda study, L: [
                {
                    "scheme": "remove",
                    "removal": _removal(entry)[0] if isinstance(entry, str) else "listed",
                    "removed": removed_layers(entry, L),
                }
                for entry in study.removals
            ],
            fits=_removal_fits,
            reinit_layers=lambda c, L: [],
            slug=_removal_slug,
            whole_layers=False,
            figure="remove",
            reports_full_and_scratch=True,
            alters_model=True,
            removed_layers=lambda c: tuple(layer - 1 for layer in c.removed),
        ),
    )
}


def _scheme_keys() -> dict[str, Key]:
    """Every scheme key once, in the order the schemes first take them."""
    keys: dict[str, Key] = {}
    for scheme in SCHEMES.values():
        for name, key in scheme.keys.items():
            if keys.setdefault(name, key) is not key:
                raise ValueError(f"scheme {scheme.name} defines study key {name!r} again: schemes share one Key")
    return keys


SCHEME_KEYS: dict[str, Key] = _scheme_keys()


def schemes_taking(key: str) -> tuple[str, ...]:
    return tuple(name for name, scheme in SCHEMES.items() if key in scheme.keys)


# Condition.scheme (a variant) -> its scheme.
BY_VARIANT: dict[str, Scheme] = {variant: scheme for scheme in SCHEMES.values() for variant in scheme.variants}
VARIANTS = tuple(BY_VARIANT)
WHOLE_LAYER_VARIANTS = tuple(v for v, s in BY_VARIANT.items() if s.whole_layers)


def scheme_of(variant: str) -> Scheme:
    if variant not in BY_VARIANT:
        raise ValueError(f"unknown scheme {variant!r}; allowed: {' | '.join(VARIANTS)}")
    return BY_VARIANT[variant]


@dataclass(frozen=True)
class Modifier:
    """A change to how a study's runs train, on top of its scheme."""

    key: str  # the study key in params.yaml
    type: Any  # the type of its value (StudyConfig's field is this or None)
    help: str
    check: checks.Check | None  # its value (None: a task list, checked against data.tasks by the loader)
    whole_layers_only: bool  # it acts on reinitialised whole layers (refused on other schemes)
    figure: str | None  # the study's figure when this modifier is present (None: the scheme's)
    figure_rank: int | None  # its figure wins over the scheme's, lowest rank first (None: the scheme's wins)


MODIFIERS: dict[str, Modifier] = {
    modifier.key: modifier
    for modifier in (
        Modifier(
            "reinit_lr_multiplier",
            float,
            "App. E: reinitialised layers train at lr x this",
            checks.positive,
            whole_layers_only=True,
            figure="modifier",
            figure_rank=None,
        ),
        Modifier(
            "keep_layernorm",
            bool,
            "App. F: reinitialised layers keep their pretrained LayerNorm",
            checks.boolean,
            whole_layers_only=True,
            figure="modifier",
            figure_rank=None,
        ),
        Modifier(
            "epochs",
            int,
            "App. D: train this many epochs at every size, scoring eval after each",
            checks.integer(1),
            whole_layers_only=False,
            figure="epochs",
            figure_rank=1,
        ),
        Modifier(
            "intermediate_tasks",
            tuple[tuple[str, ...], ...],  # chains; a plain task is a chain of one
            "Huang et al. 4.1: finetune on each of these tasks (or chains of tasks, in order) first (sequential)",
            None,
            whole_layers_only=False,
            figure="sequential",
            figure_rank=0,
        ),
        Modifier(
            "seed_design",
            tuple[int, int],  # (subsets, seeds)
            "Dodge et al.: {subsets: S, seeds: D}, trials = S x D, each random draw crossed with each subset",
            checks.crossed_design,
            whole_layers_only=False,
            figure=None,
            figure_rank=None,
        ),
        Modifier(
            "intermediate_size",
            int | str,  # `full`: each step's whole train set
            "Huang et al. 4.1: examples of each intermediate step (full: its whole set); default the final size",
            checks.count_or_full,
            whole_layers_only=False,
            figure=None,
            figure_rank=None,
        ),
    )
}
COMMON_KEYS = ("scheme", "tasks", "sizes", "trials")


def study_keys(scheme: Scheme) -> tuple[str, ...]:
    """Every key a study of `scheme` may have, in the order error messages list them."""
    return (*COMMON_KEYS, *scheme.keys, *MODIFIERS)


def optional_study_keys() -> dict[str, Key]:
    """Every study key beside COMMON_KEYS, as the config schema declares it (StudyConfig's
    fields, None where a study does not set it): each scheme key, its help naming the schemes
    that take it, then each modifier."""
    clash = set(SCHEME_KEYS) & {*MODIFIERS, *COMMON_KEYS}
    if clash:
        raise ValueError(f"scheme keys {sorted(clash)} are also modifiers or keys of every study")
    keys = {
        name: Key(key.type, key.check, f"{', '.join(schemes_taking(name))}: {key.help}", key.limit)
        for name, key in SCHEME_KEYS.items()
    }
    return keys | {name: Key(m.type, m.check, f"modifier: {m.help}") for name, m in MODIFIERS.items()}


def figure_of(study) -> str:
    """The figure a study draws: a modifier whose figure comes first (sequential, epochs),
    else a scheme with a figure of its own, else a modifier's, else the progressive curve."""
    present = [MODIFIERS[key] for key in MODIFIERS if getattr(study, key) not in (None, False)]
    scheme = SCHEMES[study.scheme]
    ranked = [(m.figure_rank, m.figure) for m in present if m.figure_rank is not None and m.figure is not None]
    if ranked:
        return min(ranked, key=lambda pair: pair[0])[1]
    if scheme.figure != "progressive":
        return scheme.figure
    return next((figure for m in present if (figure := m.figure)), "progressive")
