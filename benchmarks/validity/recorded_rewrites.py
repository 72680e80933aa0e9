"""A model's answers to a problem bank's prompts, recorded in a file, as a rewrite source (``--recorded``).

``arena bank build --llm-url`` asks a live model; a benchmark run that must be repeatable, or a model that
cannot be reached from the machine the benchmark runs on, answers the same prompts offline instead. The
file is JSON lines, one answer each: ``{"prompt_sha256", "prompt", "query", "model"}``, where the prompt
is exactly what the live model would be asked
(:func:`~shoppingbench.generator.writer.rewrite.model_prompt`, after the same system message), so a
recorded answer goes through the same checks as a live one; a file named ``*.gz`` is read through gzip. A
prompt with no recorded answer leaves its draft standing and is written to ``<file>.missing.jsonl``
(``{"prompt_sha256", "prompt"}``) for the model to answer; a second round of prompts (an answer the checks
refused, asked again with the reason) is recorded the same way.
"""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path
from typing import Final

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shoppingbench.generator.writer.rewrite import RewriteTask, model_prompt

NO_ANSWER: Final = "no recorded answer"


class RecordedAnswer(BaseModel):
    """One answer: the prompt it answers (and its sha256), the query the model wrote, and which model."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    prompt: str
    query: str
    model: str = Field(min_length=1)


def prompt_sha256(prompt: str) -> str:
    return hashlib.sha256(prompt.encode()).hexdigest()


def missing_path(path: Path) -> Path:
    return path.with_name(f"{path.name}.missing.jsonl")


def read_answers(path: Path) -> list[RecordedAnswer]:
    """The answers in ``path`` (none if it does not exist); :class:`ValueError` naming the first bad line,
    or an answer recorded for a prompt its sha256 is not of."""
    if not path.exists():
        return []
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    answers: list[RecordedAnswer] = []
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            answer = RecordedAnswer.model_validate_json(line)
        except ValidationError as exc:
            raise ValueError(f"{path}:{number}: not a recorded answer ({exc.errors()[0]['msg']})") from exc
        if prompt_sha256(answer.prompt) != answer.prompt_sha256:
            raise ValueError(f"{path}:{number}: prompt_sha256 is not the sha256 of its prompt")
        answers.append(answer)
    return answers


class RecordedRewrites:
    """A rewrite source (:class:`~shoppingbench.generator.writer.rewrite.RewriteSource`) answering each
    prompt from the answers recorded in ``path``, and keeping the prompts it had no answer for."""

    def __init__(self, path: Path) -> None:
        self.path = path
        answers = read_answers(path)
        self.answers = {a.prompt_sha256: a.query for a in answers}
        self.models = sorted({a.model for a in answers})
        self.missing: dict[str, str] = {}

    @property
    def name(self) -> str:
        return f"recorded/{'+'.join(self.models) or 'none'}"

    def rewrite(self, task: RewriteTask, refused: str | None) -> tuple[str | None, str]:
        # After a missing answer the model is asked what it was asked before: it never answered.
        prompt = model_prompt(task, None if refused == NO_ANSWER else refused)
        key = prompt_sha256(prompt)
        if key in self.answers:
            return self.answers[key], ""
        self.missing[key] = prompt
        return None, NO_ANSWER

    def write_missing(self) -> Path:
        """Write the prompts without an answer to :func:`missing_path` (emptied when there are none)."""
        out = missing_path(self.path)
        out.write_bytes(b"".join(orjson.dumps({"prompt_sha256": key, "prompt": prompt}) + b"\n"
                                 for key, prompt in self.missing.items()))
        return out
