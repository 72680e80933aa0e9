"""``miner``: what a miner runs. ``miner test AGENT.py`` scores an agent file as a validator's qualifying
run will (``arena.validator.local_test``: the validator's own suite run, kind ``local_test``);
``miner submit AGENT.py`` commits and uploads it to every validator with a permit
(``arena.submissions.client``); ``miner status`` asks those validators what became of the hotkey's agents
(``arena.validator.api.miner_status``). Entry points and wiring only.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from neurons import options
from neurons.chain import chain_settings
from neurons.submission import EXIT_CHAIN, EXIT_REJECTED, print_findings, submit_file

if TYPE_CHECKING:  # imported where used, so that `--help` answers without loading the chain or the SDK
    from bittensor import Wallet

    from arena.chain import Chain
    from arena.settings import ArenaSettings
    from arena.validator import local_test
    from shoppingbench.problems.models import Problem
    from shoppingbench.sandbox.runner import AgentFile
    from shoppingbench.search.engine import BM25SearchEngine
    from trajectories.store import TrajectoryStore

app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode="markdown",
                  help="Shopping-agent arena, miner side: score your agent locally exactly as validators do.")

EXIT_UNAVAILABLE = 3
EXIT_NO_STORE = 4
EXIT_NO_ANSWER = 7
EXIT_MISSING_ANSWERS = 8
EXIT_ALL_CRASHED = 10
"""``miner test``: every attempt crashed (the agent, not its score, needs fixing)."""
EXIT_ENDPOINT_DOWN = 11
"""``miner test``: the inference endpoint does not answer."""


def _check_answers(console: Console, engine: BM25SearchEngine, suite: list[Problem], allow: bool) -> None:
    from arena.validator import local_test

    missing, problems = local_test.missing_answers(engine, suite)
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
    agent: options.AgentArgument,
    suite_files: options.SuiteOption = None,
    catalog: options.CatalogOption = None,
    workers: options.WorkersOption = None,
    per_category: options.PerCategoryOption = None,
    sandbox: options.SandboxOption = None,
    timeout: options.ProblemTimeoutOption = None,
    inference_url: options.InferenceUrlOption = None,
    models: options.ModelOption = None,
    scripted_llm: options.ScriptedLlmOption = False,
    out: options.OutOption = None,
    home: options.HomeOption = None,
    store: options.StoreOption = True,
    generated: options.GeneratedOption = False,
    seeds: options.SeedOption = None,
    suites_count: options.SuitesOption = 1,
    practice: options.PracticeOption = False,
    week: options.WeekOption = None,
    allow_missing_answers: options.AllowMissingAnswersOption = False,
    log_format: options.LogFormatOption = None,
) -> None:
    """Check AGENT statically, run it in the sandbox over a suite, and print its scores.

    Prints per-category success and gt rates and the suite aggregate (ASR), then what a validator's
    qualifying run scores: each attempt judged by the judge of the settings (the offline rules unless
    ARENA_JUDGE_BASE_URL and ARENA_JUDGE_MODELS are set), per category and for the suite the success
    rate, mean judge quality, quality coefficient and final score, then per attempt the gate it failed and
    why, and its structural-filter label (agentic, sub_task or no_llm) and why. Writes every attempt to a
    JSONL file as it finishes (adding `verdict` and `filter` once judged) and to the trajectory store.

    The inference endpoint is probed first (`GET /models`): the run stops if it does not answer, and
    with no endpoint configured a warning says the agent's LLM calls will fail (use --scripted-llm
    to try the agent without a model). Rows with no scored attempt print `not scored`; the first
    crashed attempt's traceback is shown.

    Exit code 2: static analysis rejected the file; 3: the sandbox cannot run on this host;
    4: the trajectory store cannot be opened; 8: answer ids of the suite are missing from the catalog
    (unless --allow-missing-answers); 10: every attempt crashed; 11: the inference endpoint does not
    answer.
    """
    from arena.validator import local_test
    from shoppingbench.doubles.scripted_inference import scripted_inference
    from shoppingbench.results import results_path
    from shoppingbench.sandbox.backends import SandboxUnavailable
    from shoppingbench.sandbox.runner import AgentFile, configured_inference

    settings = _test_settings(home=home, workers=workers, suite_per_category=per_category,
                              sandbox=sandbox, sandbox_timeout_s=timeout, log_format=log_format,
                              inference_base_url=inference_url,
                              inference_models=",".join(models) if models else None)
    console = Console()
    agent_file = AgentFile.read(agent)
    chosen, catalog_engine = _chosen_suite(settings, console, catalog, suite_files or [], generated=generated,
                                           seeds=seeds or [], suites_count=suites_count, practice=practice,
                                           week=week)
    with closing(catalog_engine) as engine:
        _check_answers(console, engine, chosen.problems, allow_missing_answers)
        _check_statically(console, agent, agent_file, chosen.problems, settings)
        if scripted_llm:
            _announce_scripted_llm(console, settings, inference_url, models)
        else:
            _probe_inference(console, settings)
        destination = out or results_path(settings, f"miner-test-{agent.stem}")
        inference = scripted_inference if scripted_llm else configured_inference
        with _open_store(settings, console, store) as trajectory_store, \
                local_test.local_suite_run(settings, engine, trajectory_store, inference=inference) \
                as runs:
            try:
                result = local_test.run_local_test(runs, agent_file, chosen, out=destination,
                                                   progress=sys.stderr.isatty())
            except SandboxUnavailable as exc:
                console.print(f"error: {exc}", markup=False)
                raise typer.Exit(EXIT_UNAVAILABLE) from exc
            local_test.print_result(console, agent.name, result, destination,
                                    recorded_in=trajectory_store if store else None)
    if local_test.all_crashed(result):
        console.print(f"[red]every attempt crashed[/red]: fix the agent (the first traceback is above; all "
                      f"of them are in {destination})")
        raise typer.Exit(EXIT_ALL_CRASHED)


def _test_settings(**overrides: Any) -> ArenaSettings:
    """The settings of a local test (the flags given over the environment), with logging configured."""
    from arena.settings import ArenaSettings
    from shoppingbench.logs import LogFile, configure_logging

    settings = ArenaSettings(**{k: v for k, v in overrides.items() if v is not None})
    configure_logging(settings.log_format, settings.log_level, file=LogFile.from_settings(settings))
    return settings


def _probe_inference(console: Console, settings: ArenaSettings) -> None:
    """Stop (exit 11) when the configured endpoint does not answer; warn when none is configured."""
    from arena.validator import local_test

    url = settings.inference_base_url
    if not url:
        console.print("[yellow]warning: no LLM is configured[/yellow] (--inference-url or "
                      "ARENA_INFERENCE_BASE_URL): every LLM call of the agent fails and its attempts are "
                      "labelled no_llm. Pass --scripted-llm to try the agent against the bundled scripted "
                      "policy, or point --inference-url at an OpenAI-compatible endpoint.", highlight=False)
        return
    problem = local_test.probe_inference(url, settings.inference_api_key.get_secret_value())
    if problem is not None:
        console.print(f"[red]error[/red]: the inference endpoint {url} does not answer ({problem}): nothing "
                      "was run. Start it, fix --inference-url, or pass --scripted-llm to test without a "
                      "model.", highlight=False)
        raise typer.Exit(EXIT_ENDPOINT_DOWN)


def _chosen_suite(settings: ArenaSettings, console: Console, catalog: Path | None, suite_files: list[Path], *,
                  generated: bool, seeds: list[str], suites_count: int, practice: bool,
                  week: str | None) -> tuple[local_test.ChosenSuite, BM25SearchEngine]:
    """The suite the options name and its open catalog (``BadParameter`` for options that name none; exit 1
    for an unreadable problem file or catalog)."""
    from arena.validator import local_test
    from shoppingbench.catalog_dir import open_catalog
    from shoppingbench.problems.loaders import ProblemFileError

    try:
        chosen, day = local_test.suite_seeds(generated=generated, practice=practice, seeds=seeds,
                                             count=suites_count, week=week, today=datetime.now(UTC).date())
        suite = local_test.choose_suite(settings, catalog=catalog, suite_files=suite_files, seeds=chosen,
                                        day=day, progress=sys.stderr.isatty())
        return suite, open_catalog(suite.catalog_dir)
    except local_test.SuiteChoiceError as exc:
        raise typer.BadParameter(str(exc)) from exc
    except (ProblemFileError, FileNotFoundError) as exc:
        console.print(f"error: {exc}", markup=False)
        raise typer.Exit(1) from exc


def _check_statically(console: Console, agent: Path, agent_file: AgentFile, suite: list[Problem],
                      settings: ArenaSettings) -> None:
    from shoppingbench.submission_check import check_agent

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
    from shoppingbench.doubles.scripted_inference import SCRIPTED_MODEL

    if inference_url:
        raise typer.BadParameter("--scripted-llm replaces --inference-url: give one or the other")
    default = settings.allowed_models()[0] if models else SCRIPTED_MODEL
    console.print(f"[yellow]LLM: the scripted shopping policy (a test double), answering to any model "
                  f"name, default `{default}`: scores measure the script, not a real model[/yellow]")


@contextmanager
def _open_store(settings: ArenaSettings, console: Console, record: bool) -> Iterator[TrajectoryStore]:
    """The trajectory store of the settings, or with ``record`` off a throwaway one."""
    from sqlalchemy.exc import SQLAlchemyError

    from arena.validator import local_test
    from trajectories.store import StoreError, TrajectoryStore

    if not record:
        with local_test.throwaway_store() as scratch:
            yield scratch
        return
    url = settings.trajectory_store_url()
    try:
        store = TrajectoryStore.open(url)
    except (StoreError, OSError, SQLAlchemyError) as exc:
        console.print(f"error: cannot open the trajectory store at {url}: {exc}\n"
                      "Set ARENA_STORE_URL, or pass --no-store to skip recording.", markup=False)
        raise typer.Exit(EXIT_NO_STORE) from exc
    with store:
        yield store


@app.command("submit")
def submit(
    agent: options.AgentArgument,
    wallet_name: options.WalletNameOption = "default",
    wallet_hotkey: options.WalletHotkeyOption = "default",
    wallet_path: options.WalletPathOption = Path("~/.bittensor/wallets"),
    chain: options.ChainOption = None,
    network: options.NetworkOption = None,
    chain_endpoint: options.ChainEndpointOption = None,
    netuid: options.NetuidOption = None,
    home: options.HomeOption = None,
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="Seconds per validator request")] = 60.0,
    recommit: Annotated[bool, typer.Option(
        "--recommit", help="Make a new commitment of the file even though your latest one is it (once the "
                           "cooldown allows: a validator refused that one as too early, or it is past "
                           "its upload window)")] = False,
    log_format: options.LogFormatOption = None,
) -> None:
    """Check AGENT statically, ask every validator whether it would accept it, commit its sha256 on chain,
    and upload it to every validator.

    Before anything is committed, every validator with a permit is asked (signed, read-only
    `POST /submissions/precheck`) whether it would accept the file now: your registration, the cooldown,
    static analysis with its answer ids, and the copy rule. If one would refuse, nothing is committed and
    your cooldown is untouched; the message says when to retry. The commitment's block starts your 12 h
    cooldown; when your latest commitment already is this file (a retry), it is reused rather than
    renewed, unless a validator found it inside the cooldown or past its upload window: then `--recommit`
    makes a new one once the cooldown has passed. Each upload is signed with your hotkey for that
    validator (`bittensor.http_auth`) and sent, right after the commitment, to the endpoint it published
    (a validator accepts an upload only within a few blocks of its commitment, its upload window: your
    qualifying problems come from the first block after it); a table says what each answered. Exit code
    2: static analysis rejected the file; 5: wallet or chain problem (not registered, commitment refused);
    6: some validator did not accept the file; 9: a validator's pre-check refused the file, nothing was
    committed.
    """
    settings = chain_settings(home=home, chain=options.chosen_chain(chain, network, chain_endpoint),
                               netuid=netuid, log_format=log_format)

    def connect() -> tuple[Wallet, Chain]:
        from bittensor import Wallet

        from arena.chain import open_chain

        return Wallet(wallet_name, wallet_hotkey, path=str(wallet_path.expanduser())), open_chain(settings)

    code = submit_file(Console(), agent, connect, timeout=timeout, recommit=recommit)
    if code:
        raise typer.Exit(code)


@app.command("status")
def status(
    wallet_name: options.WalletNameOption = "default",
    wallet_hotkey: options.WalletHotkeyOption = "default",
    wallet_path: options.WalletPathOption = Path("~/.bittensor/wallets"),
    hotkey: Annotated[str | None, typer.Option(
        "--hotkey", help="SS58 address to look up instead of the wallet's hotkey (no wallet needed)")] = None,
    chain: options.ChainOption = None,
    network: options.NetworkOption = None,
    chain_endpoint: options.ChainEndpointOption = None,
    netuid: options.NetuidOption = None,
    home: options.HomeOption = None,
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="Seconds per validator request")] = 15.0,
    log_format: options.LogFormatOption = None,
) -> None:
    """Show your agents' states and scores as every validator with a permit reports them.

    Reads each validator's public API (the endpoint it published on chain): one table per validator
    with each of your submissions' state (qualifying, qualified, not_qualified, superseded, racing,
    raced, rejected), qualifying score, score in the running or last race, embargo, and for a rejected
    file the static-analysis findings. Nothing is signed or
    written. Exit code 5: wallet or chain problem; 7: some validator did not answer (the others are
    still shown).
    """
    from bittensor import Wallet

    from arena.chain import ChainError, open_chain
    from arena.validator.api.miner_status import print_reports, validator_reports

    settings = chain_settings(home=home, chain=options.chosen_chain(chain, network, chain_endpoint),
                               netuid=netuid, log_format=log_format)
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
    reports = validator_reports(validators, address, timeout=timeout)
    print_reports(console, address, reports)
    if any(report.error is not None for report in reports):
        raise typer.Exit(EXIT_NO_ANSWER)


@app.callback()
def main() -> None:
    """Miner commands."""


if __name__ == "__main__":
    app()
