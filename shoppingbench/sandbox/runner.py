"""Run one agent file over a suite in sandbox slots behind the verified proxy, grading every attempt.

``iter_attempts`` yields each :class:`AttemptRecord` as soon as it is graded (in completion order), so
a validator or trajectory store can persist it before the next one finishes; ``run_suite`` wraps it
with a progress bar and the suite aggregate. ``miner test``, the validator and the training worker all
come through here.

Per run: one proxy with a channel per slot, one slot per worker. Runs that overlap in one process (a
validator runs several at once) may share a :class:`~shoppingbench.sandbox.budget.SlotBudget`: a slot
then holds one of its units from before its sandbox starts until its run has no problem left for it,
when it closes its sandbox and gives the unit back to a waiting slot of another run. Each run still
leases its own slot uids and has its own proxy and channels, so overlapping runs share neither; their
proxies share the inference provider in even shares when its capacity is configured
(``InferenceConfig.concurrency``: ``shoppingbench.proxy.shares``).

Each worker thread takes the next problem, begins the attempt on its channel, runs the problem in its
slot (which enforces the limits and never raises for agent misbehaviour), ends the attempt (collecting
its proxy log) and grades it. An attempt that did not succeed while the inference provider was down for
one of its calls (a call the proxy logged with a ``provider_error`` its probe confirmed,
``provider_down``) is marked ``infra_failed`` unless the agent's own doing explains it (it answered, or
broke the provider itself: ``shoppingbench.grading.outages``).
"""

from __future__ import annotations

import hashlib
import queue
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import structlog
from pydantic import BaseModel, ConfigDict, Field

from shoppingbench.evaluation import EvaluationResult, OnAttempt, collect, new_run_id
from shoppingbench.grading.grader import Grader
from shoppingbench.grading.outages import rule_outage
from shoppingbench.problems.models import Problem
from shoppingbench.proxy.inference import InferenceConfig
from shoppingbench.proxy.server import ProxyServer
from shoppingbench.records import AttemptRecord
from shoppingbench.sandbox.backends import (
    Backend,
    BackendName,
    SandboxUnavailable,
    SlotSpec,
    make_backend,
)
from shoppingbench.sandbox.budget import SlotBudget
from shoppingbench.sandbox.limits import SandboxLimits
from shoppingbench.sandbox.slot import Slot
from shoppingbench.sandbox.uids import lease_uids
from shoppingbench.search.base import SearchEngine
from shoppingbench.settings import HarnessSettings

log = structlog.get_logger(__name__)

_DONE: Final = object()


class SandboxConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    backend: BackendName = "namespace"
    limits: SandboxLimits = Field(default_factory=SandboxLimits)
    uid_base: int = Field(default=61000, ge=1000)
    docker_image: str = "shopping-arena-sandbox:latest"

    @classmethod
    def from_settings(cls, settings: HarnessSettings) -> SandboxConfig:
        return cls(backend=settings.sandbox, limits=SandboxLimits.from_settings(settings),
                   uid_base=settings.sandbox_uid_base, docker_image=settings.sandbox_docker_image)


InferenceProvider = Callable[[HarnessSettings], AbstractContextManager[InferenceConfig]]
"""Opens the inference endpoint a run's proxy forwards to, for as long as the block runs:
:func:`configured_inference`, or a double an entry point injects (``shoppingbench.doubles``)."""


@contextmanager
def configured_inference(settings: HarnessSettings) -> Iterator[InferenceConfig]:
    """The configured endpoint (``ARENA_INFERENCE_*``): nothing to start or stop."""
    yield inference_config(settings)


def inference_config(settings: HarnessSettings) -> InferenceConfig:
    limits = settings.inference_limits
    return InferenceConfig(base_url=settings.inference_base_url, api_key=settings.inference_api_key,
                           models=list(limits.models), max_tokens=limits.max_tokens, budgets=limits.budgets)


@dataclass(frozen=True)
class AgentFile:
    """The bytes of a miner's agent file, read once: what runs is what was hashed."""

    name: str
    source: bytes
    sha256: str

    @classmethod
    def read(cls, path: Path) -> AgentFile:
        source = path.read_bytes()
        return cls(name=path.name, source=source, sha256=hashlib.sha256(source).hexdigest())


def _agent_env(inference: InferenceConfig) -> dict[str, str]:
    """The models an agent may ask for; ``SANDBOX_MODEL`` is the reference arena's name for the default."""
    default = inference.default_model or ""
    return {"SANDBOX_MODEL": default, "SANDBOX_DEFAULT_MODEL": default,
            "SANDBOX_ALLOWED_MODELS": ",".join(inference.models)}


def iter_attempts(agent: AgentFile, suite: Sequence[Problem], engine: SearchEngine, grader: Grader, *,
                  inference: InferenceConfig, sandbox: SandboxConfig, workers: int = 4,
                  run_id: str | None = None, budget: SlotBudget | None = None) -> Iterator[AttemptRecord]:
    """Yield the graded record of every problem of ``suite`` as it finishes.

    ``workers``: the run's slots at most; with a ``budget``, its slots also wait for the budget's units
    (shared with the other runs given it), so the run may go with fewer while others hold them.

    Raises :class:`SandboxUnavailable` before running anything if the backend cannot start a sandbox
    here. A grading error (e.g. the catalog is unreadable) aborts the run; nothing an agent does does.
    """
    run = run_id or new_run_id()
    backend = make_backend(sandbox.backend, docker_image=sandbox.docker_image)
    backend.check()
    slots_wanted = max(1, min(workers, len(suite)))
    log.info("sandbox_run_started", run_id=run, agent_sha256=agent.sha256, backend=backend.name,
             problems=len(suite), slots=slots_wanted)
    workspace = Path(tempfile.mkdtemp(prefix="sb-run-"))
    try:
        agent_path = workspace / "agent.py"
        agent_path.write_bytes(agent.source)
        agent_path.chmod(0o444)
        workspace.chmod(0o755)  # the none backend's SDK view and homes live here too
        with ProxyServer(engine, inference, channels=slots_wanted, transport=backend.transport) as proxy, \
                lease_uids(sandbox.uid_base, slots_wanted) as first_uid:
            slots = [Slot(SlotSpec(run_id=run, index=i, agent_file=agent_path, workspace=workspace,
                                   channel=proxy.channels[i], limits=sandbox.limits,
                                   agent_env=_agent_env(inference), uid=first_uid + i), backend)
                     for i in range(slots_wanted)]
            units = _Units(budget, run)
            try:
                _preflight(slots[0], backend, units)
                yield from _run_slots(slots, suite, proxy, grader, agent.sha256, run, units)
            finally:
                for slot in slots:
                    slot.close()
                units.give_all()
                log.info("sandbox_run_finished", run_id=run, restarts=sum(slot.restarts for slot in slots))
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


class _Units:
    """The budget units one run's slots hold (none to hold without a budget)."""

    def __init__(self, budget: SlotBudget | None, run_id: str) -> None:
        self.budget = budget
        self.run_id = run_id
        self.stop = threading.Event()
        self._held: set[int] = set()
        self._lock = threading.Lock()

    def holds(self, index: int) -> bool:
        with self._lock:
            return index in self._held

    def take(self, index: int) -> bool:
        """A unit for slot ``index`` before its sandbox starts; ``False`` when the run is being stopped."""
        if self.budget is not None and not self.budget.acquire(self.run_id, index, self.stop):
            return False
        with self._lock:
            self._held.add(index)
        return True

    def give(self, index: int) -> None:
        with self._lock:
            if index not in self._held:
                return
            self._held.discard(index)
        if self.budget is not None:
            self.budget.release(self.run_id, index)

    def give_all(self) -> None:
        with self._lock:
            held = sorted(self._held)
        for index in held:
            self.give(index)

    def cancel(self) -> None:
        """Slots still waiting for a unit give up (the run is over or abandoned)."""
        self.stop.set()
        if self.budget is not None:
            self.budget.wake()


def _preflight(slot: Slot, backend: Backend, units: _Units) -> None:
    units.take(slot.spec.index)  # the preflight slot's sandbox counts against the budget too
    try:
        ready = slot.start()
    except RuntimeError as exc:
        raise SandboxUnavailable(f"the {backend.name} sandbox could not start: {exc}") from exc
    if ready.agent_error:
        log.warning("agent_file_does_not_compile", error=ready.agent_error)


def _run_slots(slots: list[Slot], suite: Sequence[Problem], proxy: ProxyServer, grader: Grader,
               agent_hash: str, run_id: str, units: _Units) -> Iterator[AttemptRecord]:
    problems: queue.SimpleQueue[Problem] = queue.SimpleQueue()
    for problem in suite:
        problems.put(problem)
    results: queue.SimpleQueue[object] = queue.SimpleQueue()
    stop = units.stop

    def work(slot: Slot) -> None:
        index = slot.spec.index
        try:
            # The unit comes before the problem: a slot waiting for one holds no problem its run's
            # running slots could take meanwhile (and one whose run has none left does not queue).
            if not units.holds(index) and (problems.empty() or not units.take(index)):
                return
            while not stop.is_set():
                try:
                    problem = problems.get_nowait()
                except queue.Empty:
                    return
                results.put(_attempt(slot, problem, proxy, grader, agent_hash, run_id))
        except BaseException as exc:  # a grading error: the consumer re-raises it
            results.put(exc)
        finally:
            slot.close()  # its sandbox is gone before its unit goes to another run's slot
            units.give(index)
            results.put(_DONE)

    threads = [threading.Thread(target=work, args=(slot,), name=f"sandbox-slot-{slot.spec.index}",
                                daemon=True) for slot in slots]
    for thread in threads:
        thread.start()
    running = len(threads)
    try:
        while running:
            item = results.get()
            if item is _DONE:
                running -= 1
            elif isinstance(item, BaseException):
                raise item
            else:
                assert isinstance(item, AttemptRecord)
                yield item
    finally:
        units.cancel()
        for slot in slots:
            slot.kill()  # a slot busy with a problem is killed: its attempt is lost with the run
        for thread in threads:
            thread.join(timeout=30)


def _attempt(slot: Slot, problem: Problem, proxy: ProxyServer, grader: Grader, agent_hash: str,
             run_id: str) -> AttemptRecord:
    index = slot.spec.index
    proxy.begin(index, run_id, problem.id)
    try:
        outcome = slot.run(problem.public_view())
    finally:
        calls = proxy.end(index)
    record = grader.record(run_id=run_id, agent_hash=agent_hash, problem=problem, steps=outcome.steps,
                           failure=outcome.failure, started_at=outcome.started_at,
                           finished_at=outcome.finished_at, proxy_log=calls, stderr_tail=outcome.stderr_tail,
                           agent_ms=outcome.agent_ms)
    errors = record.provider_outages()
    ruling = rule_outage(record)
    if ruling.infra_failed:
        # The provider failed it, not the agent: the validator re-runs it instead of scoring it.
        record = record.model_copy(update={"infra_failed": True})
        log.warning("attempt_infra_failed", run_id=run_id, problem_id=problem.id, provider_errors=len(errors),
                    kinds=sorted({str(call.provider_error) for call in errors}))
    elif errors and not record.score.success:
        log.info("attempt_outage_not_retried", run_id=run_id, problem_id=problem.id, reason=ruling.reason)
    if record.failure is not None:
        log.info("attempt_failed", run_id=run_id, problem_id=problem.id, kind=record.failure.kind,
                 reason=record.failure.reason[:200])
    return record


def run_suite(agent: AgentFile, suite: Sequence[Problem], engine: SearchEngine, grader: Grader, *,
              inference: InferenceConfig, sandbox: SandboxConfig, workers: int = 4, progress: bool = True,
              on_attempt: OnAttempt | None = None, run_id: str | None = None,
              budget: SlotBudget | None = None) -> EvaluationResult:
    """:func:`iter_attempts` with a progress bar and the suite aggregate (the whole suite as denominator)."""
    run = run_id or new_run_id()
    records = iter_attempts(agent, suite, engine, grader, inference=inference, sandbox=sandbox,
                            workers=workers, run_id=run, budget=budget)
    return collect(records, suite, run_id=run, progress=progress, on_attempt=on_attempt, label="running")
