"""Leak clusters: problems that are the same problem in disguise share a cluster (SPEC 5).

Two problems are linked when
- their target product sets overlap (``min_shared_targets`` products in common): knowing one's
  answer gives away the other's; or
- they ask for the same things in any order and wording. A problem's *request facts* are the tokens
  (Lucene English analysis: lower-case, stop words dropped, Porter stems) that its query shares with
  its reward (the targets' titles, sku and attribute values, price bounds, voucher figures), plus
  its required services. Openers, filler and rewording fall away; what the shopper asks for stays,
  in a set that ignores order, so reordered sub-requests and shuffled clauses change nothing. Two
  problems whose rewards check the same constraints (same category, sku/attribute values, services,
  price bounds and voucher; product ids and titles aside) are linked at a facts Jaccard similarity of
  ``same_reward_jaccard``; any two problems at ``any_reward_jaccard``.
Candidate pairs come from MinHash LSH (``datasketch``) over the facts and are verified exactly, so
the LSH only decides speed and recall, never precision. Clusters are the connected components of
the links and a cluster's key is its smallest problem id. Every link depends on its two problems
only, so the same bank gives the same clusters on every validator, and growing the bank only ever
merges clusters.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import orjson
from datasketch import MinHash, MinHashLSH
from pydantic import BaseModel, ConfigDict, Field, model_validator

from shoppingbench.problems.models import Problem
from shoppingbench.problems.wording import number
from shoppingbench.scoring.rules import attribute_pairs
from shoppingbench.search.analysis import analyze

_MINHASH_SEED: Final = 20261122


class LeakConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    same_reward_jaccard: float = Field(default=0.85, gt=0, le=1,
                                      description="Facts similarity linking problems with equal constraints")
    any_reward_jaccard: float = Field(default=0.95, gt=0, le=1,
                                     description="Facts similarity linking any two problems")
    lsh_threshold: float = Field(default=0.6, gt=0, le=1,
                                 description="LSH candidate threshold, below both Jaccard thresholds")
    num_perm: int = Field(default=128, ge=16, le=1024)
    min_shared_targets: int = Field(default=1, ge=1, description="Shared target products that link problems")

    @model_validator(mode="after")
    def _thresholds_ordered(self) -> LeakConfig:
        if not self.lsh_threshold <= self.same_reward_jaccard <= self.any_reward_jaccard:
            raise ValueError("need lsh_threshold <= same_reward_jaccard <= any_reward_jaccard")
        return self


class _UnionFind:
    def __init__(self, size: int) -> None:
        self.parent = list(range(size))

    def find(self, item: int) -> int:
        root = item
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[item] != root:
            self.parent[item], item = root, self.parent[item]
        return root

    def union(self, a: int, b: int) -> bool:
        root_a, root_b = self.find(a), self.find(b)
        if root_a == root_b:
            return False
        self.parent[max(root_a, root_b)] = min(root_a, root_b)
        return True


@dataclass(frozen=True)
class LeakClusters:
    """Which cluster each problem belongs to, and why problems were linked."""

    cluster_of: Mapping[str, str]
    """Problem id -> cluster key (the smallest problem id in the cluster)."""
    members: Mapping[str, tuple[str, ...]]
    """Cluster key -> its problem ids, sorted."""
    target_links: int
    text_links: int

    def same_cluster(self, a: str, b: str) -> bool:
        return self.cluster_of[a] == self.cluster_of[b]


def _reward_words(problem: Problem) -> list[str]:
    words: list[str] = []
    for target in problem.targets:
        words += target.title
        words += [v for _, v in attribute_pairs(target)]
        words += [number(b) for condition in target.price for bounds in condition.values() for b in bounds
                  if b is not None]
    voucher = problem.voucher
    if voucher is not None:
        words += [number(v) for v in (voucher.budget, voucher.threshold, voucher.face_value, voucher.cap)
                  if v is not None]
        if voucher.discount is not None:
            words.append(number(round(voucher.discount * 100, 2)))
    return words


def request_facts(problem: Problem) -> frozenset[str]:
    """What the query asks for: its tokens that also occur in the reward, plus required services."""
    reward = set(analyze(" ".join(_reward_words(problem))))
    services = {f"service:{s}" for target in problem.targets for s in target.service}
    return frozenset(set(analyze(problem.query)) & reward | services)


def reward_constraints(problem: Problem) -> bytes:
    """The constraints a problem's reward checks, ids and titles aside, in target order neither."""
    targets = sorted(orjson.dumps(t.model_dump(exclude={"product_id", "title"}), option=orjson.OPT_SORT_KEYS)
                     for t in problem.targets)
    voucher = problem.voucher.model_dump(exclude={"price_after_voucher"}) if problem.voucher else None
    return orjson.dumps({"category": problem.category, "targets": [t.decode() for t in targets],
                         "voucher": voucher}, option=orjson.OPT_SORT_KEYS)


def _link_targets(problems: Sequence[Problem], links: _UnionFind, config: LeakConfig) -> int:
    postings: dict[str, list[int]] = defaultdict(list)
    for index, problem in enumerate(problems):
        for product_id in {t.product_id for t in problem.targets}:
            postings[product_id].append(index)
    made = 0
    if config.min_shared_targets == 1:
        for indices in postings.values():
            made += sum(links.union(indices[0], other) for other in indices[1:])
        return made
    shared: Counter[tuple[int, int]] = Counter()
    for indices in postings.values():
        shared.update((a, b) for i, a in enumerate(indices) for b in indices[i + 1:])
    return sum(links.union(a, b) for (a, b), count in shared.items() if count >= config.min_shared_targets)


def _alike(mine: frozenset[str], theirs: frozenset[str], same_constraints: bool, config: LeakConfig) -> bool:
    similarity = len(mine & theirs) / len(mine | theirs)
    return similarity >= (config.same_reward_jaccard if same_constraints else config.any_reward_jaccard)


def _signatures(facts: Sequence[frozenset[str]], config: LeakConfig) -> list[MinHash]:
    signatures: list[MinHash] = MinHash.bulk(([t.encode() for t in tokens] for tokens in facts),
                                             num_perm=config.num_perm, seed=_MINHASH_SEED)
    return signatures


def text_links(problems: Sequence[Problem], config: LeakConfig | None = None) -> Iterator[tuple[int, int]]:
    """Index pairs ``(i, j)``, ``i < j``, of problems whose request facts are similar enough to link."""
    config = config or LeakConfig()
    facts = [request_facts(p) for p in problems]
    constraints = [reward_constraints(p) for p in problems]
    lsh = MinHashLSH(threshold=config.lsh_threshold, num_perm=config.num_perm)
    indexed = [i for i, tokens in enumerate(facts) if tokens]
    signatures = _signatures([facts[i] for i in indexed], config)
    with lsh.insertion_session() as session:
        for index, signature in zip(indexed, signatures, strict=True):
            session.insert(index, signature, check_duplication=False)
    for index, signature in zip(indexed, signatures, strict=True):
        for other in sorted(lsh.query(signature)):
            if other > index and _alike(facts[index], facts[other], constraints[index] == constraints[other],
                                        config):
                yield index, other


class FactsIndex:
    """Request facts of a changing set of problems, asked whether a new problem would share a leak cluster
    with one of them through its wording (shared targets are the caller's to exclude)."""

    def __init__(self, config: LeakConfig | None = None) -> None:
        self.config = config or LeakConfig()
        self._lsh = MinHashLSH(threshold=self.config.lsh_threshold, num_perm=self.config.num_perm)
        self._known: dict[str, tuple[frozenset[str], bytes]] = {}
        self._holders: Counter[str] = Counter()  # a problem added twice stays until removed twice

    def __len__(self) -> int:
        return len(self._known)

    def add(self, problems: Sequence[Problem]) -> None:
        fresh = {p.id: p for p in problems if p.id not in self._holders and request_facts(p)}
        facts = [request_facts(p) for p in fresh.values()]
        for (problem_id, problem), tokens, signature in zip(fresh.items(), facts,
                                                            _signatures(facts, self.config), strict=True):
            self._lsh.insert(problem_id, signature)
            self._known[problem_id] = (tokens, reward_constraints(problem))
        self._holders.update(p.id for p in problems if p.id in self._known)

    def remove(self, problem_ids: Sequence[str]) -> None:
        for problem_id in problem_ids:
            if problem_id not in self._holders:
                continue
            self._holders[problem_id] -= 1
            if self._holders[problem_id] == 0:
                del self._holders[problem_id], self._known[problem_id]
                self._lsh.remove(problem_id)

    def linked(self, problem: Problem) -> str | None:
        """The smallest id of a known problem whose wording links it with ``problem``, if any."""
        return next(iter(self.links(problem)), None)

    def links(self, problem: Problem) -> list[str]:
        """The ids of every known problem whose wording links it with ``problem``, smallest first."""
        if problem.id in self._known:
            return [problem.id]
        mine = request_facts(problem)
        if not mine:
            return []
        constraints = reward_constraints(problem)
        (signature,) = _signatures([mine], self.config)
        found = []
        for other in sorted(self._lsh.query(signature)):
            theirs, their_constraints = self._known[other]
            if _alike(mine, theirs, constraints == their_constraints, self.config):
                found.append(str(other))
        return found


def cluster_problems(problems: Sequence[Problem], config: LeakConfig | None = None) -> LeakClusters:
    """The leak clusters of ``problems`` (ids must be unique)."""
    config = config or LeakConfig()
    ordered = sorted(problems, key=lambda p: p.id)
    ids = [p.id for p in ordered]
    if len(set(ids)) != len(ids):
        raise ValueError("problem ids must be unique")
    links = _UnionFind(len(ordered))
    target_links = _link_targets(ordered, links, config)
    text_made = sum(links.union(a, b) for a, b in text_links(ordered, config))
    grouped: dict[int, list[str]] = defaultdict(list)
    for index, problem_id in enumerate(ids):
        grouped[links.find(index)].append(problem_id)
    # The root is the smallest index, and ids are sorted: each cluster's key is its smallest id.
    members = {group[0]: tuple(group) for group in grouped.values()}
    cluster_of = {pid: key for key, group in members.items() for pid in group}
    return LeakClusters(cluster_of=cluster_of, members=members, target_links=target_links,
                        text_links=text_made)
