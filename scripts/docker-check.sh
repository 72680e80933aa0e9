#!/usr/bin/env bash
# Build the Docker images and check them for real. Idempotent; exits non-zero on the first failure.
#
#   bash scripts/docker-check.sh                 everything below
#   bash scripts/docker-check.sh --sandbox-only  steps 1-3: engine, base image, sandbox image (what the
#                                                docker-marked tests need; .ci/run uses this)
#
# 1. A Docker engine: if none answers, Debian's docker.io is installed (as root with apt) and dockerd
#    started with --iptables=false --bridge=none (what these machines allow; a host with its own engine
#    keeps it untouched).
# 2. Base images: where the public registry cannot be reached, a Debian bookworm root filesystem with
#    python3 and python3-venv is built with mmdebstrap and imported as local/bookworm-python:3.11, and
#    PostgreSQL is built from Debian's packages (docker/postgres) as local/postgres:15.
# 3. The sandbox image (docker/sandbox).
# 4. The validator image and the worker image (a CPU variant where no NVIDIA GPU is present: no `gpu`
#    extra, no DeepSpeed, the CPU torch), each timed, and their sizes.
# 5. The docker backend for real: the docker-marked pytest tests (the hostile-agent battery and the
#    runner tests on both backends), `miner test` of the reference agents on both backends with the
#    same scores, and `benchmarks.harness` on both backends side by side.
# 6. The validator under compose with PostgreSQL and its agents in the docker backend: a local-chain
#    round (docker/checks/round.py seeds it; a miner submits over HTTP), /health, the leaderboard page,
#    /metrics, and the same state after `restart`.
# The figures go to $DOCKER_CHECK_DIR/summary.json (default /var/tmp/docker-check).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
WORK=${DOCKER_CHECK_DIR:-/var/tmp/docker-check}
TORCH_VERSION=${TORCH_VERSION:-2.13.0}
mkdir -p "$WORK"
SUMMARY="$WORK/summary.json"
echo '{}' > "$SUMMARY"

say() { echo "docker-check: $*" >&2; }
fail() { say "FAILED: $*"; exit 1; }
record() {  # record KEY JSON-VALUE into the summary
  python3 - "$SUMMARY" "$1" "$2" <<'PY'
import json, sys
path, key, value = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
summary = json.load(open(path))
summary[key] = value
json.dump(summary, open(path, "w"), indent=1, sort_keys=True)
PY
}
apt_install() {
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || fail "install $* (Debian packages) and run again"
  say "installing $*"
  apt-get install -y -qq "$@" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq "$@" >/dev/null; }
}

# --- 1. the engine ------------------------------------------------------------------------------
if ! docker info >/dev/null 2>&1; then
  command -v dockerd >/dev/null || apt_install docker.io
  say "no engine answers: starting dockerd (log: $WORK/dockerd.log)"
  nohup dockerd --iptables=false --bridge=none >"$WORK/dockerd.log" 2>&1 &
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || fail "dockerd did not start; see $WORK/dockerd.log"
fi
say "engine $(docker version --format '{{.Server.Version}}'), storage $(docker info --format '{{.Driver}}')"

# A client that builds with BuildKit (the Dockerfiles mount build secrets): the buildx plugin, or a
# Docker 19-22 client with DOCKER_BUILDKIT=1 (Debian's 20.10 is one).
BUILD=()
for client in $(type -ap docker); do
  if "$client" buildx version >/dev/null 2>&1; then BUILD=("$client" build); break; fi
  case "$("$client" version --format '{{.Client.Version}}' 2>/dev/null)" in
    19.*|20.*|21.*|22.*) BUILD=(env DOCKER_BUILDKIT=1 "$client" build); break ;;
  esac
done
[ ${#BUILD[@]} -gt 0 ] || fail "no docker client here builds with BuildKit: install the buildx plugin"
BUILD+=(--network host)
# Where pip's route to PyPI re-signs TLS, its CA bundle goes in as a build secret.
PIP_CA=${PIP_CERT:-$(pip config get global.cert 2>/dev/null || true)}
if [ -n "$PIP_CA" ] && [ -s "$PIP_CA" ]; then BUILD+=(--secret "id=pip_ca,src=$PIP_CA"); fi

build() {  # build TAG ARGS... : timed, quiet, log in $WORK
  local tag=$1 started seconds size log="$WORK/build-${1//[:\/]/_}.log"
  shift
  say "building $tag (log: $log)"
  started=$(date +%s)
  "${BUILD[@]}" --progress plain -t "$tag" "$@" >"$log" 2>&1 || { tail -30 "$log" >&2; fail "building $tag"; }
  seconds=$(( $(date +%s) - started ))
  size=$(docker image inspect --format '{{.Size}}' "$tag")
  say "$tag: ${seconds} s, $(( size / 1000000 )) MB"
  record "image:$tag" "{\"build_s\": $seconds, \"size_mb\": $(( size / 1000000 ))}"
}

# --- 2. base images ---------------------------------------------------------------------------------
BASE_ARGS=()
POSTGRES_IMAGE=${POSTGRES_IMAGE:-}
if timeout 60 docker pull -q python:3.11-slim-bookworm >/dev/null 2>&1; then
  say "the public registry answers: public base images"
else
  say "no registry reachable: base images from Debian's packages"
  if ! docker image inspect local/bookworm-python:3.11 >/dev/null 2>&1; then
    command -v mmdebstrap >/dev/null || apt_install mmdebstrap
    say "mmdebstrap bookworm with python3, python3-venv (about a minute)"
    started=$(date +%s)
    mmdebstrap --quiet --variant=minbase --include=python3,python3-venv,ca-certificates \
      --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
      --dpkgopt='path-exclude=/usr/share/locale/*' bookworm "$WORK/base.tar" || fail "mmdebstrap"
    docker import "$WORK/base.tar" local/bookworm-python:3.11 >/dev/null
    rm -f "$WORK/base.tar"
    record "image:local/bookworm-python:3.11" "{\"build_s\": $(( $(date +%s) - started ))}"
  fi
  BASE_ARGS=(--build-arg BASE_IMAGE=local/bookworm-python:3.11)
  POSTGRES_IMAGE=local/postgres:15
fi

# --- 3. the sandbox image -----------------------------------------------------------------------------
build shopping-arena-sandbox:latest "${BASE_ARGS[@]}" docker/sandbox
if [ "${1:-}" = --sandbox-only ]; then
  say "sandbox image ready; the docker-marked tests can run"
  exit 0
fi

# --- 4. validator and worker images ------------------------------------------------------------------
[ -x .venv/bin/python ] || bash scripts/bootstrap.sh
TORCH_ARGS=()
# A CPU torch wheel on local disk (these machines carry one) is served to the build on loopback.
for dir in ${PIP_FIND_LINKS:-} $(pip config get global.find-links 2>/dev/null || true); do
  wheel=$(ls "$dir"/torch-"$TORCH_VERSION"*cpu*.whl 2>/dev/null | head -1 || true)
  if [ -n "$wheel" ]; then
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    python3 -m http.server --bind 127.0.0.1 "$port" --directory "$dir" >"$WORK/wheels.log" 2>&1 &
    WHEELS_PID=$!
    trap 'kill $WHEELS_PID 2>/dev/null || true' EXIT
    sleep 1
    TORCH_ARGS=(--build-arg "TORCH_FIND_LINKS=http://127.0.0.1:$port/")
    say "torch $TORCH_VERSION from $wheel"
    break
  fi
done
build shopping-arena-validator:latest "${BASE_ARGS[@]}" "${TORCH_ARGS[@]}" -f docker/validator/Dockerfile .
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
  WORKER_TAG=shopping-arena-worker:latest
  build "$WORKER_TAG" "${BASE_ARGS[@]}" -f docker/worker/Dockerfile .
else
  say "no NVIDIA GPU: the worker's CPU variant (no gpu extra, no DeepSpeed, CPU torch)"
  [ ${#TORCH_ARGS[@]} -gt 0 ] || TORCH_ARGS=(--build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu)
  WORKER_TAG=shopping-arena-worker:cpu
  build "$WORKER_TAG" "${BASE_ARGS[@]}" "${TORCH_ARGS[@]}" --build-arg EXTRAS= \
    --build-arg DEEPSPEED_VERSION= -f docker/worker/Dockerfile .
fi
docker run --rm --network none shopping-arena-validator:latest --help >/dev/null || fail "validator --help"
docker run --rm --network none "$WORKER_TAG" --help >/dev/null || fail "worker --help"
if [ -n "$POSTGRES_IMAGE" ]; then
  build "$POSTGRES_IMAGE" "${BASE_ARGS[@]}" docker/postgres
fi

# --- 5. the docker backend for real -----------------------------------------------------------------
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 ARENA_HOME="$WORK/home"
say "docker-marked tests (hostile agents, runner) on both backends"
.venv/bin/python -m pytest -q -m docker -p no:cacheprovider tests/ >"$WORK/pytest-docker.log" 2>&1 \
  || { tail -30 "$WORK/pytest-docker.log" >&2; fail "docker-marked tests"; }
if grep -q " skipped" "$WORK/pytest-docker.log"; then tail -5 "$WORK/pytest-docker.log" >&2; fail "docker tests skipped"; fi
record pytest_docker "\"$(tail -1 "$WORK/pytest-docker.log")\""

say "miner test of the reference agents on both backends"
for agent in scripted_baseline sub_task react_llm; do
  for backend in namespace docker; do
    .venv/bin/miner test "shoppingbench/agents/$agent.py" --sandbox "$backend" --scripted-llm \
      --per-category 3 --no-store --out "$WORK/miner-$agent-$backend.jsonl" >"$WORK/miner-$agent-$backend.log" 2>&1 \
      || { tail -20 "$WORK/miner-$agent-$backend.log" >&2; fail "miner test $agent --sandbox $backend"; }
  done
  scores=$(.venv/bin/python - "$WORK/miner-$agent-namespace.jsonl" "$WORK/miner-$agent-docker.jsonl" <<'PY'
import json, sys
runs = [{r["problem_id"]: (r["score"], r.get("failure")) for r in map(json.loads, open(p))} for p in sys.argv[1:]]
same = runs[0] == runs[1]
success = sum(s["success"] for s, _ in runs[1].values()) / len(runs[1])
print(json.dumps({"problems": len(runs[1]), "same_scores": same, "success_rate": round(success, 4)}))
sys.exit(0 if same else 1)
PY
) || fail "$agent scores differ between the namespace and docker backends"
  record "miner_test:$agent" "$scores"
  say "$agent: $scores"
done

say "benchmarks.harness on both backends"
.venv/bin/python -m benchmarks.harness --problems 200 --sandbox namespace,docker >"$WORK/harness.log" 2>&1 \
  || { tail -20 "$WORK/harness.log" >&2; fail "benchmarks.harness"; }
record harness "$(tail -1 "$WORK/harness.log")"

# --- 6. the validator under compose -----------------------------------------------------------------
if docker compose version >/dev/null 2>&1; then COMPOSE=(docker compose); else
  command -v docker-compose >/dev/null || apt_install docker-compose
  COMPOSE=(docker-compose)
fi
export POSTGRES_IMAGE=${POSTGRES_IMAGE:-postgres:16-bookworm} API_PORT=${API_PORT:-18090}
export WALLET_DIR="$WORK/wallets"
mkdir -p "$WALLET_DIR"
DC=("${COMPOSE[@]}" -p arena-check -f docker/compose.yaml -f docker/checks/compose.check.yaml)
say "compose ($("${COMPOSE[@]}" version --short 2>/dev/null || echo v1)): a local-chain round on an empty volume"
"${DC[@]}" down -v >/dev/null 2>&1 || true
"${DC[@]}" up -d postgres >/dev/null 2>&1 || fail "compose up postgres"
"${DC[@]}" run --rm --no-deps -T --entrypoint python validator /checks/round.py seed >"$WORK/round-seed.log" 2>&1 \
  || { tail -20 "$WORK/round-seed.log" >&2; fail "seeding the round"; }
"${DC[@]}" up -d validator >/dev/null 2>&1 || fail "compose up validator"
wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
  local seconds=$1 what=$2
  shift 2
  for _ in $(seq "$seconds"); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done
  "${DC[@]}" logs --tail 40 validator >&2 || true
  fail "$what within $seconds s"
}
report() { "${DC[@]}" exec -T validator python /checks/round.py report 2>/dev/null | tail -1; }
wait_for 180 "/health" curl -sf "http://127.0.0.1:$API_PORT/health"
raced() { [[ "$(report)" == *'"RaceFinished": 1'* ]]; }
alice_qualified() { [[ "$(report)" == *'"QualifyingFinished": 2'* ]]; }
wait_for 300 "the race and its weights" raced
"${DC[@]}" exec -T validator miner submit \
  /opt/venv/lib/python3.11/site-packages/shoppingbench/agents/react_llm.py --wallet-name alice \
  --wallet-path /data/wallets >"$WORK/round-submit.log" 2>&1 || { cat "$WORK/round-submit.log" >&2; fail "miner submit"; }
wait_for 300 "alice's qualifying" alice_qualified
before=$(report)
say "round: $before"
.venv/bin/python - "$before" <<'PY' || fail "the round's state"
import json, sys
state = json.loads(sys.argv[1])
uids, weights = state["uids"], state["weights"] or {}
assert state["events"].get("RaceFinished") == 1 and state["events"].get("SubmissionAccepted") == 2, state
assert str(uids["bob"]) in weights and str(uids["alice"]) not in weights, state
assert state["attempts"] >= 6, state
PY
curl -sf "http://127.0.0.1:$API_PORT/" -o "$WORK/round-leaderboard.html" || fail "the leaderboard page"
grep -q "leaderboard" "$WORK/round-leaderboard.html" || fail "the leaderboard page"
curl -sf "http://127.0.0.1:$API_PORT/metrics" -o "$WORK/round-metrics.txt" || fail "/metrics"
grep -q "^arena_race_events" "$WORK/round-metrics.txt" || fail "/metrics"
"${DC[@]}" logs --no-color validator >"$WORK/round-validator.log" 2>&1 || true
grep -q '"backend": "docker"' "$WORK/round-validator.log" || fail "agents did not run in the docker backend"
"${DC[@]}" restart >/dev/null 2>&1 || fail "compose restart"
wait_for 180 "/health after restart" curl -sf "http://127.0.0.1:$API_PORT/health"
sleep 10  # a few ticks: nothing may be run again or lost
after=$(report)
kept() {  # the part of a report a restart must not change
  .venv/bin/python -c 'import json,sys; d=json.load(sys.stdin); print(d["events"], d["attempts"], d["weights"])'
}
[ "$(kept <<<"$before")" = "$(kept <<<"$after")" ] || fail "the state changed across the restart: $before -> $after"
record compose_round "$after"
"${DC[@]}" down -v >/dev/null 2>&1 || true
say "all checks passed; figures in $SUMMARY"
cat "$SUMMARY"
