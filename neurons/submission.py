"""Submitting an agent file from the command line, as ``miner submit`` does and the network demo's miners
do: static analysis first, then every validator's pre-check and, unless one refuses, the commitment and
the delivery (``arena.submissions.client``); what to print and the exit code."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from shoppingbench.sandbox.runner import AgentFile
from shoppingbench.submission_check import CheckReport, check_agent, describe

if TYPE_CHECKING:
    from bittensor import Wallet

    from arena.chain import Chain

EXIT_REJECTED = 2
"""Static analysis rejected the agent file."""
EXIT_CHAIN = 5
"""A wallet or chain problem (not registered, commitment refused)."""
EXIT_NOT_DELIVERED = 6
"""Some validator did not accept the file, or none has published an endpoint yet."""
EXIT_NOT_COMMITTED = 9
"""A validator's pre-check refused the file (cooldown, static analysis, copy, a latest commitment past its
upload window): nothing was committed."""


def print_findings(console: Console, report: CheckReport) -> None:
    """Static analysis' findings, one a line, with where in the file."""
    for finding in report.findings:
        console.print(f"  {describe(finding)}", markup=False)


def submit_file(console: Console, agent: Path, connect: Callable[[], tuple[Wallet, Chain]], *,
                timeout: float, recommit: bool = False, ask_first: bool = True) -> int:
    """Check ``agent`` statically, ask every validator whether it would accept it (unless not
    ``ask_first``), commit its sha256 on the chain ``connect`` opens (with the wallet it loads) unless one
    refuses, and upload it to every validator; print what happened and return the exit code (0:
    delivered)."""
    from arena.chain import ChainError
    from arena.submissions import UploadBody
    from arena.submissions.client import deliver, outcome_table, precheck_table

    agent_file = AgentFile.read(agent)
    report = check_agent(agent_file.source)
    if not report.ok:
        console.print(f"[red]rejected[/red] by static analysis ({report.rejection}); nothing committed:")
        print_findings(console, report)
        return EXIT_REJECTED
    try:
        wallet, chain = connect()
        delivery = deliver(chain, wallet, UploadBody.of(agent.name, agent_file.source), agent_file.sha256,
                           timeout=timeout, recommit=recommit, ask_first=ask_first)
    except (ChainError, OSError, ValueError) as exc:
        console.print(f"error: {exc}", markup=False)
        return EXIT_CHAIN
    title = f"{agent.name} (sha256 {agent_file.sha256[:16]})"
    if delivery.prechecks:
        console.print(precheck_table(delivery.prechecks, f"pre-check: {title}"))
    commitment = delivery.commitment
    if commitment is None:
        console.print(f"[red]nothing committed[/red], your cooldown is untouched: {delivery.stopped}",
                      highlight=False)
        return EXIT_NOT_COMMITTED
    if delivery.reused:
        console.print(f"already committed at block {commitment.block} ({commitment.time.isoformat()}): "
                      "uploading it")
    else:
        console.print(f"committed sha256 {agent_file.sha256[:16]} at block {commitment.block} "
                      f"({commitment.time.isoformat()}); your cooldown starts now")
    if not delivery.outcomes:
        console.print("no validator with a permit has published an endpoint yet: run `miner submit` "
                      "again once one has (a validator takes the upload only within a few blocks of the "
                      "commitment; after them `miner submit --recommit` makes a new one)")
        return EXIT_NOT_DELIVERED
    console.print(outcome_table(delivery.outcomes, f"{agent.name} (sha256 {agent_file.sha256[:16]}, block "
                                                   f"{commitment.block})"))
    return 0 if delivery.delivered else EXIT_NOT_DELIVERED
