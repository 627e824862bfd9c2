"""The in-process policy keeps its KV cache across the requests of an episode: same greedy
replies as without the cache, fewer tokens prefilled (counted at the model), reset per episode."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from sft_fixtures import episode_history, save_tiny  # noqa: E402

from captain_ros.harness.episode.context import PYTHON_TOOL_SCHEMA, render  # noqa: E402
from captain_ros.harness.record.history import ToolCall, ToolOutput, Turn  # noqa: E402
from captain_ros.policy.prefix_cache import PrefixCache, common_prefix_len  # noqa: E402
from captain_ros.policy.toolcalls import parse_reply  # noqa: E402
from captain_ros.policy.transformers_chat import TransformersChat  # noqa: E402

pytestmark = pytest.mark.learn
TOOLS = [PYTHON_TOOL_SCHEMA]


@pytest.fixture(scope="module", params=[("qwen2", "smol"), ("llama", "qwen")])
def folder(request, tmp_path_factory):
    torch.set_num_threads(1)
    kind, template = request.param
    return save_tiny(tmp_path_factory.mktemp(f"{kind}_{template}"), kind, template)


class PrefillCounter:
    """Counts the tokens each forward pass of the backbone receives."""

    def __init__(self, model):
        self.calls: list[int] = []
        model.model.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module, args, kwargs):
        ids = kwargs.get("input_ids") if kwargs.get("input_ids") is not None else args[0]
        self.calls.append(int(ids.shape[1]))

    def take(self) -> list[int]:
        calls, self.calls = self.calls, []
        return calls


def _chat(folder, reuse: bool) -> TransformersChat:
    return TransformersChat(
        folder, device="cpu", max_new_tokens=12, temperature=0, reuse_cache=reuse
    )


def _episode_requests(chat: TransformersChat, n: int, base_history):
    """Run ``n`` requests the way the harness does: the reply is parsed, becomes a turn of the
    history (so the re-rendered assistant turn may differ from the generated tokens), a tool
    output is appended, and the next prompt is rendered from the history."""
    history = base_history
    for t in range(1, n + 1):
        messages = render(history)
        gen = chat.generate(messages, TOOLS)
        parsed = parse_reply(gen.text)
        cid = f"call_{t}_0"
        history = history.with_turn(
            Turn(
                t,
                parsed.reasoning,
                (ToolCall(cid, "x = 1"),),
                (ToolOutput(cid, f"output of request {t}"),),
            )
        )
        yield messages, gen


def test_cached_and_uncached_greedy_replies_are_identical_and_cache_is_reused(folder):
    cached, plain = _chat(folder, True), _chat(folder, False)
    counter = PrefillCounter(cached.model)
    start = episode_history(1)
    previous: list[int] = []
    cropped = 0
    for t, ((_, a), (_, b)) in enumerate(
        zip(_episode_requests(cached, 4, start), _episode_requests(plain, 4, start), strict=True), 1
    ):
        assert a.prompt_ids == b.prompt_ids
        assert a.completion_ids == b.completion_ids  # identical greedy output
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)
        calls = counter.take()
        expected_reuse = min(common_prefix_len(previous, a.prompt_ids), len(a.prompt_ids) - 1)
        assert a.cache.reused == expected_reuse
        assert calls[0] == a.cache.prefilled == len(a.prompt_ids) - a.cache.reused
        assert all(c == 1 for c in calls[1:])  # decoding: one token per step
        assert b.cache.reused == 0
        if t > 1:
            assert a.cache.prefilled < len(a.prompt_ids) // 2  # only the new tokens
            cropped += a.cache.reused < len(previous)  # the re-rendered reply diverged
        # the cache holds everything but the last sampled token (never fed to the model)
        previous = list(a.prompt_ids + a.completion_ids)[:-1]
        assert cached.prefix.ids == previous
    assert cropped  # the recompute-from-the-common-prefix path ran


def test_reset_and_a_rewritten_history_recompute_from_the_common_prefix(folder):
    cached, plain = _chat(folder, True), _chat(folder, False)
    msgs = render(episode_history(2))
    first = cached.generate(msgs, TOOLS)
    edited = [dict(m) for m in msgs]
    edited[1] = {"role": "user", "content": "A different task text."}  # compaction-like rewrite
    a, b = cached.generate(edited, TOOLS), plain.generate(edited, TOOLS)
    assert a.completion_ids == b.completion_ids
    shared = common_prefix_len(list(first.prompt_ids + first.completion_ids)[:-1], a.prompt_ids)
    assert 0 < a.cache.reused == shared < len(a.prompt_ids) // 2  # the system prompt only
    cached.reset()
    c = cached.generate(edited, TOOLS)
    assert c.cache.reused == 0 and c.completion_ids == b.completion_ids


def test_logprobs_are_those_of_a_full_forward_pass(folder):
    chat = _chat(folder, True)
    gen = chat.generate(render(episode_history(1)), TOOLS)
    ids = torch.tensor([list(gen.prompt_ids + gen.completion_ids)])
    with torch.no_grad():
        logits = chat.model(ids).logits[0].float().log_softmax(-1)
    n = len(gen.prompt_ids)
    expected = [float(logits[n - 1 + j, tok]) for j, tok in enumerate(gen.completion_ids)]
    assert len(gen.logprobs) == len(gen.completion_ids) > 0
    assert gen.logprobs == pytest.approx(expected, abs=1e-4)


def test_sampled_logprobs_are_those_of_the_tempered_distribution(folder):
    """Sampling at T records log softmax(logits / T): the distribution the tokens came from."""
    chat = TransformersChat(folder, device="cpu", max_new_tokens=12, temperature=0.5, seed=3)
    gen = chat.generate(render(episode_history(1)), TOOLS)
    ids = torch.tensor([list(gen.prompt_ids + gen.completion_ids)])
    with torch.no_grad():
        logits = chat.model(ids).logits[0].float()
    n = len(gen.prompt_ids)
    pairs = [(logits[n - 1 + j], tok) for j, tok in enumerate(gen.completion_ids)]
    tempered = [float((r / 0.5).log_softmax(-1)[t]) for r, t in pairs]
    raw = [float(r.log_softmax(-1)[t]) for r, t in pairs]
    assert len(gen.logprobs) == len(gen.completion_ids) > 0
    assert gen.logprobs == pytest.approx(tempered, abs=1e-4)
    assert max(abs(a - b) for a, b in zip(tempered, raw, strict=True)) > 1e-3


def test_prefix_cache_always_leaves_a_token_to_prefill():
    assert common_prefix_len([1, 2, 3], [1, 2, 4, 5]) == 2
    assert common_prefix_len([], [1]) == 0

    class Cache:
        def __init__(self, n):
            self.n = n

        def get_seq_length(self):
            return self.n

        def crop(self, n):  # transformers 5: a negative count of tokens to remove
            assert n < 0
            self.n += n

    pc = PrefixCache()
    pc.store(Cache(3), [1, 2, 3, 9])
    assert pc.ids == [1, 2, 3]
    cache, use = pc.take([1, 2, 3])
    assert use.reused == 2 and use.prefilled == 1 and cache.n == 2
    assert pc.cache is None  # handed to the generation
    cache, use = pc.take([1, 2, 3])
    assert cache is None and use.reused == 0
    off = PrefixCache(enabled=False)
    off.store(Cache(3), [1, 2, 3])
    assert off.take([1, 2, 3, 4])[1].reused == 0


def test_the_policy_drops_its_cache_at_each_episode_and_returns_logprobs(folder):
    from captain_ros.policy.chat_policies import TransformersPolicy

    policy = TransformersPolicy(str(folder), device="cpu", max_new_tokens=4, temperature=0)
    reply = policy.act(render(episode_history(1)), TOOLS)
    assert reply.completion_ids and len(reply.logprobs) == len(reply.completion_ids)
    assert reply.completion_tokens == len(reply.completion_ids) and reply.prompt_tokens > 0
    assert policy.chat.prefix.cache is not None
    policy.reset("red_on_blue", 1)
    assert policy.chat.prefix.cache is None and policy.chat.prefix.ids == []
