"""The `arena` command as people run it: real subprocesses, a throwaway data root, offline model."""

from __future__ import annotations

import gzip
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import orjson
import pytest
from typer.testing import CliRunner

ARENA = [sys.executable, "-m", "neurons.cli"]


REPO = Path(__file__).resolve().parents[2]


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "ARENA_HOME": str(home), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
            "ARENA_LOG_FORMAT": "json"}


def _run(args: list[str], home: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ARENA, *args], env=_env(home), capture_output=True, text=True, timeout=timeout,
                          cwd=REPO, check=False)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_demo_builds_the_world_once_and_scores_every_problem(tmp_path: Path) -> None:
    first = _run(["demo", "--products", "1500", "--per-category", "3", "--workers", "2"], tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    for label in ("product", "shop", "voucher", "all (ASR)"):
        assert label in first.stdout
    assert "sample_world_generating" in first.stderr
    (results,) = (tmp_path / "results").glob("demo-*.jsonl")
    attempts = [orjson.loads(line) for line in results.read_bytes().splitlines()]
    assert len(attempts) == 9
    assert {a["score"]["category"] for a in attempts} == {"product", "shop", "voucher"}
    assert all(a["steps"] and a["score"]["error"] is None for a in attempts)

    again = _run(["demo", "--products", "1500", "--per-category", "3"], tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "sample_world_reused" in again.stderr and "sample_world_generating" not in again.stderr


def test_catalog_import_reports_bad_lines_and_strict_stops(tmp_path: Path) -> None:
    good = orjson.dumps({"id": "1", "contents": "red mug", "product": {
        "product_id": "1", "shop_id": "9", "title": "Red Mug", "price": 10.0}}).decode()
    source = tmp_path / "documents.jsonl"
    source.write_text(f"{good}\n{{not json\n")
    lenient = _run(["catalog", "import", str(source), "--catalog-dir", str(tmp_path / "c1")], tmp_path)
    assert lenient.returncode == 3, lenient.stderr[-2000:]
    assert "imported 1 of 2 lines (1 bad)" in lenient.stdout
    assert "line 2:" in lenient.stderr and "--max-bad" in lenient.stderr
    assert not (tmp_path / "c1" / "catalog.json").exists()

    accepted = _run(["catalog", "import", str(source), "--catalog-dir", str(tmp_path / "c1"),
                     "--max-bad", "1"], tmp_path)
    assert accepted.returncode == 0, accepted.stderr[-2000:]
    assert "imported 1 of 2 lines (1 bad)" in accepted.stdout

    strict = _run(["catalog", "import", str(source), "--catalog-dir", str(tmp_path / "c2"), "--strict"],
                  tmp_path)
    assert strict.returncode == 2
    assert "line 2" in strict.stderr


def _documents(numbers: range) -> bytes:
    return b"".join(orjson.dumps({"id": str(n), "contents": f"red mug {n * 7919 % 1009}", "product": {
        "product_id": str(n), "shop_id": "9", "title": f"Red Mug {n}", "price": 10.0}}) + b"\n"
        for n in numbers)


def test_catalog_import_refuses_a_truncated_gzip(tmp_path: Path) -> None:
    whole = gzip.compress(_documents(range(400)))
    source = tmp_path / "documents.jsonl.gz"
    source.write_bytes(whole[: len(whole) // 2])

    result = _run(["catalog", "import", str(source), "--catalog-dir", str(tmp_path / "c")], tmp_path)

    assert result.returncode == 2, result.stderr[-2000:]
    assert "ended early or is corrupt at line" in result.stderr and "re-download it" in result.stderr
    assert not (tmp_path / "c" / "catalog.json").exists()


def test_catalog_import_refuses_a_plain_file_cut_mid_line(tmp_path: Path) -> None:
    whole = _documents(range(40))
    catalog = tmp_path / "c"
    good = tmp_path / "documents.jsonl"
    good.write_bytes(whole)
    assert _run(["catalog", "import", str(good), "--catalog-dir", str(catalog)], tmp_path).returncode == 0
    good.write_bytes(whole[: len(whole) // 2])

    result = _run(["catalog", "import", str(good), "--catalog-dir", str(catalog)], tmp_path)

    assert result.returncode == 2, result.stderr[-2000:]
    assert "the file ended early" in result.stderr
    assert orjson.loads((catalog / "catalog.json").read_bytes())["index"]["documents"] == 40


def test_catalog_import_of_shards_replaces_what_the_directory_held(tmp_path: Path) -> None:
    shards = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    shards[0].write_bytes(_documents(range(0, 5)))
    shards[1].write_bytes(_documents(range(5, 8)))
    catalog = tmp_path / "c"
    first = _run(["catalog", "import", *map(str, shards), "--catalog-dir", str(catalog)], tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "catalog " + str(catalog) + ": 8 products" in first.stdout

    again = _run(["catalog", "import", str(shards[1]), "--catalog-dir", str(catalog)], tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"imported 3 of 3 lines (0 bad) from {shards[1]}" in again.stdout
    assert orjson.loads((catalog / "catalog.json").read_bytes())["index"]["documents"] == 3


def test_serving_a_missing_catalog_says_how_to_build_one(tmp_path: Path) -> None:
    result = _run(["tools", "serve", "--catalog-dir", str(tmp_path / "nothing")], tmp_path)
    assert result.returncode == 2
    assert "arena catalog import" in result.stderr


def test_tools_serve_answers_and_logs_json(tmp_path: Path, shared_samples: Path) -> None:
    catalog = tmp_path / "catalog"
    built = _run(["catalog", "import", str(shared_samples / "documents_sample.jsonl"),
                  "--catalog-dir", str(catalog)], tmp_path)
    assert built.returncode == 0, built.stderr[-2000:]
    port = _free_port()
    server = subprocess.Popen([*ARENA, "tools", "serve", "--catalog-dir", str(catalog), "--port", str(port)],
                              env=_env(tmp_path), cwd=REPO, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).json()
                break
            except httpx.TransportError:
                assert server.poll() is None and time.monotonic() < deadline, "tool server did not start"
                time.sleep(0.2)
        assert health == {"status": "ok", "products": 2}
        hits = httpx.get(f"http://127.0.0.1:{port}/search/find_product",
                         params={"q": "water bottle", "page": 1}).json()
        assert sorted(h["product_id"] for h in hits) == ["900000001", "900000002"]
    finally:
        server.terminate()
        _, stderr = server.communicate(timeout=30)
    events = [orjson.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    assert any("/search/find_product" in e.get("event", "") for e in events), stderr[-2000:]


HELP_WITHOUT_SDK = """
import sys
from typer.testing import CliRunner
from {module} import app
for args in {commands!r}:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, (args, result.output)
print(sorted(name for name in sys.modules
             if name.split(".")[0] in ("bittensor", "bittensor_core", "torch", "transformers")))
"""


@pytest.mark.parametrize(("module", "commands"), [
    ("neurons.miner", [["--help"], ["test", "--help"], ["submit", "--help"], ["status", "--help"]]),
    ("neurons.cli", [["--help"], ["network-demo", "--help"], ["demo", "--help"]]),
    ("neurons.validator", [["--help"], ["run", "--help"], ["held-out", "--help"], ["peers", "--help"]]),
])
def test_help_answers_without_importing_the_sdk_or_the_models(module: str, commands: list[list[str]]) -> None:
    """Neither bittensor nor torch or transformers: `--help` answers before anything heavy loads."""
    code = HELP_WITHOUT_SDK.format(module=module, commands=commands)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_wallet_and_chain_flags_accept_the_sdk_and_btcli_names() -> None:
    from neurons.miner import app as miner_app

    for command in ("submit", "status"):
        result = CliRunner().invoke(miner_app, [command, "--help"], env={"COLUMNS": "250"})
        for flag in ("--wallet.name", "--wallet.hotkey", "--wallet.path", "--subtensor.network",
                     "--subtensor.chain_endpoint", "--wallet", "--network", "--wallet-name", "--chain"):
            assert flag in result.output, (command, flag)
    from neurons.validator import app as validator_app

    for command in ("run", "peers"):
        result = CliRunner().invoke(validator_app, [command, "--help"], env={"COLUMNS": "250"})
        for flag in ("--wallet.name", "--wallet.hotkey", "--wallet.path", "--subtensor.network",
                     "--subtensor.chain_endpoint", "--network", "--chain"):
            assert flag in result.output, (command, flag)


def test_validator_run_takes_the_sdks_network_name(tmp_path: Path) -> None:
    """``--subtensor.network local`` is the SDK's local subtensor node, never the embedded chain: with no
    node there, `validator run` says the endpoint is unreachable (exit 5) instead of opening a SQLite file."""
    from neurons.validator import app as validator_app
    from tests.chain_support import make_wallet

    make_wallet(tmp_path / "wallets", "validator")
    result = CliRunner().invoke(validator_app, ["run", "--once", "--home", str(tmp_path), "--wallet.name",
                                                "validator", "--wallet.path", str(tmp_path / "wallets"),
                                                "--subtensor.network", "local"])
    assert result.exit_code == 5, result.output
    assert "ws://127.0.0.1:9944" in result.output and not (tmp_path / "local-chain.sqlite3").exists()
