#!/usr/bin/env bash
# Build the project's ROS interface packages (interfaces/*) with the rosidl toolchain of the
# ROS 2 Kilted PyPI wheels and install them into the virtual environment's prefix, so that
# `import captain_ros_interfaces.msg` / `import tf2_msgs.msg` / `import control_msgs.action` work
# with no environment variables.
#
# Idempotent: a package is rebuilt only when its files (or the interpreter) changed.
# Usage: scripts/build_interfaces.sh            (VENV defaults to ./.venv)
#        FORCE=1 scripts/build_interfaces.sh    (rebuild everything)
#
# On a machine with a ROS 2 distribution (Jazzy/Kilted) use colcon instead (docs/ros.md); the
# distribution's own tf2_msgs and control_msgs are then used and interfaces/{tf2_msgs,control_msgs}
# are ignored.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${VENV:-$ROOT/.venv}
VENV=$(cd "$VENV" && pwd)
PY=$VENV/bin/python
BUILD=${BUILD_DIR:-$ROOT/build/interfaces}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
mkdir -p "$BUILD"

# 1. The wheels' *__rosidl_generator_pyExport*.cmake files hard-code the wheel build host's Python
#    and numpy include directories (/opt/python/...). Point them at this interpreter's.
"$PY" - "$VENV" <<'PYEOF'
import glob, os, re, sys, sysconfig
import numpy
venv = sys.argv[1]
py_inc = sysconfig.get_paths()["include"]
np_inc = numpy.get_include()
pattern = re.compile(r'(INTERFACE_INCLUDE_DIRECTORIES\s+")([^"]*)(")')
fixed = 0
for path in glob.glob(os.path.join(venv, "share", "*", "cmake", "*__rosidl_generator_pyExport*.cmake")):
    text = open(path).read()
    def repl(m):
        parts = []
        for p in m.group(2).split(";"):
            if re.search(r"include/python3\.\d+$", p):
                p = py_inc
            elif p.endswith(("numpy/_core/include", "numpy/core/include")):
                p = np_inc
            parts.append(p)
        return m.group(1) + ";".join(parts) + m.group(3)
    new = pattern.sub(repl, text)
    if new != text:
        open(path, "w").write(new)
        fixed += 1
if fixed:
    print(f"[interfaces] fixed include paths in {fixed} pyExport cmake files")
PYEOF

export AMENT_PREFIX_PATH="$VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
export CMAKE_PREFIX_PATH="$VENV${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export PATH="$VENV/bin:$PATH"
unset RMW_IMPLEMENTATION

build_pkg() {
  local pkg=$1 module=$2
  local src=$ROOT/interfaces/$pkg
  local stamp_file=$VENV/share/$pkg/.captain_build_stamp
  local want
  want=$( (cd "$src" && find . -type f ! -name COLCON_IGNORE | LC_ALL=C sort | xargs cat; "$PY" -VV) \
          | sha256sum | cut -d' ' -f1)
  if [ "${FORCE:-0}" != 1 ] && [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$want" ] \
     && "$PY" -c "import $module" 2>/dev/null; then
    echo "[interfaces] $pkg up to date"
    return 0
  fi
  echo "[interfaces] building $pkg"
  local t0=$SECONDS
  cmake -S "$src" -B "$BUILD/$pkg" -DCMAKE_INSTALL_PREFIX="$VENV" -DCMAKE_BUILD_TYPE=Release \
    -DPython3_EXECUTABLE="$PY" -DPYTHON_EXECUTABLE="$PY" -DBUILD_TESTING=OFF \
    >"$BUILD/$pkg.configure.log" 2>&1 || { tail -40 "$BUILD/$pkg.configure.log"; return 1; }
  cmake --build "$BUILD/$pkg" -j "$JOBS" >"$BUILD/$pkg.build.log" 2>&1 \
    || { tail -40 "$BUILD/$pkg.build.log"; return 1; }
  cmake --install "$BUILD/$pkg" >"$BUILD/$pkg.install.log" 2>&1 \
    || { tail -40 "$BUILD/$pkg.install.log"; return 1; }
  "$PY" -c "import $module" || { echo "[interfaces] $pkg built but '$module' does not import"; return 1; }
  echo "$want" >"$stamp_file"
  echo "[interfaces] $pkg installed into $VENV in $((SECONDS - t0)) s"
}

build_pkg tf2_msgs "tf2_msgs.msg"
build_pkg control_msgs "control_msgs.msg, control_msgs.action"
build_pkg captain_ros_interfaces "captain_ros_interfaces.msg, captain_ros_interfaces.srv, captain_ros_interfaces.action"

echo "[interfaces] done"
