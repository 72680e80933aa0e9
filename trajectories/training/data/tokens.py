"""Conversations to token ids and assistant-only labels.

Rendering uses the training variant of the tokenizer's chat template (:func:`training_chat_template`):
for Qwen3's, TRL's ``qwen3_training_chat_template``; a template that already wraps every assistant turn
in ``{% generation %}`` and renders each turn alike wherever it stands (the converted Gemma's,
:mod:`trajectories.training.dev.gemma`) is used as it is. Every assistant turn (think, content, tool
calls and the closing turn token, ``<|im_end|>`` or ``<end_of_turn>``) is inside ``{% generation %}``, so
``return_assistant_tokens_mask`` marks exactly what the model generates; everything else (system
prompt, tool schemas, user query, tool results) gets label -100. Both keep the think block of every
turn, not only the last one, so each turn's reasoning is trained. Tokenizing here, rather than inside
``SFTTrainer``, gives the trainer a dataset that already has ``labels`` (TRL leaves it as is) and lets
the masks be tested without a trainer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from datasets import Dataset
from transformers import PreTrainedTokenizerBase
from trl.chat_template_utils import get_training_chat_template

from trajectories.training.data.conversations import Conversation

IGNORE_INDEX = -100


@dataclass(frozen=True)
class TokenizedExample:
    input_ids: list[int]
    labels: list[int]


@dataclass(frozen=True)
class RenderedMessages:
    """Token ids of rendered messages and, per token, 1 where the model generates it (an assistant turn)."""

    input_ids: list[int]
    assistant_mask: list[int]


_TRAINING_TEMPLATES: dict[str, str] = {}
"""The training template found for each tokenizer chat template (TRL's check renders a few conversations)."""


def training_chat_template(tokenizer: PreTrainedTokenizerBase) -> str:
    """The template conversations are trained with: TRL's training variant of the tokenizer's own
    (``get_training_chat_template``), or the tokenizer's own when it already has ``{% generation %}`` markers
    and is prefix-preserving. Raises ``ValueError`` for a template TRL cannot patch."""
    own = tokenizer.chat_template
    if isinstance(own, dict):
        own = own.get("default")
    if not isinstance(own, str) or not own:
        raise ValueError("the tokenizer has no chat template: conversations cannot be rendered for training")
    if own not in _TRAINING_TEMPLATES:
        try:
            patched = get_training_chat_template(tokenizer)
        except ValueError as exc:
            raise ValueError(f"the tokenizer's chat template cannot be trained on: {exc}") from exc
        _TRAINING_TEMPLATES[own] = own if patched is None else patched
    return _TRAINING_TEMPLATES[own]


def render_messages(tokenizer: PreTrainedTokenizerBase, messages: list[dict[str, Any]],
                    tools: list[dict[str, Any]]) -> RenderedMessages:
    """``messages`` through the training chat template, uncut."""
    schemas: list[Any] = tools
    rendered: Any = tokenizer.apply_chat_template(
        messages, tools=schemas, chat_template=training_chat_template(tokenizer),
        tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    return RenderedMessages(input_ids=list(rendered["input_ids"]),
                            assistant_mask=[int(keep) for keep in rendered["assistant_masks"]])


def tokenize_conversation(tokenizer: PreTrainedTokenizerBase, conversation: Conversation,
                          max_length: int) -> TokenizedExample | None:
    """Ids and labels of ``conversation`` cut to ``max_length`` tokens; None when nothing is left to learn."""
    rendered = render_messages(tokenizer, conversation.messages, conversation.tools)
    ids = rendered.input_ids[:max_length]
    mask = rendered.assistant_mask[:max_length]
    labels = [token if keep else IGNORE_INDEX for token, keep in zip(ids, mask, strict=True)]
    if all(label == IGNORE_INDEX for label in labels):
        return None
    return TokenizedExample(input_ids=ids, labels=labels)


def build_dataset(tokenizer: PreTrainedTokenizerBase, conversations: Iterable[Conversation],
                  max_length: int) -> Dataset:
    """A ``datasets.Dataset`` with ``input_ids`` and ``labels``, ready for ``SFTTrainer``."""
    examples = [example for conversation in conversations
                if (example := tokenize_conversation(tokenizer, conversation, max_length)) is not None]
    if not examples:
        raise ValueError("no conversation has an assistant token within max_length: nothing to train on")
    return Dataset.from_dict({"input_ids": [e.input_ids for e in examples],
                              "labels": [e.labels for e in examples]})
