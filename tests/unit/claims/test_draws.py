"""A claim's numbers depend on its evidence alone: the curves' bootstrap draws are keyed by what they
resample (the eval set of a task, the trials of a curve, the seeds of a probe), so building the registry's
claims in another order, or one claim alone, gives every claim the same units, intervals and p-values;
the curves scored on one eval set still share its draws (paired)."""

import random
from dataclasses import replace

import numpy as np

from src.claims.claim import Shared
from src.claims.registry import CLAIMS
from tests.fake_evidence import RISING, Builder, probe_evidence


def evidence():
    """Curves of two tasks, one at two sizes, and a probe of sst2 with its predictions: every kind of draw."""
    b = Builder().curve(RISING, trials=6).curve(RISING[::-1], trials=6, task="cola")
    b.curve([0.5, 0.6, 0.65, 0.7, 0.72], trials=6, size=50, spread=0.03)
    return probe_evidence(b, [0.55, 0.66, 0.74, 0.76, 0.75], seeds=3)


def numbers(ev, claims, shared=None) -> dict[str, str]:
    """Each claim's units as built (estimates, intervals, p-values, notes), read in a fresh Shared per claim
    where `shared` is None."""
    return {claim.id: repr(claim.build(ev, shared or Shared(ev))) for claim in claims}


def reads_the_probes(ev, shared: Shared) -> list:
    """A claim added first that reads the probe curves before any claim reads the finetuning curves."""
    assert shared.probes
    return []


def test_every_claims_numbers_are_the_same_in_any_order_of_the_registry_alone_and_beside_a_new_claim():
    ev = evidence()
    in_order = numbers(ev, CLAIMS, Shared(ev))
    shuffled = random.Random(0).sample(CLAIMS, len(CLAIMS))
    assert numbers(ev, CLAIMS[::-1], Shared(ev)) == in_order
    assert numbers(ev, shuffled, Shared(ev)) == in_order
    assert numbers(ev, CLAIMS) == in_order  # each claim alone
    added = replace(CLAIMS[0], id="reads_the_probes_first", build=reads_the_probes)
    assert numbers(ev, [added, *CLAIMS], Shared(ev)) == {added.id: "[]", **in_order}
    assert sum("bootstrap" in units for units in in_order.values()) >= 3  # claims that read the draws


def test_the_curves_scored_on_one_eval_set_share_its_draws():
    """Two sizes' curves with the same predictions and no spread over trials: their draws are equal exactly
    where they resample the eval set by the same draws (a curve of another eval set does not)."""
    b = Builder().curve(RISING, trials=3, spread=0.0).curve(RISING, trials=3, spread=0.0, size=50)
    b.curve(RISING, trials=3, spread=0.0, task="cola")
    for key in [k for k in b.predictions if k[1] == 50]:
        b.predictions[key] = b.predictions[("sst2", 500, *key[2:])]
        b.predictions[("cola", 500, *key[2:])] = b.predictions[key]
    curves = Shared(b.evidence()).curves
    assert curves[("sst2", 500)].draws.std(axis=0).max() > 0.005  # the eval set's noise is in them
    np.testing.assert_array_equal(curves[("sst2", 50)].draws, curves[("sst2", 500)].draws)
    assert not np.array_equal(curves[("cola", 500)].draws, curves[("sst2", 500)].draws)
