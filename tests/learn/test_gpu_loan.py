"""The six-task loan script (benchmarks/experiments/gpu/loan_six.py), at toy size on the CPU: a real
SmolLM2 LoRA step on packed rows with its tokens/s and MFU figures, the real adapter export and
package, a real MuJoCo + llama.cpp held-out-style evaluation chunk with 2 workers, a chunk stopped
at the deadline, what comes back (pack) and its taking in here (take)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import tarfile
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytest.importorskip("llama_cpp")

from sft_fixtures import episode_history, make_row, write_rows  # noqa: E402

pytestmark = pytest.mark.learn
GPU = Path(__file__).resolve().parents[2] / "benchmarks" / "experiments" / "gpu"


def _loan():
    spec = importlib.util.spec_from_file_location("gpu_loan_six", GPU / "loan_six.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _data(folder: Path) -> Path:
    rows = []
    for s in range(3):
        row = make_row(episode_history(2 + s), seed=s)
        rows.append({**row, "task": "pick_place", "profile": "student"})
    write_rows(folder, rows)
    stats = {"tokens": {"per_task": {"pick_place": 1}}, "profile": "student"}
    (folder / "stats.json").write_text(json.dumps(stats))
    return folder


@pytest.mark.timeout(3600)  # a few CPU minutes; 28 min of wall time on the busy 2-core VM
def test_the_loan_trains_exports_evaluates_to_a_deadline_and_packs(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    loan = _loan()
    arm = tmp_path / "six"
    data = _data(tmp_path / "data_in")
    assert loan.main(["train", "--data", str(data), "--arm", str(arm), "--device", "cpu",
                      "--pack-tokens", "4096", "--", "--max-steps", "1", "--bf16", "off"]) == 0  # fmt: skip
    fig = json.loads((arm / "loan_train.json").read_text())
    assert fig["device"] == "cpu" and fig["steps"] == 1 and fig["tokens_per_s"] > 0
    assert fig["packing"]["rows"] == 1 and fig["params"] > 100e6  # SmolLM2-135M
    assert fig["peak_bf16_tflops"] is None and fig["mfu_6n"] is None  # no data-sheet peak here
    assert 0 < fig["mfu_6n_of_measured_matmul"] < 1
    assert fig["model_tflops_with_attention"] > fig["model_tflops_6n"] > 0
    from loan_mfu import peak_tflops  # beside loan_six.py, which put its folder on the path

    assert peak_tflops("NVIDIA H100 80GB HBM3") == peak_tflops("NVIDIA H200") == 989.4
    assert peak_tflops("NVIDIA H100 PCIe") == 756.0

    assert loan.main(["export", "--arm", str(arm)]) == 0
    card = json.loads((arm / "package" / "student.json").read_text())
    assert card["profile"] == "student" and (arm / "package" / card["adapter"]).stat().st_size > 0

    ev = ["eval", "--arm", str(arm), "--split", "dev", "--tasks", "pick_place", "--n", "2",
          "--chunk", "2", "--workers", "2", "--max-new-tokens", "16", "--deadline-s", "900",
          "--", "--max-requests", "1"]  # fmt: skip
    assert loan.main(ev) == 0
    chunk = arm / "eval_dev" / "pick_place" / "900-901"
    report = json.loads((chunk / "eval.json").read_text())
    assert report["workers"] == 2 and sorted(e["seed"] for e in report["episodes"]) == [900, 901]
    assert all(e["outcome"] != "error" for e in report["episodes"]), report["episodes"]
    assert loan.main(ev) == 0  # done chunks are skipped: nothing runs again
    assert json.loads((chunk / "eval.json").read_text())["wall_s"] == report["wall_s"]
    # a chunk still running at the deadline is stopped and leaves no folder; it stays to do
    late = ["eval", "--arm", str(arm), "--split", "dev", "--tasks", "stack", "--n", "2",
            "--chunk", "1", "--workers", "1", "--deadline-s", "4", "--chunk-s", "1"]  # fmt: skip
    assert loan.main(late) == 0
    progress = json.loads((arm / "eval_progress.json").read_text())
    assert progress["chunks_done"] == 0 and progress["chunks"] == 2
    assert progress["stopped_at_deadline"] == ["stack/900-900"]
    assert progress["left"] == ["stack/900-900", "stack/901-901"]
    assert not (arm / "eval_dev" / "stack" / "900-900").exists()

    out = tmp_path / "OUT"
    assert loan.main(["pack", "--arm", str(arm), "--split", "dev", str(out)]) == 0
    files = sorted(p.name for p in out.iterdir())
    assert len(files) <= 8 and all(p.stat().st_size <= 15 * 2**20 for p in out.iterdir())
    assert "loan_six.tar" in files and "eval.tar.gz.part-00" in files
    with tarfile.open(out / "loan_six.tar") as tar:
        names = tar.getnames()
    assert {"loan_train.json", "student/metrics.json", "package/student.json"} <= set(names)

    here = tmp_path / "here" / "six"
    assert loan.main(["take", str(out), "--arm", str(here)]) == 0
    adapter = (here / "student" / "adapter" / "adapter_model.safetensors").read_bytes()
    assert hashlib.sha256(adapter).hexdigest() == (out / "adapter.sha256").read_text()
    taken = json.loads((here / "eval_dev" / "pick_place" / "900-901" / "eval.json").read_text())
    for e in taken["episodes"]:
        assert Path(e["out_dir"]).is_relative_to(here.resolve())
        assert (Path(e["out_dir"]) / "summary.json").is_file()
        assert (Path(e["out_dir"]) / "trajectory.jsonl").is_file()


def test_links_turn_a_wheels_copies_of_a_library_into_links(tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    for name in ("libx.so", "libx.so.0", "libx.so.0.5.1"):
        (lib / name).write_bytes(b"\x7fELF same")
    (lib / "liby.so").write_bytes(b"\x7fELF other")
    assert _loan().main(["links", str(lib)]) == 0
    assert (lib / "libx.so").readlink() == Path("libx.so.0.5.1")
    assert (lib / "libx.so.0").readlink() == Path("libx.so.0.5.1")
    assert not (lib / "libx.so.0.5.1").is_symlink() and not (lib / "liby.so").is_symlink()
    assert (lib / "libx.so.0").read_bytes() == b"\x7fELF same"
