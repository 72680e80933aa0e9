"""Promotion power: the smallest real lead the race's promotion rule detects, by race suite size.

    python -m benchmarks.promotion [--sizes 60 150] [--races 500] [--disagreement 0.25] [--seed 0]

The rule (``arena.race.promotion``): the best challenger replaces the reigning winner when its lead
beats the margin and the one-sided 95% paired bootstrap lower bound on the lead is above zero. This
simulates many races between two agents and finds, per suite size, the smallest true lead promoted in
at least 80% of races (the rule's power), at the margin floor (an old reign, the easiest case for a
challenger) and at the initial margin (a fresh reign).

Model: each race draws a fresh suite. On problem ``i`` the defender succeeds with probability
``p_i``, ``logit(p_i) ~ N(0, s^2)`` (a base rate of 0.5), the challenger with ``sigmoid(logit(p_i) +
b)``; every attempt is an independent draw (sampled LLM calls), and both agents reason equally well
(quality 0.9 everywhere, coefficient 1), so the final-score lead is the success-rate lead. ``s`` is
set so that two runs of one agent disagree on ``--disagreement`` of the problems (``2 E[p(1-p)]``,
at most 0.5; 0.25 by default, an assumption: problems of middling difficulty flip between runs, easy and
hard ones do not; docs/arena-rules.md also gives 0.15 and 0.35), and
``b`` so that the expected lead is the lead tested. Leads are multiples of 0.005.

Progress lines go to stderr; the last line printed is one JSON object with
``min_detectable_lead_<n>`` (margin floor) and ``min_detectable_lead_<n>_fresh_reign`` per size,
``false_promotions_<n>`` (the rule's promotion rate between two equal agents at the margin floor)
next to ``false_promotions_<n>_margin_only`` (without the bound), and the settings used.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable, Sequence
from typing import Final

import numpy as np
import orjson
from numpy.typing import NDArray

from arena.judge.score import QUALITY_LEVELS
from arena.race.calendar import MarginCurve
from arena.race.promotion import QUALITY_UNITS, bootstrap_generator, clears, paired_lead_bound
from arena.race.rules import RaceRules

POWER: Final = 0.8
LEAD_STEP: Final = 0.005
COARSE_STEPS: Final = 4
MAX_LEAD: Final = 0.4
_QUADRATURE: Final = np.polynomial.hermite_e.hermegauss(80)
"""Nodes and weights for expectations over a standard normal difficulty (Gauss-Hermite)."""


def _sigmoid(x: NDArray[np.float64]) -> NDArray[np.float64]:
    result: NDArray[np.float64] = 1 / (1 + np.exp(-x))
    return result


def _expected(values: NDArray[np.float64]) -> float:
    weights = _QUADRATURE[1]
    return float(values @ weights / weights.sum())


def _solve(f: Callable[[float], float], target: float, low: float, high: float) -> float:
    """The ``x`` in ``[low, high]`` with ``f(x) == target`` for an increasing ``f`` (bisection)."""
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if f(middle) < target else (low, middle)
    return (low + high) / 2


def run_to_run_disagreement(spread: float) -> float:
    """Share of problems two runs of one agent disagree on: ``2 E[p(1-p)]``."""
    p = _sigmoid(spread * _QUADRATURE[0])
    return _expected(2 * p * (1 - p))


def difficulty_spread(disagreement: float) -> float:
    """``s`` such that two runs of one agent disagree on ``disagreement`` of the problems (at most 0.5).

    Disagreement falls as the spread grows: more problems are sure wins or sure losses."""
    return _solve(lambda s: -run_to_run_disagreement(s), -disagreement, 0.0, 20.0)


def logit_shift(spread: float, lead: float) -> float:
    """``b`` such that the challenger's expected success rate is the defender's plus ``lead``."""
    nodes = _QUADRATURE[0]
    base = _expected(_sigmoid(spread * nodes))
    return _solve(lambda b: _expected(_sigmoid(spread * nodes + b)) - base, lead, 0.0, 20.0)


class Simulation:
    """Races between a defender and a challenger ``lead`` better, under one rule configuration."""

    def __init__(self, problems: int, spread: float, rules: RaceRules, seed: int) -> None:
        self.problems = problems
        self.spread = spread
        self.rules = rules
        self.rng = np.random.default_rng(seed)
        self.qualities = np.full(problems, round(QUALITY_LEVELS[-1] * QUALITY_UNITS), dtype=np.int64)

    def race(self, shift: float, label: str) -> tuple[float, float]:
        """One race: the observed lead and the bootstrap lower bound on it."""
        logits = self.rng.normal(0.0, self.spread, self.problems)
        defender = (self.rng.random(self.problems) < _sigmoid(logits)).astype(np.int64)
        challenger = (self.rng.random(self.problems) < _sigmoid(logits + shift)).astype(np.int64)
        bound = paired_lead_bound((challenger, self.qualities), (defender, self.qualities),
                                  bootstrap_generator(label), resamples=self.rules.promotion_resamples,
                                  confidence=self.rules.promotion_confidence)
        return float(challenger.sum() - defender.sum()) / self.problems, bound

    def promotion_rates(self, lead: float, races: int, margins: Sequence[float]) -> list[tuple[float, float]]:
        """Per margin: the share of ``races`` the rule promotes, and the share the margin alone does."""
        shift = logit_shift(self.spread, lead) if lead > 0 else 0.0
        results = [self.race(shift, f"benchmark-{self.problems}-{lead}-{i}") for i in range(races)]
        return [(sum(clears(observed, margin, bound) for observed, bound in results) / races,
                 sum(clears(observed, margin, None) for observed, _ in results) / races)
                for margin in margins]


def min_detectable_leads(simulation: Simulation, races: int, margins: Sequence[float]) -> list[float | None]:
    """Per margin, the smallest lead (a multiple of :data:`LEAD_STEP`) promoted in at least :data:`POWER`
    of the races: leads are scanned upwards :data:`COARSE_STEPS` steps at a time, then step by step
    below the first coarse lead that reaches it."""

    @functools.cache
    def powers(steps: int) -> list[float]:
        lead = round(steps * LEAD_STEP, 3)
        rates = [rule for rule, _ in simulation.promotion_rates(lead, races, margins)]
        shown = ", ".join(f"{r:.3f} at margin {m}" for r, m in zip(rates, margins, strict=True))
        print(f"  {simulation.problems} problems, lead {lead:.3f}: power {shown}", file=sys.stderr)
        return rates

    def first_powered(candidates: range, index: int) -> int | None:
        return next((steps for steps in candidates if powers(steps)[index] >= POWER), None)

    found: list[float | None] = []
    for index in range(len(margins)):
        coarse = first_powered(range(COARSE_STEPS, round(MAX_LEAD / LEAD_STEP) + 1, COARSE_STEPS), index)
        fine = None if coarse is None else first_powered(range(coarse - COARSE_STEPS + 1, coarse + 1), index)
        found.append(None if fine is None else round(fine * LEAD_STEP, 3))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[60, 150], help="race suite sizes")
    parser.add_argument("--races", type=int, default=500, help="simulated races per lead and size")
    parser.add_argument("--disagreement", type=float, default=0.25,
                        help="share of problems two runs of one agent disagree on")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    rules = RaceRules()
    curve: MarginCurve = rules.margin
    margins = [curve.floor, curve.initial]
    spread = difficulty_spread(args.disagreement)
    print(f"difficulty spread s = {spread:.3f} (logit sd) for a run-to-run disagreement of "
          f"{args.disagreement}; {rules.promotion_resamples} resamples, confidence "
          f"{rules.promotion_confidence}, margins {margins}", file=sys.stderr)
    result: dict[str, object] = {}
    started = time.perf_counter()
    for problems in args.sizes:
        simulation = Simulation(problems, spread, rules, args.seed)
        (null_rule, null_margin), _ = simulation.promotion_rates(0.0, args.races, margins)
        print(f"{problems} problems, equal agents: promoted {null_rule:.3f} (margin alone {null_margin:.3f})",
              file=sys.stderr)
        floor, fresh = min_detectable_leads(simulation, args.races, margins)
        result |= {f"min_detectable_lead_{problems}": floor,
                   f"min_detectable_lead_{problems}_fresh_reign": fresh,
                   f"false_promotions_{problems}": null_rule,
                   f"false_promotions_{problems}_margin_only": null_margin}
    result |= {"power": POWER, "bootstrap_resamples": rules.promotion_resamples,
               "confidence": rules.promotion_confidence, "margin_floor": curve.floor,
               "margin_initial": curve.initial, "disagreement": args.disagreement,
               "difficulty_spread": round(spread, 4), "races": args.races, "lead_step": LEAD_STEP,
               "seed": args.seed, "seconds": round(time.perf_counter() - started, 1)}
    print(orjson.dumps(result).decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
