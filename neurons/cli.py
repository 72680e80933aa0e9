"""``arena``: the command line for operators, miners and researchers.

Entry points and wiring only: every command delegates to the library packages.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from neurons import bank as bank_module
from neurons import chain as chain_module
from neurons import demo as demo_module
from neurons.options import HomeOption, LogFormatOption
from shoppingbench.logs import LogFile, configure_logging
from shoppingbench.sample_world import configured_sample_world
from shoppingbench.settings import HarnessSettings

if TYPE_CHECKING:
    from shoppingbench.catalog.importer import ImportReport

app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode="markdown",
                  help="ShoppingBench arena: sample world, catalog, tool server and local scoring.")
world_app = typer.Typer(no_args_is_help=True, help="Generate the deterministic sample world.")
catalog_app = typer.Typer(no_args_is_help=True, help="Import a ShoppingBench catalog and build its index.")
tools_app = typer.Typer(no_args_is_help=True, help="Serve the ShoppingBench tools over HTTP.")
lexicon_app = typer.Typer(no_args_is_help=True, help="Build the lexicon race problems are worded with.")
app.add_typer(world_app, name="world")
app.add_typer(catalog_app, name="catalog")
app.add_typer(tools_app, name="tools")
app.add_typer(lexicon_app, name="lexicon")
app.add_typer(bank_module.app, name="bank")
app.add_typer(chain_module.app, name="chain")

ProductsOption = Annotated[int | None, typer.Option(
    "--products", min=100, help="Products in the sample world (default 50,000)")]
SeedOption = Annotated[int | None, typer.Option("--seed", help="Sample world seed (default 0)")]


def _settings(**overrides: Any) -> HarnessSettings:
    settings = HarnessSettings(**{k: v for k, v in overrides.items() if v is not None})
    configure_logging(settings.log_format, settings.log_level, file=LogFile.from_settings(settings))
    return settings


@app.command()
def demo(
    home: HomeOption = None,
    products: ProductsOption = None,
    seed: SeedOption = None,
    per_category: Annotated[int | None, typer.Option(
        "--per-category", min=1, help="Problems per category in the suite (default 20)")] = None,
    workers: Annotated[int | None, typer.Option("--workers", min=1, help="Concurrent problems")] = None,
    log_format: LogFormatOption = None,
) -> None:
    """Build the sample world (first run only), serve its tools, and score the scripted baseline.

    Prints per-category success and gt rates plus the suite aggregate, and writes every dialogue
    with its scores to a JSONL file under the data root.
    """
    settings = _settings(home=home, world_products=products, world_seed=seed,
                         suite_per_category=per_category, workers=workers, log_format=log_format)
    demo_module.run_demo(settings)


@app.command("network-demo")
def network_demo(
    home: HomeOption = None,
    demo_root: Annotated[Path | None, typer.Option(
        "--root", file_okay=False, help="Where the demo's chain, wallets and databases go (wiped by the next "
                                        "run). Default: HOME/network-demo, HOME being the data root")] = None,
    products: ProductsOption = None,
    seed: SeedOption = None,
    catalog_dir: Annotated[Path | None, typer.Option(
        "--catalog-dir", file_okay=False, exists=True,
        help="A built catalog instead of the bundled sample world (with --problems-dir)")] = None,
    problems_dir: Annotated[Path | None, typer.Option(
        "--problems-dir", file_okay=False, exists=True,
        help="The problem bank (one CATEGORY.jsonl per category) that goes with --catalog-dir")] = None,
    per_category: Annotated[int, typer.Option(
        "--per-category", min=1, help="Problems per category in the qualifying and race suites")] = 3,
    validators: Annotated[int, typer.Option("--validators", min=1, max=4, help="Validators to run")] = 2,
    workers: Annotated[int | None, typer.Option("--workers", min=1, help="Concurrent problems")] = None,
    vary: Annotated[str | None, typer.Option(
        "--vary", metavar="SETTING=VALUE",
        help="The last validator runs with this one setting changed (e.g. judge_models=judge-b): its peers "
             "then report the differing rules part")] = None,
    start: Annotated[str | None, typer.Option(
        "--start", metavar="ISO-TIME",
        help="Where the demo's clock starts, e.g. 2026-11-16T09:00Z (UTC without an offset; default: now): "
             "the same start gives the same calendar")] = None,
    serve: Annotated[bool, typer.Option(
        "--serve", help="Keep the chain and the validators' APIs up after the race day, until Ctrl-C"
    )] = False,
    log_format: LogFormatOption = None,
) -> None:
    """A local subnet fast-forwarded through a race day: chain, validators, miners, race, weights.

    Creates wallets and a local chain under a fresh directory, serves each validator's API on loopback,
    has miners `miner submit` the bundled agents (scripted baseline, sub-task, ReAct) and a cheater the
    gate must refuse, then moves a manual clock through qualifying, the daily race, promotion and weight
    setting. Prints the leaderboard, the weights on the chain, the cheater's rejection and the
    trajectory stores. Without ARENA_INFERENCE_BASE_URL the agents' LLM is the scripted test double.
    With --serve the chain and the validators' APIs stay up (leaderboards, /docs) until Ctrl-C.
    """
    from arena.settings import ArenaSettings
    from neurons.network_demo import run_network_demo, serve_until_interrupted
    from shoppingbench.sample_world import SampleWorld

    if (catalog_dir is None) != (problems_dir is None):
        raise typer.BadParameter("--catalog-dir and --problems-dir go together")
    if vary is not None and ("=" not in vary or vary.split("=", 1)[0] not in {
            *ArenaSettings.model_fields, *ArenaSettings.FLAT_NAMES}):
        raise typer.BadParameter("SETTING=VALUE with a setting of the arena, e.g. judge_models=judge-b",
                                 param_hint="--vary")
    begin = None if start is None else _instant(start, "--start")
    overrides: dict[str, Any] = {"home": home, "world_products": products, "world_seed": seed,
                                 "workers": workers, "log_format": log_format,
                                 "qualifying_suite_per_category": per_category,
                                 "race_suite_per_category": per_category}
    settings = ArenaSettings(**{k: v for k, v in overrides.items() if v is not None})
    configure_logging(settings.log_format, settings.log_level, file=LogFile.from_settings(settings))
    if catalog_dir is not None and problems_dir is not None:
        world = SampleWorld(world_dir=catalog_dir.parent, catalog_dir=catalog_dir, problems_dir=problems_dir)
    else:
        world = configured_sample_world(settings, progress=sys.stderr.isatty())
    changed = dict([vary.split("=", 1)]) if vary else {}
    console = Console()
    run_network_demo(settings, world, demo_root or settings.root / "network-demo", validators=validators,
                     console=console, vary=changed, start=begin,
                     hold=serve_until_interrupted(console) if serve else None)


@world_app.command("build")
def world_build(
    home: HomeOption = None,
    products: ProductsOption = None,
    seed: SeedOption = None,
    log_format: LogFormatOption = None,
) -> None:
    """Generate the sample world's documents and problem bank, and build its catalog.

    With ARENA_LLM_BASE_URL and ARENA_LLM_MODEL set, an OpenAI-compatible model rewords the
    queries; a rewrite is kept only if it still states every fact.
    """
    settings = _settings(home=home, world_products=products, world_seed=seed, log_format=log_format)
    world = configured_sample_world(settings, progress=sys.stderr.isatty())
    typer.echo(f"world: {world.world_dir}\ncatalog: {world.catalog_dir}\nproblems: {world.problems_dir}")


@catalog_app.command("import")
def catalog_import(
    sources: Annotated[list[Path], typer.Argument(
        exists=True, dir_okay=False, readable=True,
        help="documents.jsonl or documents.jsonl.gz; several files (shards) make one catalog")],
    catalog_dir: Annotated[Path, typer.Option("--catalog-dir", help="Where the store and index go")],
    strict: Annotated[bool, typer.Option("--strict", help="Stop at the first bad line")] = False,
    max_bad: Annotated[int, typer.Option(
        "--max-bad", min=0, help="Accept up to this many skipped bad lines (over it: exit 3)")] = 0,
    log_format: LogFormatOption = None,
) -> None:
    """Build a catalog from ShoppingBench documents: the product store and its search index.

    The catalog then holds exactly the products of the given files, replacing whatever the directory
    held; importing the same files again gives the same catalog. Bad lines are reported by number with
    the reason and skipped (--strict stops at the first). A file that ends early or is corrupt (a
    truncated gzip, a plain file cut mid-line) fails with exit code 2; more bad lines than --max-bad
    (default 0) fail with exit code 3. Either way the previous catalog stays in place.
    """
    from shoppingbench.catalog.importer import CatalogImportError
    from shoppingbench.catalog_dir import TooManyBadLines, build_catalog

    _settings(log_format=log_format)
    try:
        report = build_catalog(sources, catalog_dir, strict=strict, max_bad=max_bad)
    except CatalogImportError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    except TooManyBadLines as exc:
        _echo_import_reports(exc.reports)
        typer.echo(f"error: {exc} (--max-bad N accepts up to N)", err=True)
        raise typer.Exit(3) from exc
    _echo_import_reports(report.imported)
    typer.echo(f"catalog {catalog_dir}: {report.index.documents} products, {report.index.terms} terms")


def _instant(text: str, option: str) -> datetime:
    """An ISO 8601 instant (UTC when it names no offset)."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(f"an ISO 8601 time such as 2026-11-16T09:00Z, got {text!r}",
                                 param_hint=option) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _echo_import_reports(reports: list[ImportReport]) -> None:
    for imported in reports:
        typer.echo(f"imported {imported.imported} of {imported.lines} lines ({imported.bad} bad) "
                   f"from {imported.source}")
        for error in imported.errors:
            typer.echo(f"  {imported.source}: line {error.line}: {error.reason}", err=True)


@lexicon_app.command("build")
def lexicon_build(
    catalog: Annotated[Path, typer.Option("--catalog", help="A catalog built by `catalog import`")],
    llm_url: Annotated[str | None, typer.Option(
        "--llm-url", help="OpenAI-compatible base URL of a model that proposes everyday phrasings")] = None,
    llm_model: Annotated[str | None, typer.Option("--llm-model", help="The model's name")] = None,
    llm_key: Annotated[str, typer.Option("--llm-key", envvar="ARENA_LLM_API_KEY",
                                         help="The endpoint's API key")] = "unused",
    out: Annotated[Path | None, typer.Option(
        "--out", help="Where to write it (default: lexicon.json inside the --catalog directory, "
                      "where the generator reads it)")] = None,
    log_format: LogFormatOption = None,
) -> None:
    """Build or extend a catalog's lexicon: its kind phrases, key and value phrasings (see docs/generator.md).

    Without --llm-url/--llm-model it writes the deterministic lexicon; with them, a model proposes
    everyday phrasings for the most frequent keys and values and each is validated (a refused one is
    listed with its reason). Prints the file's sha256: the digest a subnet pins in its configuration.
    """
    from shoppingbench.generator.writer.catalog_lexicon import build_catalog_lexicon
    from shoppingbench.generator.writer.lexicon import LexiconError
    from shoppingbench.generator.writer.propose import ModelSettings

    _settings(log_format=log_format)
    if (llm_url is None) != (llm_model is None):
        raise typer.BadParameter("--llm-url and --llm-model go together")
    model = (ModelSettings(base_url=llm_url, model=llm_model, api_key=llm_key)
             if llm_url is not None and llm_model is not None else None)
    try:
        report = build_catalog_lexicon(catalog, out, model=model)
    except (FileNotFoundError, LexiconError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    if report.proposals is not None:
        for refusal in report.proposals.refused:
            typer.echo(f"refused {refusal.subject}: {refusal.proposed!r} ({refusal.reason})", err=True)
        refused = len(report.proposals.refused)
        typer.echo(f"model: {report.proposals.accepted} phrasings kept, {refused} refused")
    typer.echo(f"lexicon {report.path}: {report.kinds} kinds, {report.keys} keys, {report.values} values "
               f"from {report.products} products\nsha256 {report.sha256}")


@tools_app.command("serve")
def tools_serve(
    catalog_dir: Annotated[Path, typer.Option("--catalog-dir", help="A catalog built by `catalog import`")],
    host: Annotated[str, typer.Option(help="Interface to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind")] = 8000,
    log_format: LogFormatOption = None,
) -> None:
    """Serve find_product, view_product_information and get_product_raw over HTTP (docs at /docs)."""
    from shoppingbench.catalog_dir import open_catalog
    from shoppingbench.tools.server import serve_tools

    settings = _settings(log_format=log_format)
    try:
        engine = open_catalog(catalog_dir)
    except FileNotFoundError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    serve_tools(engine, host=host, port=port, log_level=settings.log_level)


if __name__ == "__main__":
    app()
