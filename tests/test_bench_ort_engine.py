"""The benchmark's onnxruntime-genai engines: ``bench_student_engine.py --engines ort,ort-int4``
(argument handling, the greedy-agreement record) and ``benchmarks/ort_engine.py`` (ORT-genai's
model builder and the worker) on a tiny real Llama against the transformers engine.

The worker test needs an interpreter with onnxruntime-genai, which the project's lock does not
carry (``docs/engines.md``): ``$CAPTAIN_ORT_PYTHON`` (e.g. a venv with ``pip install
onnxruntime-genai==0.18.0 onnx onnx-ir tqdm``), or this interpreter if it has it.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

import bench_student_engine as bench  # noqa: E402  (a script's folder, not a package)
import ort_engine  # noqa: E402


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, str(BENCH / "bench_student_engine.py"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def test_unknown_engine_is_one_line_and_status_2(tmp_path):
    proc = _bench("--engines", "llamacpp,vllm", "--work", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.strip() == "bench_student_engine: unknown engine(s) vllm"
    assert proc.stdout == ""


def test_ort_engine_without_onnxruntime_genai_is_refused_before_any_work(tmp_path):
    missing = tmp_path / "no-venv" / "bin" / "python"
    proc = _bench("--engines", "ort", "--ort-python", str(missing), "--work", str(tmp_path))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert f"the ort engines need onnxruntime-genai, which {missing} cannot import" in lines[0]
    assert not (tmp_path / "smollm2_fp32").exists()  # refused before the model folder is made


def _entry(ids, logprobs, digest="d1"):
    return {"prompt_digest": digest, "first_ids": ids, "first_logprobs": logprobs}


def test_agreement_counts_leading_tokens_and_their_largest_logprob_difference():
    ref = {"engine": "transformers", "ctx10": _entry([1, 2, 3, 4], [-0.1, -0.2, -0.3, -0.4])}
    same = {"engine": "ort", "ctx10": _entry([1, 2, 3, 4], [-0.1, -0.25, -0.3, -0.4])}
    parts = {"engine": "ort-int4", "ctx10": _entry([1, 2, 9, 4], [-0.5, -0.2, -0.3, -0.4])}
    other = {"engine": "llamacpp", "ctx10": _entry([1, 2, 3, 4], [-0.1] * 4, digest="d2")}
    bench.agreement([ref, same, parts, other], [10])
    assert same["ctx10"]["agree_with_transformers"] == "4/4"
    assert same["ctx10"]["max_abs_logprob_diff"] == pytest.approx(0.05)
    assert parts["ctx10"]["agree_with_transformers"] == "2/4"
    assert parts["ctx10"]["max_abs_logprob_diff"] == pytest.approx(0.4)  # over tokens 1-2 only
    assert other["ctx10"]["agree_with_transformers"] == "different prompt ids"
    assert ref["ctx10"]["agree_with_transformers"] == "4/4"


def _ort_python() -> str | None:
    if os.environ.get(ort_engine.PYTHON_ENV):
        return os.environ[ort_engine.PYTHON_ENV]
    return sys.executable if importlib.util.find_spec("onnxruntime_genai") else None


@pytest.mark.skipif(
    _ort_python() is None,
    reason="onnxruntime-genai is not installed here: set CAPTAIN_ORT_PYTHON to a venv's python "
    "that has it (the measured engine is in benchmarks/results/engine-ort.md)",
)
def test_ort_worker_decodes_as_transformers_and_keeps_the_prefix(tmp_path):
    from engine_models import tiny_llama

    from captain_ros.policy.engines import EngineSettings
    from captain_ros.policy.engines.transformers import TransformersEngine

    python, version = ort_engine.ort_python(_ort_python())
    assert version
    folder, _ = tiny_llama("f32")
    onnx = ort_engine.build_onnx(folder, tmp_path / "ort_fp32", "fp32", python)
    assert (onnx / "genai_config.json").is_file() and (onnx / "model.onnx").is_file()
    settings = EngineSettings(max_new_tokens=12, temperature=0.0, threads=1)
    ort = ort_engine.OrtWorkerEngine(onnx, folder, settings, python)
    ref = TransformersEngine(folder, settings, device="cpu")
    try:
        msgs = [
            {"role": "system", "content": "You control a robot arm by writing Python."},
            {"role": "user", "content": "Pick up the red cube and put it in the bin."},
        ]
        cpu = ort.cpu_clock()
        a, b = ort.generate(msgs), ref.generate(msgs)
        assert ort.cpu_clock() > cpu  # the worker's CPU time is counted
        assert a.prompt_ids == b.prompt_ids
        assert a.completion_ids == b.completion_ids and len(a.completion_ids) > 0
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)) < 1e-3
        assert (a.cache.reused, a.cache.prefilled) == (0, len(a.prompt_ids))
        longer = [
            *msgs,
            {"role": "assistant", "content": a.text},
            {"role": "user", "content": "Now the blue one."},
        ]
        a2, b2 = ort.generate(longer), ref.generate(longer)
        assert a2.completion_ids == b2.completion_ids
        assert 0 < a2.cache.reused < len(a2.prompt_ids)  # only the new tokens are prefilled
        assert a2.cache.reused + a2.cache.prefilled == len(a2.prompt_ids)
        ort.reset()
        a3 = ort.generate(longer)
        assert a3.cache.reused == 0 and a3.completion_ids == a2.completion_ids
    finally:
        ort.close()
    assert ort.proc.returncode == 0
