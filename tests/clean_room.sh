#!/usr/bin/env bash
# The clean-room check: a fresh clone of this repository's HEAD, a new virtual environment, the
# README's install command exactly as written (read from the README, everything before its
# `&& freshrag demo`), then `freshrag run --limit 1` on the embedded model; one scored row must
# come out. Run by tests/integration/test_clean_room.py (so by tests/run.sh), or by hand:
#   bash tests/clean_room.sh [WORKDIR]
# It prints the install and run times. Nothing is read from outside the fresh clone.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d)}
mkdir -p "$work"
git clone --quiet "$repo" "$work/freshrag"
cd "$work/freshrag"
install=$(grep -m1 -E "^CMAKE_ARGS=.* pip install .*&& freshrag demo$" README.md | sed 's/ && freshrag demo$//')
[ -n "$install" ] || { echo "clean room: no install command found in README.md" >&2; exit 1; }
python3 -m venv "$work/venv"
export PATH="$work/venv/bin:$PATH" VIRTUAL_ENV="$work/venv"
unset PYTHONPATH
echo "clean room: $install"
started=$(date +%s)
bash -c "$install"
installed=$(date +%s)
echo "clean room: install took $((installed - started)) s"
env -u FRESHRAG_BASE_URL -u FRESHRAG_MODEL -u FRESHRAG_API_KEY \
    freshrag run --limit 1 --systems baseline,oracle --out "$work/run" --concurrency 1
echo "clean room: run took $(( $(date +%s) - installed )) s"
"$work/venv/bin/python" - "$work/run/samples.jsonl" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
scored = [r for r in rows if r["status"] == "ok" and r["grade"]["unscored_reason"] is None]
print(f"clean room: {len(rows)} rows, {len(scored)} scored")
sys.exit(0 if scored else 1)
PY
