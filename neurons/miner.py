"""``miner``: what a miner runs locally. ``miner test AGENT.py`` scores an agent file exactly as a
validator's qualifying run will: static analysis, then the sandbox, the verified proxy, the one scorer,
the judge from the settings and the final score with its quality coefficient. ``--generated`` runs it on
freshly generated suites of the qualifying size (a validator generates a submission's qualifying problems
from a block after its commitment, so no suite can be known in advance: fresh ones are the honest
rehearsal); ``--practice`` on the week's public practice suite.
``miner submit AGENT.py`` commits the file's sha256 on chain and uploads it, signed with the hotkey,
to every validator with a permit. ``miner status`` asks each of those validators' public APIs what
became of the hotkey's agents.

Entry points and wiring only: every step delegates to the library packages.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import closing, contextmanager
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Annotated, Any

import httpx
import orjson
import typer
from bittensor import Wallet
from pydantic import BaseModel, TypeAdapter, ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from sqlalchemy.exc import SQLAlchemyError

from arena.chain import Chain, ChainError, ChainSettings, Neuron, open_chain
from arena.race.state import CompletedRace, RunningRace, Submission
from arena.settings import ArenaSettings
from arena.suites import practice_seed, practice_week
from arena.validator.api import EmbargoEntry
from arena.validator.local_test import (
    ChosenSuite,
    LocalTestResult,
    SuiteChoiceError,
    choose_suite,
    final_score_table,
    generated_seeds,
    local_suite_run,
    missing_answers,
    run_local_test,
    throwaway_store,
)
from neurons.options import (
    ChainOption,
    HomeOption,
    LogFormatOption,
    NetuidOption,
    WalletHotkeyOption,
    WalletNameOption,
    WalletPathOption,
)
from neurons.submission import EXIT_CHAIN, EXIT_REJECTED, print_findings, submit_file
from shoppingbench.catalog.build import open_catalog
from shoppingbench.logs import configure_logging
from shoppingbench.problems.loaders import ProblemFileError
from shoppingbench.problems.models import Problem
from shoppingbench.results import first_refusal, results_path, results_table
from shoppingbench.sandbox.backends import BackendName, SandboxUnavailable
from shoppingbench.sandbox.runner import SCRIPTED_MODEL, AgentFile
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.submission_check import check_agent
from trajectories.settings import StoreSettings
from trajectories.store import StoreError, TrajectoryStore

app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode="markdown",
                  help="Shopping-agent arena, miner side: score your agent locally exactly as validators do.")

EXIT_UNAVAILABLE = 3
EXIT_NO_STORE = 4
EXIT_NO_ANSWER = 7
EXIT_MISSING_ANSWERS = 8


def practice_monday(week: str) -> date:
    """The Monday of ISO week ``week``, whose schedule entry makes its practice suite (``BadParameter`` if
    ``week`` is not an ISO week)."""
    try:
        return date.fromisoformat(f"{week}-1")
    except ValueError:
        raise typer.BadParameter(f"{week!r} is not an ISO week such as 2026-W48",
                                 param_hint="--week") from None


def _check_answers(console: Console, engine: BM25SearchEngine, suite: list[Problem], allow: bool) -> None:
    missing, problems = missing_answers(engine, suite)
    if not missing:
        return
    console.print(f"[yellow]warning[/yellow]: {len(missing)} answer ids of {len(problems)} of the "
                  f"{len(suite)} problems are not in the catalog (e.g. {', '.join(missing[:3])}): those "
                  "problems cannot be solved with it", highlight=False)
    if not allow:
        console.print("Pass the catalog the suite comes from (--catalog), or --allow-missing-answers to run "
                      "anyway.")
        raise typer.Exit(EXIT_MISSING_ANSWERS)


@app.command("test")
def test(
    agent: Annotated[Path, typer.Argument(exists=True, dir_okay=False, readable=True,
                                          help="Your agent file (defines agent_main(problem) -> steps)")],
    suite_files: Annotated[list[Path] | None, typer.Option(
        "--suite", exists=True, dir_okay=False, readable=True,
        help="Problem file (ShoppingBench JSONL or a reference suite JSON); repeat for several. "
             "Default: the bundled sample world's suite")] = None,
    catalog: Annotated[Path | None, typer.Option(
        "--catalog", file_okay=False, help="Catalog directory built by `arena catalog import` "
                                           "(default: the bundled sample world)")] = None,
    workers: Annotated[int | None, typer.Option("--workers", min=1, help="Problems run at once")] = None,
    per_category: Annotated[int | None, typer.Option(
        "--per-category", min=1, help="Bundled suite: problems per category (default 20)")] = None,
    sandbox: Annotated[BackendName | None, typer.Option(
        "--sandbox", help="namespace (bubblewrap, default), docker, or none (NO isolation: trusted code "
                          "only)")] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", min=1, help="Seconds per problem")] = None,
    inference_url: Annotated[str | None, typer.Option(
        "--inference-url", help="OpenAI-compatible base URL the proxy forwards LLM calls to (default "
                                "$ARENA_INFERENCE_BASE_URL; key from $ARENA_INFERENCE_API_KEY)")] = None,
    models: Annotated[list[str] | None, typer.Option(
        "--model", help="Model the agent may use; repeat for several, the first is the default "
                        "(default $ARENA_INFERENCE_MODELS)")] = None,
    scripted_llm: Annotated[bool, typer.Option(
        "--scripted-llm", help="No LLM endpoint? Serve the bundled scripted shopping policy (a test double) "
                               "on loopback and let the agent use it under whatever model name it asks for "
                               f"(default `{SCRIPTED_MODEL}`, or the first --model). Its scores measure the "
                               "script, not a real model")] = False,
    out: Annotated[Path | None, typer.Option(
        "--out", dir_okay=False, help="JSONL of every attempt (dialogue, proxy log, scores); "
                                      "default `$ARENA_HOME/results/miner-test-*.jsonl`")] = None,
    home: HomeOption = None,
    store: Annotated[bool, typer.Option(
        "--store/--no-store", help="Also record every attempt, labelled by the structural filter, in the "
                                   "trajectory store ($ARENA_STORE_URL, default SQLite under the data root)"
    )] = True,
    generated: Annotated[bool, typer.Option(
        "--generated", help="Run freshly generated suites of the qualifying size "
                            "(ARENA_QUALIFYING_SUITE_PER_CATEGORY per category), each scored as a "
                            "qualifying run is")] = False,
    seeds: Annotated[list[str] | None, typer.Option(
        "--seed", help="With --generated: the seed of a suite (repeat for several; default random)")] = None,
    suites_count: Annotated[int, typer.Option(
        "--suites", min=1, help="With --generated and no --seed: how many fresh suites")] = 1,
    practice: Annotated[bool, typer.Option(
        "--practice", help="Run this week's public practice suite, generated over the catalog exactly as "
                           "validators generate it")] = False,
    week: Annotated[str | None, typer.Option(
        "--week", help="With --practice: another ISO week's suite, e.g. 2026-W48")] = None,
    allow_missing_answers: Annotated[bool, typer.Option(
        "--allow-missing-answers", help="Run even when some of the suite's answer ids are not in the "
                                        "catalog (those problems cannot be solved)")] = False,
    log_format: LogFormatOption = None,
) -> None:
    """Check AGENT statically, run it in the sandbox over a suite, and print its scores.

    Prints per-category success and gt rates and the suite aggregate (ASR), then what a validator's
    qualifying run scores: each attempt judged by the judge of the settings (the offline rules unless
    ARENA_JUDGE_BASE_URL and ARENA_JUDGE_MODELS are set), per category and for the suite the success
    rate, mean judge quality, quality coefficient and final score. Writes every attempt (its dialogue,
    the verified proxy log and its scores) to a JSONL file as it finishes, and to the trajectory store
    as a `local_test` run with its structural-filter label (agentic, sub_task or no_llm) and verdict.

    Exit code 2: static analysis rejected the file; 3: the sandbox cannot run on this host;
    4: the trajectory store cannot be opened; 8: answer ids of the suite are missing from the catalog
    (unless --allow-missing-answers).
    """
    overrides: dict[str, Any] = {"home": home, "workers": workers, "suite_per_category": per_category,
                                 "sandbox": sandbox, "sandbox_timeout_s": timeout, "log_format": log_format,
                                 "inference_base_url": inference_url,
                                 "inference_models": ",".join(models) if models else None}
    settings = ArenaSettings(**{k: v for k, v in overrides.items() if v is not None})
    configure_logging(settings.log_format, settings.log_level)
    console = Console()
    agent_file = AgentFile.read(agent)
    chosen = _chosen_suite(settings, console, catalog, suite_files or [], generated=generated,
                           seeds=seeds or [], suites_count=suites_count, practice=practice, week=week)
    with closing(_open_catalog(chosen.catalog_dir, console)) as engine:
        _check_answers(console, engine, chosen.problems, allow_missing_answers)
        _check_statically(console, agent, agent_file, chosen.problems, settings)
        if scripted_llm:
            _announce_scripted_llm(console, settings, inference_url, models)
        destination = out or results_path(settings, f"miner-test-{agent.stem}")
        with _open_store(settings, console, store) as trajectory_store, \
                local_suite_run(settings, engine, trajectory_store, scripted_llm=scripted_llm) as runs:
            try:
                result = run_local_test(runs, agent_file, chosen, out=destination,
                                        progress=sys.stderr.isatty())
            except SandboxUnavailable as exc:
                console.print(f"error: {exc}", markup=False)
                raise typer.Exit(EXIT_UNAVAILABLE) from exc
            _print_local_test(console, agent, result, destination)
            if store:
                labels = ", ".join(f"{label} {n}" for label, n in sorted(result.labels.items()))
                console.print(f"trajectory store: run {result.run_id} ({labels}) in "
                              f"{trajectory_store.engine.url!r}")


def _chosen_suite(settings: ArenaSettings, console: Console, catalog: Path | None, suite_files: list[Path], *,
                  generated: bool, seeds: list[str], suites_count: int, practice: bool,
                  week: str | None) -> ChosenSuite:
    """The suite the options name (``BadParameter`` for options that name none; exit 1 for an unreadable
    problem file)."""
    if generated and practice:
        raise typer.BadParameter("--generated and --practice are two kinds of suite: give one")
    if (seeds or suites_count != 1) and not generated:
        raise typer.BadParameter("--seed and --suites choose generated suites: add --generated")
    today = datetime.now(UTC).date()
    practice_of = week or practice_week(today)
    suite_day = practice_monday(practice_of) if practice else today
    chosen_seeds = (generated_seeds(seeds, suites_count) if generated
                    else [practice_seed(practice_of)] if practice
                    else None)
    try:
        return choose_suite(settings, catalog=catalog, suite_files=suite_files, seeds=chosen_seeds,
                            day=suite_day, progress=sys.stderr.isatty())
    except SuiteChoiceError as exc:
        raise typer.BadParameter(str(exc)) from exc
    except (ProblemFileError, FileNotFoundError) as exc:
        console.print(f"error: {exc}", markup=False)
        raise typer.Exit(1) from exc


def _open_catalog(catalog_dir: Path, console: Console) -> BM25SearchEngine:
    try:
        return open_catalog(catalog_dir)
    except FileNotFoundError as exc:
        console.print(f"error: {exc}", markup=False)
        raise typer.Exit(1) from exc


def _check_statically(console: Console, agent: Path, agent_file: AgentFile, suite: list[Problem],
                      settings: ArenaSettings) -> None:
    answers = {target.product_id for problem in suite for target in problem.targets}
    report = check_agent(agent_file.source, known_product_ids=answers)
    if not report.ok:
        console.print(f"[red]rejected[/red] by static analysis ({report.rejection}):")
        print_findings(console, report)
        raise typer.Exit(EXIT_REJECTED)
    if settings.sandbox == "none":
        console.print("[bold red]WARNING: --sandbox none runs the agent WITHOUT any isolation: it can read "
                      "your files and reach the network. Only for agents you trust.[/bold red]")
    console.print(f"agent {agent} (sha256 {agent_file.sha256[:16]}): static analysis passed; "
                  f"{len(suite)} problems, sandbox {settings.sandbox}, {settings.workers} workers")


def _announce_scripted_llm(console: Console, settings: ArenaSettings, inference_url: str | None,
                           models: list[str] | None) -> None:
    if inference_url:
        raise typer.BadParameter("--scripted-llm replaces --inference-url: give one or the other")
    default = settings.allowed_models()[0] if models else SCRIPTED_MODEL
    console.print(f"[yellow]LLM: the scripted shopping policy (a test double), answering to any model "
                  f"name, default `{default}`: scores measure the script, not a real model[/yellow]")


@contextmanager
def _open_store(settings: ArenaSettings, console: Console, record: bool) -> Iterator[TrajectoryStore]:
    """The trajectory store of the settings, or with ``record`` off a throwaway one."""
    if not record:
        with throwaway_store() as scratch:
            yield scratch
        return
    url = StoreSettings(home=settings.home).url()
    try:
        store = TrajectoryStore.open(url)
    except (StoreError, OSError, SQLAlchemyError) as exc:
        console.print(f"error: cannot open the trajectory store at {url}: {exc}\n"
                      "Set ARENA_STORE_URL, or pass --no-store to skip recording.", markup=False)
        raise typer.Exit(EXIT_NO_STORE) from exc
    with store:
        yield store


def _print_local_test(console: Console, agent: Path, result: LocalTestResult, destination: Path) -> None:
    attempts = result.evaluation.attempts
    console.print(results_table(result.evaluation, f"{agent.name} on {len(attempts)} problems"))
    console.print(final_score_table(result.scores))
    refusal = first_refusal(result.evaluation)
    if refusal is not None:
        console.print(f"[red]first proxy refusal[/red]: {refusal.status} on {refusal.path}: "
                      f"{escape(refusal.error or '')}", highlight=False)
    failures = Counter(attempt.failure.kind for attempt in attempts if attempt.failure is not None)
    if failures:
        console.print("failed attempts: " + ", ".join(f"{kind} {n}" for kind, n in sorted(failures.items())))
    console.print(f"dialogues, proxy logs and scores: {destination}")


@app.command("submit")
def submit(
    agent: Annotated[Path, typer.Argument(exists=True, dir_okay=False, readable=True,
                                          help="Your agent file (defines agent_main(problem) -> steps)")],
    wallet_name: WalletNameOption = "default",
    wallet_hotkey: WalletHotkeyOption = "default",
    wallet_path: WalletPathOption = Path("~/.bittensor/wallets"),
    chain: ChainOption = None,
    netuid: NetuidOption = None,
    home: HomeOption = None,
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="Seconds per validator upload")] = 60.0,
    log_format: LogFormatOption = None,
) -> None:
    """Check AGENT statically, commit its sha256 on chain, and upload it to every validator.

    The commitment's block starts your 12 h cooldown; when your latest commitment already is this file
    (a retry), it is reused rather than renewed. Each upload is signed with your hotkey for that
    validator (`bittensor.http_auth`) and sent to the endpoint it published; a table says what each
    answered. Exit code 2: static analysis rejected the file; 5: wallet or chain problem (not
    registered, commitment refused); 6: some validator did not accept the file.
    """
    settings = _chain_settings(home=home, chain=chain, netuid=netuid, log_format=log_format)

    def connect() -> tuple[Wallet, Chain]:
        return Wallet(wallet_name, wallet_hotkey, path=str(wallet_path.expanduser())), open_chain(settings)

    code = submit_file(Console(), agent, connect, timeout=timeout)
    if code:
        raise typer.Exit(code)


def _chain_settings(**overrides: Any) -> ChainSettings:
    settings = ChainSettings(**{k: v for k, v in overrides.items() if v is not None})
    configure_logging(settings.log_format, settings.log_level)
    return settings


class AgentStatus(BaseModel):
    """One of the hotkey's submissions as one validator reports it."""

    submission_id: str
    submitted_at: str
    status: str
    qualifying_score: float | None
    race_score: float | None
    race_id: str | None
    embargo: str
    rejection: str = ""


class ValidatorReport(BaseModel):
    """What one validator's public API said about the hotkey, or why it said nothing."""

    uid: int
    hotkey: str
    url: str
    agents: list[AgentStatus] = []
    error: str | None = None


_SUBMISSIONS = TypeAdapter(list[Submission])
_EMBARGO = TypeAdapter(list[EmbargoEntry])
_RACE = TypeAdapter(RunningRace | None)
_LAST_RACE = TypeAdapter(CompletedRace | None)


def _race_score(submission: Submission, running: RunningRace | None,
                last: CompletedRace | None) -> tuple[float | None, str | None]:
    """The submission's score in the running race if it has one there, else in the last finished race."""
    for race in (running, last):
        if race is not None and submission.submission_id in race.results:
            return race.results[submission.submission_id], race.race_id
    return None, None


def _embargo_text(entry: EmbargoEntry | None) -> str:
    if entry is None:
        return ""
    if entry.published_at is not None:
        return f"published {entry.published_at.isoformat()}"
    return f"until {entry.embargo_until.isoformat()}" if entry.embargo_until else ""


def _rejection_text(submission: Submission) -> str:
    """Why the validator refused the file: static analysis' reason, or the original it copies."""
    rejection, original = submission.rejection, submission.copy_of
    if original is not None:
        return (f"copy of {original.hotkey}'s {original.code_hash[:12]} (block {original.commitment_block}, "
                f"similarity {original.similarity:.2f}): no race, no weight")
    return "" if rejection is None else f"{rejection.kind}: {rejection.reason}"


def validator_report(client: httpx.Client, validator: Neuron, hotkey: str) -> ValidatorReport:
    """Ask ``validator``'s API (``/submissions``, ``/race``, ``/embargo``) about ``hotkey``'s agents.

    The answers are untrusted: anything unreachable, non-2xx or malformed becomes the report's error.
    """
    assert validator.axon is not None  # metagraph.validators() lists only neurons with an axon
    report = ValidatorReport(uid=validator.uid, hotkey=validator.hotkey, url=validator.axon.url)
    try:
        answers = []
        for path in ("/submissions", "/race", "/embargo"):
            response = client.get(report.url + path)
            response.raise_for_status()
            answers.append(response.content)
        submissions = _SUBMISSIONS.validate_json(answers[0])
        race = orjson.loads(answers[1])
        if not isinstance(race, dict):
            raise ValueError("/race is not a JSON object")
        running = _RACE.validate_python(race.get("running"))
        last = _LAST_RACE.validate_python(race.get("last_race"))
        embargo = {entry.submission_id: entry for entry in _EMBARGO.validate_json(answers[2])}
    except httpx.HTTPStatusError as exc:
        return report.model_copy(update={"error": f"HTTP {exc.response.status_code} from {exc.request.url}"})
    except httpx.HTTPError as exc:
        return report.model_copy(update={"error": f"unreachable: {type(exc).__name__}"})
    except (ValidationError, ValueError) as exc:  # orjson.JSONDecodeError is a ValueError
        return report.model_copy(update={"error": f"malformed answer: {str(exc).splitlines()[0]}"})
    agents = []
    for submission in submissions:
        if submission.hotkey != hotkey:
            continue
        score, race_id = _race_score(submission, running, last)
        agents.append(AgentStatus(submission_id=submission.submission_id,
                                  submitted_at=submission.submitted_at.isoformat(), status=submission.status,
                                  qualifying_score=submission.qualifying_score, race_score=score,
                                  race_id=race_id,
                                  embargo=_embargo_text(embargo.get(submission.submission_id)),
                                  rejection=_rejection_text(submission)))
    return report.model_copy(update={"agents": agents})


def _status_table(report: ValidatorReport) -> Table:
    # What a validator answers is untrusted: Text cells keep its strings from being read as markup.
    table = Table(title=Text(f"validator uid {report.uid} {report.hotkey} ({report.url})"))
    for column in ("submission", "submitted", "state", "qualifying score", "race score", "embargo",
                   "why refused"):
        table.add_column(column)
    for a in report.agents:
        qualifying = "" if a.qualifying_score is None else f"{a.qualifying_score:.4f}"
        race = "" if a.race_score is None else f"{a.race_score:.4f} ({a.race_id})"
        table.add_row(*(Text(cell) for cell in (a.submission_id, a.submitted_at, a.status, qualifying, race,
                                                 a.embargo, a.rejection)))
    return table


@app.command("status")
def status(
    wallet_name: WalletNameOption = "default",
    wallet_hotkey: WalletHotkeyOption = "default",
    wallet_path: WalletPathOption = Path("~/.bittensor/wallets"),
    hotkey: Annotated[str | None, typer.Option(
        "--hotkey", help="SS58 address to look up instead of the wallet's hotkey (no wallet needed)")] = None,
    chain: ChainOption = None,
    netuid: NetuidOption = None,
    home: HomeOption = None,
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="Seconds per validator request")] = 15.0,
    log_format: LogFormatOption = None,
) -> None:
    """Show your agents' states and scores as every validator with a permit reports them.

    Reads each validator's public API (the endpoint it published on chain): one table per validator
    with each of your submissions' state (qualifying, qualified, not_qualified, superseded, racing,
    raced, rejected), qualifying score, score in the running or last race, embargo, and for a rejected
    file the static-analysis findings. Nothing is signed or
    written. Exit code 5: wallet or chain problem; 7: some validator did not answer (the others are
    still shown).
    """
    settings = _chain_settings(home=home, chain=chain, netuid=netuid, log_format=log_format)
    console = Console()
    try:
        address = hotkey or Wallet(wallet_name, wallet_hotkey,
                                   path=str(wallet_path.expanduser())).hotkey.ss58_address
        validators = open_chain(settings).metagraph().validators()
    except (ChainError, OSError, ValueError) as exc:
        console.print(f"error: {exc}", markup=False)
        raise typer.Exit(EXIT_CHAIN) from exc
    if not validators:
        console.print("no validator with a permit has published an endpoint yet")
        raise typer.Exit(EXIT_NO_ANSWER)
    with httpx.Client(timeout=timeout) as client:
        reports = [validator_report(client, validator, address) for validator in validators]
    console.print(f"agents of hotkey {address}")
    for report in reports:
        if report.error is not None:
            console.print(f"validator uid {report.uid} {report.hotkey} ({report.url}): {report.error}",
                          markup=False, style="red")
        elif not report.agents:
            console.print(f"validator uid {report.uid} {report.hotkey} ({report.url}): no submission from "
                          "this hotkey", markup=False)
        else:
            console.print(_status_table(report))
    if any(report.error is not None for report in reports):
        raise typer.Exit(EXIT_NO_ANSWER)


@app.callback()
def main() -> None:
    """Miner commands."""


if __name__ == "__main__":
    app()
