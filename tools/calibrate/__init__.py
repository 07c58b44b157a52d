"""Calibration of every test type the claims use, measured by simulation.

Data shaped like this pipeline's: a few trials (T = 3, 5, 10) of each condition, scored
on one eval set of EXAMPLES binary-labelled examples (a new eval set is drawn in every
replicate, since the claims are about the task, not about these sentences). A run's
correctness on an example is a probit threshold model,

    correct[c, t, n] = 1{ mu_c + trial_sd * z[c, t] + example_sd * v[c, n] + u[n] + eps[c, t, n] > 0 },

with z (the trial's seed and subset), v (the condition's own difficulty of example n), u
(difficulty shared by every condition) and eps (trial x example interaction) standard
normal, so that a trained run's expected accuracy is exactly Phi(mu_c / sqrt(2 + trial_sd^2 +
example_sd^2)) and a contrast's true value is known. A collapsed run predicts one class for every
example; a nearly collapsed one predicts that class for a share U(0.8, 0.98) of the examples on top
of its own predictions (majority share about 0.90-0.99). Each null (NULLS) sets the SDs and the
shares of each condition's runs that (nearly) collapse; the trained runs' mu is solved so that the
conditions' expected accuracy over all their runs, (nearly) collapsed ones included (the estimand of the
claims' test, which keeps every run), differs by exactly 0 (size, coverage) or exactly the margin
(equivalence and minimum-effect tests at their boundary): a condition's trained runs compensate for its
collapses.

Measured per (test, null, T): size, the rejection rate at the null boundary, at ALPHA and at
HOLM_LEVEL (the smallest level a p is compared against in the report's Holm family); coverage of
the 95% interval; its half-width against the oracle (1.96 x the SD of the estimate over
replicates); the share of replicates refused (no p). The estimate tests are
measured vectorised (hypothesis.crossed_variance and hypothesis.Estimate over a batch of
replicates, the code the claims call), each beside BEFORE, the estimator the report used until
these tables (its df Satterthwaite's over the mean squares of the components kept, its collapse
gate opened by the collapse rate of the runs it gated), and the robustness readings of
src/claims/units.py (the trial-only t; the (nearly) collapsed runs' trials excluded, whose estimand is
the trained runs' contrast, not 0 under a collapse null). docs/calibration.md shows the tables and the command that made
them; tests/unit/stats/test_calibration.py re-measures a fast subset. The hurdle that tests "A beats B"
(src/stats/collapse.py: collapse rates and the trained runs' contrast) has its own nulls, the trained runs alike
and the collapse rates equal (hurdle_table, HURDLE_NULLS), and alternatives where they are not. Margins and chance
levels test their trained runs (units.trained_reading): trained_table measures that test under nulls on the trained
runs with collapses of either condition, both, or one condition against a constant (TRAINED_NULLS, CHANCE_NULLS).

The head-importance-vs-reinit correlation (metrics/head_importance_vs_reinit.csv) has its own
simulation (simulate_heads, correlation_table): a few to 72 heads, each with a latent importance
and reinit effect, measured over 1 or 3 trials with trial noise as large as or 3x the heads' effects,
some reinit trials collapsed; its intervals' coverage is of the population Spearman correlation of
the measured quantities (population_spearman), and measures.correlation_interval picks the one reported.

The whole report (whole_report_table, `--tables whole-report`) is simulated on a finished run's design: its evidence
read as the report stage reads it, every outcome (runs' and probes' predictions and scores, weight change) redrawn
under a global null (every condition of a task alike, every probe layer alike, every layer moving alike;
null_replicate), the report judged by its own code (judge_claims), and each "supported" or "contradicted" compared
with the claim's truth under that null (claim_truths: each unit's estimand read on the null's expectation,
expected_evidence). It gives the rate of at least one wrong verdict in the report, split by verdict and by the
error rate each kind holds (Holm or intersection-union).

One module per concern: nulls (the data-generating model and its designs), row (a measured cell, its levels and
targets); one per table: estimates, trained, hurdle, crossed, curves, welch, spearman_margin, training_check and heads;
run_null and whole_report (the whole report under a global null of a finished run's design); table (the printed lines,
the decidable column and the summaries read back from them); and __main__, the command (`python -m tools.calibrate`).
"""
