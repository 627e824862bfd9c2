"""A distillation that ``exp_re0_opd_device_sft.py`` left pending, trained there and taken here.

There (``device_sft.sh distill PENDING``, with the pending folder carried)::

    python3 benchmarks/experiments/gpu/pending_sft.py train PENDING --base B --out O [--device cuda]

runs ``captain_ros.learn.sft.run_sft`` with the options recorded in ``PENDING/options.json``, only
the local ones (the data, base and output paths, the device, progress) replaced, and bf16 as
``auto`` resolved on the machine that wrote them: the store cannot refuse the result.

Here, with the files ``device_sft.sh pack`` brought back::

    .venv/bin/python benchmarks/experiments/gpu/pending_sft.py take FILES --store STORE

reassembles and checks the adapter (sha256), checks that it was trained on that pending corpus with
its options, merges it into the base named in ``options.json`` (``student_from_adapter.py``), puts
the student in ``STORE/SHA16`` and removes ``STORE/pending/SHA16``. Any mismatch: one line, exit 2,
the store unchanged.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

GPU = Path(__file__).resolve().parent
sys.path.insert(0, str(GPU))

from exp_re0_opd_device_sft import corpus_sha, mismatch  # noqa: E402


class PendingError(Exception):
    """A pending distillation or its returned files are not what they should be."""


def recorded(pending: Path) -> dict[str, Any]:
    try:
        rec = json.loads((pending / "options.json").read_text())
        return {"options": dict(rec["options"]), "bf16": bool(rec["bf16"])}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PendingError(f"{pending}/options.json: unreadable ({exc})") from exc


def train(pending: Path, base: str, out: str, device: str | None) -> dict[str, Any]:
    from captain_ros.learn.sft import SftOptions, run_sft

    rec = recorded(pending)
    opts = {
        **rec["options"],
        "data": str(pending),
        "base": base,
        "out": out,
        "device": device,
        "bf16": "on" if rec["bf16"] else "off",
        "resume": False,
        "progress": False,
    }
    return dict(run_sft(SftOptions(**opts)))


def take(files: Path, store: Path) -> Path:
    parts = sorted(files.glob("adapter_model.safetensors.part-*"))
    if not parts or not (files / "adapter.sha256").is_file():
        raise PendingError(f"{files}: no adapter parts and adapter.sha256 (device_sft.sh pack)")
    with tempfile.TemporaryDirectory(dir=store) as tmp:
        new = Path(tmp) / "student"
        (new / "adapter").mkdir(parents=True)
        digest = hashlib.sha256()
        with (new / "adapter" / "adapter_model.safetensors").open("wb") as f:
            for p in parts:
                chunk = p.read_bytes()
                digest.update(chunk)
                f.write(chunk)
        if digest.hexdigest() != (files / "adapter.sha256").read_text().strip():
            raise PendingError(f"{files}: the reassembled adapter does not match adapter.sha256")
        try:
            with tarfile.open(files / "student_meta.tar") as tar:
                tar.extractall(new, filter="data")
            meta = json.loads((new / "sft_config.json").read_text())
            metrics = json.loads((new / "metrics.json").read_text())
        except (OSError, ValueError, tarfile.TarError) as exc:
            raise PendingError(f"{files}/student_meta.tar: unreadable ({exc})") from exc
        sha = Path(meta["options"]["data"]).name
        pending = store / "pending" / sha
        if not pending.is_dir() or not corpus_sha(str(pending)).startswith(sha):
            raise PendingError(f"trained on {sha!r}, which is no pending corpus in {store}")
        rec = recorded(pending)
        why = mismatch(meta["options"], metrics.get("bf16"), rec["options"], rec["bf16"])
        if why:
            raise PendingError(f"{sha}: {why} ({pending}/options.json)")
        final = store / sha
        if final.exists():
            raise PendingError(f"{final} exists already")
        from student_from_adapter import main as merge

        if merge(["--student", str(new), "--base", str(rec["options"]["base"])]) != 0:
            raise PendingError(f"{sha}: the adapter could not be merged into its base")
        new.rename(final)
    shutil.rmtree(pending)
    return final


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train", help="there: train PENDING with its recorded options")
    t.add_argument("pending")
    t.add_argument("--base", required=True, help="the base there (the parent merged in /tmp)")
    t.add_argument("--out", required=True)
    t.add_argument("--device", default=None)
    k = sub.add_parser("take", help="here: put the returned student into the store")
    k.add_argument("files", help="the folder device_sft.sh pack's files came back to")
    k.add_argument("--store", required=True, help="exp_re0_opd_device_sft.py's --device-sft DIR")
    ns = p.parse_args(argv)
    from captain_ros.core.errors import CaptainError

    try:
        if ns.cmd == "train":
            m = train(Path(ns.pending), ns.base, ns.out, ns.device)
            print(json.dumps({k: m.get(k) for k in ("steps", "train_loss", "train_s", "device")}))
        else:
            print(f"pending_sft: student in {take(Path(ns.files), Path(ns.store))}")
    except (PendingError, CaptainError, OSError, KeyError) as exc:
        print(f"pending_sft: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
