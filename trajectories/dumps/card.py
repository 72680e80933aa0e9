"""The dataset card (``README.md``) of a dump: Hugging Face YAML header, then what a researcher needs."""

from __future__ import annotations

from typing import Any, Final

import orjson
from jinja2 import Environment, PackageLoader, StrictUndefined

from trajectories.dumps.columns import ATTEMPT_SCHEMA, DESCRIPTIONS, SCHEMA_VERSION

_TEMPLATES: Final = Environment(loader=PackageLoader("trajectories.dumps"), autoescape=False,
                                keep_trailing_newline=True, undefined=StrictUndefined)
"""Markdown, not HTML: nothing to escape (every value comes from the validator's own manifest)."""


def _yaml_list(splits: list[str]) -> str:
    return "\n".join(f"  - split: {s}\n    path: data/{s}-*.parquet" for s in splits)


def render_card(manifest: dict[str, Any]) -> str:
    """The card for ``manifest``, from ``templates/card.md``."""
    # Only splits with rows have files: `datasets` refuses a split that matches no data.
    splits = list(manifest["splits"])
    counts = {name: orjson.dumps(value).decode() if isinstance(value, dict) else value
              for name, value in manifest["stats"]["counts"].items()}
    columns = (f"| `{f.name}` | {f.type} | {DESCRIPTIONS.get(f.name, '')} |" for f in ATTEMPT_SCHEMA)
    return _TEMPLATES.get_template("card.md").render(
        window=manifest["window"], rule=manifest["split_rule"], schema_version=SCHEMA_VERSION,
        split_files=_yaml_list(splits), counts=counts, columns="\n".join(columns),
        data_files="{" + ", ".join(f'"{s}": "data/{s}-*.parquet"' for s in splits) + "}",
        code_published=manifest["agents"]["code_published"], agents=manifest["agents"]["agents"])
