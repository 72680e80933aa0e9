"""A model's recorded answers as the validity benchmark's rewrite source: matched by prompt, checked as a live
model's answers are, and the prompts without an answer kept for the model to answer."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest

from benchmarks.validity import benchmark as validity
from benchmarks.validity.recorded_rewrites import (
    NO_ANSWER,
    RecordedAnswer,
    RecordedRewrites,
    missing_path,
    prompt_sha256,
    read_answers,
)
from benchmarks.validity.run import twins
from shoppingbench.generator.writer import writer_for_catalog
from shoppingbench.generator.writer.rewrite import CheckedRewriter
from shoppingbench.problems.models import CATEGORIES, Category, Problem
from shoppingbench.sample_world import SampleWorld
from shoppingbench.search.engine import BM25SearchEngine
from tests.writing_model import plain_query


def _answer(prompt: str, query: str) -> bytes:
    answer = RecordedAnswer(prompt_sha256=prompt_sha256(prompt), prompt=prompt, query=query, model="m")
    return answer.model_dump_json().encode() + b"\n"


def _missing(path: Path) -> list[str]:
    return [orjson.loads(line)["prompt"] for line in missing_path(path).read_bytes().splitlines()]


def test_recorded_answers_rewrite_the_twins_and_the_prompts_without_one_are_kept(
        small_world: SampleWorld, small_engine: BM25SearchEngine, tmp_path: Path) -> None:
    real: dict[Category, list[Problem]] = {c: [p for p in small_world.suite(4) if p.category == c][:2]
                                           for c in CATEGORIES}
    catalog = small_world.catalog_dir
    path = tmp_path / "answers.jsonl"
    unanswered = CheckedRewriter(writer_for_catalog(catalog), RecordedRewrites(path))
    assert twins(real, small_engine, catalog, unanswered) == twins(real, small_engine, catalog)
    assert isinstance(unanswered.sources[0], RecordedRewrites)
    unanswered.sources[0].write_missing()
    prompts = _missing(path)
    assert len(prompts) == 6 and not any("was refused" in p for p in prompts)  # asked again as before
    assert unanswered.report.drafts_kept == 6 and unanswered.report.reasons == [NO_ANSWER] * 6

    # The model answers every prompt, but its first answer is empty: refused, and asked again with why.
    queries = [f"So, {plain_query({'messages': [{'content': p}]})}" for p in prompts]
    path.write_bytes(b"".join(_answer(p, "" if n == 0 else q) for n, (p, q) in enumerate(zip(prompts, queries,
                                                                                             strict=True))))
    answered = CheckedRewriter(writer_for_catalog(catalog), RecordedRewrites(path))
    written = twins(real, small_engine, catalog, answered)
    assert answered.key.startswith("recorded/m/lexicon-writer")
    assert isinstance(answered.sources[0], RecordedRewrites)
    answered.sources[0].write_missing()
    assert _missing(path) == [f"{prompts[0]}\n\nYour last answer was refused (empty). Try again."]
    requests = [t.query.partition("\n\n")[0] for c in CATEGORIES for t in written[c]]
    assert sum(r.startswith("So, I am looking for a ") for r in requests) == 5
    assert (answered.report.rewritten, answered.report.drafts_kept) == (5, 1)


def test_a_recorded_answer_must_be_for_its_prompt(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    assert read_answers(path) == []
    good = _answer("Write the query.", "A pen.")
    forged = good.replace(b"Write the query.", b"Write another query.")
    path.write_bytes(good + b"\n" + forged)
    with pytest.raises(ValueError, match=r"answers.jsonl:3: prompt_sha256 is not the sha256 of its prompt"):
        read_answers(path)
    path.write_bytes(good + b'{"query": "A pen."}\n')
    with pytest.raises(ValueError, match=r"answers.jsonl:2: not a recorded answer"):
        RecordedRewrites(path)
    with pytest.raises(SystemExit):
        validity.main(["--recorded", str(path), "--replay-real"])


def test_recorded_answers_may_be_gzipped(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl.gz"
    path.write_bytes(gzip.compress(_answer("Write the query.", "A pen.")))
    assert RecordedRewrites(path).answers == {prompt_sha256("Write the query."): "A pen."}
