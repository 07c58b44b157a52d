"""The registry of the studies' claims: every family's entries (src/claims/families/, each
family's claims beside their builders), in the report's order: by paper (001, 003, 004), and
within a paper by family in the order the paper makes its claims. The order changes no claim's
numbers: the shared curves' bootstrap draws are keyed by what they resample (claim.py draws_rng).
Adding a claim is one entry in its family's
CLAIMS_<seed> tuple; a new family adds its tuple here."""

from __future__ import annotations

from src.claims.claim import Claim
from src.claims.families import (
    blocks,
    heads,
    modifiers,
    permutation,
    probing,
    progressive,
    sequential,
    single_layer,
    weight_change,
)

CLAIMS: list[Claim] = [
    *progressive.CLAIMS_001,
    *probing.CLAIMS_001,
    *blocks.CLAIMS_001,
    *permutation.CLAIMS_001,
    *single_layer.CLAIMS_001,
    *modifiers.CLAIMS_001,
    *weight_change.CLAIMS_003,
    *progressive.CLAIMS_003,
    *probing.CLAIMS_003,
    *sequential.CLAIMS_004,
    *progressive.CLAIMS_004,
    *heads.CLAIMS_004,
]
BY_ID = {claim.id: claim for claim in CLAIMS}
