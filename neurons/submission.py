"""Submitting an agent file from the command line, as ``miner submit`` does and the network demo's miners
do: static analysis first, then the delivery (``arena.submissions.client``), what to print and the exit
code."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bittensor import Wallet
from rich.console import Console

from arena.chain import Chain, ChainError
from arena.submissions import UploadBody
from arena.submissions.client import deliver, outcome_table
from shoppingbench.sandbox.runner import AgentFile
from shoppingbench.submission_check import CheckReport, check_agent

EXIT_REJECTED = 2
"""Static analysis rejected the agent file."""
EXIT_CHAIN = 5
"""A wallet or chain problem (not registered, commitment refused)."""
EXIT_NOT_DELIVERED = 6
"""Some validator did not accept the file, or none has published an endpoint yet."""


def print_findings(console: Console, report: CheckReport) -> None:
    """Static analysis' findings, one a line, with where in the file."""
    for finding in report.findings:
        where = f"line {finding.line}" if finding.line is not None else "file"
        console.print(f"  [{finding.category}] {finding.rule} ({where}): {finding.message}", markup=False)


def submit_file(console: Console, agent: Path, connect: Callable[[], tuple[Wallet, Chain]], *,
                timeout: float) -> int:
    """Check ``agent`` statically, commit its sha256 on the chain ``connect`` opens (with the wallet it
    loads) and upload it to every validator; print what happened and return the exit code (0: delivered)."""
    agent_file = AgentFile.read(agent)
    report = check_agent(agent_file.source)
    if not report.ok:
        console.print(f"[red]rejected[/red] by static analysis ({report.rejection}); nothing committed:")
        print_findings(console, report)
        return EXIT_REJECTED
    try:
        wallet, chain = connect()
        delivery = deliver(chain, wallet, UploadBody.of(agent.name, agent_file.source), agent_file.sha256,
                           timeout=timeout)
    except (ChainError, OSError, ValueError) as exc:
        console.print(f"error: {exc}", markup=False)
        return EXIT_CHAIN
    commitment = delivery.commitment
    if delivery.reused:
        console.print(f"already committed at block {commitment.block} ({commitment.time.isoformat()}): "
                      "uploading it")
    else:
        console.print(f"committed sha256 {agent_file.sha256[:16]} at block {commitment.block} "
                      f"({commitment.time.isoformat()}); your cooldown starts now")
    if not delivery.outcomes:
        console.print("no validator with a permit has published an endpoint yet: run `miner submit` "
                      "again later (your commitment stands)")
        return EXIT_NOT_DELIVERED
    console.print(outcome_table(delivery.outcomes, f"{agent.name} (sha256 {agent_file.sha256[:16]}, block "
                                                   f"{commitment.block})"))
    return 0 if delivery.delivered else EXIT_NOT_DELIVERED
