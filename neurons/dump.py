"""``dump``: daily trajectory dumps for researchers, and the store's maintenance commands.

Entry points and wiring only: the work is in ``trajectories``.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Annotated

import orjson
import typer

from neurons.options import FixedLogFormatOption
from shoppingbench.logs import configure_logging
from trajectories.dumps import DumpWindow, ExportOptions, LedgerSplits, SplitRule, export_dump
from trajectories.dumps.days import stored_days
from trajectories.dumps.export import EmptyWindow, day_dump
from trajectories.dumps.splits import DEFAULT_SALT
from trajectories.filter import FilterConfig
from trajectories.labelling import label_stored
from trajectories.store import StoreError, TrajectoryStore
from trajectories.store.engine import make_engine
from trajectories.store.migrate import current_revision, upgrade

app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode="markdown",
                  help="Trajectory store and daily dumps: list the days the store holds, export a day's "
                       "attempts (or several days' as one corpus) as Parquet/JSONL with leak-cluster-guarded "
                       "splits, label attempts with the structural filter, migrate the store.")

StoreUrlOption = Annotated[str | None, typer.Option(
    "--store-url", help="SQLAlchemy URL of the store (default: $ARENA_STORE_URL, else "
                        "sqlite:///$ARENA_HOME/trajectories.sqlite3)")]
DayOption = Annotated[datetime | None, typer.Option(
    "--day", formats=["%Y-%m-%d"], help="UTC day to take (YYYY-MM-DD); or give --since and --until")]
SinceOption = Annotated[str | None, typer.Option(
    "--since", help="Start of the window, ISO 8601 (UTC unless it names a zone), inclusive")]
UntilOption = Annotated[str | None, typer.Option(
    "--until", help="End of the window, ISO 8601 (UTC unless it names a zone), exclusive")]
FilterConfigOption = Annotated[Path | None, typer.Option(
    "--filter-config", exists=True, dir_okay=False,
    help="JSON file of filter thresholds (fields of trajectories.filter.FilterConfig); "
         "default thresholds otherwise")]
ProgressOption = Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bar on a terminal")]
ArenaDbOption = Annotated[str | None, typer.Option(
    "--arena-db-url", help="SQLAlchemy URL of the validator's arena database, whose exposure ledger decides "
                           "each attempt's leak cluster and split (default: $ARENA_DATABASE_URL, else "
                           "$ARENA_HOME/arena.sqlite3 when it exists); without a ledger, splits by hash of "
                           "the stored cluster id")]
JsonlOption = Annotated[bool, typer.Option("--jsonl/--no-jsonl",
                                           help="Also write JSONL.gz beside the Parquet")]
RowsPerFileOption = Annotated[int, typer.Option("--rows-per-file", min=1, help="Rows per data file")]
OverwriteOption = Annotated[bool, typer.Option("--overwrite", help="Replace a non-empty --out")]


def _moment(text: str, flag: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise typer.BadParameter(f"{text!r} is not an ISO 8601 time (e.g. 2026-11-21T06:00)",
                                 param_hint=flag) from exc
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _window(day: datetime | None, since: str | None, until: str | None, *,
            required: bool) -> DumpWindow | None:
    if day is not None:
        if since or until:
            raise typer.BadParameter("give either --day or --since/--until, not both", param_hint="--day")
        return DumpWindow.day(date(day.year, day.month, day.day))
    if since is None and until is None and not required:
        return None
    if since is None or until is None:
        raise typer.BadParameter("give --day, or both --since and --until", param_hint="--since/--until")
    try:
        return DumpWindow(_moment(since, "--since"), _moment(until, "--until"))
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--since/--until") from exc


def _filter_config(path: Path | None) -> FilterConfig:
    if path is None:
        return FilterConfig()
    return FilterConfig.model_validate(orjson.loads(path.read_bytes()))


def _held_out(path: Path | None) -> frozenset[str]:
    if path is None:
        return frozenset()
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return frozenset(line for line in lines if line)


def _store_url(store_url: str | None) -> str:
    from neurons.settings import ResearchSettings

    return store_url or ResearchSettings().trajectory_store_url()


def _dumps_root() -> Path:
    from neurons.settings import ResearchSettings

    return ResearchSettings().dumps_root()


def _ledger_splits(arena_db_url: str | None) -> tuple[LedgerSplits | None, str]:
    """The exposure ledger's placements, and where they come from; ``None`` without a ledger."""
    from sqlalchemy.engine import make_url

    from arena.settings import ArenaSettings
    from arena.suites.ledger import SqlExposureLedger

    url = arena_db_url or ArenaSettings().arena_database_url()
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database and not Path(parsed.database).exists():
        if arena_db_url is not None:
            raise typer.BadParameter(f"no arena database at {parsed.database}", param_hint="--arena-db-url")
        return None, "by hash of the cluster id (no arena database, so no exposure ledger)"
    ledger = SqlExposureLedger.open(url)
    try:
        splits = ledger.splits()
    finally:
        ledger.engine.dispose()
    if not splits.of:
        return None, "by hash of the cluster id (the exposure ledger holds no problem)"
    return splits, f"by the exposure ledger of {parsed.render_as_string(hide_password=True)}"


def _export(store_url: str | None, window: DumpWindow, out: Path, *, options: ExportOptions,
            arena_db_url: str | None, progress: bool, overwrite: bool) -> None:
    splits, source = _ledger_splits(arena_db_url)
    with _open(store_url) as store:
        try:
            manifest = export_dump(store, window, out, options=options, splits=splits, progress=progress,
                                   overwrite=overwrite)
        except FileExistsError as exc:
            raise typer.BadParameter(str(exc), param_hint="--out") from exc
        except EmptyWindow as exc:
            typer.echo(f"error: {exc}; nothing was written", err=True)
            raise typer.Exit(1) from exc
    counts = manifest["stats"]["counts"]
    typer.echo(f"{window.label}: {manifest['stats']['attempts']} attempts -> {out}\n"
               f"  splits {orjson.dumps(manifest['splits']).decode()} ({source})\n"
               f"  labels {orjson.dumps(counts['label']).decode()}")


def _open(store_url: str | None) -> TrajectoryStore:
    try:
        return TrajectoryStore.open(_store_url(store_url), migrate=False)
    except StoreError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc


@app.command()
def export(
    out: Annotated[Path | None, typer.Option(
        "--out", help="Directory to write the dump into (must not exist or be empty); default "
                      "$ARENA_DUMPS_DIR/DAY (the folder the validator's site serves at /dumps)")] = None,
    day: DayOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    store_url: StoreUrlOption = None,
    held_out_fraction: Annotated[float, typer.Option(
        "--held-out-fraction", min=0, max=1,
        help="Share of leak clusters held out, by hash of the cluster id")] = 0.1,
    held_out_clusters: Annotated[Path | None, typer.Option(
        "--held-out-clusters", exists=True, dir_okay=False,
        help="File of cluster ids (one per line) that are always held out")] = None,
    split_salt: Annotated[str, typer.Option(
        "--split-salt", help="Salt of the cluster hash; keep it fixed across dumps")] = DEFAULT_SALT,
    arena_db_url: ArenaDbOption = None,
    filter_config: FilterConfigOption = None,
    jsonl: JsonlOption = True,
    rows_per_file: RowsPerFileOption = 10_000,
    overwrite: OverwriteOption = False,
    progress: ProgressOption = True,
    log_format: FixedLogFormatOption = "auto",
) -> None:
    """Export the attempts of one UTC day (or --since/--until) as a dataset directory.

    Writes data/{train,held_out}-*.parquet (+ .jsonl.gz), agents.parquet (code only of agents whose
    embargo was lifted by the end of the window), manifest.json and a dataset card. Splits come from the
    validator's exposure ledger when it has one (the --held-out-* and --split-salt options then do
    nothing). The same window over the same data gives the same bytes.
    """
    configure_logging(log_format)
    window = _window(day, since, until, required=True)
    assert window is not None
    options = ExportOptions(
        split_rule=SplitRule(held_out_fraction=held_out_fraction, salt=split_salt,
                             held_out_clusters=_held_out(held_out_clusters)),
        filter=_filter_config(filter_config), jsonl=jsonl, rows_per_file=rows_per_file)
    _export(store_url, window, out or _dumps_root() / window.label, options=options,
            arena_db_url=arena_db_url, progress=progress, overwrite=overwrite)


@app.command()
def corpus(
    first: Annotated[datetime, typer.Option("--from", formats=["%Y-%m-%d"],
                                            help="First UTC day (YYYY-MM-DD)")],
    last: Annotated[datetime, typer.Option("--to", formats=["%Y-%m-%d"], help="Last UTC day, included")],
    out: Annotated[Path, typer.Option("--out", help="Directory to write the corpus into (must not exist or "
                                                    "be empty)")],
    store_url: StoreUrlOption = None,
    arena_db_url: ArenaDbOption = None,
    filter_config: FilterConfigOption = None,
    jsonl: JsonlOption = True,
    rows_per_file: RowsPerFileOption = 10_000,
    overwrite: OverwriteOption = False,
    progress: ProgressOption = True,
    log_format: FixedLogFormatOption = "auto",
) -> None:
    """Export the attempts of the UTC days --from to --to as one dataset directory.

    Laid out as a day's dump (the same files, configs and card), so one `datasets.load_dataset(DIR)`
    reads every day; split by the validator's exposure ledger, no leak cluster is in train on one day
    and in held_out on another.
    """
    configure_logging(log_format)
    try:
        window = DumpWindow.days(first.date(), last.date())
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--from/--to") from exc
    options = ExportOptions(filter=_filter_config(filter_config), jsonl=jsonl, rows_per_file=rows_per_file)
    _export(store_url, window, out, options=options, arena_db_url=arena_db_url, progress=progress,
            overwrite=overwrite)


@app.command()
def days(
    store_url: StoreUrlOption = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="One JSON object per day instead of a table")] = False,
) -> None:
    """List the UTC days the store holds attempts for, with their attempts by filter label.

    `unlabelled` counts attempts `dump label` has not labelled yet (the export labels them itself);
    `exported` says whether $ARENA_DUMPS_DIR/DAY holds a dump.
    """
    configure_logging()
    with _open(store_url) as store:
        found = stored_days(store)
    root = _dumps_root()
    if not found:
        typer.echo("the store holds no attempt")
        return
    for day in found:
        exported = day_dump(root, day.day) is not None
        if as_json:
            typer.echo(orjson.dumps({"day": day.day.isoformat(), "attempts": day.attempts,
                                     "labels": day.labels, "exported": exported}).decode())
        else:
            labels = "  ".join(f"{name} {count}" for name, count in day.labels.items())
            typer.echo(f"{day.day.isoformat()}  {day.attempts:>7} attempts  {labels}"
                       + ("  (exported)" if exported else ""))


@app.command()
def label(
    day: DayOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    store_url: StoreUrlOption = None,
    filter_config: FilterConfigOption = None,
    relabel: Annotated[bool, typer.Option(
        "--relabel", help="Also relabel attempts that already have a label")] = False,
    progress: ProgressOption = True,
    log_format: FixedLogFormatOption = "auto",
) -> None:
    """Label stored attempts agentic / sub_task / no_llm with the structural filter, and store the verdicts.

    Without a window, every unlabelled attempt in the store.
    """
    configure_logging(log_format)
    window = _window(day, since, until, required=False)
    with _open(store_url) as store:
        counts = label_stored(store, _filter_config(filter_config), relabel=relabel, progress=progress,
                              since=window.since.timestamp() if window else None,
                              until=window.until.timestamp() if window else None)
    summary = orjson.dumps(dict(sorted(counts.items()))).decode()
    typer.echo(f"labelled {sum(counts.values())} attempts: {summary}")


@app.command()
def migrate(
    store_url: StoreUrlOption = None,
    revision: Annotated[str, typer.Option("--revision", help="Target schema revision")] = "head",
) -> None:
    """Create the store's tables, or bring an existing store's schema up to date."""
    configure_logging()
    engine = make_engine(_store_url(store_url))
    try:
        before = current_revision(engine)
        upgrade(engine, revision)
        typer.echo(f"store schema: {before or 'empty'} -> {current_revision(engine)}")
    finally:
        engine.dispose()
