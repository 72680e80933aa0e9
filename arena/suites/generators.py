"""The generators a generator schedule names, opened over the validator's catalog, and the lexicon files
they pin (SPEC 5; the rules are :mod:`arena.suites.schedule`).

Where lexicons live: beside the catalog. ``<catalog>/lexicon.json`` is the catalog's current lexicon
(``arena lexicon build`` writes it); every lexicon a schedule entry pins is kept as
``<catalog>/lexicons/<sha256>.json``, so an older entry's lexicon is still there after the current one
was replaced, and days generated with it replay exactly. An entry's pinned sha256 is looked up in that
archive first, then in ``lexicon.json``; a file whose content does not hash to the pinned value is never
used. Everything is checked when the generators are opened (at a validator's start), before any suite is
generated: a schedule this validator cannot honour stops it with a :class:`ScheduleError` naming the
entry and what differs. The problem banks pinned for race days (``<catalog>/banks/<sha256>.json``,
:mod:`arena.suites.sealed_bank`) are checked at the same time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, time
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ValidationError

from arena.race.calendar import race_slot
from arena.suites.bank import BankError
from arena.suites.public import SuiteSource
from arena.suites.schedule import (
    GeneratorSchedule,
    ScheduleEntry,
    ScheduleError,
    require_known_versions,
)
from arena.suites.sealed_bank import RoundSignatures, SealedBankSource, load_pinned
from shoppingbench.generator import KNOWN_VERSIONS, ProblemGenerator, get_version
from shoppingbench.generator.catalog import CatalogDir, opened_catalog_dir
from shoppingbench.generator.writer import LexiconError, LexiconWriter
from shoppingbench.generator.writer.lexicon import load_lexicon
from shoppingbench.generator.writer.request import RequestWriter

LEXICON_FILE: Final = "lexicon.json"
LEXICON_ARCHIVE: Final = "lexicons"


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pinned_lexicon(catalog_dir: Path, entry: ScheduleEntry) -> Path:
    """The lexicon file whose sha256 ``entry`` pins: ``<catalog>/lexicons/<sha256>.json``, else the
    catalog's ``lexicon.json``. Raises :class:`ScheduleError` when neither holds those bytes."""
    pinned = entry.lexicon_sha256
    assert pinned is not None
    archived = catalog_dir / LEXICON_ARCHIVE / f"{pinned}.json"
    found = {path: file_sha256(path) for path in (archived, catalog_dir / LEXICON_FILE) if path.is_file()}
    for path, digest in found.items():
        if digest == pinned:
            return path
    seen = "; ".join(f"{path} has sha256 {digest}" for path, digest in found.items())
    raise ScheduleError(f"the generator schedule entry from {entry.from_day} ({entry.version}) pins lexicon "
                        f"sha256 {pinned}, but {seen or f'there is no {archived} nor {LEXICON_FILE}'}: "
                        f"copy the lexicon the subnet published for that entry to {archived}")


def generator_config(entry: ScheduleEntry) -> BaseModel:
    """The entry's configuration overrides over its version's defaults, or a :class:`ScheduleError`
    naming them."""
    try:
        return get_version(entry.version).config_type(**entry.config)
    except ValidationError as exc:
        refused = "; ".join(f"{'.'.join(map(str, error['loc'])) or 'config'}: {error['msg']}"
                            for error in exc.errors())
        raise ScheduleError(f"the generator schedule entry from {entry.from_day} ({entry.version}) has "
                            f"configuration overrides the generator refuses: {refused}") from exc


class ScheduledSources:
    """The source in force on each race day and for each qualifying week, by the schedule, and the problem
    banks pinned for race days."""

    def __init__(self, schedule: GeneratorSchedule, sources: Mapping[str, SuiteSource],
                 banks: Mapping[date, SuiteSource] | None = None) -> None:
        """``sources`` maps each spec's :meth:`~GeneratorSpec.label` to its generator; ``banks`` the days
        whose race is drawn from a bank to its source."""
        missing = [spec.label() for spec in schedule.specs() if spec.label() not in sources]
        if missing:
            raise ValueError(f"no generator for the scheduled specs {missing}")
        self.schedule = schedule
        self._sources = dict(sources)
        self.banks = dict(banks or {})

    def for_day(self, day: date) -> SuiteSource:
        return self._sources[self.schedule.spec_for(day).label()]

    def for_week(self, week: str) -> SuiteSource:
        return self._sources[self.schedule.spec_for_week(week).label()]

    def for_race(self, day: date) -> SuiteSource:
        return self.banks.get(day) or self.for_day(day)


@dataclass(frozen=True)
class CheckedEntry:
    """What one schedule entry opens with: its configuration and, for a version that words requests with
    a lexicon, its writer (the pinned lexicon's, else the catalog's current one)."""

    config: BaseModel
    writer: RequestWriter | None


def _entry_writer(catalog: CatalogDir, entry: ScheduleEntry, pinned: Path | None) -> RequestWriter | None:
    """The entry's writer: the ``pinned`` lexicon's, else the catalog's current one (``None`` for a version
    that words requests itself)."""
    if not get_version(entry.version).uses_writer:
        return None
    try:
        return catalog.writer if pinned is None else LexiconWriter(load_lexicon(pinned))
    except LexiconError as exc:
        raise ScheduleError(f"the generator schedule entry from {entry.from_day} ({entry.version}): "
                            f"{exc}") from exc


def check_schedule(catalog: CatalogDir, schedule: GeneratorSchedule) -> dict[str, CheckedEntry]:
    """Everything a schedule needs, checked before a suite is generated: known versions, valid
    configuration overrides, pinned lexicons present and readable; returns each spec's configuration and
    writer by label."""
    require_known_versions(schedule, KNOWN_VERSIONS)
    checked: dict[str, CheckedEntry] = {}
    for entry in schedule.entries:
        pinned = None if entry.lexicon_sha256 is None else pinned_lexicon(catalog.path, entry)
        checked[entry.spec().label()] = CheckedEntry(generator_config(entry),
                                                     _entry_writer(catalog, entry, pinned))
    return checked


@dataclass(frozen=True)
class BankPins:
    """The problem banks a validator's configuration pins (race day -> sealed file sha256), the daily race
    time their rounds are checked against, and where round signatures come from."""

    pins: Mapping[date, str]
    race_time: time
    signatures: RoundSignatures


def open_banks(catalog: CatalogDir, banks: BankPins) -> dict[date, SuiteSource]:
    """A source per pinned day, each sealed file checked now (:func:`load_pinned`); :class:`ScheduleError`
    naming the first that cannot serve."""
    opened: dict[date, SuiteSource] = {}
    for day, sha256 in sorted(banks.pins.items()):
        try:
            sealed = load_pinned(catalog.path, day, sha256, race_slot(day, banks.race_time))
        except BankError as exc:
            raise ScheduleError(str(exc)) from exc
        opened[day] = SealedBankSource(sealed, sha256, catalog_fingerprint=catalog.fingerprint,
                                       signatures=banks.signatures)
    return opened


@contextmanager
def open_scheduled_sources(catalog: CatalogDir | Path, schedule: GeneratorSchedule,
                           banks: BankPins | None = None) -> Iterator[ScheduledSources]:
    """One generator per spec of ``schedule`` over ``catalog`` (sharing its engine, fingerprint and title
    embedder), after :func:`check_schedule`, and the pinned problem banks (:func:`open_banks`). A
    directory is opened here and closed on exit; a :class:`CatalogDir` passed in belongs to the caller."""
    with opened_catalog_dir(catalog) as opened:
        checked = check_schedule(opened, schedule)
        fingerprint = opened.fingerprint
        opened_banks = {} if banks is None else open_banks(opened, banks)
        generators: dict[str, SuiteSource] = {}
        for spec in schedule.specs():
            entry = checked[spec.label()]
            generators[spec.label()] = ProblemGenerator(opened.engine, fingerprint=fingerprint,
                                                        config=entry.config, writer=entry.writer,
                                                        version=spec.version, embedder=opened.title_embedder)
        yield ScheduledSources(schedule, generators, opened_banks)
