"""A saved checkpoint loaded as a model and its tokenizer, for the next stage to train or a server to serve.

A directory holding a PEFT LoRA adapter (:data:`ADAPTER_CONFIG`) is loaded with its base model and merged,
so stages chain and servers answer with the trained weights.
"""

from __future__ import annotations

from pathlib import Path

from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

ADAPTER_CONFIG = "adapter_config.json"


def load_causal_lm(source: str | Path) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Model and tokenizer from an id or directory; a directory holding a PEFT adapter is loaded with its
    base model and merged, so the next stage (or the server) starts from the trained weights."""
    tokenizer = AutoTokenizer.from_pretrained(source)
    if isinstance(source, Path) and (source / ADAPTER_CONFIG).exists():
        from peft import AutoPeftModelForCausalLM

        # PEFT loads an adapter for inference, every weight frozen: after the merge they are the model's own
        model = AutoPeftModelForCausalLM.from_pretrained(source, dtype="auto").merge_and_unload()
        model.requires_grad_(True)
    else:
        model = AutoModelForCausalLM.from_pretrained(source, dtype="auto")
    return model, tokenizer
