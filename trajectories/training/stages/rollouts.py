"""Rollouts for the sampling stages: an agent attempts each problem k times through the validator's path.

Every attempt runs the agent file in the sandbox behind the verified proxy (``run_suite``) and is graded by
the one scorer, so a rollout is judged exactly as an arena attempt. The model answers from one of three places
(:class:`ServingSettings`): ``hf``, the checkpoint served on loopback over transformers' generate (CPU,
tests); ``vllm``, ``vllm serve`` started for the stage (GPU); ``auto`` (the default), ``vllm`` where CUDA and
vLLM are present, else ``hf`` (:mod:`trajectories.training.serving.backends`); ``endpoint``, an
OpenAI-compatible URL that already serves it (a hosted teacher, or a vLLM started by hand). The sampling
temperature is forced on every call by the proxy, since agents usually ask for greedy decoding and k greedy
samples would be one.

Records are appended to ``attempts.jsonl`` as they finish, next to ``meta.json`` (what was rolled out), so
a killed stage resumes with the attempts it still owes; sample ``s`` of a rollout always has run id
``<fingerprint>-s<s>``. :func:`rollout_conversations` turns the records into training conversations: only
successful attempts whose structural-filter label is kept (the filter reads the verified proxy log, so a
kept trajectory's tool calls were emitted by the model).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import orjson
import structlog
from pydantic import BaseModel, ValidationError

from shoppingbench.grading.grader import Grader
from shoppingbench.problems.models import Problem
from shoppingbench.proxy.budgets import InferenceBudgets
from shoppingbench.proxy.inference import InferenceConfig
from shoppingbench.records import AttemptRecord
from shoppingbench.sandbox.runner import AgentFile, SandboxConfig, run_suite
from shoppingbench.search.base import SearchEngine
from trajectories.filter import label_attempt
from trajectories.training.data.conversations import Conversation, record_conversation
from trajectories.training.data.weighting import sample_reward
from trajectories.training.serving.backends import served_checkpoint
from trajectories.training.stages.sampling_config import ServingSettings

log = structlog.get_logger(__name__)

ATTEMPTS_FILE = "attempts.jsonl"
META_FILE = "meta.json"


@contextmanager
def served_model(serving: ServingSettings, model: str | Path, *, out: Path,
                 budgets: InferenceBudgets) -> Iterator[InferenceConfig]:
    """The proxy's inference config for ``model`` served as ``serving`` says, for the block's length."""
    forced = {"temperature": serving.temperature}
    if serving.backend == "endpoint":
        assert serving.base_url is not None and serving.model_name is not None  # the validator checked
        yield InferenceConfig(base_url=serving.base_url, api_key=serving.api_key(),
                              models=[serving.model_name], max_tokens=serving.max_tokens, budgets=budgets,
                              forced_params=forced)
        return
    local = Path(model)
    if not local.is_dir():
        raise FileNotFoundError(f"{model} is not a local model directory: backends hf and vllm serve a saved "
                                "checkpoint (download it first, or use serving.backend endpoint)")
    with served_checkpoint(local, backend=serving.backend, out=out, temperature=serving.temperature,
                           max_tokens=serving.max_tokens, budgets=budgets, vllm_args=serving.vllm_args,
                           startup_timeout_s=serving.startup_timeout_s) as inference:
        yield inference


class RolloutMeta(BaseModel):
    """What a rollout directory holds, so a resumed stage never mixes two models' samples."""

    fingerprint: str
    model: str
    agent_sha256: str
    problems: list[str]
    samples_per_problem: int
    temperature: float


def rollout_meta(model: str, agent: AgentFile, problems: Sequence[Problem], k: int,
                 temperature: float) -> RolloutMeta:
    ids = sorted(p.id for p in problems)
    digest = hashlib.sha256(orjson.dumps([model, agent.sha256, ids, k, temperature])).hexdigest()[:16]
    return RolloutMeta(fingerprint=digest, model=model, agent_sha256=agent.sha256, problems=ids,
                       samples_per_problem=k, temperature=temperature)


def read_attempts(path: Path) -> list[AttemptRecord]:
    """Records of an attempts JSONL file; a line torn by a crash (or otherwise unreadable) is skipped."""
    if not path.exists():
        return []
    records: list[AttemptRecord] = []
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(AttemptRecord.model_validate_json(line))
        except ValidationError:
            log.warning("training.attempt_line_unreadable", path=str(path), line=number)
    return records


def _drop_torn_tail(path: Path) -> None:
    """Cut a last line a crash left without its newline, so the next append starts a line of its own."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as handle:
            handle.truncate(data.rfind(b"\n") + 1)


def _open_rollout_dir(directory: Path, meta: RolloutMeta) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    meta_path = directory / META_FILE
    if meta_path.exists():
        recorded = RolloutMeta.model_validate_json(meta_path.read_bytes())
        if recorded.fingerprint != meta.fingerprint:
            raise ValueError(f"{directory} holds rollouts of another model, agent, problem set, k or "
                             f"temperature ({recorded.model}): use a new --out, or --no-resume to start over")
    else:
        meta_path.write_text(meta.model_dump_json(indent=2), encoding="utf-8")
    attempts = directory / ATTEMPTS_FILE
    if attempts.exists():
        _drop_torn_tail(attempts)


def _done(path: Path) -> dict[str, set[str]]:
    """run id -> problems with a record."""
    done: dict[str, set[str]] = {}
    for record in read_attempts(path):
        done.setdefault(record.run_id, set()).add(record.problem_id)
    return done


def rollouts_complete(directory: Path, meta: RolloutMeta) -> bool:
    """Whether ``directory`` already holds every attempt ``meta`` asks for."""
    meta_path = directory / META_FILE
    if not meta_path.exists() or RolloutMeta.model_validate_json(meta_path.read_bytes()) != meta:
        return False
    done = _done(directory / ATTEMPTS_FILE)
    return all(set(meta.problems) <= done.get(f"{meta.fingerprint}-s{s}", set())
               for s in range(meta.samples_per_problem))


def collect_rollouts(agent: AgentFile, problems: Sequence[Problem], engine: SearchEngine, grader: Grader, *,
                     inference: InferenceConfig, sandbox: SandboxConfig, meta: RolloutMeta, directory: Path,
                     workers: int = 2, progress: bool = True) -> list[AttemptRecord]:
    """``meta.samples_per_problem`` attempts per problem, resuming from what ``directory`` already holds."""
    _open_rollout_dir(directory, meta)
    path = directory / ATTEMPTS_FILE
    wanted = {p.id for p in problems}
    done = _done(path)
    with path.open("ab") as attempts:
        def keep(record: AttemptRecord) -> None:
            attempts.write(record.model_dump_json().encode() + b"\n")
            attempts.flush()

        for sample in range(meta.samples_per_problem):
            run_id = f"{meta.fingerprint}-s{sample}"
            owed = [p for p in problems if p.id not in done.get(run_id, set())]
            if not owed:
                continue
            result = run_suite(agent, owed, engine, grader, inference=inference, sandbox=sandbox,
                               workers=workers, progress=progress, on_attempt=keep, run_id=run_id)
            log.info("training.rollout_sample_done", sample=sample + 1, k=meta.samples_per_problem,
                     problems=len(owed), successes=sum(1 for r in result.attempts if r.score.success))
    ours = f"{meta.fingerprint}-s"
    return [r for r in read_attempts(path) if r.problem_id in wanted and r.run_id.startswith(ours)]


@dataclass(frozen=True)
class RolloutSelection:
    conversations: list[Conversation]
    dropped: Counter[str]
    rewards: list[float]
    """each kept conversation's reward (:func:`~trajectories.training.data.weighting.sample_reward`)"""


def rollout_conversations(records: Sequence[AttemptRecord], problems: Mapping[str, Problem],
                          clusters: Mapping[str, str], *, keep_labels: frozenset[str],
                          max_tool_chars: int) -> RolloutSelection:
    """Training conversations of the successful rollouts whose filter label is kept (others counted)."""
    kept: list[Conversation] = []
    rewards: list[float] = []
    dropped: Counter[str] = Counter()
    for record in records:
        problem = problems.get(record.problem_id)
        if problem is None or record.problem_id not in clusters:
            dropped["unknown_problem"] += 1
            continue
        if not record.score.success:
            dropped["not_successful"] += 1
            continue
        label = label_attempt(record.proxy_log, record.steps, query=record.query).label
        if label not in keep_labels:
            dropped[f"label:{label}"] += 1
            continue
        conversation = record_conversation(record, clusters[problem.id], max_tool_chars)
        if conversation is None:
            dropped["unreadable_steps"] += 1
            continue
        kept.append(conversation)
        rewards.append(sample_reward(record.score))
    log.info("training.rollouts_selected", kept=len(kept), dropped=dict(dropped), records=len(records))
    return RolloutSelection(conversations=kept, dropped=dropped, rewards=rewards)
