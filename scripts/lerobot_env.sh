#!/usr/bin/env bash
# LeRobot's own environment, for the independent check of `captain bag export --format lerobot`
# (tests/test_lerobot_export.py::test_lerobot_reads_the_dataset, docs/data.md).
#
# lerobot 0.6 needs Python >= 3.12 and pins torch/numpy below this project's lock, so it gets a
# virtual environment of its own: ${LEROBOT_ENV:-.lerobot-env} (git-ignored), from the first
# interpreter >= 3.12 found (PYTHON312, python3.12, python3.13, pyenv's). PyPI's torch for Linux
# is the CUDA build: the install downloads ~4 GB (2.5 min on the project's machine). LeRobot
# decodes video with torchcodec, which needs FFmpeg's shared libraries (Debian:
# libavcodec59 libavformat59 libavutil57 libswscale6 libavdevice59 libavfilter8 libswresample4);
# without them it falls back to PyAV, and the check still runs.
#
# Usage: scripts/lerobot_env.sh   then   export CAPTAIN_LEROBOT_PYTHON=<the path it prints>
set -euo pipefail
cd "$(dirname "$0")/.."
ENV_DIR=${LEROBOT_ENV:-.lerobot-env}
LEROBOT_VERSION=0.6.1
find_python() {
  for p in "${PYTHON312:-}" python3.12 python3.13; do
    if [ -n "$p" ] && command -v "$p" >/dev/null 2>&1 && "$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      command -v "$p"; return 0
    fi
  done
  if command -v pyenv >/dev/null 2>&1; then
    for v in $(pyenv versions --bare | grep -E '^3\.1[2-9]' | sort -rV); do
      echo "$(pyenv root)/versions/$v/bin/python"; return 0
    done
  fi
  return 1
}
PY=$(find_python) || { echo "lerobot_env: no Python >= 3.12 here (set PYTHON312)" >&2; exit 1; }
if [ ! -x "$ENV_DIR/bin/python" ]; then
  "$PY" -m venv "$ENV_DIR"
fi
"$ENV_DIR/bin/pip" install -q --progress-bar off "lerobot[dataset]==$LEROBOT_VERSION"
"$ENV_DIR/bin/python" -c "import lerobot; print('lerobot', lerobot.__version__)" >&2
echo "$(cd "$ENV_DIR" && pwd)/bin/python"
