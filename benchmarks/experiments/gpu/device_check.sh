#!/usr/bin/env bash
# The GPU machine's check of the learning stack's CUDA paths (benchmarks/experiments/gpu/check_cuda.py).
#
#   benchmarks/experiments/gpu/device_check.sh wheels   # here: the pinned learning wheels for the device's
#                                           # Python 3.12 into .whl/ (git-ignored via
#                                           # .git/info/exclude), about 16 MB
#   benchmarks/experiments/gpu/device_check.sh install  # there, with .whl carried: install them into
#                                           # /tmp/site (device_sft.sh uses it too)
#   benchmarks/experiments/gpu/device_check.sh run      # there: install, run every check, results under $OUT
#
# The device image has torch, numpy, scipy, opencv, pandas, pyarrow, tokenizers, safetensors,
# accelerate and huggingface_hub; the wheels bring the versions requirements/lock.txt pins for the
# rest (transformers, trl, peft, datasets and what datasets needs beyond the image).
set -uo pipefail
cd "$(dirname "$0")/../../.."  # the repository root
WHEELS=(transformers==5.23.0 trl==1.16.0 peft==0.21.2 datasets==5.2.0 dill==0.4.1
        multiprocess==0.70.19)
install() {
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || { echo "device_check: wheel install failed"; exit 3; }
}
case "${1:-}" in
  wheels)
    mkdir -p .whl
    mkdir -p .git/info && { grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude; }
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
      --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 -d .whl "${WHEELS[@]}"
    du -sh .whl ;;
  run)
    : "${OUT:?OUT (the folder whose files come back) is not set}"
    install
    export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv \
      | tee "$OUT/nvidia_smi.csv"
    python3 -c "import pyarrow, fsspec, pandas; print('image: pyarrow', pyarrow.__version__, \
'fsspec', fsspec.__version__, 'pandas', pandas.__version__)"
    python3 benchmarks/experiments/gpu/check_cuda.py --out "$OUT" "${@:2}" 2>&1 | tee "$OUT/check_cuda.log" ;;
  install) install ;;
  *)
    echo "usage: $0 wheels|install|run [check_cuda.py options]" >&2; exit 2 ;;
esac
