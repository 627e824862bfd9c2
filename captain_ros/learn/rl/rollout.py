"""What an RL rollout worker runs: one episode of the student with the critic's early stop.

:func:`run_rollout_job` is the job function the evaluation runner executes in its spawned worker
processes or Ray tasks (``job_path = "captain_ros.learn.rl.rollout:run_rollout_job"``). Per job:

- :class:`RolloutPolicy`: the student (a transformers model folder with the trainer's LoRA
  adapter of the policy version the job names). The base model stays loaded in the worker process
  across jobs; a job naming a newer version copies that adapter's weights in
  (:mod:`captain_ros.learn.rl.sync`). With ``engine: llamacpp`` the worker samples with llama.cpp
  instead: the policy folder's GGUF plus the version's adapter converted to a llama.cpp LoRA GGUF
  (once per version, next to the published adapter), the engine rebuilt when the version changes
  (:mod:`captain_ros.learn.rl.llama_student`). It samples at the run's temperature (paper: 1) without
  top-p, and the recorded log-probabilities are those of the tempered distribution it sampled
  from (the ratio's denominator; the update scores at the same temperature), with
  a per-job sampling seed (the G rollouts of a start state differ; a rerun is identical).
- :class:`CriticEarlyStop`: an episode observer that scores each state s_t with the critic
  (V(s_t, t), read before request t) and ends the episode with ``Stop(settle_as_budget=True)``
  when :class:`~captain_ros.learn.credit.EarlyStop` says so (settled as budget exhausted).
- ``rollout.json`` in the episode folder: the version, each request's prompt token ids (stored
  as the length shared with the previous prompt plus the new tail), reply ids and reply
  log-probabilities, the critic values the early stop saw, and the worker that ran it (host,
  process id, and whether it was a Ray worker).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from captain_ros.core.episode_folder import EpisodeFiles
from captain_ros.evaluation.runner import worker_environment
from captain_ros.evaluation.selftest import worker_identity
from captain_ros.harness.episode.observers import EpisodeObserver, Stop
from captain_ros.learn.credit.early_stop import EarlyStop
from captain_ros.policy.base import Policy, PolicyReply

ROLLOUT_FORMAT = "captain-rollout/1"
JOB_PATH = "captain_ros.learn.rl.rollout:run_rollout_job"

# Per worker process: the loaded student (by base folder) and critics (by folder).
_STUDENTS: dict[tuple[str, str], _Student] = {}
_CRITICS: dict[str, Any] = {}


@dataclass
class _Student:
    chat: Any  # TransformersChat whose .model is the peft model
    version: int
    adapter: str


def _student(
    base: str, adapter: str, device: str, max_new_tokens: int, temperature: float = 1.0
) -> _Student:
    """The worker's student at the adapter folder's version (loaded once, updated in place)."""
    from captain_ros.learn.rl.sync import load_adapter_weights, read_version

    version = read_version(adapter)
    key = (base, device)
    st = _STUDENTS.get(key)
    if st is None:
        from peft import PeftModel

        from captain_ros.policy.transformers_chat import TransformersChat

        chat = TransformersChat(
            base,
            device=device,
            max_new_tokens=max_new_tokens,
            temperature=1.0,
            top_p=1.0,
            seed=0,
            dtype="float32",
        )
        chat.model = PeftModel.from_pretrained(chat.model, adapter, is_trainable=False).eval()
        st = _STUDENTS[key] = _Student(chat, version, adapter)
    elif st.version != version or st.adapter != adapter:
        load_adapter_weights(st.chat.model, adapter)
        st.version, st.adapter = version, adapter
    st.chat.max_new_tokens = int(max_new_tokens)
    st.chat.temperature = float(temperature)
    return st


class RecordingPolicy(Policy):
    """A student at one policy version that records every request's prompt ids, reply ids and
    reply log-probs for ``rollout.json`` (each prompt as the length it shares with the previous
    prompt plus the new tail). Subclasses produce the tokens (:meth:`act`) and call
    :meth:`recorded`."""

    def __init__(self, version: int, sample_seed: int) -> None:
        self.version = int(version)
        self.sample_seed = int(sample_seed)
        self.requests: list[dict[str, Any]] = []
        self._prev: list[int] = []

    def reset(self, task_name: str, seed: int) -> None:
        self.requests, self._prev = [], []

    def recorded(
        self,
        prompt_ids: Sequence[int],
        completion_ids: Sequence[int],
        logprobs: Sequence[float],
        **reply: Any,
    ) -> PolicyReply:
        """Record one request; the reply (``reply``: content, model_s, ...) with its tokens."""
        prompt = [int(v) for v in prompt_ids]
        shared, n = 0, min(len(prompt), len(self._prev))
        while shared < n and prompt[shared] == self._prev[shared]:
            shared += 1
        self.requests.append(
            {
                "t": len(self.requests) + 1,
                "shared": shared,
                "extra": prompt[shared:],
                "completion": [int(v) for v in completion_ids],
                "logprobs": [float(v) for v in logprobs],
            }
        )
        self._prev = prompt
        return PolicyReply(
            prompt_tokens=len(prompt),
            completion_tokens=len(completion_ids),
            completion_ids=tuple(completion_ids),
            logprobs=tuple(logprobs),
            info={"policy_version": self.version},
            **reply,
        )


class RolloutPolicy(RecordingPolicy):
    """The in-process student (a worker's loaded model)."""

    name = "rl-student"

    def __init__(self, chat: Any, version: int, sample_seed: int) -> None:
        super().__init__(version, sample_seed)
        self.chat = chat

    def reset(self, task_name: str, seed: int) -> None:
        super().reset(task_name, seed)
        self.chat.reset()
        self.chat.seed, self.chat.requests = self.sample_seed, 0  # the job fixes the sampling

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyReply:
        gen = self.chat.generate(messages, tools or None)
        return self.recorded(
            gen.prompt_ids, gen.completion_ids, gen.logprobs, content=gen.text, model_s=gen.model_s
        )

    def close(self) -> None:
        """The model stays loaded in the worker for the next job."""


class CriticEarlyStop(EpisodeObserver):
    """Scores s_t with the critic and stops the episode per :class:`EarlyStop`."""

    def __init__(
        self, critic: Any, rule: EarlyStop, episode_key: str, task: str, enabled: bool = True
    ) -> None:
        self.critic, self.rule, self.key, self.task = critic, rule, episode_key, task
        self.enabled = enabled
        self.values_after: list[float] = []  # V(s_{k+1}, k+1) after request k
        self.stopped_after: int | None = None

    def on_state(self, t: int, state: Any) -> None:
        import numpy as np

        if t < 2:
            return  # s_1 precedes every request: no request has been made yet
        v = self.critic.values(
            np.asarray(state.features, np.float32)[None, :], np.asarray([t]), [self.task]
        )
        self.values_after.append(float(v[0]))

    def before_request(self, t: int) -> Stop | None:
        if self.enabled and self.rule.should_stop(self.key, self.values_after, self.task):
            self.stopped_after = t - 1
            return Stop("early_stop", settle_as_budget=True)
        return None


def write_rollout(
    out_dir: str | Path, policy: RecordingPolicy, episode_key: str, stop: CriticEarlyStop | None
) -> Path:
    path = EpisodeFiles(Path(out_dir)).rollout
    data = {
        "format": ROLLOUT_FORMAT,
        "version": policy.version,
        "episode_key": episode_key,
        "sample_seed": policy.sample_seed,
        "requests": policy.requests,
        "values_after": stop.values_after if stop else [],
        "early_stopped_after": stop.stopped_after if stop else None,
        # where it ran (provenance: the driver, a spawned worker or a Ray worker, and on which host)
        "worker": worker_identity(),
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    os.replace(tmp, path)
    return path


def _rollout_policy(rl: dict[str, Any]) -> Any:
    """The job's student: served by vLLM (``rl["served"]``) or in this worker's process."""
    if rl.get("served"):
        from captain_ros.learn.rl.served import ServedRolloutPolicy, ensure_adapter
        from captain_ros.learn.rl.sync import read_version

        url, model = str(rl["served"]["base_url"]), str(rl["served"]["model"])
        version = read_version(str(rl["adapter"]))
        name = ensure_adapter(url, model, version, str(Path(rl["adapter"]).resolve()))
        return ServedRolloutPolicy(
            url, name, version, int(rl["sample_seed"]), int(rl.get("max_new_tokens", 256))
        )
    if rl.get("engine") == "llamacpp":
        from captain_ros.learn.rl.llama_student import llama_student

        chat, version = llama_student(
            str(rl["base"]),
            str(rl["adapter"]),
            int(rl.get("max_new_tokens", 256)),
            float(rl.get("temperature", 1.0)),
            int(rl.get("threads") or 1),
        )
        return RolloutPolicy(chat, version, int(rl["sample_seed"]))
    import torch

    torch.set_num_threads(int(rl.get("threads") or 1))
    st = _student(
        str(rl["base"]),
        str(rl["adapter"]),
        str(rl.get("device") or "cpu"),
        int(rl.get("max_new_tokens", 256)),
        float(rl.get("temperature", 1.0)),
    )
    return RolloutPolicy(st.chat, st.version, int(rl["sample_seed"]))


def run_rollout_job(job: dict[str, Any]) -> dict[str, Any]:
    """One rollout episode (plain dict in, the episode record's dict out).

    ``job["options"]`` is the episode's
    :meth:`~captain_ros.evaluation.config.EpisodeConfig.to_mapping` plus ``rl``, which holds ``base`` (model folder), ``adapter`` (published version folder),
    ``critic`` (critic folder or None), ``early_stop`` (bool), ``episode_key``, ``sample_seed``,
    ``max_new_tokens``, ``temperature``, ``device`` and optionally ``threads`` (torch or llama.cpp
    threads of this worker), ``engine`` (``transformers`` | ``llamacpp``) and ``served`` (``{"base_url", "model"}``: the student behind vLLM,
    :mod:`.served`, instead of the worker's in-process model).
    """
    worker_environment()
    from captain_ros.evaluation.config import EpisodeConfig
    from captain_ros.evaluation.episode import local_setup

    opts = dict(job["options"])
    rl = dict(opts.pop("rl"))
    config = EpisodeConfig.from_mapping(opts)
    policy = _rollout_policy(rl)
    setup, backend = local_setup(config, policy=policy)
    stop = None
    if rl.get("critic"):
        folder = str(rl["critic"])
        if folder not in _CRITICS:
            from captain_ros.learn.critic import Critic

            _CRITICS.clear()  # one live critic per worker
            _CRITICS[folder] = Critic.load(folder)
        from captain_ros.harness.record.returns import HARD_TASKS

        rule = EarlyStop(exempt_tasks=HARD_TASKS)  # the paper never cuts its hard tasks
        stop = CriticEarlyStop(
            _CRITICS[folder],
            rule,
            str(rl["episode_key"]),
            job["task"],
            enabled=bool(rl.get("early_stop", True)),
        )
        setup.observers.append(stop)
    try:
        record = setup.run()
    finally:
        backend.close()
        policy.close()
    write_rollout(job["out_dir"], policy, str(rl["episode_key"]), stop)
    return record.to_dict()
