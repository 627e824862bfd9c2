"""A round's rollout folders -> what the trainer consumes (numpy, torch-free).

For every episode folder of a round: its learning record (``load_episode_record``: privileged
states, costs, return, group = ``task:seed``) as :class:`~captain_ros.learn.episodes.EpisodeArrays`
for the critic and credit, and its ``rollout.json`` (written by the worker) as
:class:`~captain_ros.learn.rl.samples.RLSample` segments for the policy update.

Segments: the harness re-renders each reply into the history (parsed reasoning and tool calls),
so request t + 1's prompt usually does *not* contain request t's sampled tokens verbatim. Each
maximal run of requests whose prompt extends the previous prompt + reply becomes one segment
(one forward pass); a request whose prompt diverges starts a new one. The ratio is always taken
on exactly the tokens the rollout policy saw and sampled. Requests with no sampled tokens (a
policy error) enter no segment; the critic still sees every request.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from captain_ros.core.episode_folder import EpisodeFiles
from captain_ros.learn.episodes import EpisodeArrays, episode_arrays
from captain_ros.learn.errors import RecordError
from captain_ros.learn.rl.samples import RLSample, segment_sample

if TYPE_CHECKING:
    from captain_ros.harness.record.privileged_log import EpisodeLearningRecord


@dataclass(frozen=True)
class RolloutTokens:
    """``rollout.json`` of one episode, decoded."""

    version: int
    episode_key: str
    prompts: tuple[tuple[int, ...], ...]
    completions: tuple[tuple[int, ...], ...]
    logprobs: tuple[tuple[float, ...], ...]
    values_after: tuple[float, ...]
    early_stopped_after: int | None


def read_rollout(folder: str | Path) -> RolloutTokens:
    """Decode ``folder/rollout.json``; raises :class:`RecordError` naming the problem."""
    path = EpisodeFiles(Path(folder)).rollout
    try:
        d = json.loads(path.read_text())
        prompts: list[tuple[int, ...]] = []
        prev: list[int] = []
        comps, lps = [], []
        for k, r in enumerate(d["requests"], start=1):
            if int(r["t"]) != k:
                raise ValueError(f"request {k} is numbered {r['t']}")
            shared = int(r["shared"])
            if not 0 <= shared <= len(prev):
                raise ValueError(f"request {k}: shared prefix {shared} > previous prompt")
            prompt = prev[:shared] + [int(v) for v in r["extra"]]
            prompts.append(tuple(prompt))
            comps.append(tuple(int(v) for v in r["completion"]))
            lps.append(tuple(float(v) for v in r["logprobs"]))
            prev = prompt
        return RolloutTokens(
            int(d["version"]),
            str(d["episode_key"]),
            tuple(prompts),
            tuple(comps),
            tuple(lps),
            tuple(float(v) for v in d.get("values_after", ())),
            d.get("early_stopped_after"),
        )
    except FileNotFoundError as exc:
        raise RecordError(f"{path}: missing (not an RL rollout folder?)") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise RecordError(f"{path}: malformed ({type(exc).__name__}: {exc})") from exc


def rollout_segments(episode_id: str, tokens: RolloutTokens) -> list[RLSample]:
    """The append-only segments of one episode's requests (see the module docstring)."""
    segments: list[RLSample] = []
    run: list[int] = []  # 0-based request indices of the current segment
    context: list[int] = []  # prompt + reply of the segment's last request

    def close() -> None:
        if run:
            segments.append(
                segment_sample(
                    episode_id,
                    [tokens.prompts[k] for k in run],
                    [tokens.completions[k] for k in run],
                    [tokens.logprobs[k] for k in run],
                    tokens.version,
                    first_request=run[0] + 1,
                )
            )

    for k, (p, c) in enumerate(zip(tokens.prompts, tokens.completions, strict=True)):
        if not c:
            close()
            run, context = [], []
            continue
        if run and (
            len(p) < len(context) or list(p[: len(context)]) != context or not _consecutive(run, k)
        ):
            close()
            run = []
        run.append(k)
        context = list(p) + list(c)
    close()
    return segments


def _consecutive(run: Sequence[int], k: int) -> bool:
    return run[-1] == k - 1


@dataclass(frozen=True)
class RoundBatch:
    """One round's episodes (critic, credit) and samples (policy update), plus what was skipped."""

    episodes: tuple[EpisodeArrays, ...]
    samples: tuple[RLSample, ...]
    tokens: dict[str, RolloutTokens]
    skipped: tuple[tuple[str, str], ...]


def read_round(
    folders: Sequence[str | Path], loader: Callable[[str], EpisodeLearningRecord]
) -> RoundBatch:
    """Read a round's episode folders; a folder that cannot be read is skipped and reported."""
    eps: list[EpisodeArrays] = []
    samples: list[RLSample] = []
    tokens: dict[str, RolloutTokens] = {}
    skipped: list[tuple[str, str]] = []
    for f in folders:
        eid = str(f)
        try:
            arrays = episode_arrays(loader(eid), episode_id=eid)
            tok = read_rollout(f)
            if len(tok.prompts) != arrays.n_requests:
                raise RecordError(
                    f"{eid}: {arrays.n_requests} requests but {len(tok.prompts)} in rollout.json"
                )
            segs = rollout_segments(eid, tok)
        except Exception as exc:  # noqa: BLE001 - a broken episode is reported, not fatal
            skipped.append((eid, f"{type(exc).__name__}: {exc}"))
            continue
        eps.append(arrays)
        samples.extend(segs)
        tokens[eid] = tok
    return RoundBatch(tuple(eps), tuple(samples), tokens, tuple(skipped))


def summarize_round(batch: RoundBatch, records: Sequence[Any]) -> dict[str, Any]:
    """Returns, success and outcome counts of a round's episode records (EpisodeRecord)."""
    import numpy as np

    ok = [r for r in records if r.outcome != "error"]
    rets = [float(r.return_R) for r in ok if r.return_R is not None]
    outcomes: dict[str, int] = {}
    for r in records:
        outcomes[r.outcome] = outcomes.get(r.outcome, 0) + 1
    return {
        "episodes": len(records),
        "errors": len(records) - len(ok),
        "success": float(np.mean([r.host_success for r in ok])) if ok else float("nan"),
        "strict_success": float(np.mean([r.strict_success for r in ok])) if ok else float("nan"),
        "return_mean": float(np.mean(rets)) if rets else float("nan"),
        "G_mean": float(np.mean([e.episode_return for e in batch.episodes]))
        if batch.episodes
        else float("nan"),
        "requests_mean": float(np.mean([r.requests for r in ok])) if ok else float("nan"),
        "early_stopped": sum(1 for t in batch.tokens.values() if t.early_stopped_after is not None),
        "outcomes": dict(sorted(outcomes.items())),
    }
