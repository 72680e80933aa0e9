"""The format and length grades (SPEC 2; original ``prm.py::format_reward`` and ``orm.py::length_reward``)."""

from __future__ import annotations

import json

import pytest

from shoppingbench.scoring import format_score, is_well_formed, length_score, step_format
from shoppingbench.scoring.format import has_timestamp, rendered_message
from shoppingbench.scoring.profiles import ORIGINAL, PRODUCTION_STRICT
from tests.shoppingbench.scoring.test_scoring_support import TERMINATE, recommend, step

CALL = '<tool_call>[{"name": "find_product", "parameters": {"q": "bottle"}}]</tool_call>'


@pytest.mark.parametrize(
    "content",
    [
        f"<think>look it up</think>\n{CALL}",
        "<think>done</think>\n<response>Here it is.</response>",
        f"<think>both</think>{CALL}<response>searching</response>",
        f"<response>r</response><think>order is free</think>{CALL}",
        f"preamble <think>t</think> between {CALL} trailer",
        "<think></think><tool_call>[]</tool_call>",
    ],
)
def test_well_formed(content: str) -> None:
    assert is_well_formed(content)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (CALL, "no think"),
        ("<think>only thinking</think>", "neither tool_call nor response"),
        (f"<think>a</think><think>b</think>{CALL}", "duplicated think"),
        (f"<think>a<think>b</think></think>{CALL}", "nested think"),
        (f"<think>a {CALL}</think>", "tool_call inside think"),
        ("<think>a<response>b</think></response>", "overlapping blocks"),
        (f"</think>a<think>{CALL}", "closed before opened"),
        (f"<think>a{CALL}", "unclosed think"),
        ('<think>a</think><tool_call>[{"name": "x", "parameters": {}]</tool_call>', "malformed JSON"),
        ('<think>a</think><tool_call>{"name": "x", "parameters": {}}</tool_call>', "object, not array"),
        ('<think>a</think><tool_call>[{"name": "x"}]</tool_call>', "call without parameters"),
        ('<think>a</think><tool_call>[{"name": 3, "parameters": {}}]</tool_call>', "name not a string"),
        (
            '<think>a</think><tool_call>[{"name": "x", "parameters": "q=1"}]</tool_call>',
            "parameters not an object",
        ),
        ('<think>a</think><tool_call>["find_product"]</tool_call>', "call not an object"),
        (f"<think>a</think>{CALL}{CALL}", "two tool_call blocks"),
    ],
)
def test_malformed(content: str, why: str) -> None:
    assert not is_well_formed(content), why


@pytest.mark.parametrize(
    "content", [None, 3, ["<think>a</think>"], b"<think>a</think><response>b</response>"]
)
def test_non_text_content_is_malformed(content: object) -> None:
    assert not is_well_formed(content)


@pytest.mark.parametrize(
    ("timestamp", "credit"),
    [
        (1_700_000_000.5, 1.0),
        (1, 1.0),
        ("2026-11-21T10:00:00Z", 1.0),
        (None, 0.5),
        ("", 0.5),
        ("  ", 0.5),
        (0, 0.5),
        (-5, 0.5),
        (True, 0.5),
        (float("inf"), 0.5),
    ],
)
def test_missing_timestamp_halves_credit(timestamp: object, credit: float) -> None:
    item = step(recommend("a"))
    item["extra_info"]["timestamp"] = timestamp
    assert step_format(item) == credit


def test_timestamp_cannot_rescue_a_malformed_step() -> None:
    item = step(recommend("a"), think=None)
    assert step_format(item) == 0


def test_format_is_the_mean_over_steps() -> None:
    no_time = step(recommend("a"))
    del no_time["extra_info"]["timestamp"]
    broken = step(recommend("a"))
    broken["completion"]["content"] = "<think>unclosed"
    assert format_score([step(recommend("a")), no_time, broken]) == pytest.approx(0.5)
    assert format_score([]) == 0


def test_response_only_step_scores() -> None:
    assert format_score([step(think="t", response="Which colour?")]) == 1


def test_length_rewards_short_terminated_dialogues() -> None:
    steps = [
        step(("find_product", {"q": "x"})),
        step(recommend("a")),
        step(("view_product_information", {})),
        step(TERMINATE),
    ]
    assert length_score(steps) == 0.25
    assert length_score([step(recommend("a"), TERMINATE)]) == 1


def test_unterminated_dialogue_has_no_length_score() -> None:
    assert length_score([step(recommend("a"))]) == 0
    assert length_score([step(TERMINATE), step(recommend("a"))]) == 0
    assert length_score([]) == 0
    assert length_score([step(TERMINATE), None]) == 0


def test_an_enormous_integer_timestamp_does_not_crash_scoring() -> None:
    huge = json.loads("1" + "0" * 400)  # what untrusted JSON can carry; float(huge) overflows
    assert has_timestamp({"extra_info": {"timestamp": huge}})
    assert not has_timestamp({"extra_info": {"timestamp": -huge}})
    stamped = step(TERMINATE)
    stamped["extra_info"]["timestamp"] = huge
    assert format_score([stamped]) == 1.0


# --- production-strict: as the reference arena's production scorer (ProblemScorer.score_problem) -----


@pytest.mark.parametrize(
    ("timestamp", "credit"),
    [
        (1_700_000_000.5, 1.0),
        (1, 1.0),
        (True, 1.0),  # isinstance(True, int) and True > 0 in the reference
        (False, 0.5),
        ("2026-11-21T10:00:00Z", 0.5),  # a string is not a number there
        ("1700000000", 0.5),
        (None, 0.5),
        (0, 0.5),
        (-5, 0.5),
    ],
)
def test_production_timestamps_count_as_the_reference_counts_them(timestamp: object, credit: float) -> None:
    item = step(recommend("a"))
    item["extra_info"]["timestamp"] = timestamp
    assert step_format(item, production=True) == credit


def test_production_reads_the_message_when_content_disagrees() -> None:
    junk_content = step(recommend("a"))
    junk_content["completion"]["content"] = "no tags at all"
    assert step_format(junk_content) == 0 and step_format(junk_content, production=True) == 1

    no_message = step(recommend("a"))
    del no_message["completion"]["message"]
    assert step_format(no_message) == 1 and step_format(no_message, production=True) == 0

    thinkless = step(recommend("a"))
    thinkless["completion"]["message"]["think"] = ""  # an empty part is not rendered
    assert step_format(thinkless) == 1 and step_format(thinkless, production=True) == 0


@pytest.mark.parametrize(
    "change",
    [
        {"message": {"think": 3, "response": "r"}},  # the reference's Message refuses a non-string part
        {"message": {"think": "t", "tool_call": ["not an object"]}},
        {"message": {"think": "t", "response": "r", "obs": "x"}},
        {"message": ["think"]},
        {"message": None},
    ],
)
def test_production_scores_0_for_a_message_the_reference_cannot_read(change: dict[str, object]) -> None:
    item = step(recommend("a"))
    item["completion"].update(change)
    assert step_format(item, production=True) == 0


def test_production_scores_0_when_extra_info_is_not_an_object() -> None:
    item = step(recommend("a"))
    item["extra_info"] = ["step", 1]
    assert step_format(item, production=True) == 0
    del item["extra_info"]  # missing entirely: only the timestamp is missing
    assert step_format(item, production=True) == 0.5


def test_production_renders_the_message_as_the_reference_does() -> None:
    item = step(("find_product", {"q": "a/b é"}), response="ok")
    assert rendered_message(item) == ('<think>thinking</think>\n'
                                      '<tool_call>[{"name":"find_product",'
                                      '"parameters":{"q":"a\\/b \\u00e9"}}]'
                                      '</tool_call>\n<response>ok</response>')


def test_the_profiles_grade_format_their_own_way() -> None:
    assert PRODUCTION_STRICT.production_format and not ORIGINAL.production_format
    stamped_as_text = step(recommend("a"))
    stamped_as_text["extra_info"]["timestamp"] = "2026-11-21T10:00:00Z"
    assert format_score([stamped_as_text]) == 1.0
    assert format_score([stamped_as_text], production=True) == 0.5
