"""Conversations to token ids and assistant-only labels.

Rendering uses TRL's training variant of Qwen3's chat template: it wraps every assistant turn (think,
content, tool calls and the closing ``<|im_end|>``) in ``{% generation %}``, so
``return_assistant_tokens_mask`` marks exactly what the model generates; everything else (system
prompt, tool schemas, user query, tool results) gets label -100. It also keeps the think block of every
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
from trl.chat_template_utils import qwen3_training_chat_template

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


def render_messages(tokenizer: PreTrainedTokenizerBase, messages: list[dict[str, Any]],
                    tools: list[dict[str, Any]]) -> RenderedMessages:
    """``messages`` through the training chat template, uncut."""
    schemas: list[Any] = tools
    rendered: Any = tokenizer.apply_chat_template(
        messages, tools=schemas, chat_template=qwen3_training_chat_template,
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
