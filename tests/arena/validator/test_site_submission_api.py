"""The submission page's and attempt viewer's JSON API and pages over real stores (``site_scenario``),
served on loopback: public attempts only (held-out and unscored qualifying attempts answer 404),
pagination, cache headers, the OpenAPI document, the code after its embargo, trajectory text escaped."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from arena.judge.verdict import GATES
from arena.race import RaceState
from arena.race.state import Submission
from arena.validator.api import create_app
from arena.validator.api.routes.attempts import _owner
from arena.validator.runs import challenger_run, defender_run_id, entrant_run
from shoppingbench.records import AttemptRecord
from tests.arena.validator.site_scenario import (
    INVENTED,
    RACE_DAY,
    XSS,
    Scenario,
    build_scenario,
    finish_the_race,
    write_run,
)
from tests.servers import running_server
from tests.trajectories.records import react_record
from trajectories.store import AttemptKey, JudgeVerdict, RunEntry, StoredAttempt
from trajectories.store.site_reads import AttemptInContext


@pytest.fixture
def scenario(tmp_path: Path) -> Iterator[Scenario]:
    built = build_scenario(tmp_path)
    yield built
    built.close()


@pytest.fixture
def http(scenario: Scenario) -> Iterator[httpx.Client]:
    with running_server(create_app(scenario.view)) as url, httpx.Client(base_url=url) as client:
        yield client


def test_the_submission_json_has_its_timeline_scores_gates_labels_and_verdicts(
    scenario: Scenario, http: httpx.Client
) -> None:
    answer = http.get(f"/api/submissions/{scenario.alice}")
    assert answer.status_code == 200
    assert answer.headers["cache-control"] == "public, max-age=30" and answer.headers["etag"]
    detail = answer.json()
    kinds = [e["kind"] for e in detail["timeline"]]
    assert kinds == [
        "commitment",
        "upload",
        "static_analysis",
        "qualifying",
        "race_started",
        "race_result",
        "race_finished",
        "promotion",
        "embargo",
    ]
    assert detail["timeline"][0]["block"] == 7
    runs = {r["kind"]: r for r in detail["runs"]}
    assert runs["qualifying"]["attempts"] == 6 and runs["race"]["attempts"] == 7
    assert runs["race"]["race_id"] == RACE_DAY
    assert {c["category"] for c in runs["race"]["categories"]} <= {"product", "shop", "voucher"}
    assert sum(g["attempts"] for g in detail["gates"]) == 13  # held-out and bob's never counted
    gates = {g["stopped_at_gate"]: g["attempts"] for g in detail["gates"] if g["quality"] is not None}
    assert gates[1] == 2 + 3 and gates[3] == 2 + 2 and gates[None] == 2 + 2  # levels 0.1, 0.5, 0.9 in turn
    assert sum(detail["labels"].values()) == 13
    assert sum(detail["verified"].values()) == 13
    assert detail["code"]["visible"] is False and "embargo" in detail["code"]["reason"]
    assert http.get("/api/submissions/nope").status_code == 404
    assert (
        http.get(
            f"/api/submissions/{scenario.alice}", headers={"If-None-Match": answer.headers["etag"]}
        ).status_code
        == 304
    )


def test_the_attempts_list_pages_through_public_attempts_only(scenario: Scenario, http: httpx.Client) -> None:
    pages = [
        http.get(f"/api/submissions/{scenario.alice}/attempts", params={"page": n, "page_size": 5})
        for n in (1, 2, 3, 4)
    ]
    bodies = [p.json() for p in pages]
    assert [len(b["items"]) for b in bodies] == [5, 5, 3, 0]
    assert {b["total"] for b in bodies} == {13} and [b["page"] for b in bodies] == [1, 2, 3, 4]
    listed = [a["id"] for b in bodies for a in b["items"]]
    public = scenario.attempts["qualifying"] + scenario.attempts["xss"] + scenario.attempts["race"]
    assert listed == sorted(public)
    assert pages[0].headers["cache-control"] == "public, max-age=30"
    assert http.get(f"/api/submissions/{scenario.alice}/attempts").json()["page_size"] == 50
    assert (
        http.get(f"/api/submissions/{scenario.alice}/attempts", params={"page_size": 201}).status_code == 422
    )
    assert http.get(f"/api/submissions/{scenario.bob}/attempts").json()["total"] == 0  # not scored yet


def test_held_out_and_unscored_attempts_answer_404_until_public(
    scenario: Scenario, http: httpx.Client
) -> None:
    for attempt_id in (*scenario.attempts["held_out"], *scenario.attempts["bob"], 10**9):
        assert http.get(f"/api/attempts/{attempt_id}").status_code == 404
        assert http.get(f"/attempts/{attempt_id}").status_code == 404
    scenario.writer.record_qualifying(scenario.bob, 0.2, winner_score=0.3)
    bob_attempt = scenario.attempts["bob"][0]
    assert http.get(f"/api/attempts/{bob_attempt}").status_code == 200
    for attempt_id in scenario.attempts["held_out"]:  # public suites change nothing for held-out problems
        assert http.get(f"/api/attempts/{attempt_id}").status_code == 404


def test_an_attempt_shows_verified_calls_tokens_targets_judge_and_filter(
    scenario: Scenario, http: httpx.Client
) -> None:
    attempt_id = scenario.attempts["race"][0]
    answer = http.get(f"/api/attempts/{attempt_id}")
    assert answer.status_code == 200
    assert answer.headers["cache-control"] == "public, max-age=86400"
    detail = answer.json()
    assert detail["submission_id"] == scenario.alice and detail["hotkey"] is None
    assert detail["run_kind"] == "race" and detail["steps"] and detail["proxy_calls"]
    inference = [c for c in detail["proxy_calls"] if c["kind"] == "inference"]
    assert detail["model_calls"] == len(inference) > 0
    assert detail["completion_tokens"] == sum(c["completion_tokens"] for c in inference)
    claimed = [c for s in detail["steps"] for c in s["tool_calls"] if c["name"] == "find_product"]
    assert claimed and all(c["proxy_seq"] is not None for c in claimed)  # the synthetic agent ran each call
    assert detail["judge"]["stopped_at_gate"] == 1 and "30 completion tokens" in detail["judge"]["gate"]
    assert detail["filter"]["label"] in ("agentic", "sub_task", "no_llm") and detail["filter"]["evidence"]
    assert detail["recommendation"]["answer"] is not None
    openapi = http.get("/openapi.json").json()["paths"]
    for path in (
        "/api/submissions/{submission_id}",
        "/api/submissions/{submission_id}/attempts",
        "/api/attempts/{attempt_id}",
    ):
        assert "get" in openapi[path]


def test_trajectory_text_is_escaped_and_claims_never_pass_for_proxy_results(
    scenario: Scenario, http: httpx.Client
) -> None:
    (attempt_id,) = scenario.attempts["xss"]
    detail = http.get(f"/api/attempts/{attempt_id}").json()
    assert XSS in detail["steps"][0]["reasoning"]
    assert any(XSS in r["title"] for c in detail["proxy_calls"] for r in c["results"])
    page = http.get(f"/attempts/{attempt_id}")
    assert page.status_code == 200 and "<script>alert(1)</script>" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text


def test_the_code_shows_highlighted_once_its_embargo_lifts(scenario: Scenario, http: httpx.Client) -> None:
    page = http.get(f"/submissions/{scenario.alice}/page")
    assert page.status_code == 200 and "under embargo until" in page.text
    scenario.clock.advance(timedelta(days=1))
    scenario.writer.settle()
    detail = http.get(f"/api/submissions/{scenario.alice}").json()
    assert detail["code"]["visible"] is True and detail["timeline"][-1]["kind"] == "publication"
    page = http.get(f"/submissions/{scenario.alice}/page")
    assert 'class="highlight"' in page.text and "&lt;b&gt;cheapest&lt;/b&gt;" in page.text
    assert "<b>cheapest</b>" not in page.text
    assert http.get(f"/code/{scenario.alice}").status_code == 200
    assert f'href="/attempts/{scenario.attempts["qualifying"][0]}"' in page.text


def test_the_running_race_s_attempts_stay_hidden_until_it_finishes(tmp_path: Path) -> None:
    scenario = build_scenario(tmp_path, finish_race=False)
    try:
        with running_server(create_app(scenario.view)) as url, httpx.Client(base_url=url) as http:
            race_attempt = scenario.attempts["race"][0]
            assert http.get(f"/api/attempts/{race_attempt}").status_code == 404
            listed = http.get(f"/api/submissions/{scenario.alice}/attempts").json()
            assert listed["total"] == 6  # its scored qualifying attempts only
            finish_the_race(scenario)
            assert http.get(f"/api/attempts/{race_attempt}").status_code == 200
            assert http.get(f"/api/submissions/{scenario.alice}/attempts").json()["total"] == 13
    finally:
        scenario.close()


def test_a_rejected_file_shows_each_finding_with_its_rule_and_line(
    scenario: Scenario, http: httpx.Client
) -> None:
    detail = http.get(f"/api/submissions/{scenario.carol}").json()
    assert detail["submission"]["status"] == "rejected"
    (analysis,) = [e for e in detail["timeline"] if e["kind"] == "static_analysis"]
    assert analysis["title"].startswith("rejected by static analysis")
    assert [(f["rule"], f["line"], f["category"]) for f in analysis["findings"]] == [
        ("network", 1, "security")
    ]
    page = http.get(f"/submissions/{scenario.carol}/page").text
    assert '<td class="mono">network</td><td class="num">1</td>' in page and "import of socket" in page
    assert detail["runs"] == [] and "not published" in detail["code"]["reason"]


def test_a_call_the_proxy_never_saw_is_marked_and_its_claimed_result_never_shown(
    scenario: Scenario, http: httpx.Client
) -> None:
    (attempt_id,) = scenario.attempts["xss"]
    detail = http.get(f"/api/attempts/{attempt_id}").json()
    claimed = [c for c in detail["steps"][0]["tool_calls"] if "never searched" in c["arguments"]]
    assert len(claimed) == 1 and claimed[0]["proxy_seq"] is None
    assert INVENTED not in http.get(f"/api/attempts/{attempt_id}").text
    page = http.get(f"/attempts/{attempt_id}").text
    assert "not in the verified proxy log" in page and INVENTED not in page


def test_the_kept_public_attempts_follow_the_store_as_it_grows(
    scenario: Scenario, http: httpx.Client
) -> None:
    path = f"/api/submissions/{scenario.alice}/attempts"
    assert http.get(path).json()["total"] == 13
    race = scenario.view.store.load(scenario.attempts["race"][:1])[0].record
    (added,) = write_run(
        scenario.view.store,
        random.Random(5),
        run=entrant_run(scenario.alice, RACE_DAY, ["p1", "p2"]),
        agent=race.agent_hash,
        count=1,
    )
    listed = http.get(path, params={"page": 3, "page_size": 5}).json()
    assert listed["total"] == 14 and listed["items"][-1]["id"] == added
    assert sum(g["attempts"] for g in http.get(f"/api/submissions/{scenario.alice}").json()["gates"]) == 14


def test_the_page_lists_its_attempts_a_page_at_a_time(scenario: Scenario, http: httpx.Client) -> None:
    page = http.get(f"/submissions/{scenario.alice}/page", params={"page": 2, "page_size": 5}).text
    assert "Page 2 of 3 (13 attempts)" in page
    assert '<a href="?page=1&amp;page_size=5">previous</a>' in page
    assert '<a href="?page=3&amp;page_size=5">next</a>' in page
    public = sorted(scenario.attempts["qualifying"] + scenario.attempts["xss"] + scenario.attempts["race"])
    assert [f'href="/attempts/{i}"' in page for i in public] == [5 <= n < 10 for n in range(13)]


def _in_run(run: RunEntry, record: AttemptRecord) -> AttemptInContext:
    return AttemptInContext(attempt=StoredAttempt(id=1, record=record.model_copy(update={"run_id": run.id})),
                            run_kind=run.kind, run_suite=run.suite, run_submission_id=run.submission_id,
                            run_race_id=run.race_id, run_role=run.role, validator=None,
                            problem_suite=run.suite, hotkey=None)


def test_an_attempt_belongs_to_the_submission_its_run_registered_whatever_its_id_holds() -> None:
    """Submissions "1" and "1-1" of one code: the id of "1-1"'s run holds "-1-" as well, which the old
    substring rule took for "1"'s; the run's column says "1-1". A run that names no submission (a defender's
    stored before runs named theirs) goes to the oldest submission of its code."""
    record = react_record()
    at = datetime(2026, 11, 18, tzinfo=UTC)
    state = RaceState(submissions={
        sid: Submission(submission_id=sid, hotkey="5Miner", code_hash=record.agent_hash,
                        submitted_at=at + timedelta(minutes=n))
        for n, sid in enumerate(("1", "1-1"))})
    later = challenger_run("1-1", ["q"])
    assert "-1-" in later.id
    assert _owner(state, _in_run(later, record)) == "1-1"
    assert _owner(state, _in_run(challenger_run("1", ["q"]), record)) == "1"
    assert _owner(state, _in_run(RunEntry(id=defender_run_id(record.agent_hash), kind="qualifying",
                                          role="defender"), record)) == "1"


def test_the_site_shows_the_gate_stored_with_the_verdict(scenario: Scenario, http: httpx.Client) -> None:
    """The gate is the judge's, stored with its verdict: the site does not derive it from the quality (the
    scenario's verdicts are 0.1, 0.5 and 0.9: none stopped at gate 2 until this one)."""
    attempt_id = scenario.attempts["race"][0]
    stored = scenario.view.store.load([attempt_id])[0]
    verdict = JudgeVerdict(model="offline-rules", offline=True, quality=0.9, gates_passed=1)
    assert scenario.view.store.set_judge_verdict(AttemptKey.of(stored.record), verdict)
    judge = http.get(f"/api/attempts/{attempt_id}").json()["judge"]
    assert (judge["quality"], judge["stopped_at_gate"], judge["gate"]) == (0.9, 2, GATES[1])
    gates = {g["stopped_at_gate"]: g["attempts"] for g in
             http.get(f"/api/submissions/{scenario.alice}").json()["gates"] if g["quality"] is not None}
    assert gates[2] == 1 and sum(gates.values()) == 13
