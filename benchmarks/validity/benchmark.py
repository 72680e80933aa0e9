"""Validity: do generated problems read like ShoppingBench's own, and are they as hard? (issue 21, SPEC 5)

    python -m benchmarks.validity [--calibration DIR] [--per-category 100] [--workers 4] [--lexicon FILE]
                                  [--world-products 3000] [--shape-per-category 30]
                                  [--llm-url URL --llm-model NAME | --recorded FILE | --replay-real]
                                  [--twin-draws 1] [--parser FILE] [--half first|second]

Over the calibration set (``../shared/calibration``: 300 real ShoppingBench problems and a catalog they
are solvable in) every real problem gets a **twin**: the generator's writer's query for the same reward
targets (same items, same stated constraints, same voucher). Then, per category, real beside twin:

- wording (``benchmarks.validity.metrics`` defines each exactly): ``title_span_share``, ``raw_key_share``,
  ``verbatim_value_share``, ``query_words``, and ``parser_split_share`` (queries the hostile parser splits
  into as many items as the reward has targets);
- success of the bundled scripted baseline and of the hostile parser (``benchmarks/validity_parser.py``,
  a no-LLM agent written against the writer's wording and tuned only on sample-world problems), scored
  by the one scorer (``production-strict``) against the calibration catalog: the agents' own code
  through the tool server over loopback HTTP, in-process as ``benchmarks.harness`` runs it (no sandbox,
  so no verified-answer rule: neither agent recommends an id no tool returned).

The top level holds the worst category of each: ``title_span_share_max`` (target <= 0.30),
``raw_key_share_max`` (<= 0.15), ``baseline_gap_max`` and ``parser_gap_max`` (twins' success minus
real success; <= 0.08), ``targets_met``, and for information the sampler's shape: constraints per item
and items per problem of suites the ``ProblemGenerator`` draws over the sample world, beside the real
problems'. The calibration catalog is built once under the data root, keyed by the sha256 of
``documents.jsonl.gz``; its lexicon is the deterministic build of ``arena lexicon build`` (made afresh
each run) unless ``--lexicon FILE`` gives one. With ``--llm-url``/``--llm-model`` a model rewrites each
twin as problem banks are written (``arena bank build``: from the items' requirements, checked),
which measures a bank's wording against the same parser (``twin_writer`` and ``rewrites`` in the JSON);
``--recorded FILE`` takes that model's answers from a file instead (:mod:`.recorded_rewrites`).
``--replay-real`` measures those checks instead of a model: each draft's "rewrite" is its real request
(GPT-4.1's, written from the same requirements), kept where the checks keep it. ``--twin-draws N``
writes N twins per real problem with different draws of the writer: the targets judge the first, and
``<agent>_gap_draws`` (per category) and ``<agent>_gap_max_draws`` show how far the gaps move.
``--parser FILE`` runs another hostile parser (an agent file with ``agent_main`` and ``parse_query``, as
``benchmarks/validity_parser.py``), ``--half`` the first or second half of each category's problems (their
twins worded as in a whole run), so a parser tuned on one pass of a bank writer is measured on another
pass's other half: each gap is paired per problem with its standard error (``<agent>_gap_se``), and the
top level adds ``parser_gap_pooled``, ``parser_gap_se`` and ``race_bar_met`` (:data:`RACE_BAR`).
Progress goes to stderr, one line per stage; the last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import asdict
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import orjson

from benchmarks.validity.metrics import Gap, paired_gap, pooled_gap, wording_figures
from benchmarks.validity.recorded_rewrites import RecordedRewrites
from benchmarks.validity.run import (
    AGENTS,
    load_parser,
    parser_split_share,
    replay_rewriter,
    run_agents,
    sampler_shape,
    twins,
)
from shoppingbench.catalog_dir import build_catalog, catalog_exists, open_catalog
from shoppingbench.generator.writer import lexicon_path, writer_for_catalog
from shoppingbench.generator.writer.catalog_lexicon import build_catalog_lexicon
from shoppingbench.generator.writer.lexicon import load_lexicon, save_lexicon
from shoppingbench.generator.writer.propose import ModelSettings
from shoppingbench.generator.writer.rewrite import CheckedRewriter, model_rewriter
from shoppingbench.logs import configure_logging
from shoppingbench.problems.loaders import load_problems
from shoppingbench.problems.models import CATEGORIES, Category, Problem
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.settings import HarnessSettings
from shoppingbench.world.writer import sha256_file

DEFAULT_CALIBRATION: Final = Path(__file__).resolve().parents[2].parent / "shared" / "calibration"
DOCUMENTS: Final = "documents.jsonl.gz"
TARGETS: Final = {"title_span_share_max": 0.30, "raw_key_share_max": 0.15, "baseline_gap_max": 0.08,
                  "parser_gap_max": 0.08}
RACE_BAR: Final = {"parser_gap_pooled": 0.05, "parser_gap_max": 0.10}
"""What a writer's requests must hold against a parser tuned on another pass of the same writer before a
subnet races them (docs/validity.md, the owner's procedure)."""


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def calibration_catalog(calibration: Path, root: Path) -> Path:
    """The calibration catalog built under ``root``, keyed by its documents' sha256 (built once)."""
    documents = calibration / DOCUMENTS
    if not documents.is_file():
        raise SystemExit(f"no {DOCUMENTS} in {calibration}: pass --calibration DIR")
    catalog_dir = root / "benchmarks" / f"validity-catalog-{sha256_file(documents)[:16]}"
    if not catalog_exists(catalog_dir):
        build_catalog(documents, catalog_dir, strict=True, progress=False)
    return catalog_dir


def calibration_lexicon(catalog_dir: Path, lexicon: Path | None) -> str:
    """Put the writer's lexicon beside the catalog and return its sha256: ``lexicon`` when given (e.g. one
    a model helped build), else the deterministic fallback of ``arena lexicon build``, built afresh."""
    path = lexicon_path(catalog_dir)
    if lexicon is not None:
        return save_lexicon(load_lexicon(lexicon), path)
    path.unlink(missing_ok=True)  # a fresh build, not an extension of an earlier run's lexicon
    return build_catalog_lexicon(catalog_dir, progress=False).sha256


def half_bounds(per_category: int, half: str | None) -> tuple[int, int]:
    """The indices [start, end) of a category's problems a run takes: all ``per_category`` of them, or
    the ``first`` or ``second`` half."""
    middle = per_category // 2
    return {"first": (0, middle), "second": (middle, per_category)}.get(half or "", (0, per_category))


def real_problems(calibration: Path, per_category: int,
                  half: str | None = None) -> dict[Category, list[Problem]]:
    """The first ``per_category`` real problems of each category file, or the ``half`` of them."""
    start, end = half_bounds(per_category, half)
    return {c: load_problems(calibration / f"{c}.jsonl", c)[start:end] for c in CATEGORIES}


def _worst(per_category: dict[Category, dict[str, Any]], field: str) -> float:
    return max(float(figures[field]) for figures in per_category.values())


def summarise(per_category: dict[Category, dict[str, Any]]) -> dict[str, Any]:
    """The top-level figures: each the worst category's, and whether every target is met; the parser's
    gap pooled over the categories with its standard error, and whether it meets the bar a writer must
    clear to race (:data:`RACE_BAR`, judged with a parser tuned on another pass of the writer). With more
    than one twin draw, ``<agent>_gap_max_draws`` lists the worst category's gap of each draw (for
    information: the targets are judged on draw 0)."""
    top = {"title_span_share_max": _worst(per_category, "twin_title_span_share"),
           "raw_key_share_max": _worst(per_category, "twin_raw_key_share"),
           "baseline_gap_max": _worst(per_category, "baseline_gap"),
           "parser_gap_max": _worst(per_category, "parser_gap")}
    pooled = pooled_gap([Gap(figures["parser_gap"], figures["parser_gap_se"], figures["problems"])
                         for figures in per_category.values()])
    race: dict[str, Any] = {"parser_gap_pooled": pooled.gap, "parser_gap_se": pooled.se}
    race["race_bar_met"] = (pooled.gap <= RACE_BAR["parser_gap_pooled"]
                            and top["parser_gap_max"] <= RACE_BAR["parser_gap_max"])
    spread: dict[str, list[float]] = {}
    for agent in AGENTS:
        per_draw = [figures.get(f"{agent}_gap_draws") for figures in per_category.values()]
        if all(per_draw):
            spread[f"{agent}_gap_max_draws"] = [max(gaps) for gaps in zip(*per_draw, strict=True)]
    return {**top, "targets_met": all(top[name] <= bound for name, bound in TARGETS.items()), **race,
            **spread}


def twin_sides(draws: int) -> list[str]:
    """The side name of each twin draw: ``twin`` (draw 0, the one the targets judge), ``twin-1``, ..."""
    return ["twin"] + [f"twin-{draw}" for draw in range(1, draws)]


def _rate(outcomes: list[bool]) -> float:
    return round(sum(outcomes) / len(outcomes), 4) if outcomes else 0.0


def _category_figures(real: list[Problem], twin: list[Problem], outcomes: dict[str, list[bool]],
                      draws: int, parser: ModuleType) -> dict[str, Any]:
    figures: dict[str, Any] = {"problems": len(real)}
    for side, problems in (("real", real), ("twin", twin)):
        for name, value in asdict(wording_figures(problems)).items():
            if name != "problems":
                figures[f"{side}_{name}"] = value
        figures[f"{side}_parser_split_share"] = parser_split_share(problems, parser)
    for agent in AGENTS:
        real_won = outcomes[f"{agent}/real"]
        gaps = [paired_gap(real_won, outcomes[f"{agent}/{side}"]) for side in twin_sides(draws)]
        figures[f"{agent}_real_success"] = _rate(real_won)
        figures[f"{agent}_twin_success"] = _rate(outcomes[f"{agent}/twin"])
        figures[f"{agent}_gap"] = gaps[0].gap
        figures[f"{agent}_gap_se"] = gaps[0].se
        if draws > 1:
            figures[f"{agent}_gap_draws"] = [gap.gap for gap in gaps]
    return figures


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.validity",
                                     description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 2)[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calibration", type=Path, default=DEFAULT_CALIBRATION,
                        help="Folder with documents.jsonl.gz and {product,shop,voucher}.jsonl")
    parser.add_argument("--lexicon", type=Path, default=None,
                        help="Lexicon file for the twins (default: the deterministic build for the catalog)")
    parser.add_argument("--llm-url", default=None,
                        help="OpenAI-compatible model that rewrites each twin as problem banks are "
                             "written (arena bank build); default: the twins are the lexicon writer's")
    parser.add_argument("--llm-model", default=None, help="The rewriting model's name")
    parser.add_argument("--llm-key", default=os.environ.get("ARENA_LLM_API_KEY", "unused"),
                        help="The endpoint's API key (default $ARENA_LLM_API_KEY)")
    parser.add_argument("--replay-real", action="store_true",
                        help="Check the real requests as rewrites of their drafts, as a bank's rewrites are "
                             "checked, and use each one the checks keep as its twin")
    parser.add_argument("--recorded", type=Path, default=None, metavar="FILE",
                        help="A model's recorded answers to the bank's prompts (benchmarks/validity/"
                             "recorded_rewrites.py) rewrite the twins; prompts with none go to "
                             "FILE.missing.jsonl")
    parser.add_argument("--per-category", type=int, default=100, help="Real problems per category (max 100)")
    parser.add_argument("--half", choices=("first", "second"), default=None,
                        help="Run only the first or the second half of each category's problems, their twins "
                             "worded as in a whole run: tune a parser on one half, measure it on the other")
    parser.add_argument("--parser", type=Path, default=None, metavar="FILE",
                        help="The hostile parser to run, an agent file with agent_main and parse_query as "
                             "benchmarks/validity_parser.py (the default) has")
    parser.add_argument("--workers", type=int, default=4, help="Problems run at once per agent")
    parser.add_argument("--twin-draws", type=int, default=1,
                        help="Twins written per real problem with different draws of the writer; the "
                             "targets judge draw 0, the others show the spread (<agent>_gap_draws)")
    parser.add_argument("--world-products", type=int, default=3000,
                        help="Products of the sample world the sampler's shape is drawn over (built once)")
    parser.add_argument("--shape-per-category", type=int, default=30,
                        help="Generated problems per category for the sampler's shape (0: skip)")
    args = parser.parse_args(argv)
    if min(args.per_category, args.workers, args.twin_draws) < 1 or args.shape_per_category < 0:
        parser.error("--per-category, --workers and --twin-draws must be >= 1, --shape-per-category >= 0")
    if (args.llm_url is None) != (args.llm_model is None):
        parser.error("--llm-url and --llm-model go together")
    if sum((args.replay_real, args.llm_url is not None, args.recorded is not None)) > 1:
        parser.error("--replay-real, --recorded and --llm-url each rewrite the twins: give one")
    return args


def _rewriter(args: argparse.Namespace, real: dict[Category, list[Problem]], engine: BM25SearchEngine,
              catalog_dir: Path) -> CheckedRewriter | None:
    """What rewrites the lexicon writer's twins, if anything: a model, its recorded answers, or the real
    requests replayed."""
    if args.replay_real:
        return replay_rewriter(real, engine, catalog_dir, args.twin_draws, _start(args))
    if args.recorded is not None:
        return CheckedRewriter(writer_for_catalog(catalog_dir), RecordedRewrites(args.recorded))
    if args.llm_url is None:
        return None
    return model_rewriter(writer_for_catalog(catalog_dir),
                          [ModelSettings(base_url=args.llm_url, model=args.llm_model, api_key=args.llm_key)])


def _start(args: argparse.Namespace) -> int:
    """The index, among each category's problems, of the first one this run takes."""
    return half_bounds(args.per_category, args.half)[0]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = _arguments(argv)
    configure_logging("console", "warning")
    settings = HarnessSettings()
    try:  # before the catalog import: a bad file is refused at once
        parser = load_parser(args.parser)
    except (OSError, ValueError) as exc:
        raise SystemExit(f"--parser: {exc}") from exc
    _say(f"catalog: importing {args.calibration / DOCUMENTS} (cached by sha256)")
    catalog_dir = calibration_catalog(args.calibration, settings.root)
    _say(f"lexicon: {args.lexicon or 'the deterministic build for the catalog'}")
    lexicon = calibration_lexicon(catalog_dir, args.lexicon)
    real = real_problems(args.calibration, args.per_category, args.half)
    _say(f"problems: {', '.join(f'{len(real[c])} {c}' for c in CATEGORIES)}; writing twins")
    engine = open_catalog(catalog_dir)
    try:
        rewriter = _rewriter(args, real, engine, catalog_dir)
        sides = {"real": real} | {side: twins(real, engine, catalog_dir, rewriter, draw, _start(args))
                                  for draw, side in enumerate(twin_sides(args.twin_draws))}
        if rewriter is not None and isinstance(rewriter.sources[0], RecordedRewrites):
            _say(f"recorded: {len(rewriter.sources[0].missing)} prompts without an answer, written to "
                 f"{rewriter.sources[0].write_missing()}")
        outcomes = run_agents(sides, engine, settings, args.workers, _say, parser)
    finally:
        engine.close()
    twin = sides["twin"]
    per_category = {c: _category_figures(real[c], twin[c], outcomes[c], args.twin_draws, parser)
                    for c in CATEGORIES}
    shape = sampler_shape(settings.root, args.world_products, args.shape_per_category, _say)
    result = {**summarise(per_category), "targets": TARGETS, "lexicon_sha256": lexicon,
              "twin_writer": "lexicon" if rewriter is None else rewriter.key,
              "rewrites": None if rewriter is None else rewriter.report.model_dump(exclude={"reasons"}),
              "problems": sum(len(p) for p in real.values()), "twin_draws": args.twin_draws,
              "parser": str(args.parser or "benchmarks/validity_parser.py"), "half": args.half,
              "per_category": per_category,
              "sampler_shape": shape}
    print(orjson.dumps(result).decode())
    return result
