"""Two runs on one host, in two processes, with the same uid base: a fork bomb in one must not starve
the other's agents (``RLIMIT_NPROC`` counts the processes of a uid host-wide), so every runner process
leases its slot uids under a host-wide lock."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from shoppingbench.sample_world import SampleWorld
from shoppingbench.sandbox.uids import lease_uids
from shoppingbench.search.engine import BM25SearchEngine
from tests.sandbox_support import (
    SLOT_UIDS,
    TIGHT,
    UID_BASE,
    leftover_processes,
    problem,
    processes_of_uids,
    run_agent,
)

REPO = Path(__file__).resolve().parents[2]
HONEST = '''"""Forks a helper process, as many agents' libraries do, and says its uid."""

import os


def agent_main(problem):
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)
    return [{"uid": os.getuid()}]
'''
BOMBER = '''
import sys
from pathlib import Path

from shoppingbench.catalog_dir import open_catalog
from tests.sandbox_support import HOSTILE_AGENTS, TIGHT, problem, run_agent

engine = open_catalog(Path(sys.argv[1]))
run_agent(HOSTILE_AGENTS / "fork_bomb.py", [problem(f"bomb-{i}", "bomb") for i in range(400)], engine,
          limits=TIGHT, uid_base=int(sys.argv[2]))
'''
HOLDER = '''
import sys
from pathlib import Path

from shoppingbench.sandbox.uids import lease_uids

with lease_uids(int(sys.argv[1]), 3, Path(sys.argv[2])) as first:
    print(first, flush=True)
    sys.stdin.read()
'''


def _python(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", script, *args], cwd=REPO, text=True, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_a_uid_block_held_by_another_process_is_not_leased_again(tmp_path: Path) -> None:
    base = UID_BASE + 8  # the session's upper eight slot uids: no sandbox of these tests runs as them
    holder = _python(HOLDER, str(base), str(tmp_path))
    try:
        assert holder.stdout is not None
        theirs = int(holder.stdout.readline())
        with lease_uids(base, 3, tmp_path) as mine, lease_uids(base, 2, tmp_path) as third:
            blocks = [*range(theirs, theirs + 3), *range(mine, mine + 3), *range(third, third + 2)]
    finally:
        holder.communicate("")
    assert theirs == base and len(set(blocks)) == len(blocks) == 8
    with lease_uids(base, 3, tmp_path) as again:  # released when the holder exited
        assert again == base


def test_a_fork_bomb_in_one_run_does_not_starve_a_concurrent_run(
        tmp_path: Path, small_world: SampleWorld, small_engine: BM25SearchEngine) -> None:
    honest = tmp_path / "honest.py"
    honest.write_text(HONEST)
    assert leftover_processes(SLOT_UIDS, wait_s=10) == []  # so the bomb's run leases UID_BASE
    bomber = _python(BOMBER, str(small_world.catalog_dir), str(UID_BASE))
    try:
        deadline = time.monotonic() + 120
        while not processes_of_uids(range(UID_BASE, UID_BASE + 1)):  # the bomb's slot is up
            assert bomber.poll() is None and time.monotonic() < deadline, "the bomb run did not start"
            time.sleep(0.05)
        records = run_agent(honest, [problem(f"calm-{i}", "calm") for i in range(8)], small_engine,
                            limits=TIGHT.model_copy(update={"timeout_s": 60}), uid_base=UID_BASE)
        bombing = bomber.poll() is None
    finally:
        bomber.kill()
        bomber.communicate()
    assert bombing, "the bomb run ended before the honest one: nothing was tested"
    assert [r.failure for r in records] == [None] * 8
    assert {r.steps[0]["uid"] for r in records} != {UID_BASE}  # a uid of its own
    assert leftover_processes(SLOT_UIDS, wait_s=10) == []
