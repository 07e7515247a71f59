#!/usr/bin/env bash
# The clean-room check: a fresh clone of this repository's HEAD, a new virtual environment, an
# empty pip cache, the README's install command exactly as written (read from the README,
# everything before its `&& freshrag demo`), then `freshrag run --limit 1 --no-probe` on the
# embedded model; one scored row must come out. Run by tests/integration/test_clean_room.py (so
# by tests/run.sh), or by hand:
#   bash tests/clean_room.sh [--demo] [WORKDIR]
# --demo runs `freshrag demo` after the install instead, as a newcomer would: the README's first
# command, timed in its two parts (docs/measurements.md#the-demo). Either way it prints the
# machine, the install time and the run or demo time. Nothing is read from outside the fresh clone.
set -euo pipefail
demo=0
if [ "${1:-}" = "--demo" ]; then demo=1; shift; fi
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d)}
mkdir -p "$work"
git clone --quiet "$repo" "$work/freshrag"
cd "$work/freshrag"
install=$(grep -m1 -E "^pip install .*&& freshrag demo$" README.md | sed 's/ && freshrag demo$//')
[ -n "$install" ] || { echo "clean room: no install command found in README.md" >&2; exit 1; }
python3 -m venv "$work/venv"
export PATH="$work/venv/bin:$PATH" VIRTUAL_ENV="$work/venv" PIP_CACHE_DIR="$work/pip-cache"
unset PYTHONPATH
echo "clean room: machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
     "$(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(python3 --version)"
echo "clean room: $install"
started=$(date +%s)
bash -c "$install"
installed=$(date +%s)
echo "clean room: install took $((installed - started)) s"
unset FRESHRAG_BASE_URL FRESHRAG_MODEL FRESHRAG_API_KEY FRESHRAG_LOCAL_RUNTIME
if [ "$demo" = 1 ]; then
    freshrag demo --out "$work/demo"
    echo "clean room: demo took $(( $(date +%s) - installed )) s"
    echo "clean room: install and demo took $(( $(date +%s) - started )) s"
    exit 0
fi
# no judge probes: they ask the judge a dozen times more, and have their own test
# (tests/integration/test_probe_judge.py) on the same prebuilt runtime
freshrag run --limit 1 --systems baseline,oracle --out "$work/run" --concurrency 1 --no-probe
echo "clean room: run took $(( $(date +%s) - installed )) s"
"$work/venv/bin/python" - "$work/run/samples.jsonl" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
scored = [r for r in rows if r["status"] == "ok" and r["grade"]["unscored_reason"] is None]
print(f"clean room: {len(rows)} rows, {len(scored)} scored")
sys.exit(0 if scored else 1)
PY
