"""The copy rule's measure on its fixtures (``tests/fixtures/copy_rewrites``): every rewrite of the ReAct
agent is a copy, every honest pair is not, literals weigh, the public agents are nobody's original, and
behaviour traces compare what two submissions did."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from arena.submissions.copies import (
    BEHAVIOUR_COPY_THRESHOLD,
    COPY_THRESHOLD,
    CodeEntry,
    ProblemTrace,
    acts_as_copy,
    behaviour_similarity,
    bundled_agents,
    code_features,
    code_similarity,
    copy_verdicts,
    live_code,
    normalised_arguments,
    trace_of,
)
from shoppingbench.records import AttemptRecord, ProxyCall, ProxyCallKind
from shoppingbench.submission_check.similarity import fingerprint
from tests.fixtures.copy_rewrites import HONEST, REACT, REWRITES, STEPS_TEMPERATURE_ONLY, measure, rewrite

MEASURED = measure()
PUBLIC_REACT = "public:shoppingbench/agents/react_llm.py"


def entry(hotkey: str, source: str, block: int) -> CodeEntry:
    return CodeEntry(hotkey=hotkey, sha256=f"{hotkey}-{block}".ljust(64, "0"), commitment_block=block,
                     fingerprint=fingerprint(source), features=code_features(source))


def test_there_are_at_least_25_rewrites_and_each_still_runs_as_python() -> None:
    assert len(REWRITES) >= 25
    for name in REWRITES:
        compile(rewrite(name), name, "exec")


@pytest.mark.parametrize("name", sorted(MEASURED.rewrites))
def test_every_rewrite_of_the_react_agent_is_a_copy_of_it(name: str) -> None:
    assert MEASURED.rewrites[name] >= COPY_THRESHOLD


@pytest.mark.parametrize("name", sorted(MEASURED.miner_copies))
def test_every_rewrite_of_a_miners_agent_is_a_copy_of_it(name: str) -> None:
    assert MEASURED.miner_copies[name] >= COPY_THRESHOLD


def test_no_honest_pair_is_a_copy_whole_or_less_the_public_code() -> None:
    assert max(MEASURED.honest.values()) < COPY_THRESHOLD
    assert max(MEASURED.honest_variants.values()) < COPY_THRESHOLD


def test_the_threshold_sits_in_the_measured_gap() -> None:
    highest_honest = max([*MEASURED.honest.values(), *MEASURED.honest_variants.values()])
    lowest_copy = min([*MEASURED.rewrites.values(), *MEASURED.miner_copies.values()])
    assert highest_honest + 0.05 <= COPY_THRESHOLD <= lowest_copy - 0.05


def test_literals_weigh_a_new_prompt_makes_a_variant_and_the_six_line_edit_stays_a_copy() -> None:
    react = code_features(REACT)
    tuned = code_features(HONEST["prompt_tuned"])
    assert tuned.structure == react.structure  # the same code: only the prompt and constants differ
    assert code_similarity(react, tuned) < COPY_THRESHOLD
    assert code_similarity(react, code_features(rewrite("six_line_edit"))) >= COPY_THRESHOLD
    # Retuning numbers alone is no agent of one's own.
    assert code_similarity(react, code_features(STEPS_TEMPERATURE_ONLY)) >= COPY_THRESHOLD


def test_dead_code_does_not_count() -> None:
    assert code_features(rewrite("dead_lines_40")) == code_features(REACT)
    assert code_features(rewrite("trace_statements")) == code_features(REACT)
    dead = "def agent_main(p):\n    return []\n    print('never')\nif False:\n    x = 1\nLIMIT: int = 3\n"
    assert len(live_code(dead).body) == 1


def test_a_copy_of_a_public_agent_is_its_copy_and_blocks_no_variant() -> None:
    squat, renamed_squat = entry("squatter", REACT, 0), entry("helper", rewrite("renamed_everything"), 1)
    tuned, other = entry("bob", HONEST["prompt_tuned"], 2), entry("carol", HONEST["other_prompt_tuned"], 3)
    copied = entry("dave", rewrite("six_line_edit"), 4)
    verdicts = copy_verdicts([squat, renamed_squat, tuned, other, copied])
    assert {key[0]: v.hotkey for key, v in verdicts.items()} == {
        "squatter": PUBLIC_REACT, "helper": PUBLIC_REACT, "dave": PUBLIC_REACT}
    assert verdicts[squat.key].similarity == 1.0
    # Without the public agents, the squatter would be the original of every copy of the public agent.
    unguarded = copy_verdicts([squat, renamed_squat, tuned, other, copied], public=())
    assert {key[0]: v.hotkey for key, v in unguarded.items()} == {"helper": "squatter", "dave": "squatter"}


def test_every_bundled_agent_is_public_and_none_copies_another() -> None:
    agents = bundled_agents()
    assert {a.name for a in agents} >= {"shoppingbench/agents/react_llm.py",
                                        "shoppingbench/agents/tool_calling_llm.py"}
    for agent in agents:
        others = [o for o in agents if o is not agent]
        assert all(code_similarity(agent.features, o.features) < COPY_THRESHOLD for o in others)


def _trace(problem: str, queries: list[str], success: bool) -> ProblemTrace:
    return ProblemTrace(problem_id=problem, success=success,
                        calls=tuple(("find_product", normalised_arguments({"q": q})) for q in queries))


def test_behaviour_similarity_compares_calls_and_outcomes_on_common_problems() -> None:
    mine = [_trace("p1", ["red shoes", "red shoes size 42"], True), _trace("p2", ["usb cable"], False)]
    same = [_trace("p1", ["Red  Shoes", "red shoes size 42"], True), _trace("p2", ["USB cable"], False),
            _trace("p3", ["only here"], True)]
    other = [_trace("p1", ["sneakers", "running shoes red"], False), _trace("p2", ["charger"], True)]
    assert behaviour_similarity(mine, same) == 1.0
    assert acts_as_copy(same, mine)
    similarity = behaviour_similarity(mine, other)
    assert similarity is not None and similarity < BEHAVIOUR_COPY_THRESHOLD and not acts_as_copy(other, mine)
    assert behaviour_similarity(mine, [_trace("p9", [], True)]) is None
    # One call of two differs, the outcome agrees: between the two.
    half = [_trace("p1", ["red shoes", "blue shoes"], True)]
    assert 0.5 < behaviour_similarity(mine[:1], half) < 1.0  # type: ignore[operator]


def test_arguments_are_normalised_keys_sorted_and_empty_values_left_out() -> None:
    assert normalised_arguments({"q": " Red\tShoes ", "page": 1, "shop_id": None}) == \
        normalised_arguments({"page": 1, "q": "red shoes", "sort": ""})


def test_a_trace_is_read_from_the_verified_proxy_log_search_calls_only() -> None:
    def call(seq: int, kind: ProxyCallKind, path: str, **params: object) -> ProxyCall:
        return ProxyCall(seq=seq, kind=kind, method="GET", path=path, params=params, status=200,
                         started_at=0.0, duration_ms=1.0)

    log = [call(0, "inference", "/v1/chat/completions", model="m"),
           call(1, "search", "/search/find_product", q="Red Shoes", page=1),
           call(2, "search", "/search/view_product_information", product_ids="p1,p2")]
    record = AttemptRecord.model_construct(problem_id="p1", proxy_log=log,
                                           score=SimpleNamespace(success=True))
    trace = trace_of(record)
    assert trace == ProblemTrace(problem_id="p1", success=True, calls=(
        ("find_product", '{"page": 1, "q": "red shoes"}'),
        ("view_product_information", '{"product_ids": "p1,p2"}')))
