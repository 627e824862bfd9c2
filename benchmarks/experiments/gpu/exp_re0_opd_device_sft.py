"""``benchmarks/experiments/exp_re0_opd.py`` with its distillations trained on the lent GPU machine.

Every ``run_sft`` of the experiment (the verified child inside ``captain learn re0``, the
unverified control's ``captain learn sft``) looks in ``--device-sft DIR`` for a student trained
on the same corpus (by sha256) with the same options. Found: it is copied to the run's output
folder and its metrics (device cuda) are what the experiment records. Not found: the corpus and
its options (the base's path among them) are written to ``DIR/pending/SHA16/`` and the run stops
with exit status 3 and one line saying so. Train it there (``benchmarks/experiments/gpu/device_sft.sh``: the SmolLM2
GGUF in parts, the parent's adapter beside it, ``captain learn sft`` with the listed options),
take what it returns into ``DIR/SHA16/`` with ``benchmarks/experiments/gpu/pending_sft.py take FILES --store
DIR`` (checked, merged into the parent), and rerun with ``--resume`` (finished episodes and
rollouts are reused).

A student trained on other data or options is refused (the options except paths, device, bf16
and progress must be equal; bf16 must be what ``auto`` gives here). The base is not compared
(its path differs by machine): whoever trains there must start from this run's parent.

Run: ``.venv/bin/python benchmarks/experiments/gpu/exp_re0_opd_device_sft.py --device-sft DIR -- <the
exp_re0_opd.py arguments>``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LOCAL = ("data", "base", "out", "device", "bf16", "progress", "resume")
"""Options that differ between the two machines by construction (paths, the device)."""


def corpus_sha(data: str) -> str:
    folder = Path(data)
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else [folder]
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def comparable(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k not in LOCAL}


def mismatch(
    trained: dict[str, Any], trained_bf16: bool, wanted: dict[str, Any], wanted_bf16: bool
) -> str:
    """Why a student trained with options ``trained`` is not the one ``wanted`` ("": it is)."""
    if comparable(trained) != comparable(wanted):
        return "trained with other options than this run's"
    if bool(trained_bf16) != bool(wanted_bf16):
        return f"trained with bf16={bool(trained_bf16)}, wanted {bool(wanted_bf16)}"
    return ""


def device_run_sft(store: Path) -> Any:
    """A stand-in for ``captain_ros.learn.sft.run_sft`` that takes students from ``store``."""

    def run_sft(opts: Any, callbacks: Any = ()) -> dict[str, Any]:
        from captain_ros.learn.models import bf16_supported

        sha = corpus_sha(opts.data)[:16]
        found = store / sha
        bf16 = {"on": True, "off": False}.get(opts.bf16, bf16_supported("cpu"))
        if (found / "config.json").exists():
            meta = json.loads((found / "sft_config.json").read_text())
            metrics = json.loads((found / "metrics.json").read_text())
            why = mismatch(meta["options"], metrics.get("bf16"), asdict(opts), bf16)
            if why:
                raise SystemExit(f"{found}: {why}")
            out = Path(opts.out)
            out.mkdir(parents=True, exist_ok=True)
            for f in found.iterdir():
                (shutil.copytree if f.is_dir() else shutil.copy2)(f, out / f.name)
            return {**metrics, "trained_on": f"device ({found})"}
        pending = store / "pending" / sha
        pending.mkdir(parents=True, exist_ok=True)
        data = Path(opts.data)
        for f in sorted(data.glob("*.jsonl")) if data.is_dir() else [data]:
            shutil.copy2(f, pending / f.name)
        (pending / "options.json").write_text(
            json.dumps({"options": asdict(opts), "bf16": bf16}, indent=2, default=str) + "\n"
        )
        raise SystemExit(
            f"exp_re0_opd_device_sft: distillation of corpus {sha} pending in {pending}; "
            f"train it on the device, put the student in {found}, rerun with --resume"
        )

    return run_sft


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2 or args[0] != "--device-sft":
        print("usage: exp_re0_opd_device_sft.py --device-sft DIR -- ARGS", file=sys.stderr)
        return 2
    store, rest = Path(args[1]), args[2:]
    rest = rest[1:] if rest[:1] == ["--"] else rest
    import exp_re0_opd

    import captain_ros.learn.sft as sft

    sft.run_sft = device_run_sft(store)  # read at call time by learn re0's distill and cmd_sft

    try:
        return exp_re0_opd.main(rest)
    except SystemExit as exc:
        if isinstance(exc.code, str) and exc.code.startswith("exp_re0_opd_device_sft:"):
            print(exc.code, file=sys.stderr)
            return 3
        raise


if __name__ == "__main__":
    sys.exit(main())
