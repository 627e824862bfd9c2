#!/usr/bin/env bash
# Regenerate requirements/lock.txt (exact versions of every Python package, transitive ones
# included) from the hand-written inputs requirements/{core,ros,learn,dev}.txt.
#
#   scripts/lock.sh            # then: scripts/setup.sh (re-installs because the lock changed),
#                              # make test, and commit requirements/lock.txt with the inputs
#
# pip-compile (pip-tools) runs in a throw-away tool environment with pip's own configuration, so
# it sees the same indexes as setup.sh (including the CPU build of torch on this machine's disk).
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=${LOCK_TOOLS_VENV:-build/lock-tools}
PIP_TOOLS_VERSION=7.6.2
[ -x "$TOOLS/bin/pip-compile" ] || { python3 -m venv "$TOOLS" && "$TOOLS/bin/pip" install -q "pip-tools==$PIP_TOOLS_VERSION"; }
"$TOOLS/bin/pip-compile" -q --strip-extras --allow-unsafe --no-emit-index-url --no-emit-find-links \
  --no-emit-trusted-host --output-file=requirements/lock.txt \
  requirements/core.txt requirements/dev.txt requirements/learn.txt requirements/ros.txt
echo "[lock] requirements/lock.txt: $(grep -c '^[A-Za-z0-9]' requirements/lock.txt) pinned packages"
