"""The student's inference engines side by side: llama.cpp and ORT-genai against transformers.

In one run, for each engine on the same SmolLM2-135M-Instruct weights, the same prompts and greedy
settings (``--threads`` CPU threads each, one engine at a time):

- load time (building the engine: reading the model into memory) and the bindings' import time;
- prefill tokens/s (a fresh prompt of ``--contexts`` tokens, one reply token) and decode tokens/s
  (the reply's further tokens on that context) at each context length;
- request latency p50 / p95 with the prefix kept: a simulated episode of ``--requests`` requests,
  each adding the previous reply and a ~300-token tool output to a ~3k-token history;
- optionally (``--episodes N``) whole pick_place episodes of the packaged policy on the MuJoCo
  backend on the same seeds (greedy, at most 3 requests of 256 tokens), split into model / robot /
  harness time;

and beside them the machine's measured matmul limit (float32 GEMM GFLOP/s, NumPy and torch, at
the same thread count) and its load average before and after.

Engines: ``llamacpp`` on the packaged Q4_1 GGUF; ``llamacpp-q8`` on a Q8_0 GGUF converted by
llama.cpp's ``convert_hf_to_gguf.py`` from the dequantized folder; ``transformers`` fp32 eager from
that folder (the same weights as the Q4_1 file, dequantized); ``ort`` (fp32) and ``ort-int4``
(MatMulNBits, 4-bit blocks of 32) on ONNX models that onnxruntime-genai's model builder makes from
that folder, run in a worker of the interpreter that has onnxruntime-genai (``--ort-python``,
``benchmarks/ort_engine.py``). The folder, the Q8_0 file and the ONNX models are made once under
``--work``. Each engine's first 32 greedy tokens at each context are compared with transformers'
on the same prompt token ids (``agree_with_transformers``: how many leading tokens agree; the
largest |log-prob difference| over those).

Run: ``OMP_NUM_THREADS=2 .venv/bin/python benchmarks/bench_student_engine.py [--threads 2]
[--contexts 2048,6144] [--requests 8] [--episodes 0] [--work /tmp/captain_engine_bench]
[--engines llamacpp,llamacpp-q8,transformers,ort,ort-int4] [--ort-python ORTVENV/bin/python]
[--json out.json]``
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def gemm_gflops(threads: int) -> dict[str, float]:
    """float32 GEMM GFLOP/s (best of 5, n=1024) with NumPy and with torch."""
    n = 1024
    a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    b = a.T.copy()
    best = min(_timed(lambda: a @ b) for _ in range(5))
    out = {"numpy_gflops": 2 * n**3 / best / 1e9}
    import torch

    torch.set_num_threads(threads)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    best = min(_timed(lambda: ta @ tb) for _ in range(5))
    out["torch_gflops"] = 2 * n**3 / best / 1e9
    return out


def _timed(fn: Any) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def filler_messages(tokens: int, count: Any) -> list[dict[str, Any]]:
    """A system + user chat of about ``tokens`` tokens (the repository's docs as the task text)."""
    text = "\n\n".join(p.read_text() for p in sorted((ROOT / "docs").glob("*.md")))
    words = text.split(" ")
    lo, hi = 1, len(words)
    while lo < hi:  # the longest prefix of the docs under the budget
        mid = (lo + hi + 1) // 2
        if count(" ".join(words[:mid])) <= tokens - 60:
            lo = mid
        else:
            hi = mid - 1
    task = " ".join(words[:lo])
    return [
        {"role": "system", "content": "You control a robot arm by writing Python."},
        {
            "role": "user",
            "content": task + "\n\nWrite a long Python program that picks up "
            "every cube on the table, one by one.",
        },
    ]


MODEL_POSITIONS = 8192
"""SmolLM2-135M's positions (its config's max_position_embeddings) [tokens]."""


def tool_turn(i: int, reply: str) -> list[dict[str, Any]]:
    out = "\n".join(
        f"step {i}.{k}: joint {k % 6} at {0.1 * k:.3f} rad, gripper open, "
        f"object cube_{k % 4} at ({0.3 + 0.01 * k:.3f}, {-0.1 + 0.02 * k:.3f}, 0.025) m"
        for k in range(12)
    )
    return [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": f"c{i}",
                    "type": "function",
                    "function": {
                        "name": "python",
                        "arguments": json.dumps({"code": reply[:400] or "pass"}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": f"c{i}", "content": out},
    ]


def bench_engine(
    name: str, build: Any, contexts: list[int], requests: int, decode_tokens: int
) -> dict[str, Any]:
    from captain_ros.policy.engines import EngineSettings

    res: dict[str, Any] = {"engine": name}
    t = time.perf_counter()
    eng = build(EngineSettings(max_new_tokens=1, temperature=0.0, threads=THREADS))
    res["load_s"] = time.perf_counter() - t
    if hasattr(eng, "load_detail"):  # a worker engine: its import and model load
        res["load_detail"] = eng.load_detail
    count = _counter(eng)
    for ctx in contexts:
        msgs = filler_messages(ctx, count)
        eng.reset()
        one, one_cpu = _cpu_timed(_with_tokens(eng, 1).generate, msgs)  # prefill (one token)
        # The same prompt again keeps its prefix: only its last token is recomputed, the rest
        # of the time is decoding at this context.
        full, full_cpu = _cpu_timed(_with_tokens(eng, decode_tokens).generate, msgs)
        n = len(full.completion_ids)
        res[f"ctx{ctx}"] = {
            "prompt_tokens": len(one.prompt_ids),
            "prefill_tok_s": len(one.prompt_ids) / one.model_s,
            "prefill_tok_cpu_s": len(one.prompt_ids) / one_cpu,
            "decode_tokens": n,
            "decode_reused_tokens": full.cache.reused,
            "decode_tok_s": n / full.model_s,
            "decode_tok_cpu_s": n / full_cpu,
            "prompt_digest": hashlib.sha1(str(full.prompt_ids).encode()).hexdigest()[:12],
            "first_ids": list(full.completion_ids[:AGREE_N]),
            "first_logprobs": list(full.logprobs[:AGREE_N]),
        }
    msgs = filler_messages(3000, count)
    eng.reset()
    eng = _with_tokens(eng, 64)
    lat, cpu, reused, prefilled = [], [], [], []
    stopped = ""
    for i in range(requests):
        gen, c = _cpu_timed(eng.generate, msgs)
        lat.append(gen.model_s)
        cpu.append(c)
        reused.append(gen.cache.reused)
        prefilled.append(gen.cache.prefilled)
        turn = tool_turn(i, gen.text)
        msgs = msgs + turn
        # each engine appends its own greedy reply, so histories differ: stop before a prompt
        # would pass the model's positions (an engine that writes longer replies gets fewer)
        grown = len(gen.prompt_ids) + len(gen.completion_ids) + count(json.dumps(turn)) + 64
        if 1 <= i < requests - 1 and grown > MODEL_POSITIONS:  # keep >= 2 for p50
            stopped = f"after {i + 1} requests: the next prompt (~{grown} tokens with its reply) "
            stopped += f"would pass the model's {MODEL_POSITIONS} positions"
            break
    res["requests"] = {
        "n": len(lat),
        "stopped": stopped,
        "max_new_tokens": 64,
        "first_s": lat[0],
        "p50_s": statistics.median(lat[1:]),
        "p95_s": float(np.percentile(lat[1:], 95)),
        "p50_cpu_s": statistics.median(cpu[1:]),
        "p95_cpu_s": float(np.percentile(cpu[1:], 95)),
        "final_prompt_tokens": len(gen.prompt_ids),
        "mean_reused_tokens": statistics.mean(reused[1:]),
        "mean_prefilled_tokens": statistics.mean(prefilled[1:]),
    }
    eng.close()
    return res


def _cpu_timed(fn: Any, *args: Any) -> tuple[Any, float]:
    """``fn(*args)`` and the CPU time this process spent in it [s] (all its threads): on a shared
    machine, tokens per CPU-second of a one-thread engine is its rate on a core of its own. An
    engine with a worker process (``ort``) counts the worker's CPU time too (its ``cpu_clock``)."""
    clock = getattr(getattr(fn, "__self__", None), "cpu_clock", time.process_time)
    c = clock()
    out = fn(*args)
    return out, clock() - c


def agreement(engines: list[dict[str, Any]], contexts: list[int]) -> None:
    """Add to each engine's context entries how many leading greedy tokens agree with
    transformers' on the same prompt ids, and the largest |log-prob difference| over them."""
    ref = next((e for e in engines if e["engine"] == "transformers"), None)
    if ref is None:
        return
    for e in engines:
        for ctx in contexts:
            mine, theirs = e[f"ctx{ctx}"], ref[f"ctx{ctx}"]
            if mine["prompt_digest"] != theirs["prompt_digest"]:
                mine["agree_with_transformers"] = "different prompt ids"
                continue
            n = 0
            for a, b in zip(mine["first_ids"], theirs["first_ids"], strict=False):
                if a != b:
                    break
                n += 1
            lp = zip(mine["first_logprobs"][:n], theirs["first_logprobs"][:n], strict=True)
            mine["agree_with_transformers"] = f"{n}/{min(len(mine['first_ids']), AGREE_N)}"
            mine["max_abs_logprob_diff"] = max((abs(a - b) for a, b in lp), default=0.0)


def _counter(eng: Any) -> Any:
    if hasattr(eng, "tokenize"):
        return lambda s: len(eng.tokenize(s))
    tok = eng.chat.tokenizer
    return lambda s: len(tok(s, add_special_tokens=False)["input_ids"])


def _with_tokens(eng: Any, n: int) -> Any:
    import dataclasses

    if hasattr(eng, "chat"):
        eng.chat.max_new_tokens = n
    else:
        eng.settings = dataclasses.replace(eng.settings, max_new_tokens=n)
    return eng


def episodes(engine: str, seeds: list[int], work: Path) -> list[dict[str, Any]]:
    from captain_ros.evaluation.config import (
        BudgetConfig,
        EpisodeConfig,
        PolicyConfig,
        RecordingConfig,
    )
    from captain_ros.evaluation.episode import run_one

    out = []
    for seed in seeds:
        rec = run_one(
            EpisodeConfig(
                "pick_place",
                seed,
                str(work / f"ep_{engine}_{seed}"),
                policy=PolicyConfig(
                    "transformers",
                    engine=engine,
                    temperature=0.0,
                    max_new_tokens=256,
                    threads=THREADS,
                ),
                budgets=BudgetConfig(max_requests=3),
                recording=RecordingConfig(bag=False, report=False, overwrite=True),
            )
        )
        out.append(
            {
                "seed": seed,
                "engine": engine,
                "outcome": rec.outcome,
                "requests": rec.requests,
                "wall_s": rec.wall_s,
                "model_s": rec.model_s,
                "robot_s": rec.backend_s,
                "harness_s": rec.harness_s,
                "prompt_tokens": rec.prompt_tokens,
                "completion_tokens": rec.completion_tokens,
            }
        )
    return out


def prepare(work: Path) -> tuple[Path, Path]:
    """The dequantized SmolLM2 folder and its Q8_0 GGUF under ``work`` (made once)."""
    from captain_ros.learn.export import convert
    from captain_ros.policy.transformers_chat import export_safetensors, smollm2_folder

    folder = work / "smollm2_fp32"
    if not (folder / "config.json").is_file():
        src, gguf = smollm2_folder()
        export_safetensors(src, folder, gguf)
    q8 = work / "smollm2.q8_0.gguf"
    if not q8.is_file():
        convert(folder, q8, "q8_0")
    return folder, q8


THREADS = 2
AGREE_N = 32  # greedy tokens compared with transformers' at each context
ORT_ENGINES = {"ort": "fp32", "ort-int4": "int4"}


def main() -> int:
    global THREADS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--contexts", default="2048,6144")
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--decode-tokens", dest="decode_tokens", type=int, default=64)
    ap.add_argument("--episodes", type=int, default=0, help="pick_place seeds per engine")
    ap.add_argument("--engines", default="llamacpp,llamacpp-q8,transformers")
    ap.add_argument("--work", default="/tmp/captain_engine_bench")
    ap.add_argument(
        "--ort-python",
        dest="ort_python",
        default=None,
        help="interpreter with onnxruntime-genai for the ort engines ($CAPTAIN_ORT_PYTHON, else this)",
    )
    ap.add_argument("--json", default=None)
    ns = ap.parse_args()
    THREADS = ns.threads
    os.environ["OMP_NUM_THREADS"] = str(ns.threads)
    os.environ.setdefault("MUJOCO_GL", "egl")
    work = Path(ns.work)
    work.mkdir(parents=True, exist_ok=True)
    names = [n for n in ns.engines.split(",") if n]
    unknown = sorted(set(names) - {"llamacpp", "llamacpp-q8", "transformers", *ORT_ENGINES})
    if unknown:
        print(f"bench_student_engine: unknown engine(s) {', '.join(unknown)}", file=sys.stderr)
        return 2
    ort = [n for n in names if n in ORT_ENGINES]
    if ort:
        from ort_engine import ort_python

        from captain_ros.core.errors import CaptainError

        try:
            ort_py, ort_version = ort_python(ns.ort_python)
        except CaptainError as exc:
            print(f"bench_student_engine: {exc}", file=sys.stderr)
            return 2
    load_before = os.getloadavg()
    report: dict[str, Any] = {
        "machine": {
            "cpu": _cpu(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "threads": ns.threads,
            "loadavg_before": load_before,
        }
    }
    folder, q8 = prepare(work)
    if ort:
        from ort_engine import OrtWorkerEngine, build_onnx

        report["machine"]["onnxruntime_genai"] = ort_version
        onnx = {
            n: build_onnx(folder, work / f"ort_{ORT_ENGINES[n]}", ORT_ENGINES[n], ort_py)
            for n in ort
        }
    report["machine"].update(gemm_gflops(ns.threads))
    t = time.perf_counter()
    import llama_cpp

    report["machine"]["llama_cpp_import_s"] = time.perf_counter() - t
    report["machine"]["llama_cpp_python"] = llama_cpp.__version__
    from captain_ros.policy.engines.llamacpp import LlamaCppChat
    from captain_ros.policy.engines.lookup import LookupSettings
    from captain_ros.policy.engines.transformers import TransformersEngine
    from captain_ros.policy.transformers_chat import smollm2_folder

    src, gguf = smollm2_folder()
    raw = LookupSettings(max_draft=0)  # raw decode rates: prompt-lookup drafting is measured on
    # a trained student's real episodes (compare_student_engines.py), not on filler text
    builders: dict[str, Any] = {
        "llamacpp": lambda s: LlamaCppChat(src / gguf, s, lookup=raw),
        "llamacpp-q8": lambda s: LlamaCppChat(q8, s, lookup=raw),
        "transformers": lambda s: TransformersEngine(folder, s, device="cpu"),
    }
    for n in ort:  # a worker of the ORT interpreter on that engine's ONNX model
        builders[n] = functools.partial(OrtWorkerEngine, onnx[n], folder, python=ort_py)
    contexts = [int(c) for c in ns.contexts.split(",")]
    report["engines"] = []
    for name in names:
        r = bench_engine(name, builders[name], contexts, ns.requests, ns.decode_tokens)
        print(json.dumps(r), flush=True)
        report["engines"].append(r)
        if ns.json:  # what is measured so far survives a later engine's failure
            Path(ns.json).write_text(json.dumps(report, indent=2))
    agreement(report["engines"], contexts)
    for r in report["engines"]:
        agree = {c: r[f"ctx{c}"].get("agree_with_transformers") for c in contexts}
        print(json.dumps({"engine": r["engine"], "agree_with_transformers": agree}), flush=True)
    if ns.episodes:
        seeds = list(range(ns.episodes))
        report["episodes"] = episodes("llamacpp", seeds, work) + episodes(
            "transformers", seeds, work
        )
        for e in report["episodes"]:
            print(json.dumps(e), flush=True)
    report["machine"]["loadavg_after"] = os.getloadavg()
    print(json.dumps(report["machine"]))
    if ns.json:
        Path(ns.json).write_text(json.dumps(report, indent=2))
    return 0


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


if __name__ == "__main__":
    sys.exit(main())
