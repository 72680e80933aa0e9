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

import secrets
import sys
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from pathlib import Path
from typing import IO, Annotated, Any

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

from arena.chain import ChainError, ChainSettings, Commitment, Neuron, open_chain
from arena.judge import FinalScore, JudgeInput, JudgeVerdict, final_score, suite_score
from arena.race.state import CompletedRace, RunningRace, Submission
from arena.settings import ArenaSettings
from arena.submissions import UploadBody, UploadOutcome, upload
from arena.suites import practice_seed, practice_week
from arena.suites.clusters import cluster_problems
from arena.suites.generators import open_scheduled_sources
from arena.validator.api import EmbargoEntry
from arena.validator.runs import stored_verdict
from neurons.demo import first_refusal, results_path, results_table, sample_world
from shoppingbench.catalog_dir import open_catalog
from shoppingbench.evaluation import new_run_id
from shoppingbench.logs import configure_logging
from shoppingbench.problems.loaders import ProblemFileError, load_problems
from shoppingbench.problems.models import Problem
from shoppingbench.records import AttemptRecord
from shoppingbench.sandbox.backends import BackendName, SandboxUnavailable
from shoppingbench.sandbox.runner import (
    SCRIPTED_MODEL,
    AgentFile,
    SandboxConfig,
    run_inference,
    run_suite,
)
from shoppingbench.scoring.grader import Grader
from shoppingbench.search.engine import BM25SearchEngine
from shoppingbench.settings import HarnessSettings
from shoppingbench.submission_check import CheckReport, check_agent
from trajectories.recorder import RunRecorder
from trajectories.settings import StoreSettings
from trajectories.store import AgentEntry, AttemptKey, StoreError, TrajectoryStore

app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode="markdown",
                  help="Shopping-agent arena, miner side: score your agent locally exactly as validators do.")

EXIT_REJECTED = 2
EXIT_UNAVAILABLE = 3
EXIT_NO_STORE = 4
EXIT_CHAIN = 5
EXIT_NOT_DELIVERED = 6
EXIT_NO_ANSWER = 7
EXIT_MISSING_ANSWERS = 8


def _print_findings(console: Console, report: CheckReport) -> None:
    for finding in report.findings:
        where = f"line {finding.line}" if finding.line is not None else "file"
        console.print(f"  [{finding.category}] {finding.rule} ({where}): {finding.message}", markup=False)


def _load_suite(files: list[Path]) -> list[Problem]:
    problems: list[Problem] = []
    for path in files:
        problems.extend(load_problems(path))
    return problems


def practice_monday(week: str) -> date:
    """The Monday of ISO week ``week``, whose schedule entry makes its practice suite (``BadParameter`` if
    ``week`` is not an ISO week)."""
    try:
        return date.fromisoformat(f"{week}-1")
    except ValueError:
        raise typer.BadParameter(f"{week!r} is not an ISO week such as 2026-W48",
                                 param_hint="--week") from None


def generated_seeds(seeds: list[str], count: int) -> list[str]:
    """The generator seeds of ``--generated``: each ``--seed`` given, else ``count`` fresh random ones."""
    return [f"generated/{seed}" for seed in seeds or [secrets.token_hex(8) for _ in range(count)]]


def _generated_suites(catalog_dir: Path, seeds: list[str], day: date) -> dict[str, list[Problem]]:
    """One suite of the qualifying size per generator seed, generated as validators generate theirs: by
    the generator their schedule names for ``day``."""
    settings = ArenaSettings()
    with open_scheduled_sources(catalog_dir, settings.schedule()) as sources:
        source = sources.for_day(day)
        return {seed: source.generate(seed, settings.qualifying_suite_sizes()) for seed in seeds}


def _world(settings: HarnessSettings, catalog: Path | None, suite_files: list[Path], per_category: int,
           seeds: list[str] | None,
           day: date) -> tuple[BM25SearchEngine, list[Problem], dict[str, list[Problem]]]:
    """The catalog engine, the problems to run and the generated suites they come from: one suite per
    generator seed, else the bundled world's or the given ones."""
    if seeds is not None:
        if suite_files:
            raise typer.BadParameter("--generated and --practice generate their suites: drop --suite")
        catalog_dir = catalog or sample_world(settings).catalog_dir
        suites = _generated_suites(catalog_dir, seeds, day)
        return open_catalog(catalog_dir), [p for suite in suites.values() for p in suite], suites
    if catalog is None:
        world = sample_world(settings)
        catalog_dir = world.catalog_dir
        suite = _load_suite(suite_files) if suite_files else world.suite(per_category)
    elif suite_files:
        catalog_dir, suite = catalog, _load_suite(suite_files)
    else:
        raise typer.BadParameter("a custom --catalog needs the problems that go with it: pass --suite FILE")
    if not suite:
        raise typer.BadParameter("the suite is empty")
    return open_catalog(catalog_dir), suite, {}


def _missing_answers(engine: BM25SearchEngine, suite: list[Problem]) -> tuple[list[str], list[str]]:
    """The answer ids of ``suite`` absent from the catalog, and the problems that have any."""
    answers = sorted({target.product_id for problem in suite for target in problem.targets})
    found = engine.get_products(answers)
    missing = [product_id for product_id in answers if product_id not in found]
    absent = set(missing)
    return missing, [p.id for p in suite if any(t.product_id in absent for t in p.targets)]


def _check_answers(console: Console, engine: BM25SearchEngine, suite: list[Problem], allow: bool) -> None:
    missing, problems = _missing_answers(engine, suite)
    if not missing:
        return
    console.print(f"[yellow]warning[/yellow]: {len(missing)} answer ids of {len(problems)} of the "
                  f"{len(suite)} problems are not in the catalog (e.g. {', '.join(missing[:3])}): those "
                  "problems cannot be solved with it", highlight=False)
    if not allow:
        console.print("Pass the catalog the suite comes from (--catalog), or --allow-missing-answers to run "
                      "anyway.")
        raise typer.Exit(EXIT_MISSING_ANSWERS)


WalletPathOption = Annotated[Path, typer.Option("--wallet-path", file_okay=False, help="Wallets directory")]
ChainOption = Annotated[str | None, typer.Option(
    "--chain", help="local (the embedded chain under the data root) or a Bittensor network "
                    "(default $ARENA_CHAIN, local)")]
NetuidOption = Annotated[int | None, typer.Option("--netuid", min=0,
                                                  help="Subnet (default $ARENA_NETUID, 1)")]


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
    home: Annotated[Path | None, typer.Option("--home", help="Data root (default $ARENA_HOME)")] = None,
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
    log_format: Annotated[str | None, typer.Option("--log-format", help="console or json")] = None,
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
    settings = HarnessSettings(**{k: v for k, v in overrides.items() if v is not None})
    configure_logging(settings.log_format, settings.log_level)
    console = Console()
    agent_file = AgentFile.read(agent)
    if generated and practice:
        raise typer.BadParameter("--generated and --practice are two kinds of suite: give one")
    if (seeds or suites_count != 1) and not generated:
        raise typer.BadParameter("--seed and --suites choose generated suites: add --generated")
    today = datetime.now(UTC).date()
    try:
        practice_of = week or practice_week(today)
        suite_day = practice_monday(practice_of) if practice else today
        chosen = (generated_seeds(seeds or [], suites_count) if generated
                  else [practice_seed(practice_of)] if practice
                  else None)
        engine, suite, generated_suites = _world(settings, catalog, suite_files or [],
                                                 settings.suite_per_category, chosen, suite_day)
    except (ProblemFileError, FileNotFoundError) as exc:
        console.print(f"error: {exc}", markup=False)
        raise typer.Exit(1) from exc
    _check_answers(console, engine, suite, allow_missing_answers)

    answers = {target.product_id for problem in suite for target in problem.targets}
    report = check_agent(agent_file.source, known_product_ids=answers)
    if not report.ok:
        console.print(f"[red]rejected[/red] by static analysis ({report.rejection}):")
        _print_findings(console, report)
        raise typer.Exit(EXIT_REJECTED)
    if settings.sandbox == "none":
        console.print("[bold red]WARNING: --sandbox none runs the agent WITHOUT any isolation: it can read "
                      "your files and reach the network. Only for agents you trust.[/bold red]")
    console.print(f"agent {agent} (sha256 {agent_file.sha256[:16]}): static analysis passed; "
                  f"{len(suite)} problems, sandbox {settings.sandbox}, {settings.workers} workers")

    if scripted_llm:
        if inference_url:
            raise typer.BadParameter("--scripted-llm replaces --inference-url: give one or the other")
        default = settings.allowed_models()[0] if models else SCRIPTED_MODEL
        console.print(f"[yellow]LLM: the scripted shopping policy (a test double), answering to any model "
                      f"name, default `{default}`: scores measure the script, not a real model[/yellow]")

    destination = out or results_path(settings, f"miner-test-{agent.stem}")
    destination.parent.mkdir(parents=True, exist_ok=True)
    grader = Grader.from_settings(engine.get_products, settings)
    judge = ArenaSettings().judge()
    verdicts: dict[str, JudgeVerdict] = {}
    run_id = new_run_id()
    recorder = _recorder(settings, agent_file, suite, run_id, console) if store else None
    with destination.open("wb") as handle:
        def on_attempt(record: AttemptRecord) -> None:
            _append(handle, record)
            verdicts[record.problem_id] = verdict = judge.judge(JudgeInput.from_record(record))
            if recorder is not None:  # recorded, then its verdict beside it, as a validator's run does
                recorder.record(record)
                recorder.store.set_judge_verdict(AttemptKey.of(record), stored_verdict(verdict))

        try:
            with run_inference(settings, scripted=scripted_llm) as inference:
                result = run_suite(agent_file, suite, engine, grader, inference=inference,
                                   sandbox=SandboxConfig.from_settings(settings), workers=settings.workers,
                                   progress=sys.stderr.isatty(), on_attempt=on_attempt, run_id=run_id)
        except SandboxUnavailable as exc:
            console.print(f"error: {exc}", markup=False)
            raise typer.Exit(EXIT_UNAVAILABLE) from exc
        finally:
            engine.close()
            if recorder is not None:
                recorder.store.close()
    if recorder is not None:
        recorder.finish()
    failures: dict[str, int] = {}
    for attempt in result.attempts:
        if attempt.failure is not None:
            failures[attempt.failure.kind] = failures.get(attempt.failure.kind, 0) + 1
    console.print(results_table(result, f"{agent.name} on {len(suite)} problems"))
    suite_ids = {seed: [p.id for p in problems] for seed, problems in generated_suites.items()}
    console.print(_final_score_table(result.attempts, verdicts, suite_ids))
    refusal = first_refusal(result)
    if refusal is not None:
        console.print(f"[red]first proxy refusal[/red]: {refusal.status} on {refusal.path}: "
                      f"{escape(refusal.error or '')}", highlight=False)
    if failures:
        console.print("failed attempts: " + ", ".join(f"{kind} {n}" for kind, n in sorted(failures.items())))
    console.print(f"dialogues, proxy logs and scores: {destination}")
    if recorder is not None:
        labels = ", ".join(f"{label} {n}" for label, n in sorted(recorder.labels.items()))
        console.print(f"trajectory store: run {run_id} ({labels}) in {recorder.store.engine.url!r}")



def _final_scores(attempts: list[AttemptRecord], verdicts: dict[str, JudgeVerdict],
                  suites: Mapping[str, list[str]]) -> dict[str, FinalScore]:
    """Per category, per generated suite (what one qualifying run scores) and for all problems: the
    success rate, the mean judge quality, the quality coefficient and the final score, as a validator
    computes them."""
    scores: dict[str, FinalScore] = {}
    for category in sorted({a.score.category for a in attempts}):
        judged = [a for a in attempts if a.score.category == category]
        successes = sum(a.score.success for a in judged) / len(judged)
        scores[category] = final_score(successes, [verdicts[a.problem_id] for a in judged])
    def scored(run: list[AttemptRecord]) -> FinalScore:
        return suite_score([a.score.success for a in run], [verdicts[a.problem_id] for a in run],
                           [a.problem_id for a in run])

    by_id = {a.problem_id: a for a in attempts}
    for seed, ids in suites.items():
        scores[f"suite {seed}"] = scored([by_id[i] for i in ids if i in by_id])
    scores["all"] = scored(attempts)
    return scores


def _final_score_table(attempts: list[AttemptRecord], verdicts: dict[str, JudgeVerdict],
                       suites: Mapping[str, list[str]]) -> Table:
    scores = _final_scores(attempts, verdicts, suites)
    table = Table(title=f"final score (judge: {scores['all'].judge_label})")
    for column in ("category", "success", "mean quality", "coefficient", "final score"):
        table.add_column(column, justify="left" if column == "category" else "right")
    for name, score in scores.items():
        table.add_row(name, f"{score.success_rate:.1%}", f"{score.mean_quality:.3f}",
                      f"{score.coefficient:.4f}", f"{score.score:.2%}")
    return table


def _recorder(settings: HarnessSettings, agent: AgentFile, suite: list[Problem], run_id: str,
              console: Console) -> RunRecorder:
    url = StoreSettings(home=settings.home).url()
    try:
        trajectory_store = TrajectoryStore.open(url)
    except (StoreError, OSError, SQLAlchemyError) as exc:
        console.print(f"error: cannot open the trajectory store at {url}: {exc}\n"
                      "Set ARENA_STORE_URL, or pass --no-store to skip recording.", markup=False)
        raise typer.Exit(EXIT_NO_STORE) from exc
    try:
        code: str | None = agent.source.decode("utf-8")
    except UnicodeDecodeError:  # the store keeps only the hash of a file that is not UTF-8 text
        code = None
    clusters = cluster_problems(suite, ArenaSettings().leak_config())
    return RunRecorder(trajectory_store, run_id=run_id, kind="local_test", suite="miner-test",
                       agent=AgentEntry(code_hash=agent.sha256, code=code), problems=suite,
                       leak_clusters=clusters.cluster_of)


def _append(handle: IO[bytes], record: AttemptRecord) -> None:
    # One line per attempt as soon as it is graded, so an interrupted run keeps what it finished.
    handle.write(orjson.dumps(record.model_dump(mode="json")) + b"\n")
    handle.flush()


@app.command("submit")
def submit(
    agent: Annotated[Path, typer.Argument(exists=True, dir_okay=False, readable=True,
                                          help="Your agent file (defines agent_main(problem) -> steps)")],
    wallet_name: Annotated[str, typer.Option("--wallet-name", help="Wallet (coldkey) name")] = "default",
    wallet_hotkey: Annotated[str, typer.Option("--wallet-hotkey",
                                               help="Hotkey name in that wallet")] = "default",
    wallet_path: WalletPathOption = Path("~/.bittensor/wallets"),
    chain: ChainOption = None,
    netuid: NetuidOption = None,
    home: Annotated[Path | None, typer.Option("--home", help="Data root (default $ARENA_HOME)")] = None,
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="Seconds per validator upload")] = 60.0,
    log_format: Annotated[str | None, typer.Option("--log-format", help="console or json")] = None,
) -> None:
    """Check AGENT statically, commit its sha256 on chain, and upload it to every validator.

    The commitment's block starts your 12 h cooldown; when your latest commitment already is this file
    (a retry), it is reused rather than renewed. Each upload is signed with your hotkey for that
    validator (`bittensor.http_auth`) and sent to the endpoint it published; a table says what each
    answered. Exit code 2: static analysis rejected the file; 5: wallet or chain problem (not
    registered, commitment refused); 6: some validator did not accept the file.
    """
    overrides: dict[str, Any] = {"home": home, "chain": chain, "netuid": netuid, "log_format": log_format}
    settings = ChainSettings(**{k: v for k, v in overrides.items() if v is not None})
    configure_logging(settings.log_format, settings.log_level)
    console = Console()
    agent_file = AgentFile.read(agent)
    report = check_agent(agent_file.source)
    if not report.ok:
        console.print(f"[red]rejected[/red] by static analysis ({report.rejection}); nothing committed:")
        _print_findings(console, report)
        raise typer.Exit(EXIT_REJECTED)
    try:
        wallet = Wallet(wallet_name, wallet_hotkey, path=str(wallet_path.expanduser()))
        hotkey: str = wallet.hotkey.ss58_address
        subnet = open_chain(settings)
        if not subnet.is_registered(hotkey):
            raise ChainError(f"hotkey {hotkey} is not registered on subnet {subnet.netuid}: "
                             "register it first")
        commitment = _commit(subnet.latest_commitment(hotkey), agent_file.sha256,
                             lambda: subnet.commit(wallet, agent_file.sha256), console)
        validators = subnet.metagraph().validators()
    except (ChainError, OSError, ValueError) as exc:
        console.print(f"error: {exc}", markup=False)
        raise typer.Exit(EXIT_CHAIN) from exc
    if not validators:
        console.print("no validator with a permit has published an endpoint yet: run `miner submit` "
                      "again later (your commitment stands)")
        raise typer.Exit(EXIT_NOT_DELIVERED)
    body = UploadBody.of(agent.name, agent_file.source)
    with httpx.Client(timeout=timeout) as client:
        outcomes = [upload(client, wallet, validator, body) for validator in validators]
    console.print(_outcome_table(outcomes, f"{agent.name} (sha256 {agent_file.sha256[:16]}, block "
                                           f"{commitment.block})"))
    if any(o.outcome not in ("accepted", "already accepted") for o in outcomes):
        raise typer.Exit(EXIT_NOT_DELIVERED)


def _commit(latest: Commitment | None, sha256: str, commit: Callable[[], Commitment],
            console: Console) -> Commitment:
    """The hotkey's commitment of ``sha256``: the latest one if it already is (a retry), else a new one."""
    if latest is not None and latest.data == sha256:
        console.print(f"already committed at block {latest.block} ({latest.time.isoformat()}): uploading it")
        return latest
    commitment = commit()
    console.print(f"committed sha256 {sha256[:16]} at block {commitment.block} "
                  f"({commitment.time.isoformat()}); your cooldown starts now")
    return commitment


def _outcome_table(outcomes: list[UploadOutcome], title: str) -> Table:
    table = Table(title=title)
    for column in ("uid", "validator", "endpoint", "outcome", "detail"):
        table.add_column(column)
    for o in outcomes:
        colour = "green" if o.outcome in ("accepted", "already accepted") else "red"
        detail = f"{o.error}: {o.detail}" if o.error else o.detail
        table.add_row(str(o.uid), o.hotkey, o.url, f"[{colour}]{o.outcome}[/{colour}]", detail)
    return table


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
    wallet_name: Annotated[str, typer.Option("--wallet-name", help="Wallet (coldkey) name")] = "default",
    wallet_hotkey: Annotated[str, typer.Option("--wallet-hotkey",
                                               help="Hotkey name in that wallet")] = "default",
    wallet_path: WalletPathOption = Path("~/.bittensor/wallets"),
    hotkey: Annotated[str | None, typer.Option(
        "--hotkey", help="SS58 address to look up instead of the wallet's hotkey (no wallet needed)")] = None,
    chain: ChainOption = None,
    netuid: NetuidOption = None,
    home: Annotated[Path | None, typer.Option("--home", help="Data root (default $ARENA_HOME)")] = None,
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="Seconds per validator request")] = 15.0,
    log_format: Annotated[str | None, typer.Option("--log-format", help="console or json")] = None,
) -> None:
    """Show your agents' states and scores as every validator with a permit reports them.

    Reads each validator's public API (the endpoint it published on chain): one table per validator
    with each of your submissions' state (qualifying, qualified, not_qualified, superseded, racing,
    raced, rejected), qualifying score, score in the running or last race, embargo, and for a rejected
    file the static-analysis findings. Nothing is signed or
    written. Exit code 5: wallet or chain problem; 7: some validator did not answer (the others are
    still shown).
    """
    overrides: dict[str, Any] = {"home": home, "chain": chain, "netuid": netuid, "log_format": log_format}
    settings = ChainSettings(**{k: v for k, v in overrides.items() if v is not None})
    configure_logging(settings.log_format, settings.log_level)
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
