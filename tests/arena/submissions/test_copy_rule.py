"""``copy_verdicts``, the copy rule as a pure function: chain order decides the original whatever order
the files are listed in; a hotkey's own code is no copy; copies of a copy point at the first original.
Entries carry their files' features (as the gate gives them), and the originals are miners' own agents
(the bundled agents are public: ``test_copy_measure``)."""

from __future__ import annotations

import itertools

from arena.submissions.copies import (
    COPY_THRESHOLD,
    CodeEntry,
    chain_position,
    code_features,
    copy_verdicts,
    verdicts_after_upload,
)
from shoppingbench.submission_check.similarity import fingerprint
from tests.copy_variants import DISTINCT_AGENTS, reformatted, renamed
from tests.fixtures.copy_rewrites import HONEST, REWRITES, apply

AGENT = HONEST["prompt_tuned"]
OTHER = HONEST["oro_style_agent"]


def entry(hotkey: str, source: str, block: int, index: int | None = 0) -> CodeEntry:
    return CodeEntry(hotkey=hotkey, sha256=f"{hotkey}-{block}".ljust(64, "0"), commitment_block=block,
                     extrinsic_index=index, fingerprint=fingerprint(source), features=code_features(source))


def test_the_earliest_commitment_is_the_original_in_any_listing_order() -> None:
    entries = [entry("alice", AGENT, 10, 1), entry("bob", renamed(AGENT), 10, 0),
               entry("carol", reformatted(AGENT), 12), entry("dave", OTHER, 11)]
    expected = {e.key: "bob" for e in entries if e.hotkey in ("alice", "carol")}
    for order in itertools.permutations(entries):
        verdicts = copy_verdicts(order)
        assert {key: original.hotkey for key, original in verdicts.items()} == expected


def test_same_code_is_similarity_one_and_a_near_copy_reports_its_similarity() -> None:
    six_lines = apply(AGENT, [*REWRITES["if_to_conditional"], *REWRITES["or_to_loop"]])
    original, same, near = entry("a", AGENT, 1), entry("b", renamed(AGENT), 2), entry("c", six_lines, 3)
    verdicts = copy_verdicts([original, same, near])
    assert verdicts[same.key].similarity == 1.0
    assert COPY_THRESHOLD <= verdicts[near.key].similarity < 1.0
    assert verdicts[near.key].code_hash == original.sha256 and verdicts[near.key].commitment_block == 1


def test_a_hotkey_re_uploading_its_own_code_is_not_a_copy_but_others_copying_it_are() -> None:
    first, again, other = entry("a", AGENT, 1), entry("a", renamed(AGENT), 5), entry("b", AGENT, 7)
    verdicts = copy_verdicts([first, again, other])
    assert set(verdicts) == {other.key} and verdicts[other.key].commitment_block == 1


def test_distinct_agents_are_all_originals() -> None:
    # Compared whole (no public agents), every agent the repository ships is its own.
    entries = [entry(f"miner{i}", path.read_text(), i) for i, path in enumerate(DISTINCT_AGENTS)]
    assert copy_verdicts(entries, public=()) == {}
    miners = [entry(f"miner{i}", source, i) for i, (name, source) in enumerate(HONEST.items())
              if name not in ("new_prompt", *(p.stem for p in DISTINCT_AGENTS if "shoppingbench" in p.parts))]
    assert copy_verdicts(miners) == {}


def test_unknown_extrinsic_indices_come_after_known_ones_in_a_block() -> None:
    known, unknown = entry("zed", AGENT, 5, 3), entry("amy", AGENT, 5, None)
    assert chain_position(known) < chain_position(unknown)
    assert copy_verdicts([unknown, known])[unknown.key].hotkey == "zed"


def test_an_upload_is_judged_against_the_settled_originals_and_rejudges_only_later_files() -> None:
    original, copy, honest = entry("a", AGENT, 10), entry("b", renamed(AGENT), 11), entry("c", OTHER, 12)
    # The copy was uploaded first and accepted; the honest file is after it in chain order.
    verdicts = verdicts_after_upload(original, [(copy, False), (honest, False)])
    assert {key: o.hotkey for key, o in verdicts.items()} == {copy.key: "a"}
    # Later still, an even earlier commitment of the same code arrives: both now copy it.
    earliest = entry("z", AGENT, 9)
    verdicts = verdicts_after_upload(earliest, [(copy, True), (honest, False), (original, False)])
    assert {key: o.hotkey for key, o in verdicts.items()} == {original.key: "z", copy.key: "z"}
    # A file after the others is compared with the settled originals only, never with a copy.
    late = entry("d", reformatted(AGENT), 20)
    verdicts = verdicts_after_upload(late, [(copy, True), (original, False), (honest, False)])
    assert {key: o.hotkey for key, o in verdicts.items()} == {late.key: "a"}
