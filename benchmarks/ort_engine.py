"""onnxruntime-genai as a student engine for ``bench_student_engine.py``, across a process boundary.

onnxruntime-genai (with onnxruntime and its model builder) lives in a virtual environment of its
own, so that the project's lock stays as it is (``docs/engines.md``, "onnxruntime-genai"). This
file is both halves:

- imported by the benchmark (the project's venv): :func:`ort_python` finds the interpreter that
  has ``onnxruntime_genai`` (``--ort-python``, else ``$CAPTAIN_ORT_PYTHON``, else this one),
  :func:`build_onnx` runs ORT-genai's model builder on a transformers folder, and
  :class:`OrtWorkerEngine` renders and tokenizes the chat with the folder's tokenizer (the same
  renderer and token ids as the transformers engine) and sends token ids to a worker;
- run by that interpreter (``python ort_engine.py MODEL_DIR --threads N``): the worker, which
  imports only the standard library, NumPy and ``onnxruntime_genai``. It answers one JSON line per
  request line on stdin: greedy decoding on ORT-genai's ``Generator``, the episode's prefix kept
  (``rewind_to`` the longest common prefix, only the rest prefilled), the reply's token ids and
  their log-probabilities (log-softmax of the logits each token was picked from), and its own
  cumulative CPU time (so the benchmark's per-CPU-second rates count the worker's threads).

The model builder imports torch and transformers: it runs with this interpreter's site-packages
on ``PYTHONPATH`` (the project's torch and transformers; the ORT venv needs only onnxruntime-genai,
onnx, onnx-ir and tqdm).
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PYTHON_ENV = "CAPTAIN_ORT_PYTHON"
WORKER = Path(__file__).resolve()


def ort_python(explicit: str | None = None) -> tuple[str, str]:
    """The interpreter that imports ``onnxruntime_genai`` and its version."""
    from captain_ros.core.errors import InvalidArgumentError

    python = explicit or os.environ.get(PYTHON_ENV) or sys.executable
    try:
        proc = subprocess.run(
            [python, "-c", "import onnxruntime_genai as og; print(og.__version__)"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        ok = proc.returncode == 0
    except OSError:
        ok = False
    if not ok:
        raise InvalidArgumentError(
            f"the ort engines need onnxruntime-genai, which {python} cannot import: install "
            f"onnxruntime-genai into a venv and pass --ort-python VENV/bin/python "
            f"(or set ${PYTHON_ENV})"
        )
    return python, proc.stdout.strip()


def build_onnx(
    folder: Path,
    out: Path,
    precision: str,
    python: str,
    *,
    adapter: Path | None = None,
    extra: Sequence[str] = (),
) -> Path:
    """ORT-genai's model builder on the transformers ``folder`` (CPU, ``precision`` fp32 or int4,
    a PEFT LoRA ``adapter`` folder built into the graph if given); skipped when ``out`` already
    holds a model. Returns ``out``; a failed build raises one line."""
    from captain_ros.policy.engines import ModelFileError

    if (out / "genai_config.json").is_file():
        return out
    options = [f"adapter_path={adapter}"] if adapter is not None else []
    options += list(extra)
    cmd = [python, "-m", "onnxruntime_genai.models.builder", "-i", str(folder), "-o", str(out)]
    cmd += ["-p", precision, "-e", "cpu", "-c", str(out.parent / "ort_builder_cache")]
    cmd += ["--extra_options", *options] if options else []
    env = dict(os.environ)  # this interpreter's torch and transformers for the builder
    paths = [*site.getsitepackages(), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0 or not (out / "genai_config.json").is_file():
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise ModelFileError(f"the ORT model builder failed on {folder} ({precision}): {tail}")
    return out


class OrtWorkerEngine:
    """An ORT-genai model folder in a worker process, behind the benchmark's engine interface
    (``generate``, ``reset``, ``close``, ``tokenize``, ``settings``). Greedy decoding only.

    Args:
        model_dir: The builder's output folder (``genai_config.json``, ``model.onnx``).
        folder: The transformers folder the model was built from (its tokenizer and template).
        settings: Engine settings (``threads`` become ORT's ``intra_op_num_threads``).
        python: The interpreter with onnxruntime-genai (:func:`ort_python`).
    """

    name = "ort"

    def __init__(self, model_dir: Path, folder: Path, settings: Any, python: str) -> None:
        from transformers import AutoTokenizer

        from captain_ros.core.errors import InvalidArgumentError
        from captain_ros.policy.engines.base import default_threads

        if settings.temperature > 0:
            raise InvalidArgumentError("the ort benchmark engine decodes greedily (temperature 0)")
        self.settings = settings
        self.threads = settings.threads or default_threads()
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
        config = folder / "generation_config.json"
        eos = json.loads(config.read_text()).get("eos_token_id") if config.is_file() else None
        ends = [*(eos if isinstance(eos, list) else [eos]), self.tokenizer.eos_token_id]
        self.stop = sorted({int(i) for i in ends if i is not None})  # as transformers stops
        env = dict(os.environ, OMP_NUM_THREADS=str(self.threads))
        self.proc = subprocess.Popen(
            [python, str(WORKER), str(model_dir), "--threads", str(self.threads)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.worker_cpu_s = 0.0
        ready = self._read()
        self.load_detail = {k: ready[k] for k in ("version", "import_s", "load_s")}

    def _read(self) -> dict[str, Any]:
        from captain_ros.policy.engines import ModelFileError

        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise ModelFileError(f"the ORT worker exited (status {self.proc.wait()})")
        reply: dict[str, Any] = json.loads(line)
        if "error" in reply:
            raise ModelFileError(f"ORT worker: {reply['error']}")
        self.worker_cpu_s = float(reply["cpu_s"])
        return reply

    def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def cpu_clock(self) -> float:
        """CPU time of this process and the worker so far [s] (the worker's as of its last reply)."""
        return time.process_time() + self.worker_cpu_s

    def tokenize(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def generate(self, messages: Sequence[dict[str, Any]], tools: Any = None) -> Any:
        from captain_ros.policy.chat_render import render_chat
        from captain_ros.policy.openai_client import PYTHON_TOOL
        from captain_ros.policy.prefix_cache import CacheUse
        from captain_ros.policy.transformers_chat import Generation

        start = time.perf_counter()
        text = render_chat(
            self.tokenizer, messages, tools or (PYTHON_TOOL,), add_generation_prompt=True
        )
        ids = self.tokenize(text)
        if not self.settings.reuse_prefix:
            self.reset()
        n = self.settings.max_new_tokens
        r = self._call({"op": "generate", "ids": ids, "max_new_tokens": n, "stop": self.stop})
        new = [int(t) for t in r["ids"]]
        return Generation(
            str(self.tokenizer.decode(new, skip_special_tokens=True)),
            tuple(ids),
            tuple(new),
            tuple(float(x) for x in r["logprobs"]),
            r["finish"],
            CacheUse(int(r["reused"]), int(r["prefilled"])),
            time.perf_counter() - start,
        )

    def reset(self) -> None:
        self._call({"op": "reset"})

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=60)


class _Worker:
    """The worker side: one ORT-genai model and one generator holding the episode's prefix."""

    def __init__(self, model_dir: str, threads: int, max_length: int) -> None:
        import onnxruntime_genai as og

        self.og = og
        config = og.Config(model_dir)
        config.clear_providers()  # the CPU execution provider
        opts = {"intra_op_num_threads": threads, "inter_op_num_threads": 1}
        config.overlay(json.dumps({"model": {"decoder": {"session_options": opts}}}))
        self.model = og.Model(config)
        genai = json.loads((Path(model_dir) / "genai_config.json").read_text())
        self.max_length = max_length or int(genai["model"]["context_length"])
        self.gen: Any = None
        self.fed: list[int] = []  # the tokens whose keys and values the generator holds

    def reset(self) -> None:
        self.gen, self.fed = None, []

    def generate(self, ids: list[int], max_new: int, stop: set[int]) -> dict[str, Any]:
        import numpy as np

        if not ids or len(ids) >= self.max_length:
            raise ValueError(f"a prompt of {len(ids)} tokens (the model holds {self.max_length})")
        keep = 0
        for a, b in zip(self.fed, ids[:-1], strict=False):  # one token at least is appended
            if a != b:
                break
            keep += 1
        if self.gen is None or keep == 0:
            params = self.og.GeneratorParams(self.model)
            params.set_search_options(do_sample=False, max_length=self.max_length)
            self.gen, keep = self.og.Generator(self.model, params), 0
        else:
            self.gen.rewind_to(keep)
        t = time.perf_counter()
        self.gen.append_tokens(ids[keep:])
        out: list[int] = []
        logprobs: list[float] = []
        finish = "length"
        while len(out) < min(max_new, self.max_length - len(ids)):
            logits = np.asarray(self.gen.get_logits()[0, -1], dtype=np.float64)
            self.gen.generate_next_token()
            token = int(self.gen.get_next_tokens()[0])
            top = logits.max()
            logprobs.append(float(logits[token] - top - np.log(np.exp(logits - top).sum())))
            out.append(token)
            if token in stop:
                finish = "stop"
                break
            if self.gen.is_done():  # the model's own end-of-text or its length limit
                break
        self.fed = ids + out[:-1]  # the last picked token is not yet through the model
        return {
            "ids": out,
            "logprobs": logprobs,
            "finish": finish,
            "reused": keep,
            "prefilled": len(ids) - keep,
            "compute_s": time.perf_counter() - t,
        }


def worker_main(argv: Sequence[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="ORT-genai worker: JSON lines on stdin and stdout")
    ap.add_argument("model_dir")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-length", dest="max_length", type=int, default=0)
    ns = ap.parse_args(argv)

    def say(reply: dict[str, Any]) -> None:
        print(json.dumps({**reply, "cpu_s": time.process_time()}), flush=True)

    t = time.perf_counter()
    try:
        import onnxruntime_genai as og

        import_s = time.perf_counter() - t
        t = time.perf_counter()
        worker = _Worker(ns.model_dir, ns.threads, ns.max_length)
    except Exception as exc:  # one line back to the client, which raises it
        say(
            {
                "error": f"cannot load {ns.model_dir}: {str(exc).splitlines()[0] if str(exc) else exc!r}"
            }
        )
        return 1
    say(
        {
            "ready": True,
            "version": og.__version__,
            "import_s": import_s,
            "load_s": time.perf_counter() - t,
        }
    )
    for line in sys.stdin:
        try:
            req = json.loads(line)
            if req["op"] == "reset":
                worker.reset()
                say({"ok": True})
            elif req["op"] == "generate":
                say(worker.generate(list(req["ids"]), int(req["max_new_tokens"]), set(req["stop"])))
            else:
                say({"error": f"unknown op {req['op']!r}"})
        except Exception as exc:
            say({"error": f"{type(exc).__name__}: {exc}"})
    return 0


if __name__ == "__main__":
    sys.exit(worker_main())
