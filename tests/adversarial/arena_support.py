"""One validator on the embedded chain for the adversarial suite's qualifying attacks (not a test module):
real wallets, a manual clock, the bubblewrap sandbox behind the verified proxy (the scripted shopping
policy as the agents' LLM), the offline judge, SQLite databases and the gate's stored verdicts, or the
real upload gate over them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bittensor import Wallet

from arena.chain import LocalChain
from arena.race import ManualClock
from arena.settings import ArenaSettings
from arena.submissions import SubmissionGate
from arena.suites.public import FixedSource
from arena.validator import Validator, open_validator
from arena.validator.runs import RunAgent
from shoppingbench.generator import ProblemGenerator
from shoppingbench.problems.loaders import load_problems
from shoppingbench.problems.models import CATEGORIES, Problem
from shoppingbench.sample_world import SampleWorld
from tests.arena.validator.test_validator import accept_upload
from tests.chain_support import make_wallet, past_upload_window, register
from trajectories.store import TrajectoryStore

START = datetime(2026, 11, 19, 9, 0, tzinfo=UTC)  # a Thursday: the race slot is 16:00


@dataclass
class OneValidator:
    """The chain, its clock, the miners' wallets and one validator over them."""

    clock: ManualClock
    chain: LocalChain
    miners: dict[str, Wallet]
    validator: Validator

    def upload(self, miner: str, source: bytes) -> str:
        """What the gate stores for an accepted upload committed in the current block; returns its hash."""
        return accept_upload(self.validator.files, self.validator.arena_db, self.miners[miner], source,
                             block=self.chain.block(), at=self.clock.now())

    def hotkey(self, miner: str) -> str:
        return str(self.miners[miner].hotkey.ss58_address)

    def gate(self) -> SubmissionGate:
        """The validator's upload gate: its database, files, race rules and clock."""
        validator = self.validator
        return SubmissionGate(chain=self.chain, validator_hotkey=validator.hotkey, engine=validator.arena_db,
                              files_dir=validator.files.root, rules=validator.race.rules, clock=self.clock)

    def past_upload_window(self) -> None:
        """Let the upload window of this block's commitments pass: their qualifying seed is then final."""
        past_upload_window(self.clock, self.chain)


@contextmanager
def one_validator(root: Path, world: SampleWorld, generator: ProblemGenerator, run_agent: RunAgent,
                  miners: tuple[str, ...]) -> Iterator[OneValidator]:
    """A validator with three qualifying problems per category (an honest agent's score on one problem
    each is mostly luck), one race problem per category, and ``miners`` registered."""
    clock = ManualClock(START)
    chain = LocalChain(root / "chain.sqlite3", clock=clock, tempo=100)
    names = ("owner", *miners, "validator")
    wallets = {name: make_wallet(root / "wallets", name, seed=name) for name in names}
    for name, wallet in wallets.items():
        register(chain, wallet, validator_permit=name == "validator")
    settings = ArenaSettings(home=root / "validator", qualifying_suite_per_category=3,
                             race_suite_per_category=1)
    settings.home.mkdir(parents=True)
    store = TrajectoryStore.open(f"sqlite:///{root / 'trajectories.sqlite3'}")
    validator = open_validator(settings=settings, chain=chain, wallet=wallets["validator"], clock=clock,
                               sources=FixedSource(generator), run_agent=run_agent, store=store)
    try:
        yield OneValidator(clock=clock, chain=chain, miners={m: wallets[m] for m in miners},
                           validator=validator)
    finally:
        store.close()
        validator.arena_db.dispose()
        chain.close()


def computable_in_advance(world: SampleWorld, validator: Validator) -> list[Problem]:
    """Every problem a miner can compute before uploading: the world's public bank and every suite the
    validator's public code generates from public seeds (``known_answers`` generates them all)."""
    validator.known_answers()
    bank = [p for c in CATEGORIES for p in load_problems(world.problems_dir / f"{c}.jsonl", c)]
    return [*bank, *validator.suites.cache.problems()]
