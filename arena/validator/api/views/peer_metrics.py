"""Prometheus gauges of the validator's agreement with the other validators, from the last peer check
(``arena.validator.peers.PeerWatch``); nothing is exported before the first check, and a figure the check
could not compute (no weights to compare yet) is left out rather than shown as 0."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from arena.validator.agreement import AgreementReport


class PeerCollector(Collector):
    """The agreement gauges of the report ``last()`` returns (``None``: no check yet)."""

    def __init__(self, last: Callable[[], AgreementReport | None]) -> None:
        self.last = last

    def collect(self) -> Iterator[GaugeMetricFamily]:
        report = self.last()
        if report is None:
            return
        checked = GaugeMetricFamily(
            "arena_peer_check_block", "Block of the last look at the other validators"
        )
        checked.add_metric([], report.block)
        other = GaugeMetricFamily(
            "arena_peers_other_fingerprint",
            "Other validators whose GET /rules serves another rules fingerprint",
        )
        other.add_metric([], report.other_fingerprints)
        unknown = GaugeMetricFamily(
            "arena_peers_unknown_rules", "Other validators whose rules could not be read (no axon, no answer)"
        )
        unknown.add_metric([], report.unknown_rules)
        yield from (checked, other, unknown)
        if report.stake_share is not None:
            share = GaugeMetricFamily(
                "arena_peer_agreement_stake_share",
                "Share of the other validators' stake whose weights match ours within "
                "the tolerance (by count when they hold no stake)",
                labels=["weighted_by"],
            )
            share.add_metric([report.weighted_by], report.stake_share)
            yield share
        if report.max_disagreement is not None and report.max_disagreement_hotkey is not None:
            worst = GaugeMetricFamily(
                "arena_peer_max_disagreement",
                "Largest difference of one uid's weight share to another validator",
                labels=["hotkey"],
            )
            worst.add_metric([report.max_disagreement_hotkey], report.max_disagreement)
            yield worst
        distance = GaugeMetricFamily(
            "arena_peer_weight_distance",
            "Largest difference of one uid's weight share to this validator",
            labels=["hotkey", "uid"],
        )
        rules = GaugeMetricFamily(
            "arena_peer_rules_info",
            "1 per other validator, labelled with whether its rules match ours",
            labels=["hotkey", "uid", "status"],
        )
        for peer in report.peers:
            if peer.distance is not None:
                distance.add_metric([peer.hotkey, str(peer.uid)], peer.distance)
            rules.add_metric([peer.hotkey, str(peer.uid), peer.rules], 1)
        yield from (distance, rules)
