"""``validator peers`` against two running validators (real stacks, APIs under uvicorn on loopback, one local
chain file), generating over the small sample world's catalog as ``validator run`` would: the command
computes this validator's rules from the same settings, reads the chain and the peers' ``/rules``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from arena.settings import ArenaSettings
from arena.suites.generators import open_scheduled_sources
from neurons.validator import EXIT_CHAIN, EXIT_DISAGREE, app
from shoppingbench.sample_world import SampleWorld
from tests.arena.validator.test_peers import SHARED, validators


def invoke(tmp_path: Path, world: SampleWorld, hotkey: str, *args: str) -> Any:
    env = {"ARENA_HOME": str(tmp_path / "cli-home"), "ARENA_CHAIN_DB": str(tmp_path / "chain.sqlite3"),
           "ARENA_CATALOG_DIR": str(world.catalog_dir), "ARENA_JUDGE_MODELS": SHARED["judge_models"],
           "ARENA_LOG_FORMAT": "console", "COLUMNS": "250"}
    epoch = ["--race-epoch", SHARED["race_epoch"].isoformat()]  # a flag, as `validator run` takes it
    return CliRunner().invoke(app, ["peers", "--hotkey", hotkey, *epoch, *args], env=env)


@pytest.fixture
def schedule(small_world: SampleWorld) -> Any:
    with open_scheduled_sources(small_world.catalog_dir, ArenaSettings().schedule()) as sources:
        yield sources


def test_validator_peers_prints_agreement_and_names_the_differing_part(
        tmp_path: Path, small_world: SampleWorld, schedule: Any) -> None:
    changes: tuple[dict[str, Any], ...] = ({}, {}, {"race_suite_per_category": 7})
    with validators(tmp_path, *changes, sources=schedule) as (_, (first, same, other)):
        result = invoke(tmp_path, small_world, first.validator.hotkey)
        assert result.exit_code == EXIT_DISAGREE, result.output
        out = result.stdout
        assert f"validator {first.validator.hotkey} at block" in out
        assert f"rules {first.rules.fingerprint[:16]}" in out  # the CLI computed the rules the stack serves
        assert ("weights: 100.0% of the compared peers' count agree within 0.02; largest difference 0.000"
                in out)
        assert "rules: 1 peer(s) with another fingerprint, 0 unknown" in out
        lines = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") > 4}
        assert "match" in lines[same.validator.hotkey] and "agrees (0.000)" in lines[same.validator.hotkey]
        assert "differs: suite_sizes.race.product, suite_sizes.race.shop, suite_sizes.race.voucher" \
            in lines[other.validator.hotkey]

        result = invoke(tmp_path, small_world, first.validator.hotkey, "--json")
        assert result.exit_code == EXIT_DISAGREE, result.output
        report = json.loads(result.stdout)
        assert report["stake_share"] == 1.0 and report["other_fingerprints"] == 1
        assert [(p["hotkey"], p["rules"]) for p in report["peers"]] == [
            (same.validator.hotkey, "match"), (other.validator.hotkey, "differs")]

    with validators(tmp_path / "agreeing", {}, {}, sources=schedule) as (_, (first, second)):
        result = invoke(tmp_path / "agreeing", small_world, first.validator.hotkey, "--json")
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        assert report["stake_share"] == 1.0 and report["peers"][0]["rules"] == "match"
        assert report["fingerprint"] == second.rules.fingerprint


def test_validator_peers_without_a_chain_says_so(tmp_path: Path, small_world: SampleWorld) -> None:
    env = {"ARENA_HOME": str(tmp_path), "ARENA_CATALOG_DIR": str(small_world.catalog_dir)}
    result = CliRunner().invoke(app, ["peers", "--hotkey", "5F", "--chain", "no-such-network"], env=env)
    assert result.exit_code == EXIT_CHAIN and "no-such-network" in result.output
