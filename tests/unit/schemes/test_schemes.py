"""src/schemes/registry.py: the registry of reinitialisation schemes. Every scheme's
variants resolve to it, its expansion of the test grid gives conditions that are named
uniquely, fit the model and reinitialise layers that exist, `fits` refuses what is out of
range, and its params.yaml name and range checks agree with `fits`."""

import re

import pytest

from src.conditions.condition import Condition
from src.conditions.studies import all_study_conditions
from src.core.errors import ParamsError
from src.params.load import ModelLimits, validate
from src.schemes.registry import BY_VARIANT, SCHEMES, VARIANTS, WHOLE_LAYER_VARIANTS, Limit, removed_layers, scheme_of
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
        with pytest.raises(ParamsError, match=re.escape(f"studies.extra.{key} = ")) as error:
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
        with pytest.raises(ParamsError, match=re.escape("studies.remove.removals = ")):
            validate(params, LIMITS)
