"""The probe-versus-finetuning agreement table (metrics/agreement.csv): a descriptive table
beside the claims, its p-values raw (the claims that test agreement are in the registry)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from src.claims.claim import Shared
from src.claims.curves import probe_measure_curve
from src.claims.evidence import PROBE_MEASURES, Evidence
from src.stats import hypothesis, validity
from src.stats.curves import first_reaching

COLUMNS = [
    "task",
    "size",
    "trials",
    "probe_seeds",
    "rho",
    "rho_p_exact",
    "rho_ci_low",
    "rho_ci_high",
    "k90_finetune",
    "k90_probe",
    *(f"rho_{column}" for column in PROBE_MEASURES),
]


def agreement_table(ev: Evidence) -> pd.DataFrame:
    """Per task and size with a complete curve and a probe: Spearman ρ between the probe curve and
    the mean finetuning curve, its exact permutation p over the L + 1 points (raw), a bootstrap
    95% interval only where it is valid (validity.decidable of a "bootstrap" curve statistic
    at its trials, and several probe seeds; else empty), where each curve first reaches 90% of its
    gain, and ρ of the probes' selectivity and MDL compression curves against the finetuning curve."""
    shared, rows = Shared(ev), []
    for (task, size), curve in shared.curves.items():
        if task not in shared.probes:
            continue
        probe = shared.probes[task]
        low = high = np.nan
        if probe.draws is not None and validity.decidable("bootstrap", len(curve.trials))[0]:
            rho = hypothesis.spearman_rows(probe.draws[: len(curve.draws)], curve.draws)
            low, high = hypothesis.Bootstrap(0.0, rho, len(curve.trials)).interval()
        rows.append(
            [
                task,
                size,
                len(curve.trials),
                probe.seeds,
                hypothesis.spearman(probe.mean, curve.mean),
                hypothesis.exact_spearman_p(probe.mean, curve.mean),
                low,
                high,
                first_reaching(curve.mean),
                first_reaching(probe.mean),
                *(
                    np.nan
                    if (m := probe_measure_curve(ev, task, column)) is None
                    else hypothesis.spearman(m, curve.mean)
                    for column in PROBE_MEASURES
                ),
            ]
        )
    return pd.DataFrame(rows, columns=COLUMNS)
