"""The claims each cheat of tests/cheats/dp_cheats.py is aimed at (tests/test_cheats_zoo.py).

Kept apart from the plug-in module so that the tests can read it at collection time without
registering the cheats (they come in as a plug-in, inside each test).
"""

from __future__ import annotations

COST = ("cc-one-over-epsilon", "afkt-dartboard-cost-vs-epsilon", "ars-shift-cost-vs-epsilon")
LOWER = ("ars-adaptive-lower-bound-linear", "ars-lazy-linear-on-adaptive")
#: The batched claim plays four families at up to 2^16 rounds with 32 seeds: only the cheap
#: cheat (follow-the-leader) runs it, to keep each test under ~30 s.
WORST = ("afkt-dartboard-regret-vs-T", "afkt-batched-dartboard-regret-vs-T")
RATES = ("cc-horizon-free", "ars-shift-dr-vs-T", "ars-laplace-tracker-dr-vs-T")
PRIVATE_RATES = ("cc-one-over-epsilon", "ars-laplace-tracker-dr-vs-T", "ars-threshold-collapse")

#: cheat -> the claims it is aimed at (each must give a verdict other than ``holds``).
TARGETS: dict[str, tuple[str, ...]] = {
    "cheat-warmup-hedge": COST,
    "cheat-warmup-hedge-liar": COST,
    "cheat-ftl": LOWER + WORST,
    "cheat-ftl-liar": LOWER[:1] + WORST[:1] + RATES[:1],
    "cheat-hedge-half": LOWER + WORST[:1] + RATES[:1],
    "cheat-constant": LOWER[1:] + RATES[:2] + WORST[:1],
    "cheat-tracker": WORST[:1] + ("afkt-dartboard-cost-vs-epsilon",),
    "cheat-overspent": PRIVATE_RATES,
    "cheat-uncertified": PRIVATE_RATES[:2] + ("afkt-dartboard-regret-vs-T",),
}
