"""Prometheus metrics of the validator: gauges read from the race log at scrape time, the rules
fingerprint as an info gauge, the counters the work loop updates after each tick, and the LLM
providers' health (``shoppingbench.proxy.health``: the agents' inference provider and the judge)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import get_args

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from arena.race.state import SubmissionStatus
from arena.validator.api.views.view import ArenaView
from arena.validator.service import TickReport
from shoppingbench.proxy.health import PROVIDER_REGISTRY


class ProviderHealthCollector(Collector):
    """The process's provider-health metrics (calls, provider errors by kind, latency, last success, per
    provider), served in the app's registry beside its own."""

    def collect(self) -> Iterator[Metric]:
        yield from PROVIDER_REGISTRY.collect()


class StateCollector(Collector):
    """Gauges computed from the race log at scrape time, and ``arena_rules_info`` (1, labelled with the
    rules fingerprint and version) when the view knows its rules."""

    def __init__(self, view: ArenaView) -> None:
        self.view = view

    def collect(self) -> Iterator[GaugeMetricFamily]:
        state = self.view.state()
        events = GaugeMetricFamily("arena_race_events", "Events in the race log")
        events.add_metric([], state.events)
        by_status = GaugeMetricFamily("arena_submissions", "Submissions by status", labels=["status"])
        counts: dict[str, int] = {}
        for submission in state.submissions.values():
            counts[submission.status] = counts.get(submission.status, 0) + 1
        for status in get_args(SubmissionStatus):
            by_status.add_metric([status], counts.get(status, 0))
        running = GaugeMetricFamily("arena_race_running", "1 while a race runs")
        running.add_metric([], 1 if state.running else 0)
        pending = GaugeMetricFamily("arena_race_pending_runs", "Entrants of the running race owing a result")
        pending.add_metric([], len(state.running.pending) if state.running else 0)
        embargoed = GaugeMetricFamily("arena_embargoed_agents", "Winning agents whose code is still private")
        embargoed.add_metric([], len(state.embargoed))
        yield from (events, by_status, running, pending, embargoed)
        if self.view.rules is not None:
            rules = GaugeMetricFamily("arena_rules_info", "The rules this validator runs (parts: GET /rules)",
                                      labels=["fingerprint", "version"])
            rules.add_metric([self.view.rules.fingerprint, str(self.view.rules.version)], 1)
            yield rules


class TickMetrics:
    """Counters the work loop updates after each tick."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.ticks = Counter("arena_validator_ticks", "Completed ticks", registry=registry)
        self.failures = Counter("arena_validator_tick_failures", "Ticks that raised", registry=registry)
        self.weights = Counter("arena_validator_weights_set", "Weight vectors set on chain",
                               registry=registry)
        self.runs = Counter("arena_validator_suite_runs", "Qualifying and race runs scored", ["kind"],
                            registry=registry)

    def observe(self, report: TickReport) -> None:
        self.ticks.inc()
        if report.weights_set_at is not None:
            self.weights.inc()
        self.runs.labels("race").inc(len(report.race_results))
        self.runs.labels("qualifying").inc(report.qualifying_runs)
