"""The leaderboard's answers (``GET /``, ``/api/leaderboard``, ``/api/leaderboard/history``), built from
the followed race state and history (no replay) and the trajectory store's problem categories (a
primary-key lookup per race problem).

- :func:`leaderboard`: the reigning winner with the embargo's remaining time on the view's clock, the
  last race's standings with per-category success, mean judge quality, quality coefficient and final
  score, and :class:`Challenge`: what a challenger must beat now.
- :func:`history`: per finished race in the last ``days`` days, the winner's and the field's scores,
  and the reigns over those days.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from datetime import date, datetime, timedelta

from pydantic import BaseModel, Field

from arena.judge import ProblemOutcome, quality_coefficient
from arena.race import RaceRules, RaceState, race_slot
from arena.validator.api.site.paging import Page, PageParams, paginate
from arena.validator.api.views.history import RaceHistory, RaceRecord
from arena.validator.api.views.models import WinnerView, reigning_winner
from arena.validator.api.views.view import ArenaView
from trajectories.store.leaderboard_reads import problem_categories


class CategoryResult(BaseModel):
    category: str
    problems: int
    success_rate: float
    mean_quality: float


class Standing(BaseModel):
    """One entrant of the last race, in finishing order."""

    position: int
    submission_id: str
    hotkey: str
    race_score: float = Field(description="The final score the race ranked on")
    success_rate: float | None = Field(
        description="Share of the race's problems solved (None: no per-problem outcomes in the log)"
    )
    mean_quality: float | None = Field(description="Mean judge quality over the race's problems")
    coefficient: float | None = Field(description="Quality coefficient of that mean (SPEC 3)")
    categories: list[CategoryResult]
    winner: bool = Field(description="Reigning winner after this race")
    page: str = Field(description="The submission's page")


class Challenge(BaseModel):
    """What a challenger must beat now, from the race rules and the log."""

    next_race_at: datetime
    reign_age_days: float | None = Field(
        description="Age of the reign at the next race (None: nobody reigns, the best qualified entrant wins)"
    )
    margin_at_next_race: float | None = Field(
        description="The challenge margin the promotion test needs at the next race (None: nobody reigns)"
    )
    margin_initial: float
    margin_floor: float
    margin_half_life_days: float
    qualify_ratio: float
    qualify_min_score: float
    winner_race_score: float | None = Field(description="The reigning winner's score in the last race")
    qualifying_bar_estimate: float = Field(
        description="qualify_ratio x winner_race_score (floored): the "
        "bar on problems like the last race's; the real bar "
        "is the winner's score on your own qualifying "
        "problems"
    )
    last_qualifying_threshold: float | None
    last_qualifying_at: datetime | None
    last_required_margin: float | None
    last_lead_lower_bound: float | None
    promotion_confidence: float
    promotion_resamples: int


class Leaderboard(Page[Standing]):
    """The last race's standings (paginated) with the reign and the challenge around them."""

    now: datetime
    winner: WinnerView | None
    embargo_remaining_s: float | None = Field(description="Seconds until the winner's code is published")
    race_id: str | None
    race_day: date | None
    problems: int = Field(description="Problems in the last race")
    running_race: str | None
    challenge: Challenge


class RaceDay(BaseModel):
    race_id: str
    day: date
    winner: str
    winner_hotkey: str
    winner_score: float
    best_challenger_score: float | None
    field_median: float | None = Field(description="Median race score of the entrants other than the winner")
    entrants: int
    promoted: bool
    required_margin: float | None
    lead_lower_bound: float | None


class ReignSpan(BaseModel):
    submission_id: str
    hotkey: str
    start: date
    end: date = Field(description="Last day of the reign in the window (today while it lasts)")


class LeaderboardHistory(Page[RaceDay]):
    """Finished races of the last ``days`` days, newest first, and who reigned when."""

    days: int
    since: date
    until: date
    reigns: list[ReignSpan]


def _categories(outcomes: Sequence[ProblemOutcome], category_of: dict[str, str]) -> list[CategoryResult]:
    grouped: dict[str, list[ProblemOutcome]] = defaultdict(list)
    for outcome in outcomes:
        grouped[category_of.get(outcome.problem_id, "unknown")].append(outcome)
    return [
        CategoryResult(
            category=c,
            problems=len(g),
            success_rate=sum(o.success for o in g) / len(g),
            mean_quality=sum(o.quality for o in g) / len(g),
        )
        for c, g in sorted(grouped.items())
    ]


def standings(view: ArenaView, state: RaceState, race: RaceRecord) -> list[Standing]:
    """The race's entrants in finishing order, scored per category."""
    category_of = problem_categories(view.store, race.suite_ids)
    rows = []
    for position, sid in enumerate(race.standings, start=1):
        outcomes = race.outcomes.get(sid, ())
        mean = sum(o.quality for o in outcomes) / len(outcomes) if outcomes else None
        submission = state.submissions.get(sid)
        rows.append(
            Standing(
                position=position,
                submission_id=sid,
                hotkey=submission.hotkey if submission else "?",
                race_score=race.results.get(sid, 0.0),
                success_rate=sum(o.success for o in outcomes) / len(outcomes) if outcomes else None,
                mean_quality=mean,
                coefficient=None if mean is None else quality_coefficient(mean),
                categories=_categories(outcomes, category_of),
                winner=sid == race.winner,
                page=f"/submissions/{sid}/page",
            )
        )
    return rows


def next_race(now: datetime, rules: RaceRules) -> datetime:
    today = race_slot(now.date(), rules.race_time)
    return today if now < today else race_slot(now.date() + timedelta(days=1), rules.race_time)


def challenge(state: RaceState, history: RaceHistory, rules: RaceRules, now: datetime) -> Challenge:
    upcoming = next_race(now, rules)
    reign = state.reign
    age = None if reign is None else (upcoming - reign.since) / timedelta(days=1)
    ran = [r for r in history.finished() if reign is not None and reign.submission_id in r.results]
    winner_score = ran[-1].results[reign.submission_id] if ran and reign is not None else None
    qualifying, last = history.last_qualifying, state.last_race
    return Challenge(
        next_race_at=upcoming,
        reign_age_days=age,
        margin_at_next_race=None if reign is None else rules.margin.margin(upcoming - reign.since),
        margin_initial=rules.margin.initial,
        margin_floor=rules.margin.floor,
        margin_half_life_days=rules.margin.half_life_days,
        qualify_ratio=rules.qualify_ratio,
        qualify_min_score=rules.qualify_min_score,
        winner_race_score=winner_score,
        qualifying_bar_estimate=max(rules.qualify_min_score, rules.qualify_ratio * (winner_score or 0.0)),
        last_qualifying_threshold=qualifying.threshold if qualifying else None,
        last_qualifying_at=qualifying.at if qualifying else None,
        last_required_margin=last.required_margin if last else None,
        last_lead_lower_bound=last.lead_lower_bound if last else None,
        promotion_confidence=rules.promotion_confidence,
        promotion_resamples=rules.promotion_resamples,
    )


def leaderboard(view: ArenaView, params: PageParams) -> Leaderboard:
    state, history = view.followed()
    now = view.clock.now()
    finished = history.finished()
    race = finished[-1] if finished else None
    winner = reigning_winner(state)
    until = winner.embargo.embargo_until if winner and winner.embargo.published_at is None else None
    rows = standings(view, state, race) if race is not None else []
    page = paginate(rows, params)
    return Leaderboard(
        **dict(page),  # the page's own fields: items, page, page_size, total
        now=now,
        winner=winner,
        embargo_remaining_s=None if until is None else max(0.0, (until - now).total_seconds()),
        race_id=race.race_id if race else None,
        race_day=race.day if race else None,
        problems=len(race.suite_ids) if race else 0,
        running_race=state.running.race_id if state.running else None,
        challenge=challenge(state, history, view.race_rules, now),
    )


def race_day(race: RaceRecord, state: RaceState) -> RaceDay:
    winner = race.winner or race.standings[0]
    others = sorted((score for sid, score in race.results.items() if sid != winner), reverse=True)
    submission = state.submissions.get(winner)
    return RaceDay(
        race_id=race.race_id,
        day=race.day,
        winner=winner,
        winner_hotkey=submission.hotkey if submission else "?",
        winner_score=race.results.get(winner, 0.0),
        best_challenger_score=others[0] if others else None,
        field_median=statistics.median(others) if others else None,
        entrants=len(race.results),
        promoted=race.promoted,
        required_margin=race.required_margin,
        lead_lower_bound=race.lead_lower_bound,
    )


def reign_spans(history: RaceHistory, since: date, until: date) -> list[ReignSpan]:
    """Each reign overlapping ``since``..``until``, clipped to it."""
    spans = []
    changes = history.reigns
    for n, change in enumerate(changes):
        if change.submission_id is None or change.hotkey is None:
            continue
        start = change.at.date()
        end = changes[n + 1].at.date() - timedelta(days=1) if n + 1 < len(changes) else until
        if end >= since and start <= until:
            spans.append(
                ReignSpan(
                    submission_id=change.submission_id,
                    hotkey=change.hotkey,
                    start=max(start, since),
                    end=min(max(end, start), until),
                )
            )
    return spans


def history(view: ArenaView, days: int, params: PageParams) -> LeaderboardHistory:
    state, followed = view.followed()
    until = view.clock.now().date()
    since = until - timedelta(days=days - 1)
    races = [race_day(r, state) for r in reversed(followed.finished()) if since <= r.day <= until]
    page = paginate(races, params)
    return LeaderboardHistory(
        **dict(page),  # the page's own fields: items, page, page_size, total
        days=days,
        since=since,
        until=until,
        reigns=reign_spans(followed, since, until),
    )
