"""The command line's option types, declared once: those several commands share, then those of
``miner test`` (its agent file, the suite to run and how to run it)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from shoppingbench.doubles.scripted_inference import SCRIPTED_MODEL
from shoppingbench.sandbox.backends import BackendName
from shoppingbench.settings import LogFormat

HomeOption = Annotated[Path | None, typer.Option(
    "--home", help="Data root (worlds, catalogs, results, stores). Default: $ARENA_HOME or "
                   "~/.shopping-arena")]
LogFormatOption = Annotated[LogFormat | None, typer.Option(
    "--log-format",
    help="auto (human-readable on a terminal, JSON otherwise), console or json (default: $ARENA_LOG_FORMAT "
         "or auto)")]
FixedLogFormatOption = Annotated[LogFormat, typer.Option(
    "--log-format",
    help="auto (human-readable on a terminal, JSON otherwise), console or json")]
"""The log format of the commands that read no settings for it (``worker``, ``dump``): auto unless
given."""

WALLET_NAME_FLAGS = ("--wallet-name", "--wallet.name", "--wallet")
"""Today's name, the SDK's (``bt.Wallet.add_args``, the subnet templates') and btcli's."""
WALLET_HOTKEY_FLAGS = ("--wallet-hotkey", "--wallet.hotkey")
WALLET_PATH_FLAGS = ("--wallet-path", "--wallet.path")
WalletNameOption = Annotated[str, typer.Option(*WALLET_NAME_FLAGS, help="Wallet (coldkey) name")]
WalletHotkeyOption = Annotated[str, typer.Option(*WALLET_HOTKEY_FLAGS, help="Hotkey name in that wallet")]
WalletPathOption = Annotated[Path, typer.Option(*WALLET_PATH_FLAGS, file_okay=False,
                                               help="Wallets directory")]
ChainOption = Annotated[str | None, typer.Option(
    "--chain", help="embedded (a chain in a SQLite file under the data root, for trials; `local` is its "
                    "former name) or a Bittensor network (default $ARENA_CHAIN, embedded)")]
LOCAL_SUBTENSOR = "ws://127.0.0.1:9944"
"""What the SDK and btcli call the ``local`` network: a subtensor node on this machine."""
NetworkOption = Annotated[str | None, typer.Option(
    "--subtensor.network", "--network",
    help="A Bittensor network as the SDK and btcli name it: finney, test, local (a subtensor node at "
         f"{LOCAL_SUBTENSOR}, not the embedded chain), or a ws:// / wss:// URL. Instead of --chain")]
ChainEndpointOption = Annotated[str | None, typer.Option(
    "--subtensor.chain_endpoint", help="A subtensor node's ws:// or wss:// URL. Instead of --chain")]


def chosen_chain(chain: str | None, network: str | None, endpoint: str | None) -> str | None:
    """The chain the flags name (``None``: none given, the settings decide). ``--subtensor.network local``
    is the SDK's local network, a subtensor node at :data:`LOCAL_SUBTENSOR`, never the embedded chain
    (``--chain embedded``). ``BadParameter`` when more than one names it."""
    given = [name for name, value in (("--chain", chain), ("--subtensor.network", network),
                                      ("--subtensor.chain_endpoint", endpoint)) if value is not None]
    if len(given) > 1:
        raise typer.BadParameter(f"{' and '.join(given)} name the same thing: give one")
    if network is not None:
        return LOCAL_SUBTENSOR if network == "local" else network
    return endpoint if endpoint is not None else chain
NetuidOption = Annotated[int | None, typer.Option("--netuid", min=0, max=65_535,
                                                  help="Subnet (default $ARENA_NETUID, 1)")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON (one object) instead of tables")]

AgentArgument = Annotated[Path, typer.Argument(exists=True, dir_okay=False, readable=True,
                                               help="Your agent file (defines agent_main(problem) -> steps)")]
SuiteOption = Annotated[list[Path] | None, typer.Option(
    "--suite", exists=True, dir_okay=False, readable=True,
    help="Problem file (ShoppingBench JSONL or a reference suite JSON); repeat for several. "
         "Default: the bundled sample world's suite")]
CatalogOption = Annotated[Path | None, typer.Option(
    "--catalog", file_okay=False, help="Catalog directory built by `arena catalog import` "
                                       "(default: the bundled sample world)")]
WorkersOption = Annotated[int | None, typer.Option("--workers", min=1, help="Problems run at once")]
PerCategoryOption = Annotated[int | None, typer.Option(
    "--per-category", min=1, help="Bundled suite: problems per category (default 20)")]
SandboxOption = Annotated[BackendName | None, typer.Option(
    "--sandbox", help="namespace (bubblewrap, default), docker, or none (NO isolation: trusted code "
                      "only)")]
ProblemTimeoutOption = Annotated[float | None, typer.Option("--timeout", min=1, help="Seconds per problem")]
InferenceUrlOption = Annotated[str | None, typer.Option(
    "--inference-url", help="OpenAI-compatible base URL the proxy forwards LLM calls to (default "
                            "$ARENA_INFERENCE_BASE_URL; key from $ARENA_INFERENCE_API_KEY)")]
ModelOption = Annotated[list[str] | None, typer.Option(
    "--model", help="Model the agent may use; repeat for several, the first is the default "
                    "(default $ARENA_INFERENCE_MODELS)")]
ScriptedLlmOption = Annotated[bool, typer.Option(
    "--scripted-llm", help="No LLM endpoint? Serve the bundled scripted shopping policy (a test double) "
                           "on loopback and let the agent use it under whatever model name it asks for "
                           f"(default `{SCRIPTED_MODEL}`, or the first --model). Its scores measure the "
                           "script, not a real model")]
OutOption = Annotated[Path | None, typer.Option(
    "--out", dir_okay=False, help="JSONL of every attempt (dialogue, proxy log, scores); "
                                  "default `$ARENA_HOME/results/miner-test-*.jsonl`")]
StoreOption = Annotated[bool, typer.Option(
    "--store/--no-store", help="Also record every attempt, labelled by the structural filter, in the "
                               "trajectory store ($ARENA_STORE_URL, default SQLite under the data root)"
)]
GeneratedOption = Annotated[bool, typer.Option(
    "--generated", help="Run freshly generated suites of the qualifying size "
                        "(ARENA_QUALIFYING_SUITE_PER_CATEGORY per category), each scored as a "
                        "qualifying run is")]
SeedOption = Annotated[list[str] | None, typer.Option(
    "--seed", help="With --generated: the seed of a suite (repeat for several; default random)")]
SuitesOption = Annotated[int, typer.Option(
    "--suites", min=1, help="With --generated and no --seed: how many fresh suites")]
PracticeOption = Annotated[bool, typer.Option(
    "--practice", help="Run this week's public practice suite, generated over the catalog exactly as "
                       "validators generate it")]
WeekOption = Annotated[str | None, typer.Option(
    "--week", help="With --practice: another ISO week's suite, e.g. 2026-W48")]
AllowMissingAnswersOption = Annotated[bool, typer.Option(
    "--allow-missing-answers", help="Run even when some of the suite's answer ids are not in the "
                                    "catalog (those problems cannot be solved)")]
