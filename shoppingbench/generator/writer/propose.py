"""Everyday phrasings proposed by an OpenAI-compatible model at lexicon build time, each one validated.

Offline only: the race never asks a model anything. For the catalog's most frequent keys the model
proposes the word a shopper uses for the key; for each key's most frequent values, the everyday form
of the value. A proposal is kept only if it cannot change what the reward checks: a value phrasing
that is empty, too long, has odd characters, drops a number or a unit, equals or contains another
value of the same key is refused with its reason, and so is a key word that is the raw key name.
A reply that is not a JSON object, or a failed request, refuses the whole batch with the reason; the
build never fails because of the model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import openai
import orjson
from pydantic import BaseModel, Field

from shoppingbench.generator.writer.build import CatalogCounts
from shoppingbench.generator.writer.lexicon import KeyPhrasing, Lexicon

MODEL_KEYS: Final = 100
"""How many of the most frequent keys the model is asked about."""
MODEL_VALUES_PER_KEY: Final = 30
_KEYS_PER_REQUEST: Final = 40
_MAX_VALUE_CHARS: Final = 48
_MAX_VALUE_WORDS: Final = 6
_VALUE_TEXT: Final = re.compile(r"^[a-z0-9][a-z0-9 .,'&%+/()-]*$")
_KEY_TEXT: Final = re.compile(r"^[a-z]+(?: [a-z]+){0,2}$")
_NUMBER: Final = re.compile(r"\d+(?:\.\d+)?")
_UNIT: Final = re.compile(r"\d\s*([a-z]+)")
_SYSTEM: Final = ("You rewrite online-shop attribute data the way shoppers talk. Answer with one JSON object "
                  "and nothing else.")


class Refusal(BaseModel):
    """A proposal the build did not keep, and why."""

    subject: str
    proposed: str
    reason: str


class ProposalReport(BaseModel):
    requests: int = 0
    accepted: int = 0
    refused: list[Refusal] = Field(default_factory=list)


class ModelSettings(BaseModel):
    """The OpenAI-compatible endpoint that proposes phrasings."""

    base_url: str
    model: str
    api_key: str = "unused"
    timeout_s: float = Field(default=60.0, gt=0)


def lost_numbers(original: str, proposed: str) -> list[str]:
    """The numbers ``original`` states that ``proposed`` no longer does, in order: a phrasing that drops
    one may change what the reward checks."""
    return sorted(set(_NUMBER.findall(original)) - set(_NUMBER.findall(proposed)))


def value_refusal(raw: str, proposed: str, others: Sequence[str]) -> str | None:
    """Why ``proposed`` cannot stand for the raw value ``raw`` of a key whose other values are ``others``."""
    text = " ".join(proposed.lower().split())
    if not text:
        return "empty"
    if len(text) > _MAX_VALUE_CHARS or len(text.split()) > _MAX_VALUE_WORDS:
        return "too long"
    if not _VALUE_TEXT.match(text):
        return "odd characters"
    raw_text = raw.lower()
    if lost_numbers(raw_text, text):
        return "loses a number"
    if any(unit not in text for unit in _UNIT.findall(raw_text)):
        return "loses a unit"
    for other in others:
        other_text = " ".join(other.lower().split())
        if other_text == raw_text or not other_text:
            continue
        if other_text == text:
            return f"equals another value of the key ({other!r})"
        if re.search(rf"(?<![a-z0-9]){re.escape(other_text)}(?![a-z0-9])", text):
            return f"contains another value of the key ({other!r})"
    return None


def key_refusal(key: str, proposed: str) -> str | None:
    """Why ``proposed`` cannot be the shopper word for ``key`` ("" means: say the value alone)."""
    text = " ".join(proposed.lower().split())
    if not text:
        return None
    if not _KEY_TEXT.match(text):
        return "not one to three plain words"
    if ("_" in key or " " in key.strip()) and text == key.lower().replace("_", " ").strip():
        return "the raw key name"
    return None


def json_object(content: str) -> dict[str, Any] | None:
    """The first-to-last brace span of a reply, parsed, when it is one JSON object (a model may wrap it)."""
    start, end = content.find("{"), content.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        parsed = orjson.loads(content[start:end + 1])
    except orjson.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


class Proposer:
    """Asks the model, validates each answer, and keeps the report."""

    def __init__(self, settings: ModelSettings) -> None:
        self.settings = settings
        self.client = openai.OpenAI(base_url=settings.base_url, api_key=settings.api_key,
                                    timeout=settings.timeout_s, max_retries=1)
        self.report = ProposalReport()

    def ask(self, subject: str, prompt: str) -> dict[str, Any]:
        """The model's JSON object for ``prompt`` (empty, with a refusal recorded, when there is none)."""
        self.report.requests += 1
        try:
            reply = self.client.chat.completions.create(
                model=self.settings.model, temperature=0,
                messages=[{"role": "system", "content": _SYSTEM}, {"role": "user", "content": prompt}])
            content = reply.choices[0].message.content or ""
        except openai.OpenAIError as exc:
            self.report.refused.append(Refusal(subject=subject, proposed="", reason=f"request failed: {exc}"))
            return {}
        parsed = json_object(content)
        if parsed is None:
            self.report.refused.append(Refusal(subject=subject, proposed=content[:200],
                                               reason="the reply is not a JSON object"))
            return {}
        return parsed

    def checked(self, subject: str, proposed: Any, reason_of: Any) -> str | None:
        """``proposed`` if it is text that ``reason_of`` finds no fault with, else a recorded refusal."""
        if not isinstance(proposed, str):
            self.report.refused.append(Refusal(subject=subject, proposed=repr(proposed)[:200],
                                               reason="not a string"))
            return None
        reason = reason_of(proposed)
        if reason is not None:
            self.report.refused.append(Refusal(subject=subject, proposed=proposed[:200], reason=reason))
            return None
        self.report.accepted += 1
        return " ".join(proposed.lower().split())

    def key_words(self, keys: Sequence[str], counts: CatalogCounts) -> dict[str, str]:
        out: dict[str, str] = {}
        for start in range(0, len(keys), _KEYS_PER_REQUEST):
            batch = keys[start:start + _KEYS_PER_REQUEST]
            examples = {key: counts.top_values(key)[:3] for key in batch}
            answer = self.ask("keys", "For each attribute key (with example values) give the word a shopper "
                              "uses for it, at most three words, or \"\" when shoppers just say the value. "
                              "Answer {\"key\": \"word\"}.\n" + orjson.dumps(examples).decode())
            for key in batch:
                if key in answer:
                    word = self.checked(f"key {key}", answer[key], lambda text, k=key: key_refusal(k, text))
                    if word is not None:
                        out[key] = word
        return out

    def values(self, key: str, counts: CatalogCounts) -> dict[str, str]:
        known = counts.top_values(key)
        asked = known[:MODEL_VALUES_PER_KEY]
        prompt = (f"Attribute {key!r}. For each raw value give its everyday form with the same meaning; keep "
                  "every number and unit. Answer {\"raw\": \"everyday\"}.\n" + orjson.dumps(asked).decode())
        answer = self.ask(f"values of {key}", prompt)
        out: dict[str, str] = {}
        for raw in asked:
            if raw in answer:
                text = self.checked(f"value {key}={raw}", answer[raw],
                                    lambda proposed, r=raw: value_refusal(r, proposed, known))
                if text is not None and text != raw:
                    out[raw] = text
        return out


def with_model_phrasings(lexicon: Lexicon, counts: CatalogCounts,
                         settings: ModelSettings) -> tuple[Lexicon, ProposalReport]:
    """``lexicon`` with the model's accepted phrasings for the most frequent keys and values."""
    proposer = Proposer(settings)
    keys = [key for key in counts.top_keys()[:MODEL_KEYS] if key in lexicon.keys]
    words = proposer.key_words(keys, counts)
    new_keys: dict[str, KeyPhrasing] = dict(lexicon.keys)
    for key, word in words.items():
        new_keys[key] = lexicon.keys[key].model_copy(update={"words": [word] if word else []})
    values: dict[str, dict[str, str]] = {key: dict(v) for key, v in lexicon.values.items()}
    for key in keys:
        proposed: Mapping[str, str] = proposer.values(key, counts)
        if proposed:
            values[key] = {**values.get(key, {}), **proposed}
    return lexicon.model_copy(update={"keys": new_keys, "values": values}), proposer.report
