"""The race's decisions as pure functions: who qualifies, who may race, who ranks where, who is promoted.

Every tie breaks on chain data, never on when this validator happened to record something, so every
honest validator decides alike: equal race scores on a hash of the race seed and the hotkey
(:func:`arena.weights.seeded_tie_break`, unknowable before the seed's block), never on hotkey order;
equal race scores with the same outcome on every problem (near-identical agents) on the earlier
commitment (:func:`earlier_among_twins`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, time, timedelta

from pydantic import BaseModel, ConfigDict, Field

from arena.judge.score import ProblemOutcome
from arena.race.calendar import MarginCurve, embargo_until
from arena.race.events import RaceFinished
from arena.race.promotion import clears, lead_lower_bound
from arena.race.state import RaceState, RunningRace, Submission
from arena.weights import seeded_tie_break


class RaceRules(BaseModel):
    model_config = ConfigDict(frozen=True)

    cooldown_hours: float = Field(default=12.0, gt=0, description="Between two submissions of a hotkey")
    security_rejection_cooldown_hours: float = Field(
        default=1.0, ge=0, description="After a security rejection (an honest mistake, fixed fast)")
    upload_window_blocks: int = Field(
        default=10, ge=1, description="Blocks after its commitment's during which a file's upload is "
                                      "accepted; its qualifying draw is the first final block after them")
    qualify_ratio: float = Field(default=0.95, gt=0, le=1,
                                 description="Share of the reigning winner's score on the challenger's own "
                                             "qualifying problems to clear")
    qualify_min_score: float = Field(default=0.01, ge=0, le=1,
                                     description="Absolute floor on the challenger's fresh problems, the "
                                                 "whole bar when there is no reigning winner")
    race_time: time = Field(default=time(16, 0), description="Daily race slot, UTC")
    margin: MarginCurve = MarginCurve()
    promotion_resamples: int = Field(default=2000, ge=100,
                                     description="Bootstrap resamples of the promotion test")
    promotion_confidence: float = Field(default=0.95, gt=0.5, lt=1,
                                        description="One-sided confidence that a promoted lead is real")

    @property
    def cooldown(self) -> timedelta:
        return timedelta(hours=self.cooldown_hours)

    @property
    def security_rejection_cooldown(self) -> timedelta:
        return timedelta(hours=self.security_rejection_cooldown_hours)


def qualifying_threshold(winner_score: float | None, rules: RaceRules) -> float:
    """The bar a challenger's qualifying score must reach, like with like: ``qualify_ratio`` x the reigning
    winner's score on the challenger's own qualifying problems (``winner_score``, ``None`` when nobody
    reigns), never below ``qualify_min_score``.

    Those problems are generated from a block after the challenger's commitment, so neither agent could
    know them: a winner that carried answers to problems it could know (a table) scores on them what its
    policy earns, and no score on known problems ever sets the bar.
    """
    return max(rules.qualify_min_score, rules.qualify_ratio * (winner_score or 0.0))


def chain_order(submission: Submission) -> tuple[bool, int, str, str]:
    """Earlier commitment block first (unknown blocks, from old logs, last), then hotkey, then id."""
    block = submission.commitment_block
    return block is None, block or 0, submission.hotkey, submission.submission_id


def upload_deadline(commitment_block: int, rules: RaceRules) -> int:
    """The last block of a commitment's upload window: an upload is accepted while the chain's head is at
    most this block, and the commitment's qualifying problems come from the first final block after it.

    So the draw does not exist while the file can still be uploaded: a miner who commits, waits for the
    draw and uploads only when it suits him finds the commitment dead, and one who uploads has started
    his cooldown. Grinding a draw costs an upload (and a cooldown) per draw.
    """
    return commitment_block + rules.upload_window_blocks


def first_commitment_block(submissions: Iterable[Submission], hotkey: str, code_hash: str,
                           block: int | None) -> int | None:
    """The block a submission of ``code_hash`` by ``hotkey`` committed at ``block`` counts as committed at:
    the hotkey's first commitment of that file hash among ``submissions`` (the ones recorded before it),
    else ``block``. Its qualifying problems are drawn from the first final block after this one's upload
    window (:func:`upload_deadline`), so committing the same file again never buys a new draw; a
    different file hash gets its own."""
    earlier = [s.commitment_block for s in submissions
               if s.hotkey == hotkey and s.code_hash == code_hash and s.commitment_block is not None]
    return min([*earlier, *([] if block is None else [block])], default=None)


def may_race(submission: Submission, slot: datetime, seed_block: int | None, tempo: int) -> bool:
    """Whether a qualified challenger enters the race of ``slot``: it qualified before the slot and, when
    the seed's block is known, was committed at least ``tempo`` blocks before it (so nobody can commit
    after seeing, or while able to influence, the seed)."""
    if submission.status != "qualified" or submission.qualified_at is None or submission.qualified_at >= slot:
        return False
    block = submission.commitment_block
    return seed_block is None or (block is not None and block <= seed_block - tempo)


def alike_on_every_problem(a: Sequence[ProblemOutcome], b: Sequence[ProblemOutcome]) -> bool:
    """Whether two race results are the same on every problem (the same problems, each with the same
    success and quality): what two copies of one policy give. An empty result is like no other."""
    return bool(a) and [(o.problem_id, o.success, o.quality) for o in a] == \
        [(o.problem_id, o.success, o.quality) for o in b]


def earlier_among_twins(ordered: Sequence[str], scores: Mapping[str, float],
                        twins: Callable[[str, str], bool],
                        earliness: Callable[[str], tuple[object, ...]]) -> tuple[str, ...]:
    """``ordered`` (best first, equal scores in seeded tie-break order) with every group of twins (equal
    scores, ``twins`` of one another) moved to its best member's place and ordered by ``earliness``: among
    near-identical agents the earlier commitment wins the tie, whatever the seed."""
    placed: set[str] = set()
    result: list[str] = []
    for position, sid in enumerate(ordered):
        if sid in placed:
            continue
        group = [sid]
        for other in ordered[position + 1:]:
            if other not in placed and scores[other] == scores[sid] and any(twins(m, other) for m in group):
                group.append(other)
        group.sort(key=earliness)
        result.extend(group)
        placed.update(group)
    return tuple(result)


def standings(race: RunningRace, state: RaceState) -> tuple[str, ...]:
    """Entrants best first: higher race score, then the seeded tie-break of the hotkey (then the submission
    id, for a hotkey racing its reigning agent and a new one), except among twins: entrants tied with
    the same outcome on every problem (:func:`alike_on_every_problem`) rank by commitment, the earlier
    first (in one block, by the seeded tie-break), so a copy that slipped through never wins its
    original's tie on the coin."""
    def seeded(sid: str) -> str:
        return seeded_tie_break(race.seed, state.submissions[sid].hotkey)

    def key(sid: str) -> tuple[float, str, str]:
        return -race.results[sid], seeded(sid), sid

    def twins(a: str, b: str) -> bool:
        return alike_on_every_problem(race.outcomes.get(a, ()), race.outcomes.get(b, ()))

    def earliness(sid: str) -> tuple[object, ...]:
        block = state.submissions[sid].commitment_block
        return block is None, block or 0, seeded(sid), sid

    return earlier_among_twins(sorted(race.entrants, key=key), race.results, twins, earliness)


def decide_race(race: RunningRace, state: RaceState, rules: RaceRules, now: datetime) -> RaceFinished:
    """The outcome of a race with every result in.

    The best challenger (the first in the standings, among equal scores the seeded tie-break's; a
    challenger found to be a copy while it raced is passed over) takes over when there is no winner yet,
    or when it is no copy and its race score beats the reigning winner's by more than the margin for the
    reign's age at this race's slot and the paired bootstrap's lower bound on that lead is above zero
    (margin alone when either result lacks per-problem outcomes). Ties never unseat the winner.
    """
    ranked = standings(race, state)
    challengers = [sid for sid in ranked if sid != race.defender]
    best = next((sid for sid in challengers if state.submissions[sid].copy_of is None), challengers[0])
    if race.defender is None or state.reign is None:
        return RaceFinished(at=now, race_id=race.race_id, standings=ranked, winner=best, promoted=True,
                            required_margin=0.0, embargo_until=embargo_until(race.day))
    margin = rules.margin.margin(race.slot - state.reign.since)
    bound = lead_lower_bound(race.outcomes.get(best, ()), race.outcomes.get(race.defender, ()), race.seed,
                             resamples=rules.promotion_resamples, confidence=rules.promotion_confidence)
    promoted = (state.submissions[best].copy_of is None
                and clears(race.results[best] - race.results[race.defender], margin, bound))
    return RaceFinished(at=now, race_id=race.race_id, standings=ranked,
                        winner=best if promoted else race.defender, promoted=promoted, required_margin=margin,
                        lead_lower_bound=bound, embargo_until=embargo_until(race.day) if promoted else None)
