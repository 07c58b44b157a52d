"""The registry of reinitialisation schemes and of the modifiers of how a run trains.

One entry per scheme holds everything the pipeline knows about it: its params.yaml name
and keys (with their checks and the model limits they must fit), the condition variants
it expands to, which encoder layers it gives fresh weights, how its conditions are named
(slug), which references its figure draws, and its figure. Adding a scheme is one entry
here plus, if it touches weights in a new way, its function in src/model/reinit.py.

Layers are numbered 1..L like k; `reinit_layers` returns 0-based indices.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

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
class Scheme:
    name: str  # `scheme:` in a study of params.yaml
    help: str
    keys: dict[str, checks.Check]  # the study keys it takes beside scheme, tasks, sizes, trials
    limits: dict[str, Limit]  # key -> its range on the model (checked once the model is known)
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


def removed_layers(entry, L: int) -> tuple[int, ...]:
    """The 1-based layers `entry` removes from an L-layer encoder: top n = L-n+1..L, bottom
    n = 1..n, alternate n = L, L-2, ..., L-2(n-1) (Sajjad et al.'s alternate dropping,
    counted from the top layer), a list = those layers."""
    if not isinstance(entry, str):
        return tuple(entry)
    pattern, n = REMOVAL.fullmatch(entry).groups()
    n = int(n)
    spans = {"top": range(L - n + 1, L + 1), "bottom": range(1, n + 1), "alternate": range(L - 2 * (n - 1), L + 1, 2)}
    return tuple(spans[pattern])


def _removal_depth(entries) -> int:
    """The fewest encoder layers a model needs for every entry to name layers it has and keep one."""

    def depth(entry) -> int:
        if not isinstance(entry, str):
            return max(max(entry), len(entry) + 1)
        pattern, n = REMOVAL.fullmatch(entry).groups()
        return max(2 * int(n) - 1, int(n) + 1) if pattern == "alternate" else int(n) + 1

    return max(depth(entry) for entry in entries)


def _removal_fits(c, L, H) -> bool:
    return bool(c.removed) and c.removal is not None and all(1 <= i <= L for i in c.removed) and len(c.removed) < L


def _removal_slug(c) -> str:
    if c.removal == "listed":
        return "remove_" + "_".join(map(str, c.removed))
    return f"remove_{c.removal}{len(c.removed)}"


_LAYER_RANGE = Limit(lambda L, H: L, lambda L, H: f"0..{L} (the model has {L} encoder layers)")

SCHEMES: dict[str, Scheme] = {
    scheme.name: scheme
    for scheme in (
        Scheme(
            "progressive",
            "Fig. 1: keep layers 1..k, reinitialise k+1..L",
            keys={"ks": checks.listing(checks.integer(0))},
            limits={"ks": _LAYER_RANGE},
            variants=("progressive",),
            expand=lambda study, L: [{"k": k} for k in study.ks],
            fits=lambda c, L, H: c.k is not None and 0 <= c.k <= L,
            reinit_layers=lambda c, L: list(range(c.k, L)),
            slug=lambda c: f"k{c.k}",
            whole_layers=True,
            figure="progressive",
            reports_full_and_scratch=False,
            alters_model=False,
        ),
        Scheme(
            "block",
            "Fig. 2: every window of `window` layers reinitialised, and alone preserved",
            keys={"window": checks.integer(1)},
            limits={"window": Limit(lambda L, H: L, lambda L, H: f"1..{L} (the model has {L} encoder layers)")},
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
            keys={"layers": checks.listing(checks.integer(1))},
            limits={"layers": Limit(lambda L, H: L, lambda L, H: f"layers 1..{L} (the model has {L} encoder layers)")},
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
            limits={},
            variants=("permutation",),
            expand=lambda study, L: [{"scheme": "permutation"}],
            fits=lambda c, L, H: True,
            reinit_layers=lambda c, L: [],
            slug=lambda c: "permutation",
            whole_layers=False,
            figure="permutation",
            reports_full_and_scratch=True,
            alters_model=True,
        ),
        Scheme(
            "head",
            "Huang et al. 4.3: one attention head's q/k/v rows (and its output columns) reinitialised",
            keys={"layers": checks.listing(checks.integer(1)), "heads": checks.listing(checks.integer(0))},
            limits={
                "layers": Limit(lambda L, H: L, lambda L, H: f"layers 1..{L} (the model has {L} encoder layers)"),
                "heads": Limit(
                    lambda L, H: H - 1, lambda L, H: f"heads 0..{H - 1} (the model has {H} attention heads per layer)"
                ),
            },
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
        ),
        Scheme(
            "remove",
            "Huang et al. 6.2, Sajjad et al. 2020: encoder layers deleted, the shallower model finetuned",
            keys={"removals": checks.listing(removal_entry)},
            limits={
                "removals": Limit(
                    lambda L, H: L,
                    lambda L, H: (
                        f"removals that leave at least one of the model's {L} encoder layers: listed layers "
                        f"1..{L}, top<n> or bottom<n> with n <= {L - 1}, alternate<n> with 2n-1 <= {L} and n <= {L - 1}"
                    ),
                    _removal_depth,
                )
            },
            variants=("remove",),
            expand=lambda study, L: [
                {
                    "scheme": "remove",
                    "removal": REMOVAL.fullmatch(entry).group(1) if isinstance(entry, str) else "listed",
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
        ),
    )
}

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
    help: str
    check: checks.Check  # its value (task lists are checked against data.tasks by the loader)
    whole_layers_only: bool  # it acts on reinitialised whole layers (refused on other schemes)
    figure: str | None  # the study's figure when this modifier is present (None: the scheme's)
    figure_rank: int | None  # its figure wins over the scheme's, lowest rank first (None: the scheme's wins)


MODIFIERS: dict[str, Modifier] = {
    modifier.key: modifier
    for modifier in (
        Modifier(
            "reinit_lr_multiplier",
            "App. E: reinitialised layers train at lr x this",
            checks.positive,
            True,
            "modifier",
            None,
        ),
        Modifier(
            "keep_layernorm",
            "App. F: reinitialised layers keep their pretrained LayerNorm",
            checks.boolean,
            True,
            "modifier",
            None,
        ),
        Modifier(
            "epochs",
            "App. D: train this many epochs at every size, scoring eval after each",
            checks.integer(1),
            False,
            "epochs",
            1,
        ),
        Modifier(
            "intermediate_tasks",
            "Huang et al. 4.1: finetune on each of these tasks (or chains of tasks, in order) first (sequential)",
            None,
            False,
            "sequential",
            0,
        ),
        Modifier(
            "seed_design",
            "Dodge et al.: {subsets: S, seeds: D}, trials = S x D, each random draw crossed with each subset",
            checks.crossed_design,
            False,
            None,
            None,
        ),
        Modifier(
            "intermediate_size",
            "Huang et al. 4.1: examples of each intermediate step (full: its whole set); default the final size",
            checks.count_or_full,
            False,
            None,
            None,
        ),
    )
}
COMMON_KEYS = ("scheme", "tasks", "sizes", "trials")


def study_keys(scheme: Scheme) -> tuple[str, ...]:
    """Every key a study of `scheme` may have, in the order error messages list them."""
    return (*COMMON_KEYS, *scheme.keys, *MODIFIERS)


def figure_of(study) -> str:
    """The figure a study draws: a modifier whose figure comes first (sequential, epochs),
    else a scheme with a figure of its own, else a modifier's, else the progressive curve."""
    present = [MODIFIERS[key] for key in MODIFIERS if getattr(study, key) not in (None, False)]
    scheme = SCHEMES[study.scheme]
    first = sorted((m for m in present if m.figure_rank is not None), key=lambda m: m.figure_rank)
    if first:
        return first[0].figure
    if scheme.figure != "progressive":
        return scheme.figure
    return next((m.figure for m in present if m.figure), "progressive")
