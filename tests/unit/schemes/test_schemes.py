"""src/schemes/registry.py: the registry of reinitialisation schemes. Every scheme's
variants resolve to it, its expansion of the test grid gives conditions that are named
uniquely, fit the model and reinitialise layers that exist, `fits` refuses what is out of
range, and its params.yaml name and range checks agree with `fits`."""

import re
from dataclasses import fields as dataclass_fields

import pytest

from src.conditions.condition import Condition
from src.conditions.studies import all_study_conditions
from src.config.schema import StudyConfig, forget_keys_read, help_text, keys_read
from src.core.errors import ParamsError
from src.params.load import ModelLimits, validate
from src.schemes.registry import (
    BY_VARIANT,
    COMMON_KEYS,
    MODIFIERS,
    SCHEME_KEYS,
    SCHEMES,
    VARIANTS,
    WHOLE_LAYER_VARIANTS,
    Limit,
    removed_layers,
    scheme_of,
)
from src.train.schedule import is_full_model

L, H = 6, 12  # the test grid's model shape (all-MiniLM-L6-v2)
LIMITS = ModelLimits(L, H, 512)


def conditions_of(study, num_layers=L, task="rt_sentiment", size=8, trial=0) -> list[Condition]:
    """The conditions one (task, size, trial) of `study` gets from its scheme's expand."""
    return [Condition(task, size, trial, 1, **fields) for fields in SCHEMES[study.scheme].expand(study, num_layers)]


# Every scheme written out, not rebuilt from SCHEMES: a wrong entry in the registry (a variant
# moved to another scheme, a flag flipped, a key or figure renamed) fails here.
# name: (variants, whole_layers, figure, reports_full_and_scratch, alters_model, per_head, keys = limits)
EXPECTED_SCHEMES = {
    "progressive": (("progressive",), True, "progressive", False, False, False, ("ks",)),
    "block": (("block_reinit", "block_preserve"), True, "blocks", True, False, False, ("window",)),
    "single_layer": (("single_layer",), True, "single_layer", True, False, False, ("layers",)),
    "permutation": (("permutation",), False, "permutation", True, True, False, ()),
    "head": (("head",), False, "heads", True, True, True, ("layers", "heads")),
    "remove": (("remove",), False, "remove", True, True, False, ("removals",)),
}
ALL_VARIANTS = ("progressive", "block_reinit", "block_preserve", "single_layer", "permutation", "head", "remove")


def test_every_variant_resolves_to_the_scheme_that_lists_it():
    assert list(SCHEMES) == list(EXPECTED_SCHEMES)
    assert VARIANTS == ALL_VARIANTS and tuple(BY_VARIANT) == ALL_VARIANTS
    assert WHOLE_LAYER_VARIANTS == ("progressive", "block_reinit", "block_preserve", "single_layer")
    for name, (variants, whole_layers, figure, references, alters, per_head, keys) in EXPECTED_SCHEMES.items():
        scheme = SCHEMES[name]
        assert scheme.name == name
        assert scheme.variants == variants, name
        assert (scheme.whole_layers, scheme.figure, scheme.reports_full_and_scratch) == (
            whole_layers,
            figure,
            references,
        )
        assert (scheme.alters_model, scheme.per_head) == (alters, per_head), name
        assert tuple(scheme.keys) == keys and tuple(scheme.limits) == keys, name
        for variant in variants:
            assert BY_VARIANT[variant] is scheme and scheme_of(variant) is scheme, variant
    allowed = "progressive | block_reinit | block_preserve | single_layer | permutation | head | remove"
    with pytest.raises(ValueError, match=re.escape(f"unknown scheme 'blocks'; allowed: {allowed}")):
        scheme_of("blocks")


def test_study_config_is_generated_from_the_registry_one_field_per_key():
    """StudyConfig declares no scheme key or modifier of its own: each is the registry's Key
    (or Modifier), with its check and help text, default None; a key two schemes take is one Key."""
    names = [f.name for f in dataclass_fields(StudyConfig)]
    assert names == ["name", *COMMON_KEYS, *SCHEME_KEYS, *MODIFIERS]
    by_name = {f.name: f for f in dataclass_fields(StudyConfig)}
    for name, key in SCHEME_KEYS.items():
        assert by_name[name].default is None and by_name[name].metadata["check"] is key.check
        takers = [s.name for s in SCHEMES.values() if name in s.keys]
        assert all(SCHEMES[t].keys[name] is key for t in takers)
        assert help_text(StudyConfig)[name] == f"{', '.join(takers)}: {key.help}"
    for name, modifier in MODIFIERS.items():
        assert by_name[name].default is None and by_name[name].metadata["check"] is modifier.check
        assert help_text(StudyConfig)[name] == f"modifier: {modifier.help}"
    assert all(help_text(StudyConfig)[name] for name in names if name != "name")
    assert SCHEMES["single_layer"].keys["layers"] is SCHEMES["head"].keys["layers"]


def test_a_generated_study_field_is_read_as_a_params_key(config):
    study = config.studies["blocks"]
    forget_keys_read()
    assert study.window == 5 and study.name == "blocks" and study.epochs is None
    assert keys_read() == {"studies.blocks.window", "studies.blocks.epochs"}  # the name is no params key
    forget_keys_read()


def test_the_test_grid_has_a_study_of_every_scheme(config):
    assert {study.scheme for study in config.studies.values()} == set(SCHEMES)


def test_each_expansion_names_its_conditions_uniquely_and_they_fit_and_reinitialise_existing_layers(config):
    for name, study in config.studies.items():
        conditions = conditions_of(study)
        assert conditions, name
        slugs = [c.slug for c in conditions]
        assert len(set(slugs)) == len(slugs), f"{name}: two conditions share a slug: {slugs}"
        for c in conditions:
            assert c.scheme in SCHEMES[study.scheme].variants, (name, c)
            assert scheme_of(c.scheme).fits(c, L, H), (name, c.slug)
            c.check(L, H)
            layers = c.reinit_layers(L)
            assert layers == sorted(set(layers)) and all(0 <= i < L for i in layers), (name, c.slug, layers)


def test_every_reported_condition_has_its_own_result_name(config):
    """A result's file and its predictions are keyed by (task, size, slug, trial): two conditions
    of one study with the same key would overwrite each other."""
    for name, conditions in all_study_conditions(config, L).items():
        keys = [(c.task, c.size, c.slug, c.trial) for c in conditions]
        assert len(set(keys)) == len(keys), name
        for c in conditions:
            c.check(L, H)
            assert all(0 <= i < L for i in c.reinit_layers(L))


def test_what_a_scheme_reinitialises():
    assert Condition("t", 8, 0, 1, k=2).reinit_layers(L) == [2, 3, 4, 5]
    assert Condition("t", 8, 0, 1, k=L).reinit_layers(L) == []
    assert Condition("t", 8, 0, 1, scheme="block_reinit", layer=2, window=3).reinit_layers(L) == [1, 2, 3]
    assert Condition("t", 8, 0, 1, scheme="block_preserve", layer=2, window=3).reinit_layers(L) == [0, 4, 5]
    assert Condition("t", 8, 0, 1, scheme="single_layer", layer=L).reinit_layers(L) == [L - 1]
    # permutation moves pretrained layers and head reinit touches slices: no whole layer is fresh
    assert Condition("t", 8, 0, 1, scheme="permutation").reinit_layers(L) == []
    assert Condition("t", 8, 0, 1, scheme="head", layer=2, head_index=3).reinit_layers(L) == []


def test_only_a_condition_that_changes_nothing_is_the_full_model():
    """The full model's measures (criticality, head importance) and its schedule go to the k = L
    condition only: a permutation, a head reinit or a removal reinitialises no whole layer but
    is not the pretrained model, and neither is a run that finetuned another task first."""
    assert is_full_model(Condition("t", 8, 0, 1, k=L), L)
    assert not is_full_model(Condition("t", 8, 0, 1, k=L - 1), L)
    assert not is_full_model(Condition("t", 8, 0, 1, k=L, intermediate_task="u"), L)
    for fields in (
        dict(scheme="permutation"),
        dict(scheme="head", layer=2, head_index=3),
        dict(scheme="remove", removal="top1", removed=(L,)),
    ):
        assert not is_full_model(Condition("t", 8, 0, 1, **fields), L), fields


@pytest.mark.parametrize(
    "inside, outside",
    [
        (dict(k=0), dict(k=-1)),
        (dict(k=L), dict(k=L + 1)),
        (dict(k=L), dict(k=None)),
        (dict(scheme="block_reinit", layer=1, window=L), dict(scheme="block_reinit", layer=2, window=L)),
        (dict(scheme="block_preserve", layer=L - 2, window=3), dict(scheme="block_preserve", layer=L - 1, window=3)),
        (dict(scheme="block_reinit", layer=1, window=1), dict(scheme="block_reinit", layer=1, window=0)),
        (dict(scheme="block_reinit", layer=1, window=1), dict(scheme="block_reinit", layer=0, window=1)),
        (dict(scheme="single_layer", layer=1), dict(scheme="single_layer", layer=0)),
        (dict(scheme="single_layer", layer=L), dict(scheme="single_layer", layer=L + 1)),
        (dict(scheme="head", layer=L, head_index=H - 1), dict(scheme="head", layer=L, head_index=H)),
        (dict(scheme="head", layer=1, head_index=0), dict(scheme="head", layer=0, head_index=0)),
        (dict(scheme="head", layer=L, head_index=0), dict(scheme="head", layer=L + 1, head_index=0)),
        (dict(scheme="head", layer=1, head_index=0), dict(scheme="head", layer=1, head_index=None)),
    ],
)
def test_fits_takes_the_edge_of_the_range_and_refuses_one_past_it(inside, outside):
    inside, outside = Condition("t", 8, 0, 1, **inside), Condition("t", 8, 0, 1, **outside)
    assert scheme_of(inside.scheme).fits(inside, L, H)
    assert not scheme_of(outside.scheme).fits(outside, L, H)
    with pytest.raises(ValueError, match=f"does not fit a model with {L} encoder layers and {H} attention heads"):
        outside.check(L, H)


def test_a_permutation_fits_any_model():
    assert scheme_of("permutation").fits(Condition("t", 8, 0, 1, scheme="permutation"), 1, 1)


def grid_arguments(params: dict, name: str) -> dict:
    """The scheme's own keys, as the test grid's study of `name` gives them in params.yaml."""
    study = next(s for s in params["studies"].values() if s["scheme"] == name)
    return {key: study[key] for key in SCHEMES[name].keys}


@pytest.mark.parametrize("name", list(SCHEMES))
def test_every_scheme_is_accepted_by_its_params_name(params, name):
    plain = {"tasks": ["rt_sentiment"], "sizes": [8], "trials": 1}
    arguments = grid_arguments(params, name)
    params["studies"]["extra"] = {"scheme": name, **plain, **arguments}
    study = validate(params, LIMITS).studies["extra"]
    assert study.scheme == name and SCHEMES[study.scheme] is SCHEMES[name]
    assert conditions_of(study)  # and it expands


def test_an_unknown_scheme_name_is_refused_naming_the_known_ones(params):
    params["studies"]["extra"] = {"scheme": "block_reinit", "tasks": ["rt_sentiment"], "sizes": [8], "trials": 1}
    with pytest.raises(ParamsError, match=re.escape("studies.extra.scheme = 'block_reinit' is invalid")) as error:
        validate(params, LIMITS)
    assert all(name in str(error.value) for name in SCHEMES)


@pytest.mark.parametrize(
    "name", [n for n in SCHEMES if any(limit.largest is Limit.largest for limit in SCHEMES[n].limits.values())]
)
def test_the_largest_value_a_limit_allows_expands_to_conditions_that_fit_and_one_more_is_refused(params, name):
    scheme = SCHEMES[name]
    plain = {"scheme": name, "tasks": ["rt_sentiment"], "sizes": [8], "trials": 1}
    arguments = grid_arguments(params, name)
    for key, limit in scheme.limits.items():
        largest = limit.bound(L, H)
        edge = {**arguments, key: [largest] if isinstance(arguments[key], list) else largest}
        params["studies"]["extra"] = {**plain, **edge}
        study = validate(params, LIMITS).studies["extra"]
        assert all(scheme.fits(c, L, H) for c in conditions_of(study)), (name, key, largest)
        params["studies"]["extra"] = {
            **plain,
            **edge,
            key: [largest + 1] if isinstance(arguments[key], list) else largest + 1,
        }
        at = "[0]" if isinstance(arguments[key], list) else ""  # a list's entry at fault is named
        with pytest.raises(ParamsError, match=re.escape(f"studies.extra.{key}{at} = ")) as error:
            validate(params, LIMITS)
        assert limit.allowed(L, H) in str(error.value)


@pytest.mark.parametrize(
    "entry, L, removed, kept",
    [
        ("top3", 12, (10, 11, 12), [1, 2, 3, 4, 5, 6, 7, 8, 9]),
        ("bottom8", 12, (1, 2, 3, 4, 5, 6, 7, 8), [9, 10, 11, 12]),
        ("alternate3", 12, (8, 10, 12), [1, 2, 3, 4, 5, 6, 7, 9, 11]),
        ("alternate3", 6, (2, 4, 6), [1, 3, 5]),
        ("alternate1", 6, (6,), [1, 2, 3, 4, 5]),
        ("top1", 6, (6,), [1, 2, 3, 4, 5]),
        ((9, 10, 11), 12, (9, 10, 11), [1, 2, 3, 4, 5, 6, 7, 8, 12]),  # Huang et al. 6.2: STS-B
    ],
)
def test_a_removal_pattern_removes_and_keeps_the_right_layers(entry, L, removed, kept):
    assert removed_layers(entry, L) == removed
    condition = Condition("t", 8, 0, 1, scheme="remove", removal="p", removed=removed)
    assert condition.removed_layers() == [i - 1 for i in removed]
    assert [i + 1 for i in range(L) if i not in condition.removed_layers()] == kept
    assert condition.reinit_layers(L) == []  # nothing is reinitialised: the kept layers stay pretrained


def test_a_remove_study_expands_to_one_named_condition_per_entry(params):
    params["studies"]["remove"]["removals"] = ["top2", "bottom2", "alternate2", [3, 1], "top1"]
    study = validate(params, LIMITS).studies["remove"]
    assert [(c.removal, c.removed, c.slug) for c in conditions_of(study)] == [
        ("top", (5, 6), "remove_top2_e1"),
        ("bottom", (1, 2), "remove_bottom2_e1"),
        ("alternate", (4, 6), "remove_alternate2_e1"),
        ("listed", (1, 3), "remove_1_3_e1"),
        ("top", (6,), "remove_top1_e1"),
    ]
    conditions = conditions_of(study)
    assert all(c.references(L)["full"] == Condition("rt_sentiment", 8, 0, 1, k=L) for c in conditions)
    # a removal is its own training run, apart from any other scheme's; the same set removed is one run
    runs = {c.training_run(L) for c in conditions}
    assert len(runs) == 5 and Condition("rt_sentiment", 8, 0, 1, k=L).training_run(L) not in runs
    same = Condition("rt_sentiment", 8, 0, 1, scheme="remove", removal="listed", removed=(5, 6))
    assert same.training_run(L) == conditions[0].training_run(L)


@pytest.mark.parametrize(
    "removal, removed",
    [("listed", (1, 2, 3, 4, 5, 6)), ("listed", (7,)), ("listed", (0, 1)), ("listed", ()), (None, (1,))],
)
def test_a_removal_that_leaves_no_layer_or_names_a_missing_one_does_not_fit(removal, removed):
    condition = Condition("t", 8, 0, 1, scheme="remove", removal=removal, removed=removed)
    with pytest.raises(ValueError, match=f"does not fit a model with {L} encoder layers"):
        condition.check(L, H)
    assert Condition("t", 8, 0, 1, scheme="remove", removal="listed", removed=(1, 2, 3, 4, 5)).check(L, H) is None


def test_a_removal_limit_takes_the_edge_and_refuses_one_past_it(params):
    for fits, past in (
        (["top5"], ["top6"]),
        (["alternate3"], ["alternate4"]),
        ([[1, 2, 3, 4, 6]], [[1, 2, 3, 4, 5, 6]]),
    ):
        params["studies"]["remove"]["removals"] = fits
        study = validate(params, LIMITS).studies["remove"]
        assert all(scheme_of("remove").fits(c, L, H) for c in conditions_of(study)), fits
        params["studies"]["remove"]["removals"] = past
        with pytest.raises(ParamsError, match=re.escape("studies.remove.removals[0] = ")):
            validate(params, LIMITS)


def test_what_a_scheme_changes_beyond_whole_layers_is_declared_in_its_entry():
    """The finetuner, the condition's training run and a run's seed record ask the scheme:
    which heads get fresh weights, which layers are removed, the layer order and its seed."""
    plain = Condition("t", 8, 2, 1, k=3)
    head = Condition("t", 8, 2, 1, scheme="head", layer=2, head_index=3)
    removal = Condition("t", 8, 2, 1, scheme="remove", removal="top", removed=(5, 6))
    permuted = Condition("t", 8, 2, 1, scheme="permutation")
    assert head.reinit_heads() == [(1, 3)] and plain.reinit_heads() == removal.reinit_heads() == []
    assert removal.removed_layers() == [4, 5] and plain.removed_layers() == head.removed_layers() == []
    for condition in (plain, head, removal):
        assert condition.layer_order(L, 7) == list(range(L)) and condition.scheme_seeds(7) == {}
    order = permuted.layer_order(L, 7)
    assert sorted(order) == list(range(L)) and order == permuted.layer_order(L, 7)
    assert permuted.scheme_seeds(7) == {"permutation": permuted.seed(7, "permutation", "reinit")}
    # the same shuffle on every task, another on another trial
    assert Condition("u", 16, 2, 1, scheme="permutation").layer_order(L, 7) == order
    assert permuted.training_run(L) != Condition("t", 8, 2, 1, k=L).training_run(L)
    assert head.training_run(L) != Condition("t", 8, 2, 1, scheme="head", layer=2, head_index=4).training_run(L)


def test_only_a_scheme_with_a_baseline_gives_a_modified_condition_one():
    for fields in (dict(k=2), dict(scheme="single_layer", layer=2), dict(scheme="block_reinit", layer=1, window=2)):
        modified = Condition("t", 8, 1, 1, lr_multiplier=5.0, **fields)
        baseline = modified.references(L).get("baseline")
        if scheme_of(modified.scheme).baseline is None:
            assert baseline is None and modified.reported_references(L) == list(modified.references(L).values())
        else:
            assert baseline == Condition("t", 8, 1, 1, k=2) and modified.reported_references(L) == [baseline]
    assert "baseline" not in Condition("t", 8, 1, 1, k=2).references(L)  # a plain condition is its own


def test_a_new_scheme_is_one_entry(monkeypatch, config):
    """A scheme added to the registry alone (here: two adjacent layers reinitialised, on the
    existing `layers` key) expands, names, checks, references and draws its conditions."""
    from dataclasses import replace

    from src.conditions.studies import study_conditions
    from src.schemes import registry

    pair = replace(
        SCHEMES["single_layer"],
        name="pair",
        help="two adjacent layers reinitialised",
        variants=("pair",),
        expand=lambda study, L: [{"scheme": "pair", "layer": layer} for layer in study.layers],
        fits=lambda c, L, H: c.layer is not None and 1 <= c.layer < L,
        reinit_layers=lambda c, L: [c.layer - 1, c.layer],
        slug=lambda c: f"pair{c.layer}",
        figure="single_layer",
    )
    monkeypatch.setitem(registry.SCHEMES, "pair", pair)
    monkeypatch.setitem(registry.BY_VARIANT, "pair", pair)
    study = StudyConfig(name="pairs", scheme="pair", tasks=("t",), sizes=(8,), trials=1, layers=(1, 4))
    conditions = study_conditions(study, config.train, "paper", "mean", L)
    e = config.train.epochs_for(8)
    assert [c.slug for c in conditions] == [f"pair1_e{e}", f"k{L}_e{e}", f"k0_e{e}", f"pair4_e{e}"]
    assert [c.reinit_layers(L) for c in conditions if c.scheme == "pair"] == [[0, 1], [3, 4]]
    assert all(c.check(L, H) is None for c in conditions)
    assert registry.figure_of(study) == "single_layer"


def test_every_figure_and_table_the_registry_names_is_drawn_or_built():
    """A scheme names its figure and its extra tables; src/figures and src/results hold them by
    that name and select the scheme's rows by its variants, never by a scheme's name."""
    from src.figures.studies import FIGURES
    from src.results.aggregate import EXTRA_TABLE_COLUMNS, SCHEME_TABLES

    for scheme in SCHEMES.values():
        assert scheme.figure in FIGURES, scheme.name
        assert set(scheme.tables) <= set(SCHEME_TABLES) & set(EXTRA_TABLE_COLUMNS), scheme.name
    assert all(m.figure is None or m.figure in FIGURES for m in MODIFIERS.values())
    assert {t for s in SCHEMES.values() for t in s.tables} == set(SCHEME_TABLES)
