"""Prospective design tables (`python -m tools.prospective`): for each preset and each claim of its paper, the
simulated probability that the report's own test supports it, does not support it, or leaves it undecided, on
the paper's design at the paper's effect (or this project's, labelled) and at zero effect, and the fewest
trials that decide it with probability >= 0.8, priced in run-steps and GPU-hours (bench/cost.py).

components: the variance components this project measured; claims: each claim's units on a preset's design
and the effect it is simulated at; simulate: a unit's decision probabilities and a claim's; table: designs,
costs and the markdown tables of docs/presets.md."""
