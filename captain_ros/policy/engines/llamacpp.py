"""A student served by llama.cpp (``llama-cpp-python``) from one GGUF file.

:class:`LlamaCppChat` renders the request with the shared renderer
(:func:`~captain_ros.policy.chat_render.render_chat`, the chat template read from the GGUF),
tokenizes with the model's own vocabulary, and runs its own decode loop over llama.cpp's context:

- **Prefix kept across requests.** The context's KV cache holds the tokens of the last prompt and
  reply; a new prompt keeps their longest common prefix and prefills only the rest (llama.cpp drops
  the cache past that point). A compaction that rewrites the history therefore recomputes from the
  first changed token, and :meth:`LlamaCppChat.reset` (a new episode, a restart) forgets it all.
- **Sampling in NumPy** over the last position's logits: greedy at temperature 0, else
  temperature and top-p with a NumPy generator seeded ``seed + request``; the recorded
  log-probability is that of the tempered distribution (temperature 1 when greedy), before top-p,
  as :class:`~captain_ros.policy.transformers_chat.TransformersChat` records it.
- **Optional grammar** (:mod:`~captain_ros.policy.engines.grammar`), checked lazily per token.
- **Prompt-lookup drafting** (:mod:`~captain_ros.policy.engines.lookup`): each decode step
  evaluates the drafter's guess of the next tokens in the same batch and keeps those the sampler
  picks itself, so fewer decode calls write the same reply.
- **Threads** as the caller sets them (``threads``; default ``$OMP_NUM_THREADS``, else all cores).

A missing, unreadable or non-GGUF file ends in one :class:`ModelFileError` line.
"""

from __future__ import annotations

import contextlib
import ctypes
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from captain_ros.policy.chat_render import render_chat, render_template
from captain_ros.policy.engines.base import (
    ChatEngine,
    EngineSettings,
    Generation,
    ModelFileError,
    default_threads,
)
from captain_ros.policy.engines.grammar import GrammarGate, grammar_text
from captain_ros.policy.engines.lookup import LookupDrafter, LookupSettings
from captain_ros.policy.openai_client import PYTHON_TOOL
from captain_ros.policy.prefix_cache import CacheUse, common_prefix_len

GGUF_MAGIC = b"GGUF"


def check_gguf(path: str | Path) -> Path:
    """``path`` as a readable GGUF file, or :class:`ModelFileError` naming what is wrong."""
    p = Path(path)
    if not p.is_file():
        raise ModelFileError(f"model file not found: {p}")
    try:
        with p.open("rb") as f:
            magic = f.read(4)
    except OSError as exc:
        raise ModelFileError(f"model file {p} cannot be read: {exc.strerror or exc}") from exc
    if magic != GGUF_MAGIC:
        raise ModelFileError(
            f"model file {p} is not a GGUF file (starts with {magic!r}, expected {GGUF_MAGIC!r})"
        )
    return p


@contextlib.contextmanager
def _without_extra_buffer_types(llama_cpp: Any) -> Iterator[None]:
    """Load with ``use_extra_bufts = False`` (``llama_cpp.Llama`` has no argument for it): no weight
    repacking into the CPU's extra buffer types (repack, AMX). With them, llama-cpp-python 0.3.36
    crashes (a segmentation fault) on the first decode of Q4_1 and Q8_0 files on this project's
    Xeon machines (AMX present); without them it runs, at a slower prefill (docs/engines.md)."""
    module = llama_cpp.llama_cpp
    default = module.llama_model_default_params

    def params() -> Any:
        p = default()
        p.use_extra_bufts = False
        return p

    module.llama_model_default_params = params
    try:
        yield
    finally:
        module.llama_model_default_params = default


class _TemplateTokenizer:
    """What :func:`render_chat` needs of a tokenizer, from a GGUF's chat template."""

    def __init__(self, chat_template: str, special: dict[str, str]) -> None:
        self.chat_template = chat_template
        self.special = special

    def apply_chat_template(
        self,
        conversation: list[dict[str, Any]],
        *,
        tools: Any = None,
        chat_template: str | None = None,
        add_generation_prompt: bool = True,
        tokenize: bool = False,
    ) -> str:
        return render_template(
            chat_template or self.chat_template,
            conversation,
            tools,
            add_generation_prompt=add_generation_prompt,
            **self.special,
        )


def _pick(logits: np.ndarray, temperature: float, top_p: float, rng: np.random.Generator) -> int:
    if temperature <= 0.0:
        return int(np.argmax(logits))
    z = logits.astype(np.float64) / temperature
    p = np.exp(z - z.max())
    p /= p.sum()
    if top_p < 1.0:
        order = np.argsort(-p, kind="stable")
        cum = np.cumsum(p[order])
        keep = order[: int(np.searchsorted(cum, top_p)) + 1]
        q = np.zeros_like(p)
        q[keep] = p[keep]
        p = q / q.sum()
    return int(rng.choice(p.shape[0], p=p))


def _logprob(logits: np.ndarray, token: int, temperature: float) -> float:
    z = logits.astype(np.float64) / (temperature if temperature > 0 else 1.0)
    m = z.max()
    return float(z[token] - m - np.log(np.exp(z - m).sum()))


class LlamaCppChat(ChatEngine):
    """A GGUF model in a llama.cpp context.

    Args:
        model_path: The GGUF file.
        settings: Sampling and thread settings.
        n_ctx: Context length [tokens]; 0 = the model's training context.
        grammar: ``none`` or ``envelope`` (:mod:`~captain_ros.policy.engines.grammar`).
        n_batch: Prompt tokens per llama.cpp decode call.
        lora_path: A LoRA adapter GGUF (``captain learn export --adapter``) applied to the model
            at full scale: a shipped student is the packaged base plus its adapter.
        lookup: Prompt-lookup drafting (:mod:`~captain_ros.policy.engines.lookup`); default
            on, ``LookupSettings(max_draft=0)`` turns it off.
        draft_corpus: A text file whose tokens the drafter searches too (a shipped student's
            ``drafts.txt``); it changes how fast a reply is written, never the reply.
    """

    name = "llamacpp"

    def __init__(
        self,
        model_path: str | Path,
        settings: EngineSettings | None = None,
        *,
        n_ctx: int = 0,
        grammar: str = "none",
        n_batch: int = 512,
        lora_path: str | Path | None = None,
        lookup: LookupSettings | None = None,
        draft_corpus: str | Path | None = None,
    ) -> None:
        path = check_gguf(model_path)
        lora = check_gguf(lora_path) if lora_path is not None else None
        self.settings = settings or EngineSettings()
        self.grammar_name = grammar
        self._grammar = grammar_text(grammar)
        self.threads = self.settings.threads or default_threads()
        start = time.perf_counter()
        try:
            import llama_cpp
        except ImportError as exc:
            raise ModelFileError(
                "the llamacpp engine needs llama-cpp-python (scripts/setup.sh builds it)"
            ) from exc
        self._ll = llama_cpp
        self.llm: Any = None
        try:
            with _without_extra_buffer_types(llama_cpp):
                self.llm = llama_cpp.Llama(
                    str(path),
                    n_ctx=n_ctx,
                    n_batch=n_batch,
                    n_ubatch=n_batch,
                    n_threads=self.threads,
                    n_threads_batch=self.threads,
                    seed=self.settings.seed,
                    lora_path=str(lora) if lora else None,
                    verbose=False,
                )
        except (ValueError, RuntimeError) as exc:
            what = f"{path} with the adapter {lora}" if lora else str(path)
            raise ModelFileError(
                f"llama.cpp cannot load {what}: a damaged or unsupported GGUF file"
            ) from exc
        self.load_s = time.perf_counter() - start
        self.path = path
        self.lora = lora
        self.last_drafted = (0, 0)  # the last request's drafted and kept tokens
        self.last_decode_s = 0.0  # the last request's decode time (after its prefill) [s]
        self.vocab = llama_cpp.llama_model_get_vocab(self.llm.model)
        self.n_vocab = int(self.llm.n_vocab())
        self.n_ctx = int(self.llm.n_ctx())
        template = self.llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise ModelFileError(f"{path} has no chat template (tokenizer.chat_template)")
        special = {
            "bos_token": self._piece(self.llm.token_bos()),
            "eos_token": self._piece(self.llm.token_eos()),
        }
        self.tokenizer = _TemplateTokenizer(template, special)
        corpus: list[int] = []
        if draft_corpus is not None:
            try:
                corpus = self.tokenize(Path(draft_corpus).read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError) as exc:
                raise ModelFileError(f"draft corpus {draft_corpus} cannot be read: {exc}") from exc
        self.drafter = LookupDrafter(lookup, corpus=corpus)
        self.ids: list[int] = []  # the tokens whose keys and values the context holds
        self.seed = self.settings.seed  # request k samples with seed + k (RE-0 seats reseed)
        self.requests = 0
        self.reused_total = 0
        self.prefilled_total = 0

    def _piece(self, token: int) -> str:
        if token < 0:
            return ""
        return bytes(self.llm.detokenize([token], special=True)).decode("utf-8", errors="replace")

    def describe(self) -> dict[str, Any]:
        return {
            "engine": self.name,
            "model": str(self.path),
            **({"adapter": str(self.lora)} if self.lora else {}),
            "threads": self.threads,
            "n_ctx": self.n_ctx,
            "decoding": self.settings.decoding(),
            "grammar": self.grammar_name,
            "lookup_max_draft": self.drafter.settings.max_draft,
            "load_s": round(self.load_s, 3),
            "llama_cpp_python": str(getattr(self._ll, "__version__", "")),
        }

    def reset(self) -> None:
        self.ids = []
        self.llm.n_tokens = 0

    def render(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = (PYTHON_TOOL,),
    ) -> str:
        return render_chat(self.tokenizer, messages, tools, add_generation_prompt=True)

    def tokenize(self, text: str) -> list[int]:
        """Token ids of ``text`` (special tokens parsed, no BOS added: the template writes it)."""
        return [
            int(t) for t in self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        ]

    def _prefill(self, prompt: list[int]) -> CacheUse:
        keep = common_prefix_len(self.ids, prompt) if self.settings.reuse_prefix else 0
        keep = min(keep, len(prompt) - 1)  # the last prompt token is evaluated for its logits
        self.llm.n_tokens = keep  # eval() drops the context's cache from here on
        self.ids = prompt[:keep]
        self.llm.eval(prompt[keep:])
        self.ids = list(prompt)
        return CacheUse(keep, len(prompt) - keep)

    def _logits(self, i: int = -1) -> np.ndarray:
        ptr = self._ll.llama_get_logits_ith(self.llm.ctx, i)
        return np.ctypeslib.as_array(
            ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float)), shape=(self.n_vocab,)
        ).copy()

    def generate(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = (PYTHON_TOOL,),
    ) -> Generation:
        start = time.perf_counter()
        prompt = self.tokenize(self.render(messages, tools))
        if not prompt:
            raise ValueError("the rendered prompt has no tokens")
        if len(prompt) >= self.n_ctx:
            raise ValueError(f"the prompt has {len(prompt)} tokens; the context holds {self.n_ctx}")
        rng = np.random.default_rng(self.seed + self.requests)
        gate = GrammarGate(self.vocab, self._grammar, self.n_vocab) if self._grammar else None
        try:
            use = self._prefill(prompt)
            self.drafter.start(prompt)
            drafted, accepted = self.drafter.drafted, self.drafter.accepted
            t_decode = time.perf_counter()
            new, logprobs, finish = self._decode(len(prompt), rng, gate)
            self.last_decode_s = time.perf_counter() - t_decode
        except BaseException:
            self.reset()  # the context's state is unknown after an error
            raise
        finally:
            forced = gate.forced if gate else 0
            if gate is not None:
                gate.close()
        self.requests += 1
        self.reused_total += use.reused
        self.prefilled_total += use.prefilled
        text = bytes(self.llm.detokenize(new, special=False)).decode("utf-8", errors="replace")
        self.last_forced = forced
        self.last_drafted = (self.drafter.drafted - drafted, self.drafter.accepted - accepted)
        return Generation(
            text,
            tuple(prompt),
            tuple(new),
            tuple(logprobs),
            finish,
            use,
            time.perf_counter() - start,
        )

    def _decode(
        self, n_prompt: int, rng: np.random.Generator, gate: GrammarGate | None
    ) -> tuple[list[int], list[float], str]:
        """Sample the reply token by token; with drafting on, each step also evaluates the
        drafter's guess of the next tokens in the same batch and keeps every drafted token the
        sampler picks itself (the same tokens, log-probs and random draws as without drafting)."""
        s = self.settings
        new: list[int] = []
        logprobs: list[float] = []
        rows = [self._logits()]  # rows[i]: the logits after the context and draft[:i]
        draft: list[int] = []
        token = -1
        while True:
            for i, logits in enumerate(rows):
                if i > 0:  # drafted token i-1 was kept: the context holds it already
                    self.ids.append(draft[i - 1])
                picked = self._sample(logits, rng, gate)
                if picked is None:  # the grammar admits nothing more: end the reply
                    return self._end(new, logprobs, "stop", (len(draft), i))
                token = picked
                new.append(token)
                logprobs.append(_logprob(logits, token, s.temperature))
                if self._ll.llama_vocab_is_eog(self.vocab, token):
                    return self._end(new, logprobs, "stop", (len(draft), i))
                if gate is not None:
                    gate.accept(token)
                if len(new) >= s.max_new_tokens or n_prompt + len(new) >= self.n_ctx:
                    return self._end(new, logprobs, "length", (len(draft), i))
                if i < len(draft) and token == draft[i]:
                    continue  # the model picked the drafted token: its row is next
                break
            self.drafter.record(len(draft), i)
            room = min(s.max_new_tokens - len(new), self.n_ctx - n_prompt - len(new)) - 1
            draft = self.drafter.draft(new, room)
            rows = self._eval_rows([token, *draft])
            self.ids.append(token)

    def _sample(
        self, logits: np.ndarray, rng: np.random.Generator, gate: GrammarGate | None
    ) -> int | None:
        """The next token (the grammar's choice where it refuses the model's); None when the
        grammar admits no token at all."""
        s = self.settings
        token = _pick(logits, s.temperature, s.top_p, rng)
        if gate is not None and not gate.allows(token):
            masked = gate.mask(logits)
            if not np.isfinite(masked).any():
                return None
            token = _pick(masked, s.temperature, s.top_p, rng)
            gate.forced += 1
        return token

    def _eval_rows(self, tokens: list[int]) -> list[np.ndarray]:
        """Evaluate ``tokens`` after the kept context (dropping any drafted tokens it held past
        it) in one batch; the logits after each of them."""
        llm = self.llm
        llm.n_tokens = len(self.ids)
        if len(tokens) == 1:
            llm.eval(tokens)
            return [self._logits()]
        llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)  # llama-cpp-python's own eval() does this
        llm._batch.set_batch(batch=tokens, n_past=llm.n_tokens, logits_all=True)
        llm._ctx.decode(llm._batch)
        llm.n_tokens += len(tokens)
        return [self._logits(i) for i in range(len(tokens))]

    def _end(
        self, new: list[int], logprobs: list[float], finish: str, step: tuple[int, int]
    ) -> tuple[list[int], list[float], str]:
        self.drafter.record(*step)  # the last step's drafted and kept tokens
        self.llm.n_tokens = len(self.ids)  # drafted tokens past the reply are dropped at next eval
        return new, logprobs, finish

    def close(self) -> None:
        llm = getattr(self, "llm", None)
        if llm is not None:
            llm.close()
            self.llm = None
