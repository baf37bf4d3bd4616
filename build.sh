#!/usr/bin/env bash
# serverless-retry build entry point.
#   ./build.sh package   dist/serverless-retry.zip (reproducible)
#   ./build.sh test      lint, types and the whole test suite
#   ./build.sh demo      the scheduled-retry flow on the embedded local AWS emulator
#                        (./build.sh demo self-healing | native-retry | stream: the other patterns;
#                        stream puts a poison record on a Kinesis shard, ours beside Lambda's blocking)
#   ./build.sh bench     benchmarks (ratios against a baseline measured in the same run)
#   ./build.sh test-aws  opt-in tier against real AWS (never in CI): without SERVERLESS_RETRY_AWS_TIER=yes,
#                        --region and credentials it only explains itself, with time and cost
#                        (docs/testing-against-aws.md)
#   ./build.sh release   dist/: sdists and wheels of serverless-retry and serverless-retry-tools, the
#                        function zip, the layer zip and SHA256SUMS (scripts/release.py)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")" && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
# shellcheck source=scripts/py-env.sh
source scripts/py-env.sh
PY="${PYTHON:-python3}"

# No bytecode at install time: pip would compile every module of every dependency (most never
# imported, e.g. sympy under moto[server]); Python compiles what is imported, once, on first use.
# With the current pip that makes a fresh .venv ~3x faster (~30 s instead of ~95 s here).
PIP_FAST=(--no-compile)

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# `pip install ARGS` into the virtualenv of Python $1: by uv (installed into .venv beside pip) with
# pip's configuration carried over, ~4 s where pip takes ~20 s of a busy core on a fresh clone
# (scripts/uv_install.py); by pip itself when uv is missing, fails, or a pip setting has no exact
# uv equivalent. Without bytecode either way: uv compiles none unless asked.
install_into() {
  local python="$1"
  shift
  if [ -x "$VENV/bin/uv" ] && "$VENV/bin/python" scripts/uv_install.py --uv "$VENV/bin/uv" --python "$python" -- "$@"; then
    return 0
  fi
  [ -x "$VENV/bin/uv" ] && log "uv did not install $*: installing with pip"
  "$python" -m ensurepip > /dev/null 2>&1 || true  # a virtualenv made without pip
  "$python" -m pip install -q --disable-pip-version-check "${PIP_FAST[@]}" "$@"
}

# pip and uv into .venv. pip stays (scripts/build_package.py builds the zips with it); uv is a build
# tool only (install_into). The machine's own pip does it when it can (pip >= 22.3 has --python);
# otherwise ensurepip provides a pip first.
bootstrap_pip() {
  local pip=(install -q --disable-pip-version-check "${PIP_FAST[@]}" --upgrade)
  if "$PY" -m pip --python "$VENV/bin/python" "${pip[@]}" pip uv; then
    return 0
  fi
  "$VENV/bin/python" -m pip --version > /dev/null 2>&1 || "$VENV/bin/python" -m ensurepip > /dev/null
  "$VENV/bin/python" -m pip "${pip[@]}" pip uv || {
    log "uv could not be installed: pip installs everything"
    "$VENV/bin/python" -m pip "${pip[@]}" pip
  }
}

# Create or reuse .venv; reinstall only when the dependency declarations changed. A command given as
# arguments (one that needs only the venv's Python and pip, e.g. package_zips) runs beside the
# install once pip is current: on a fresh clone both mostly wait on the package index.
# ON_VENV_READY names a command that needs the whole venv: it runs once the install is done, still
# beside that command.
ensure_venv() {
  if [ ! -x "$VENV/bin/python" ]; then
    log "creating virtualenv .venv"
    # Without ensurepip's pip: it byte-compiles pip, ~7 s here. bootstrap_pip puts pip in.
    "$PY" -m venv --without-pip "$VENV"
  fi
  local stamp="$VENV/.serverless-retry-deps"
  local want
  want="$(cat pyproject.toml requirements/*.txt | sha256sum | cut -d' ' -f1)"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    log "installing dependencies into .venv"
    bootstrap_pip
    local beside_pid=""
    if [ "$#" -gt 0 ]; then
      "$@" &
      beside_pid=$!
    fi
    install_into "$VENV/bin/python" -e ".[dev]"
    [ -z "${ON_VENV_READY:-}" ] || "$ON_VENV_READY"
    if [ -n "$beside_pid" ]; then
      wait "$beside_pid" || { echo "$* failed" >&2; exit 1; }
    fi
    echo "$want" > "$stamp"
  elif [ -n "${ON_VENV_READY:-}" ]; then
    local beside_pid=""
    if [ "$#" -gt 0 ]; then
      "$@" &
      beside_pid=$!
    fi
    "$ON_VENV_READY"
    if [ -n "$beside_pid" ]; then
      wait "$beside_pid" || { echo "$* failed" >&2; exit 1; }
    fi
  elif [ "$#" -gt 0 ]; then
    "$@"
  fi
}

# checkov pins many libraries of its own: it lives in its own virtualenv so it cannot move ours.
CHECKOV_VENV="$ROOT/.venv-checkov"
install_checkov() {
  local want
  want="$(sha256sum requirements/checkov.txt | cut -d' ' -f1)"
  if [ ! -x "$CHECKOV_VENV/bin/checkov" ] || [ "$(cat "$CHECKOV_VENV/.stamp" 2>/dev/null)" != "$want" ]; then
    log "installing checkov into .venv-checkov"
    # Without pip (ensurepip takes ~7 s): uv installs into it; install_into adds pip if it falls back.
    rm -rf "$CHECKOV_VENV"
    "$PY" -m venv --without-pip "$CHECKOV_VENV"
    install_into "$CHECKOV_VENV/bin/python" -r requirements/checkov.txt
    echo "$want" > "$CHECKOV_VENV/.stamp"
  fi
}

cmd_package() {
  ensure_venv package_zips
}

# The zips, with the venv's Python and pip alone (scripts/build_package.py imports nothing else).
package_zips() {
  log "packaging dist/serverless-retry.zip"
  "$VENV/bin/python" scripts/build_package.py --out dist/serverless-retry.zip
  # Each example ships its processor in the same zip as the package (the Lambda's code).
  log "packaging dist/examples/scheduled-retry.zip"
  "$VENV/bin/python" scripts/build_package.py \
    --extra examples/scheduled-retry/src/orders_example --out dist/examples/scheduled-retry.zip
  log "packaging dist/examples/self-healing.zip"
  "$VENV/bin/python" scripts/build_package.py \
    --extra examples/self-healing/src/self_healing_example --out dist/examples/self-healing.zip
  log "packaging dist/examples/native-retry.zip"
  "$VENV/bin/python" scripts/build_package.py \
    --extra examples/native-retry/src/native_orders --out dist/examples/native-retry.zip
  log "packaging dist/examples/stream-retry.zip"
  "$VENV/bin/python" scripts/build_package.py \
    --extra examples/stream-retry/src/stream_example --out dist/examples/stream-retry.zip
}

# What the tests need besides .venv, made beside its install (once uv is in it): checkov's own
# virtualenv and the zips.
test_prerequisites() {
  install_checkov &
  local checkov_pid=$!
  package_zips
  wait "$checkov_pid" || { echo "installing checkov into .venv-checkov failed" >&2; return 1; }
}

# Python bytecode for what collecting the suite imports (pytest, moto, boto3, hypothesis, the
# packages), written once to build/pycache by one collection. On a fresh clone every xdist worker
# (and each stack's emulator) would otherwise compile the same modules at the same time: four
# processes compiling ~6 s of CPU each, the first ~20 s of the run. Failures are pytest's to report.
warm_bytecode() {
  "$VENV/bin/python" -m pytest -p no:cacheprovider -n 0 --collect-only -q > build/warm-bytecode.log 2>&1 || true
}

# Once .venv is complete (still beside test_prerequisites): the Lambda runtime Python and the lint
# step, in the background, and the bytecode.
LAMBDA_PYTHON_PID=""
LINT_PID=""
LINT_LOG="build/lint.log"
test_venv_ready() {
  # The Python the example's functions declare, with boto3 only, for the local worker (built once
  # under build/lambda-python; tests that need it first wait on its lock). Not niced: the first
  # integration tests, minutes of logical time on a real-time budget, wait for it.
  "$VENV/bin/python" -m serverless_retry_tools.local.runtime.lambda_python python3.12 > build/lambda-python.log 2>&1 &
  LAMBDA_PYTHON_PID=$!
  start_lint
  warm_bytecode
}

# Lint and types need no test, and no test needs them: they start as soon as .venv is complete, on
# the core warm_bytecode leaves idle (it is one process), and report when pytest is done. Niced:
# later they take the CPU the tests leave idle (the suite waits on logical-clock timers now and
# then) rather than slow them.
start_lint() {
  log "ruff, ruff format --check, mypy (strict), mkdocs build --strict: beside the tests, reported after them"
  (
    set -e
    renice -n 10 -p "$BASHPID" > /dev/null || true
    "$VENV/bin/ruff" check lambda_src tools_src tests benchmarks scripts examples
    "$VENV/bin/ruff" format --check lambda_src tools_src tests benchmarks scripts examples
    "$VENV/bin/mypy"
    # The documentation site: a broken link, a missing anchor or a page left out of the nav fails.
    NO_MKDOCS_2_WARNING=1 "$VENV/bin/mkdocs" build --strict --quiet --site-dir build/site
  ) > "$LINT_LOG" 2>&1 &
  LINT_PID=$!
}

cmd_test() {
  mkdir -p build
  ON_VENV_READY=test_venv_ready ensure_venv test_prerequisites
  # shellcheck source=scripts/tf-env.sh
  source scripts/tf-env.sh
  export SERVERLESS_RETRY_CHECKOV="$CHECKOV_VENV/bin/checkov"
  # Four workers on two cores: the suite often waits (logical-clock timers, emulators, terraform
  # against moto). Two workers at most hold waiting work (tests/scheduling.py's lanes), the timing-
  # bound integration tier and the stacks' groups, the run's longest chain; the other two keep the
  # cores busy meanwhile. With three, one busy worker left the cores ~40 % idle until the waiting
  # lanes ended and its busy work was still ~85 s from done.
  # Terraform, checkov and lint are niced, so the timing-bound integration tests get the cores first.
  # SERVERLESS_RETRY_TEST_WORKERS overrides; tests/conftest.py and tests/scheduling.py say how the
  # suite splits.
  log "pytest (${SERVERLESS_RETRY_TEST_WORKERS:-4} workers)"
  local status=0
  "$VENV/bin/python" -m pytest -n "${SERVERLESS_RETRY_TEST_WORKERS:-4}" "$@" || status=$?
  log "ruff, mypy, mkdocs"
  if ! wait "$LINT_PID"; then
    status=1
  fi
  cat "$LINT_LOG"
  wait "$LAMBDA_PYTHON_PID" || log "no Lambda runtime Python prepared (see build/lambda-python.log): workers fell back"
  return "$status"
}

cmd_demo() {
  ensure_venv package_zips
  if ! command -v terraform >/dev/null 2>&1; then
    echo "the demo needs terraform on PATH: https://developer.hashicorp.com/terraform/install" >&2
    exit 2
  fi
  # shellcheck source=scripts/tf-env.sh
  source scripts/tf-env.sh
  # The functions' Lambda runtime Python, prepared while Terraform applies (workers wait on its lock):
  # on a fresh machine, building it when the first message arrives let messages sit unprocessed for
  # ~30 real seconds, most of an hour of logical time at x100.
  mkdir -p build
  "$VENV/bin/python" -m serverless_retry_tools.local.runtime.lambda_python python3.12 > build/lambda-python.log 2>&1 &
  # Logs, Terraform state and the per-message accounting of each run stay under build/demo/.
  local work
  work="$ROOT/build/demo/$(date -u +%Y%m%dT%H%M%SZ)"
  "$VENV/bin/serverless-retry" demo --work-dir "$work" "$@"
}

cmd_bench() {
  # The zips first: handler_imports.py and redelivery_accuracy.py measure dist/serverless-retry.zip.
  ensure_venv package_zips
  local b
  for b in benchmarks/*.py; do
    [[ "$(basename "$b")" == _* ]] && continue  # shared helpers, not benchmarks
    log "$b"
    "$VENV/bin/python" "$b"
  done
}

# The opt-in tier against real AWS (docs/testing-against-aws.md). The gate first, with the venv only:
# without the opt-in or credentials it explains itself (time, cost, how to opt in) and nothing is
# built or called. Open: the zips, Terraform from the offline mirror, then the run (terraform init
# per example).
cmd_test_aws() {
  ensure_venv
  # shellcheck source=scripts/tf-env.sh
  source scripts/tf-env.sh
  local gate=0
  "$VENV/bin/python" -m serverless_retry_tools.aws_tier --gate-only "$@" || gate=$?
  if [ "$gate" -eq 10 ]; then
    return 0
  elif [ "$gate" -ne 0 ]; then
    return "$gate"
  fi
  package_zips
  if ! command -v terraform >/dev/null 2>&1; then
    echo "test-aws needs terraform on PATH: https://developer.hashicorp.com/terraform/install" >&2
    exit 2
  fi
  "$VENV/bin/python" -m serverless_retry_tools.aws_tier "$@"
}

cmd_release() {
  ensure_venv
  log "building the release into dist/"
  "$VENV/bin/python" scripts/release.py "$@"
}

case "${1:-}" in
  package) shift; cmd_package "$@" ;;
  test) shift; cmd_test "$@" ;;
  demo) shift; cmd_demo "$@" ;;
  bench) shift; cmd_bench "$@" ;;
  test-aws) shift; cmd_test_aws "$@" ;;
  release) shift; cmd_release "$@" ;;
  *) echo "usage: $0 {package|test|test-aws|demo|bench|release} [args]" >&2; exit 2 ;;
esac
