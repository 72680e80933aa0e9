"""The dataset card (``README.md``) of a dump: Hugging Face YAML header, then what a researcher needs."""

from __future__ import annotations

from typing import Any, Final

import orjson
from jinja2 import Environment, PackageLoader, StrictUndefined

from trajectories.dumps.columns import (
    ATTEMPT_SCHEMA,
    DESCRIPTIONS,
    KTO_DESCRIPTIONS,
    KTO_SCHEMA,
    SCHEMA_VERSION,
)

_TEMPLATES: Final = Environment(loader=PackageLoader("trajectories.dumps"), autoescape=False,
                                keep_trailing_newline=True, undefined=StrictUndefined)
"""Markdown, not HTML: nothing to escape (every value comes from the validator's own manifest)."""


def _yaml_list(splits: list[str], directory: str = "data") -> str:
    return "\n".join(f"  - split: {s}\n    path: {directory}/{s}-*.parquet" for s in splits)


def dataset_configs(manifest: dict[str, Any]) -> str:
    """The YAML ``configs`` entries: ``default`` (the attempts) and, when it has rows, ``kto``."""
    splits = _yaml_list(list(manifest["splits"]))
    configs = [f"- config_name: default\n  default: true\n  data_files:\n{splits}"]
    kto = list(manifest.get("kto_splits") or {})
    if kto:
        configs.append(f"- config_name: kto\n  data_files:\n{_yaml_list(kto, 'kto')}")
    return "\n".join(configs)


def _type(arrow_type: Any) -> str:
    """A column's type in the table; chat turns by name, their fields listed once in the card."""
    text = str(arrow_type)
    return "list of chat turns" if text.startswith("list<item: struct<role") else text


def render_card(manifest: dict[str, Any]) -> str:
    """The card for ``manifest``, from ``templates/card.md``."""
    # Only splits with rows have files: `datasets` refuses a split that matches no data.
    splits = list(manifest["splits"])
    counts = {name: orjson.dumps(value).decode() if isinstance(value, dict) else value
              for name, value in manifest["stats"]["counts"].items()}
    columns = (f"| `{f.name}` | {_type(f.type)} | {DESCRIPTIONS.get(f.name, '')} |" for f in ATTEMPT_SCHEMA)
    kto_columns = (f"| `{f.name}` | {_type(f.type)} | {KTO_DESCRIPTIONS.get(f.name, 'as in `default`')} |"
                   for f in KTO_SCHEMA)
    kto_splits = orjson.dumps(manifest.get("kto_splits") or {}).decode()
    return _TEMPLATES.get_template("card.md").render(
        window=manifest["window"], rule=manifest["split_rule"], schema_version=SCHEMA_VERSION,
        configs=dataset_configs(manifest), counts=counts, columns="\n".join(columns),
        kto_columns="\n".join(kto_columns), kto_splits=kto_splits,
        data_files="{" + ", ".join(f'"{s}": "data/{s}-*.parquet"' for s in splits) + "}",
        code_published=manifest["agents"]["code_published"], agents=manifest["agents"]["agents"])
