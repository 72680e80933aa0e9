"""``arena bank``: write, seal and check the problem banks race days can be drawn from (docs/validity.md).

Entry points and wiring only: the rules are :mod:`arena.suites.bank`, the files
:mod:`arena.suites.sealed_bank`, the writing :mod:`arena.suites.bank_build`.
"""

from __future__ import annotations

import hashlib
import sys
from collections import Counter
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from neurons.options import LogFormatOption
from shoppingbench.files import write_file_atomically
from shoppingbench.logs import configure_logging
from shoppingbench.problems.models import CATEGORIES

if TYPE_CHECKING:
    from arena.settings import ArenaSettings
    from arena.suites.bank import ProblemBank

app = typer.Typer(no_args_is_help=True, help="Write, seal and check problem banks (model-written race days).")

CatalogDirOption = Annotated[Path, typer.Option(
    "--catalog", file_okay=False, help="The subnet's catalog (built by `arena catalog import`)")]


def _counts(bank: ProblemBank) -> str:
    return ", ".join(f"{n} {c}" for c, n in bank.counts().items())


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


def _settings() -> ArenaSettings:
    """The validator's ``ARENA_*`` settings (environment, then ``.env``): its race time, pins and relays."""
    from pydantic import ValidationError

    from arena.settings import ArenaSettings

    try:
        return ArenaSettings()
    except ValidationError as exc:
        raise _fail(f"the ARENA_* settings (environment or .env) are not valid: {exc}") from exc


@app.command("round")
def bank_round(
    instant: Annotated[datetime, typer.Option("--at", help="The race slot, ISO 8601 with its zone "
                                                           "(2026-12-01T16:00:00+00:00)")],
) -> None:
    """Print the drand quicknet round emitted at (or just after) an instant: what to seal a day's bank to."""
    from arena.suites.bank import round_at, round_time

    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=UTC)
    number = round_at(instant)
    typer.echo(f"round {number} (emitted {round_time(number).isoformat()})")


@app.command("build")
def bank_build(
    catalog: CatalogDirOption,
    out: Annotated[Path, typer.Option("--out", dir_okay=False, help="Where to write the bank (plain JSON: "
                                                                    "keep it private until sealed)")],
    per_category: Annotated[int, typer.Option(
        "--per-category", min=1, help="Problems per category; a race draws its suite from them")] = 100,
    llm_url: Annotated[list[str] | None, typer.Option(
        "--llm-url", help="OpenAI-compatible base URL of a model that words the requests; repeat it, with "
                          "--llm-model, for several writers (the n-th URL goes with the n-th model)")] = None,
    llm_model: Annotated[list[str] | None, typer.Option("--llm-model", help="The model's name")] = None,
    llm_key: Annotated[str, typer.Option("--llm-key", envvar="ARENA_LLM_API_KEY",
                                         help="The endpoints' API key")] = "unused",
    temperature: Annotated[float | None, typer.Option(
        "--temperature", min=0, max=2, help="The writers' sampling temperature; default: the request "
                                            "writer's (0.7)")] = None,
    log_format: LogFormatOption = None,
) -> None:
    """Write a bank: solvable problems from a private seed, each request written by a model.

    A model writes each request from its items' requirements, as ShoppingBench's writer does, from a
    prompt whose wording, fact order and asked style are drawn from the private seed. With several
    --llm-url/--llm-model pairs each problem's writer is drawn from the seed, and the bank records which
    wrote each request. Without them the lexicon writer's wording stands (the problems are still unknown
    before the race, but as easy to parse as generated ones). A request that drops a stated number,
    repeats 6 title words in a row, repeats 4 words of the prompt's own fact wording that real requests
    never use, or is twice as long as the lexicon writer's draft is asked for again; then the draft
    stands and is counted. Each problem is journaled to OUT.partial as it is written: the same command
    resumes an interrupted build (the journal holds the bank's private seed; it is deleted once OUT is
    written).
    """
    from arena.suites.bank_build import build_bank
    from arena.suites.bank_journal import journal_path
    from arena.suites.sealed_bank import bank_bytes
    from shoppingbench.generator.writer.lexicon import LexiconError
    from shoppingbench.generator.writer.propose import ModelSettings
    from shoppingbench.generator.writer.rewrite import DEFAULT_TEMPERATURE

    configure_logging(log_format or "auto", "WARNING")
    urls, names = llm_url or [], llm_model or []
    if len(urls) != len(names):
        raise typer.BadParameter("--llm-url and --llm-model go together: give one model per URL")
    models = [ModelSettings(base_url=url, model=name, api_key=llm_key) for url, name in zip(urls, names,
                                                                                        strict=True)]
    journal = journal_path(out)
    if journal.exists():
        typer.echo(f"resuming from {journal}", err=True)
    try:
        built = build_bank(catalog, dict.fromkeys(CATEGORIES, per_category), models=models, journal=journal,
                           temperature=DEFAULT_TEMPERATURE if temperature is None else temperature,
                           progress=sys.stderr.isatty())
    except (FileNotFoundError, LexiconError, ValueError) as exc:
        raise _fail(str(exc)) from exc
    except KeyboardInterrupt:
        typer.echo(f"interrupted: what was written is kept in {journal}; run the same command to resume",
                   err=True)
        raise typer.Exit(130) from None
    write_file_atomically(out, bank_bytes(built.bank))
    journal.unlink()
    resumed = f" ({built.resumed} slots from the journal)" if built.resumed else ""
    typer.echo(f"bank {out}: {_counts(built.bank)} over catalog {built.bank.catalog_fingerprint}{resumed}")
    if built.rewrites is not None:
        report = built.rewrites
        typer.echo(f"model: {report.rewritten} requests written, {report.drafts_kept} drafts kept "
                   f"({report.requests} requests)")
        for writer, count in sorted(Counter((built.bank.writers or {}).values()).items()):
            typer.echo(f"  {count} requests by {writer}")
        for reason in sorted(set(report.reasons)):
            typer.echo(f"  draft kept: {reason}", err=True)


@app.command("seal")
def bank_seal(
    bank: Annotated[Path, typer.Option("--bank", exists=True, dir_okay=False, help="A bank `bank build` "
                                                                                   "wrote")],
    day: Annotated[datetime, typer.Option("--day", formats=["%Y-%m-%d"], help="The race day it is for")],
    out: Annotated[Path, typer.Option("--out", dir_okay=False, help="Where to write the sealed file")],
    reveal_round: Annotated[int | None, typer.Option(
        "--round", min=1, help="The drand round that opens it; default: the round of the day's race slot "
                               "(`arena bank round --at <slot>`)")] = None,
    race_time: Annotated[datetime | None, typer.Option(
        "--race-time", formats=["%H:%M"],
        help="The subnet's race slot, HH:MM UTC; default: ARENA_RACE_TIME_UTC (16:00)")] = None,
) -> None:
    """Seal a bank to a drand round and print the sha256 validators pin for the day (ARENA_PROBLEM_BANKS).

    The round is the one emitted at the day's race slot unless given. Publish the sealed file beside the
    catalog (weeks ahead if you like: nobody can open it before its round); operators install it (`arena
    bank install`).
    """
    from arena.race.calendar import race_slot
    from arena.suites.bank import BankError, check_reveal, round_at
    from arena.suites.sealed_bank import read_bank, seal

    race_day: date = day.date()
    try:
        at = race_time.time() if race_time is not None else _settings().race_rules.race_time
        slot = race_slot(race_day, at)
        reveal_round = reveal_round or round_at(slot)
        check_reveal(reveal_round, slot)
        sealed = seal(read_bank(bank.read_bytes()), race_day, reveal_round).to_bytes()
    except BankError as exc:
        raise _fail(str(exc)) from exc
    write_file_atomically(out, sealed)
    typer.echo(f"sealed {out} for {race_day} to drand round {reveal_round}\n"
               f"sha256 {hashlib.sha256(sealed).hexdigest()}")


@app.command("open")
def bank_open(
    sealed_file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="A sealed bank")],
    signature: Annotated[str | None, typer.Option(
        "--signature", help="The round's signature (hex); default: fetched from the drand relays "
                            "(ARENA_DRAND_RELAYS)")] = None,
    out: Annotated[Path | None, typer.Option("--out", dir_okay=False, help="Write the opened bank here")
                   ] = None,
) -> None:
    """Open a sealed bank once its round is emitted: checks it and prints what it holds."""
    from arena.chain.drand import DrandBeacon
    from arena.suites.bank import QUICKNET_CHAIN_HASH, BankError, round_time
    from arena.suites.sealed_bank import bank_bytes, read_sealed, unseal

    try:
        sealed = read_sealed(sealed_file.read_bytes())
        if signature is None:
            with DrandBeacon(QUICKNET_CHAIN_HASH, _settings().drand_relays) as beacon:
                signature = beacon.signature(sealed.reveal_round)
        if signature is None:
            raise BankError(f"drand round {sealed.reveal_round} is emitted at "
                            f"{round_time(sealed.reveal_round).isoformat()}: not yet")
        opened = unseal(sealed, signature)
    except (BankError, RuntimeError) as exc:
        raise _fail(str(exc)) from exc
    typer.echo(f"bank of {sealed.day} (round {sealed.reveal_round}): {_counts(opened)} over catalog "
               f"{opened.catalog_fingerprint}")
    if out is not None:
        write_file_atomically(out, bank_bytes(opened))


@app.command("install")
def bank_install(
    sealed_files: Annotated[list[Path], typer.Argument(
        exists=True, dir_okay=False, help="Sealed banks the subnet published (any number, any days)")],
    catalog: Annotated[Path | None, typer.Option(
        "--catalog", file_okay=False, help="The catalog the validator races over; default: ARENA_CATALOG_DIR"
    )] = None,
) -> None:
    """Check published sealed banks, store each where the validator looks for it, print the pins to set.

    Each file is checked as the validator checks it at start (a sealed bank, for its day, sealed to a drand
    round near that day's slot, ARENA_RACE_TIME_UTC) and copied to CATALOG/banks/SHA256.json. The
    printed ARENA_PROBLEM_BANKS holds the pins already set (environment or .env) and the new ones; a day
    pinned to another file is refused. Banks can be published weeks ahead (nobody can open one before its
    round), so a month of them can be installed at once; restart the validator for new pins to count.
    """
    import json

    from arena.suites.bank import BankError, add_pins
    from arena.suites.sealed_bank import install_sealed

    settings = _settings()
    catalog_dir = catalog or settings.catalog_dir
    if catalog_dir is None or not catalog_dir.is_dir():
        where = f"no catalog at {catalog_dir}" if catalog_dir else "no catalog given"
        raise _fail(f"{where}: give --catalog DIR (or set ARENA_CATALOG_DIR), the catalog the validator "
                    f"races over")
    installed: list[tuple[date, str]] = []
    try:
        for path in sealed_files:
            day, sha256 = install_sealed(catalog_dir, path.read_bytes(), settings.race_rules.race_time,
                                         str(path))
            installed.append((day, sha256))
            typer.echo(f"{day}  {sha256}  {path}", err=True)
        pins = add_pins(settings.problem_banks, installed)
    except BankError as exc:
        raise _fail(str(exc)) from exc
    value = json.dumps({day.isoformat(): sha256 for day, sha256 in pins.items()})
    typer.echo(f"{len(installed)} sealed banks in {catalog_dir / 'banks'}; pin them (restart the validator):",
               err=True)
    typer.echo(f"ARENA_PROBLEM_BANKS='{value}'")
