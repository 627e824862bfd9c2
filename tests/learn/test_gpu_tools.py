"""The GPU machine's scripts (benchmarks/experiments/gpu), run here on the CPU at toy sizes: the CUDA check in
its --quick mode, the schedule cut by a callback, and the student rebuilt from a carried adapter."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("trl")

from sft_fixtures import episode_history, make_row, save_tiny, write_rows  # noqa: E402

pytestmark = pytest.mark.learn
GPU = Path(__file__).resolve().parents[2] / "benchmarks" / "experiments" / "gpu"


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"gpu_{name}", GPU / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _tensors(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    import torch

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("gpu_tools")
    base = save_tiny(root / "base")
    data = write_rows(root / "data", [make_row(episode_history(4), seed=s) for s in range(6)])
    return base, data


def test_check_cuda_runs_every_check_at_toy_sizes(tmp_path):
    check = _script("check_cuda")
    assert check.main(["--device", "cpu", "--quick", "--out", str(tmp_path)]) == 0
    res = json.loads((tmp_path / "check_cuda.json").read_text())
    assert set(res["checks"]) == set(check.CHECKS)
    assert isinstance(res["vllm"]["importable"], bool)  # a report beside the checks
    assert all(c["ok"] for c in res["checks"].values())
    shape = res["checks"]["smollm2_shape"]
    assert shape["train_128_checkpointing"] and not shape["train_64_checkpointing"]
    assert shape["train_64_tokens_per_s"] > 0 and shape["generate_batch16_new_tokens_per_s"] > 0
    assert res["checks"]["student_generate"]["second_cache_reused"] > 0
    assert res["checks"]["sft_reopd"]["steps"] == 3


def test_check_cuda_names_an_unknown_check(tmp_path, capsys):
    assert _script("check_cuda").main(["--out", str(tmp_path), "--only", "nope"]) == 2
    assert "unknown checks ['nope']" in capsys.readouterr().err


def test_stop_at_saves_the_weights_of_the_resume_cut(tiny, tmp_path):
    """A 6-step schedule stopped at step 2 by the callback = the same run cut at its step-2
    checkpoint by ``--resume --max-steps 2`` (the CPU recipe)."""
    from captain_ros.learn.sft import SftOptions, run_sft

    base, data = tiny
    common = dict(
        data=str(data),
        base=str(base),
        max_steps=6,
        grad_accum=1,
        val_fraction=0.0,
        save_steps=2,
        eval_steps=1000,
        progress=False,
        device="cpu",
        bf16="off",
    )
    cut = tmp_path / "cut"
    run_sft(SftOptions(out=str(cut), save_total_limit=10, **common))
    assert (
        run_sft(
            SftOptions(out=str(cut), save_total_limit=10, resume=True, **{**common, "max_steps": 2})
        )["steps"]
        == 2
    )
    stopped = tmp_path / "stopped"
    args = [
        "--data",
        str(data),
        "--base",
        str(base),
        "--out",
        str(stopped),
        "--max-steps",
        "6",
        "--grad-accum",
        "1",
        "--val-fraction",
        "0",
        "--save-steps",
        "2",
        "--eval-steps",
        "1000",
        "--no-progress",
        "--device",
        "cpu",
        "--bf16",
        "off",
    ]
    assert _script("sft_stop_at").main(["--stop-at", "2", "--", *args]) == 0
    assert json.loads((stopped / "metrics.json").read_text())["steps"] == 2
    a, b = _tensors(cut), _tensors(stopped)
    assert a.keys() == b.keys()
    assert all(bool((a[k] == b[k]).all()) for k in a)
    full = tmp_path / "full"
    run_sft(SftOptions(out=str(full), **common))
    assert any(not bool((a[k] == _tensors(full)[k]).all()) for k in a)  # step 6 differs


def test_sft_stop_at_refuses_a_stop_past_the_schedule(tiny, tmp_path, capsys):
    base, data = tiny
    rc = _script("sft_stop_at").main(
        [
            "--stop-at",
            "9",
            "--",
            "--data",
            str(data),
            "--base",
            str(base),
            "--out",
            str(tmp_path / "s"),
            "--max-steps",
            "6",
        ]
    )
    assert rc == 2 and "need 0 < --stop-at < --max-steps" in capsys.readouterr().err


def test_student_from_adapter_rebuilds_the_merged_student(tiny, tmp_path):
    from captain_ros.cli.main import main as captain

    base, data = tiny
    trained = tmp_path / "trained"
    assert (
        captain(
            [
                "learn",
                "sft",
                "--data",
                str(data),
                "--base",
                str(base),
                "--out",
                str(trained),
                "--max-steps",
                "2",
                "--grad-accum",
                "1",
                "--val-fraction",
                "0",
                "--no-progress",
                "--device",
                "cpu",
                "--bf16",
                "off",
                "--lr",
                "1e-2",
            ]
        )
        == 0
    )
    carried = tmp_path / "carried"  # what device_sft.sh pack brings back
    (carried / "adapter").mkdir(parents=True)
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        shutil.copy(trained / "adapter" / name, carried / "adapter" / name)
    shutil.copy(trained / "sft_config.json", carried / "sft_config.json")
    assert (
        _script("student_from_adapter").main(["--student", str(carried), "--base", str(base)]) == 0
    )
    a, b = _tensors(trained), _tensors(carried)
    assert a.keys() == b.keys()
    assert all(bool((a[k] == b[k]).all()) for k in a)
    tok = json.loads((trained / "tokenizer_config.json").read_text())
    assert json.loads((carried / "tokenizer_config.json").read_text()) == tok
    assert (carried / "chat_template.jinja").read_text() == (
        trained / "chat_template.jinja"
    ).read_text()


def test_student_from_adapter_without_an_adapter(tmp_path, capsys):
    assert _script("student_from_adapter").main(["--student", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "adapter_config.json not found" in err[0]


def _opts(tmp_path, data, **kw):
    from captain_ros.learn.sft import SftOptions

    return SftOptions(
        data=str(data),
        base=str(tmp_path / "parent"),
        out=str(tmp_path / "child"),
        max_steps=20,
        grad_accum=1,
        val_fraction=0.0,
        progress=False,
        **kw,
    )


def test_device_sft_pends_then_reuses_a_student_of_the_same_corpus_and_options(tiny, tmp_path):
    """exp_re0_opd_device_sft: no device student -> the corpus and options wait in pending/ and
    the run stops; a student of that corpus and those options -> copied, its metrics returned;
    one of other options -> refused."""
    from dataclasses import asdict

    wrap = _script("exp_re0_opd_device_sft")
    _, data = tiny
    store = tmp_path / "device_sft"
    run_sft = wrap.device_run_sft(store)
    opts = _opts(tmp_path, data)
    sha = wrap.corpus_sha(str(data))[:16]
    with pytest.raises(SystemExit, match=f"distillation of corpus {sha} pending"):
        run_sft(opts)
    pending = store / "pending" / sha
    assert (pending / "train.jsonl").read_bytes() == (data / "train.jsonl").read_bytes()
    assert json.loads((pending / "options.json").read_text())["options"]["max_steps"] == 20

    found = store / sha  # what the device returns, merged here
    found.mkdir()
    (found / "config.json").write_text("{}")
    trained = {**asdict(opts), "device": "cuda", "bf16": "on", "data": "/gpu/corpus"}
    (found / "sft_config.json").write_text(json.dumps({"options": trained}))
    from captain_ros.learn.models import bf16_supported  # what "auto" gives here

    bf16 = bf16_supported("cpu")
    (found / "metrics.json").write_text(json.dumps({"steps": 20, "device": "cuda", "bf16": bf16}))
    metrics = run_sft(opts)
    assert metrics["device"] == "cuda" and metrics["trained_on"].startswith("device (")
    assert (tmp_path / "child" / "config.json").exists()

    other = _opts(tmp_path, data, learning_rate=1e-3)
    with pytest.raises(SystemExit, match="trained with other options"):
        run_sft(other)


def test_a_pending_distillation_is_trained_packed_and_taken_into_the_store(tiny, tmp_path, capsys):
    """The device round trip at toy size: pending_sft.py train (there) on the recorded options,
    device_sft.sh pack, pending_sft.py take (here) -> the store answers the experiment's run_sft;
    a damaged adapter is refused with the store unchanged."""
    import subprocess

    wrap, pend = _script("exp_re0_opd_device_sft"), _script("pending_sft")
    base, data = tiny
    store = tmp_path / "device_sft"
    opts = _opts(tmp_path, data)
    opts = type(opts)(**{**opts.__dict__, "base": str(base), "max_steps": 2})
    with pytest.raises(SystemExit, match="pending"):
        wrap.device_run_sft(store)(opts)
    sha = wrap.corpus_sha(str(data))[:16]
    pending = store / "pending" / sha
    child = tmp_path / "there" / "child"
    assert pend.train(pending, str(base), str(child), "cpu")["steps"] == 2
    files = tmp_path / "files"
    files.mkdir()
    script = GPU / "device_sft.sh"
    subprocess.run(
        ["bash", str(script), "pack", str(child)], env={**os.environ, "OUT": str(files)}, check=True
    )

    (files / "adapter.sha256").write_text("0" * 64)  # damaged on the way
    good = hashlib_sha(child / "adapter" / "adapter_model.safetensors")
    assert pend.main(["take", str(files), "--store", str(store)]) == 2
    assert "does not match adapter.sha256" in capsys.readouterr().err
    assert pending.is_dir() and not (store / sha).exists()

    (files / "adapter.sha256").write_text(good + "\n")
    assert pend.main(["take", str(files), "--store", str(store)]) == 0
    assert not pending.exists() and (store / sha / "config.json").is_file()
    a, b = _tensors(child), _tensors(store / sha)  # merged here = merged there
    assert a.keys() == b.keys() and all(bool((a[k] == b[k]).all()) for k in a)
    metrics = wrap.device_run_sft(store)(opts)
    assert metrics["steps"] == 2 and metrics["trained_on"].startswith("device (")


def test_pending_sft_take_refuses_files_of_no_pending_corpus(tmp_path, capsys):
    assert _script("pending_sft").main(["take", str(tmp_path), "--store", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no adapter parts" in err[0]


def hashlib_sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
