"""The generators a generator schedule names, opened over the validator's catalog, and the lexicon files
they pin (SPEC 5; the rules are :mod:`arena.suites.schedule`).

Where lexicons live: beside the catalog. ``<catalog>/lexicon.json`` is the catalog's current lexicon
(``arena lexicon build`` writes it); every lexicon a schedule entry pins is kept as
``<catalog>/lexicons/<sha256>.json``, so an older entry's lexicon is still there after the current one
was replaced, and days generated with it replay exactly. An entry's pinned sha256 is looked up in that
archive first, then in ``lexicon.json``; a file whose content does not hash to the pinned value is never
used. Everything is checked when the generators are opened (at a validator's start), before any suite is
generated: a schedule this validator cannot honour stops it with a :class:`ScheduleError` naming the
entry and what differs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Final

from pydantic import ValidationError

from arena.suites.public import SuiteSource
from arena.suites.schedule import (
    GeneratorSchedule,
    GeneratorSpec,
    ScheduleEntry,
    ScheduleError,
    require_known_versions,
)
from shoppingbench.catalog.build import open_catalog
from shoppingbench.generator import KNOWN_VERSIONS, GeneratorConfig, ProblemGenerator, catalog_fingerprint
from shoppingbench.problems.models import Category, Problem

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


def generator_config(entry: ScheduleEntry) -> GeneratorConfig:
    """The entry's configuration overrides over the defaults, or a :class:`ScheduleError` naming them."""
    try:
        return GeneratorConfig(**entry.config)
    except ValidationError as exc:
        refused = "; ".join(f"{'.'.join(map(str, error['loc'])) or 'config'}: {error['msg']}"
                            for error in exc.errors())
        raise ScheduleError(f"the generator schedule entry from {entry.from_day} ({entry.version}) has "
                            f"configuration overrides the generator refuses: {refused}") from exc


@dataclass(frozen=True)
class SpecSource:
    """A generator under the spec it was opened for; its key names the pinned lexicon too."""

    generator: SuiteSource
    spec: GeneratorSpec

    @property
    def key(self) -> str:
        lexicon = f"/lexicon-{self.spec.lexicon_sha256[:16]}" if self.spec.lexicon_sha256 else ""
        return f"{self.generator.key}{lexicon}"

    def generate(self, seed: str, per_category: Mapping[Category, int], *,
                 exclude_products: AbstractSet[str] = frozenset()) -> list[Problem]:
        return self.generator.generate(seed, per_category, exclude_products=exclude_products)


class ScheduledSources:
    """The source in force on each race day and for each qualifying week, by the schedule."""

    def __init__(self, schedule: GeneratorSchedule, sources: Mapping[str, SuiteSource]) -> None:
        """``sources`` maps each spec's :meth:`~GeneratorSpec.label` to its generator."""
        missing = [spec.label() for spec in schedule.specs() if spec.label() not in sources]
        if missing:
            raise ValueError(f"no generator for the scheduled specs {missing}")
        self.schedule = schedule
        self._sources = {spec.label(): SpecSource(sources[spec.label()], spec) for spec in schedule.specs()}

    def for_day(self, day: date) -> SpecSource:
        return self._sources[self.schedule.spec_for(day).label()]

    def for_week(self, week: str) -> SpecSource:
        return self._sources[self.schedule.spec_for_week(week).label()]


def check_schedule(catalog_dir: Path, schedule: GeneratorSchedule) -> dict[str, GeneratorConfig]:
    """Everything a schedule needs, checked before a suite is generated: known versions, valid
    configuration overrides, pinned lexicons present; returns each spec's configuration by label."""
    require_known_versions(schedule, KNOWN_VERSIONS)
    configs: dict[str, GeneratorConfig] = {}
    for entry in schedule.entries:
        if entry.lexicon_sha256 is not None:
            pinned_lexicon(catalog_dir, entry)
        configs[entry.spec().label()] = generator_config(entry)
    return configs


@contextmanager
def open_scheduled_sources(catalog_dir: Path, schedule: GeneratorSchedule) -> Iterator[ScheduledSources]:
    """One generator per spec of ``schedule`` over the catalog in ``catalog_dir`` (sharing its engine),
    after :func:`check_schedule`; the catalog is closed on exit."""
    configs = check_schedule(catalog_dir, schedule)
    fingerprint = catalog_fingerprint(catalog_dir)
    engine = open_catalog(catalog_dir)
    try:
        generators: dict[str, SuiteSource] = {
            spec.label(): ProblemGenerator(engine, fingerprint=fingerprint, config=configs[spec.label()],
                                           version=spec.version)
            for spec in schedule.specs()}
        yield ScheduledSources(schedule, generators)
    finally:
        engine.close()
