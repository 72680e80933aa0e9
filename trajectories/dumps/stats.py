"""Running statistics of a dump for its manifest: counts, filter statistics and score distributions."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

RULE_BINS = 10


@dataclass
class _Scores:
    n: int = 0
    success: int = 0
    gt: float = 0.0
    rule: float = 0.0
    format: float = 0.0
    length: float = 0.0
    rule_histogram: list[int] = field(default_factory=lambda: [0] * RULE_BINS)
    judge_quality: Counter[str] = field(default_factory=Counter)

    def add(self, row: dict[str, Any]) -> None:
        self.n += 1
        self.success += bool(row["success"])
        self.gt += row["gt"]
        self.rule += row["rule"]
        self.format += row["format"]
        self.length += row["length"]
        self.rule_histogram[min(int(row["rule"] * RULE_BINS), RULE_BINS - 1)] += 1
        quality = row["judge_quality"]
        self.judge_quality["none" if quality is None else f"{quality:.1f}"] += 1

    def summary(self) -> dict[str, Any]:
        n = max(self.n, 1)
        return {"attempts": self.n, "success_rate": round(self.success / n, 6),
                "mean_gt": round(self.gt / n, 6), "mean_rule": round(self.rule / n, 6),
                "mean_format": round(self.format / n, 6), "mean_length": round(self.length / n, 6),
                "rule_histogram": {"bins": RULE_BINS, "counts": self.rule_histogram},
                "judge_quality": dict(sorted(self.judge_quality.items()))}


@dataclass
class _Filter:
    n: int = 0
    executed: int = 0
    matched: int = 0
    answered_inference: int = 0
    source: Counter[str] = field(default_factory=Counter)

    def add(self, evidence: dict[str, Any], source: str) -> None:
        self.n += 1
        self.executed += int(evidence.get("executed_tool_calls", 0))
        self.matched += int(evidence.get("matched_tool_calls", 0))
        self.answered_inference += int(evidence.get("answered_inference_calls", 0))
        self.source[source] += 1

    def summary(self) -> dict[str, Any]:
        n = max(self.n, 1)
        share = round(self.matched / self.executed, 6) if self.executed else None
        return {"attempts": self.n, "labels_from": dict(sorted(self.source.items())),
                "matched_share_of_executed_calls": share,
                "mean_executed_tool_calls": round(self.executed / n, 3),
                "mean_answered_inference_calls": round(self.answered_inference / n, 3)}


@dataclass
class DumpStats:
    attempts: int = 0
    splits: Counter[str] = field(default_factory=Counter)
    categories: Counter[str] = field(default_factory=Counter)
    labels: Counter[str] = field(default_factory=Counter)
    split_labels: Counter[tuple[str, str]] = field(default_factory=Counter)
    category_labels: Counter[tuple[str, str]] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    echoed_attempts: int = 0
    """Attempts with at least one echoed completion (``echoed_completions`` > 0)."""
    clusters: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    scores: dict[str, _Scores] = field(default_factory=lambda: defaultdict(_Scores))
    filters: dict[str, _Filter] = field(default_factory=lambda: defaultdict(_Filter))

    def add(self, row: dict[str, Any], evidence: dict[str, Any], label_source: str) -> None:
        split, category, label = row["split"], row["category"], row["filter_label"]
        self.attempts += 1
        self.splits[split] += 1
        self.categories[category] += 1
        self.labels[label] += 1
        self.split_labels[split, label] += 1
        self.category_labels[category, label] += 1
        if row["failure_kind"]:
            self.failures[row["failure_kind"]] += 1
        self.echoed_attempts += bool(row["echoed_completions"])
        if row["leak_cluster"]:
            self.clusters[split].add(row["leak_cluster"])
        for key in ("all", f"category:{category}", f"label:{label}", f"split:{split}"):
            self.scores[key].add(row)
        self.filters[label].add(evidence, label_source)

    def summary(self) -> dict[str, Any]:
        def nested(counter: Counter[tuple[str, str]]) -> dict[str, dict[str, int]]:
            out: dict[str, dict[str, int]] = defaultdict(dict)
            for (outer, inner), count in sorted(counter.items()):
                out[outer][inner] = count
            return dict(out)

        return {
            "attempts": self.attempts,
            "counts": {"split": dict(sorted(self.splits.items())),
                       "category": dict(sorted(self.categories.items())),
                       "label": dict(sorted(self.labels.items())), "split_label": nested(self.split_labels),
                       "category_label": nested(self.category_labels),
                       "failure": dict(sorted(self.failures.items())),
                       "echoed_attempts": self.echoed_attempts,
                       "leak_clusters": {s: len(c) for s, c in sorted(self.clusters.items())}},
            "filter": {label: f.summary() for label, f in sorted(self.filters.items())},
            "scores": {key: s.summary() for key, s in sorted(self.scores.items())},
        }
