"""``arena network-demo``: a whole subnet on this machine, fast-forwarded through one race day.

A local chain with a manual clock, validators serving their API on loopback, and miners that upload
their agents as ``miner submit`` does (real sr25519 wallets, commitments and signed uploads): the bundled
scripted baseline unchanged (a public agent is nobody's original: refused as a copy of it), a bait parser
whose code decides every call and has the model emit and narrate it (it races, but the who-decided rule
gives its completions no credit, so it ranks below ReAct), the ReAct agent with its miner's own prompt, a
copycat uploading that miner's file renamed and reformatted (refused as a copy: no race, no weight), a
cheater whose hard-coded answer the validators' gate refuses, and a table cheater carrying the masked
answers of every public problem (the sample world's bank and this week's practice suite), which the gate
cannot see: its qualifying problems are generated from the first block after its commitment's upload
window, so it holds none of their answers and fails qualifying.
The demo's clock is a manual one starting at ``start`` (default: now) and moving only by the demo's own
steps (a block per upload, then the upload window and a block, then a jump to the next race slot), so
the same start gives the same calendar; only the gates measure signatures' nonces on the real time, on
which miners sign. The jump to the race slot makes qualifying, the race (its problems generated from the
chain's seed), promotion and weight setting happen in minutes; at the end each validator looks at the
others (their weights on the chain, their ``/rules``) as ``validator run`` does every tempo. Wiring only;
the validator's work is ``Validator.tick``.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import structlog
import typer
from bittensor import Wallet
from rich.console import Console
from rich.table import Table

from arena.chain import AxonInfo, LocalChain
from arena.race import ManualClock, SystemClock
from arena.race.events import QualifyingFinished
from arena.race.rules import RaceRules
from arena.settings import ArenaSettings
from arena.stack import ValidatorStack, open_validator_stack
from arena.suites.generators import open_scheduled_sources
from arena.validator import (
    Validator,
    open_agent_runner,
)
from arena.validator.demo import next_race_tick, standings
from arena.validator.peers import PeerWatch
from neurons.submission import submit_file
from shoppingbench.agents import react_llm, scripted_baseline
from shoppingbench.doubles.cheaters import copycat_source, literal_cheater_source, table_cheater_source
from shoppingbench.doubles.demo_miners import BAIT_PARSER, tuned_react_source
from shoppingbench.doubles.scripted_inference import SCRIPTED_MODEL, scripted_inference
from shoppingbench.generator.catalog import CatalogDir
from shoppingbench.problems.loaders import load_problems
from shoppingbench.problems.models import CATEGORIES
from shoppingbench.sample_world import SampleWorld
from shoppingbench.sandbox.runner import configured_inference
from shoppingbench.tools.serving import running_server

log = structlog.get_logger(__name__)

MARKER = ".network-demo"
"""Marks a directory this demo created, so a rerun may wipe it and nothing else."""
OWNER = "owner"  # registered first: uid 0, the burn uid
PUBLIC_COPY = "baseline"
"""Uploads the bundled scripted baseline unchanged: a public agent is nobody's original, refused as a copy."""
PARSER = "parser"
"""The bait parser: its code decides every call and has the model emit and narrate it."""
REACT = "react"
"""The ReAct agent with its miner's own prompt."""
COPYCAT = "copycat"
CHEATER = "cheater"
TABLE_CHEATER = "table-cheater"
MINERS = (PUBLIC_COPY, PARSER, REACT, COPYCAT, CHEATER, TABLE_CHEATER)  # the copycat after the ReAct agent
TEMPO = 100
WEIGHTS_RATE_LIMIT = 50


@dataclass(frozen=True)
class DemoResult:
    """What the demo ends with, for the printout (its stores and chain are open only until then)."""

    root: Path
    chain: LocalChain
    validators: list[Validator]
    miners: dict[str, str]  # hotkey -> miner name
    submit_exit_codes: dict[str, int]  # miner name -> `miner submit` exit code


def prepare_root(root: Path) -> None:
    """A fresh demo root: an earlier demo's is wiped; anything else there is refused, not deleted."""
    if root.exists() and any(root.iterdir()):
        if not (root / MARKER).exists():
            raise typer.BadParameter(f"{root} is not empty and was not made by the network demo: "
                                     "pass another --home")
        shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    (root / MARKER).write_text("made by `arena network-demo`; wiped by its next run\n")


def new_wallet(root: Path, name: str) -> Wallet:
    wallet = Wallet(name, "default", path=str(root))
    wallet.create_new_coldkey(use_password=False, suppress=True, overwrite=True)
    wallet.create_new_hotkey(use_password=False, suppress=True, overwrite=True)
    return wallet


@contextmanager
def serving(stack: ValidatorStack) -> Iterator[str]:
    """The validator's public API and upload endpoint on loopback, published as its axon."""
    validator = stack.validator
    with running_server(stack.api) as url:
        address = urlsplit(url)
        assert address.hostname is not None and address.port is not None
        validator.chain.serve_axon(validator.wallet, AxonInfo(ip=address.hostname, port=address.port))
        yield url


Hold = Callable[[Sequence[str]], None]
"""What ``run_network_demo`` calls with the validators' API URLs before taking everything down."""


def run_network_demo(settings: ArenaSettings, world: SampleWorld, root: Path, *, validators: int,
                     console: Console, vary: Mapping[str, str] | None = None,
                     start: datetime | None = None, hold: Hold | None = None) -> None:
    """The demo under ``root``; ``vary``: settings of the last validator; ``start``: the demo clock's
    start (default: now); ``hold(urls)`` runs before anything is taken down (``--serve``)."""
    prepare_root(root)
    # The chain, the race and the validators run on the manual clock, which moves only by the demo's own
    # steps; the gates measure nonces on the real time, on which `miner submit` signs.
    clock = ManualClock(datetime.now(UTC) if start is None else start)
    start_time = clock.now()
    signing_clock = SystemClock()
    chain = LocalChain(root / "local-chain.sqlite3", clock=clock, tempo=TEMPO,
                       weights_rate_limit=WEIGHTS_RATE_LIMIT)
    wallets_dir = root / "wallets"
    validator_names = [f"validator-{n}" for n in range(1, validators + 1)]
    miner_names = list(MINERS)
    wallets = {name: new_wallet(wallets_dir, name) for name in [OWNER, *validator_names, *miner_names]}
    for name, wallet in wallets.items():
        chain.register(wallet.hotkey.ss58_address, wallet.coldkeypub.ss58_address,
                       validator_permit=name in validator_names)
    console.print(f"demo clock starts at {clock.now():%Y-%m-%d %H:%M} UTC (race slot "
                  f"{settings.race_rules.race_time:%H:%M} UTC)")
    console.print(f"local chain {chain.path}: {len(wallets)} neurons registered ({OWNER} uid 0 is the burn "
                  f"uid; validators {', '.join(validator_names)}; miners {', '.join(miner_names)})")

    sources = write_agent_files(root / "agent-files")

    scripted = settings.inference_base_url is None
    if scripted:
        console.print(f"[yellow]LLM: no ARENA_INFERENCE_BASE_URL, so the agents' model is the scripted "
                      f"shopping policy (a test double, `{SCRIPTED_MODEL}`): scores measure the "
                      "script, not a real model[/yellow]")
    inference = scripted_inference if scripted else configured_inference
    with ExitStack() as stack:
        stack.callback(chain.close)
        catalog = stack.enter_context(CatalogDir(world.catalog_dir))
        run_agent = stack.enter_context(open_agent_runner(settings, catalog, inference=inference))
        generators = stack.enter_context(open_scheduled_sources(catalog, settings.schedule()))
        opened, watches, urls = [], [], []
        for name in validator_names:
            own = settings.model_copy(update={"home": root / name})
            if vary and name == validator_names[-1]:
                own = own.with_changes(**vary)
                console.print(f"{name} runs with {', '.join(f'{k}={v}' for k, v in vary.items())}",
                              markup=False)
            validator_stack = stack.enter_context(open_validator_stack(
                own, chain=chain, wallet=wallets[name], clock=clock, sources=generators,
                run_agent=run_agent, nonce_clock=signing_clock))
            url = stack.enter_context(serving(validator_stack))
            urls.append(url)
            console.print(f"{name}: API and leaderboard at {url}/ (home {own.home})")
            opened.append(validator_stack.validator)
            watches.append(validator_stack.peers)
        write_cheaters(sources, world, opened[0], console)

        _tick(opened, "before any upload: an earlier slot passes without challengers", chain, console)
        exit_codes = {}
        for name in miner_names:
            clock.advance(timedelta(seconds=chain.block_seconds()))  # each miner commits in its own block
            console.rule(f"miner {name}: arena miner submit {sources / f'{name}.py'}")
            exit_codes[name] = _submit(sources / f"{name}.py", wallets[name], chain, console,
                                       ask_first=name in (PARSER, REACT))

        race_tick = demo_race_tick(start_time, settings.race_rules,
                                   block=timedelta(seconds=chain.block_seconds()))
        # Qualifying problems come from the first final block after each commitment's upload window.
        window = settings.race_rules.upload_window_blocks
        clock.advance(timedelta(seconds=chain.block_seconds()) * (window + 1))
        _tick(opened, "ingest the uploads, qualifying runs", chain, console)
        clock.advance(race_tick - clock.now())
        _tick(opened, "the daily race, promotion, weights", chain, console)
        print_agreement(watches, chain, console)
        result = DemoResult(root=root, chain=chain, validators=opened,
                            miners={w.hotkey.ss58_address: n for n, w in wallets.items()},
                            submit_exit_codes=exit_codes)
        print_summary(result, console)
        (hold or (lambda _: None))(urls)


def serve_until_interrupted(console: Console, wait: Callable[[], object] | None = None) -> Hold:
    """The ``hold`` of ``--serve``: say where the validators answer, then ``wait`` (default: forever)
    until Ctrl-C."""
    def hold(urls: Sequence[str]) -> None:
        console.rule("serving until Ctrl-C")
        for n, url in enumerate(urls, start=1):
            console.print(f"validator-{n}: {url}/ (leaderboard), {url}/docs (API)", markup=False)
        try:
            (wait or threading.Event().wait)()
        except KeyboardInterrupt:
            console.print("stopping: the chain, the validators' APIs and their stores close now")
    return hold


def demo_race_tick(start: datetime, rules: RaceRules, *, block: timedelta) -> datetime:
    """When a demo whose clock starts at ``start`` runs its race (and finishes it: the clock stands still
    during a tick): the miners upload a block each; the first tick set the burn-only weights in weights
    epoch 0 (one epoch per tempo) and the race's can only follow in a later one, so the race tick is past
    the first slot at least a tempo after the uploads."""
    return next_race_tick(start + len(MINERS) * block, rules, wait=TEMPO * block)


def write_agent_files(sources: Path) -> Path:
    """The honest and copying miners' files in ``sources`` (made now): the bundled baseline unchanged, the
    bait parser, the ReAct agent with its miner's prompt and the copycat's rewrite of that file."""
    sources.mkdir()
    shutil.copyfile(scripted_baseline.__file__, sources / f"{PUBLIC_COPY}.py")
    (sources / f"{PARSER}.py").write_text(BAIT_PARSER)
    react = tuned_react_source(Path(react_llm.__file__).read_text())
    (sources / f"{REACT}.py").write_bytes(react)
    (sources / f"{COPYCAT}.py").write_bytes(copycat_source(react.decode()))
    return sources


def write_cheaters(sources: Path, world: SampleWorld, validator: Validator, console: Console) -> None:
    """The two cheaters' files: one writes an answer id in plain text; the other carries every public
    problem's answers (the bundled bank and this week's practice suite), masked."""
    practice = validator.practice_suite()
    bank = [p for c in CATEGORIES for p in load_problems(world.problems_dir / f"{c}.jsonl", c)]
    (sources / f"{CHEATER}.py").write_bytes(literal_cheater_source(practice[0].targets[0].product_id))
    (sources / f"{TABLE_CHEATER}.py").write_bytes(table_cheater_source([*bank, *practice]))
    console.print(f"{TABLE_CHEATER}: masked answers for {len(bank)} bank and {len(practice)} practice "
                  "problems; its qualifying problems and the race's do not exist until their seed blocks")


def _tick(validators: Sequence[Validator], what: str, chain: LocalChain, console: Console) -> None:
    console.rule(f"{chain.block_time(chain.block()):%Y-%m-%d %H:%M} UTC, block {chain.block()}: {what}")
    for validator in validators:
        report = validator.tick()
        console.print(f"{validator.hotkey[:8]}: ingested {report.ingested}, qualifying runs "
                      f"{report.qualifying_runs}, race {report.race_started or '-'}, weights set at block "
                      f"{report.weights_set_at}")
        drawn = validator.suites.race_suite(date.fromisoformat(report.race_started)) \
            if report.race_started else None
        if drawn is not None:
            counts = ", ".join(f"{c} {sum(p.category == c for p in drawn.problems)}" for c in CATEGORIES)
            console.print(f"{validator.hotkey[:8]}: race {report.race_started}: {len(drawn.problems)} "
                          f"problems generated from the seed {drawn.seed.hash[:16]}… of block "
                          f"{drawn.seed.block} ({counts})")


def print_agreement(watches: Sequence[PeerWatch], chain: LocalChain, console: Console) -> None:
    """Each validator's look at the others: weights on the chain, rules from their ``/rules``."""
    for watch in watches:
        report = watch.tick(chain.block()) or watch.last
        if report is None or not report.peers:
            console.print(f"{watch.hotkey[:8]}: agreement: no other validator to compare with")
            continue
        share = "-" if report.stake_share is None else f"{report.stake_share:.0%}"
        console.print(f"{watch.hotkey[:8]}: agreement: weights match {share} of the other validators "
                      f"(by {report.weighted_by}), {report.other_fingerprints} with another rules "
                      f"fingerprint, {report.unknown_rules} unknown", markup=False)
        for line in report.disagreements():
            console.print(f"{watch.hotkey[:8]}: disagrees with {line}", markup=False)


def _submit(agent: Path, wallet: Wallet, chain: LocalChain, console: Console, *, ask_first: bool) -> int:
    """What ``miner submit`` does, with its exit code: ask the validators first (the hostile and careless
    miners do not), commit on the local chain, signed upload to every validator."""
    return submit_file(console, agent, lambda: (wallet, chain), timeout=60.0, ask_first=ask_first)


def print_summary(result: DemoResult, console: Console) -> None:
    first = result.validators[0]
    table = Table(title=f"Leaderboard ({first.hotkey[:8]}'s race log)")
    for column in ("#", "miner", "hotkey", "status", "qualifying", "race", ""):
        table.add_column(column)
    for row in standings(first.race.state):
        table.add_row(str(row.position or "-"), result.miners.get(row.hotkey, "?"), row.hotkey[:16],
                      row.status, _score(row.qualifying_score), _score(row.race_score),
                      "[bold green]winner[/]" if row.winner else "")
    console.print(table)
    console.print("miner submit: " + ", ".join(
        f"{name} {'delivered' if code == 0 else f'not delivered (exit {code})'}"
        for name, code in result.submit_exit_codes.items()))
    for outcome in first.race.store.load():
        if isinstance(outcome, QualifyingFinished) and not outcome.qualified:
            hotkey = first.race.state.submissions[outcome.submission_id].hotkey
            console.print(f"not qualified: {result.miners.get(hotkey, hotkey)} scored {outcome.score:.3f} "
                          f"on its qualifying problems, below the threshold {outcome.threshold:.3f}",
                          markup=False)
    for submission in first.race.state.submissions.values():
        name = result.miners.get(submission.hotkey, submission.hotkey)
        if submission.rejection is not None:
            console.print(f"rejected: {name} ({submission.rejection.kind}): {submission.rejection.reason}",
                          markup=False)
        if submission.copy_of is not None:
            original = submission.copy_of
            whose = (f"the public agent {original.hotkey.removeprefix('public:')} (nobody's original"
                     if original.hotkey.startswith("public:") else
                     f"{result.miners.get(original.hotkey, original.hotkey)}'s (committed at block "
                     f"{original.commitment_block}")
            console.print(f"refused as a copy: {name}'s file is {whose}, similarity "
                          f"{original.similarity:.2f}): no race, no weight", markup=False)
    names = {n.uid: result.miners.get(n.hotkey, n.hotkey) for n in result.chain.metagraph().neurons}
    for validator in result.validators:
        weights = result.chain.weights(validator.hotkey)
        shown = "none" if weights is None else ", ".join(
            f"{names[uid]} (uid {uid}) {w}" for uid, w in zip(weights.uids, weights.weights, strict=True))
        console.print(f"weights on the local chain from {result.miners[validator.hotkey]}: {shown}")
        store = validator.runs.store
        labels = ", ".join(f"{label} {n}" for label, n in sorted(store.attempts_per_label().items()))
        console.print(f"trajectories of {result.miners[validator.hotkey]}: {store.engine.url!r} "
                      f"({store.count_attempts()} attempts: {labels})")
    console.print(f"everything (chain, wallets, agent files, databases) is under {result.root}")


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
