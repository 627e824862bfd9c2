"""What a bag holds beyond its topics: the episodes and, per episode, the requests and their calls.

Read from ``/captain/trajectory`` (the ``episode_start`` / ``request`` / ``episode_end`` lines)
and ``/captain/receipts`` (one per robot call, with its request index); a bag without a
trajectory (e.g. a recorder bag of a graph driven by hand) lists its episodes from
``/captain/episode_events`` alone. What ``captain bag info`` prints.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from captain_ros.bags.messages import TRAJECTORY_TOPIC

EVENTS_TOPIC = "/captain/episode_events"
RECEIPTS_TOPIC = "/captain/receipts"


@dataclass(frozen=True)
class RequestInfo:
    """One request: its index, code cells, and the robot calls it made (from the receipts)."""

    index: int
    cells: int
    calls: int
    failed_calls: int
    capabilities: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "cells": self.cells,
            "calls": self.calls,
            "failed_calls": self.failed_calls,
            "capabilities": self.capabilities,
        }


@dataclass(frozen=True)
class EpisodeInfo:
    """One episode of a bag: who ran what, how it ended, its time span [s] and its requests."""

    episode_id: str
    task: str
    seed: int | None
    policy: str
    backend: str
    outcome: str
    duration_s: float
    requests: list[RequestInfo] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "episode_id": self.episode_id,
            "task": self.task,
            "seed": self.seed,
            "policy": self.policy,
            "backend": self.backend,
            "outcome": self.outcome,
            "duration_s": self.duration_s,
            "requests": [r.to_dict() for r in self.requests],
        }


def bag_episodes(path: str | Path) -> list[EpisodeInfo]:
    """The episodes of a closed bag, in order (empty when it records none)."""
    from captain_ros.bags.rosbag2 import read_messages

    episodes: list[dict[str, Any]] = []
    receipts: list[tuple[int, Any]] = []
    events: list[tuple[int, Any]] = []
    for topic, t, msg in read_messages(path, [TRAJECTORY_TOPIC, RECEIPTS_TOPIC, EVENTS_TOPIC]):
        if topic == TRAJECTORY_TOPIC:
            try:
                rec = json.loads(msg.data)
            except ValueError:
                continue  # `captain bag info` describes; the dataset builders reject bad lines
            if rec.get("type") == "episode_start":
                episodes.append({"start": rec, "t0": t, "t1": t, "requests": [], "end": None})
            elif episodes:
                episodes[-1]["t1"] = t
                if rec.get("type") == "request":
                    episodes[-1]["requests"].append(rec)
                elif rec.get("type") == "episode_end":
                    episodes[-1]["end"] = rec.get("summary") or {}
        elif topic == RECEIPTS_TOPIC:
            receipts.append((t, msg))
        else:
            events.append((t, msg))
    if not episodes:
        return _from_events(events)
    bounds = [e["t0"] for e in episodes[1:]] + [1 << 62]
    out = []
    for e, hi in zip(episodes, bounds, strict=True):
        mine = [m for t, m in receipts if e["t0"] <= t < hi]
        out.append(_info(e, mine))
    return out


def _info(e: dict[str, Any], receipts: list[Any]) -> EpisodeInfo:
    start, end = e["start"], e["end"]
    by_request: dict[int, list[Any]] = {}
    for m in receipts:
        by_request.setdefault(int(m.request_index), []).append(m)
    requests = []
    for r in e["requests"]:
        k = int(r.get("t", 0))
        calls = by_request.get(k, [])
        requests.append(
            RequestInfo(
                k,
                len(r.get("calls") or []),
                len(calls),
                sum(not m.success for m in calls),
                dict(Counter(str(m.capability) for m in calls)),
            )
        )
    summary = end or {}
    eid = (
        str(receipts[0].episode_id)
        if receipts
        else f"{start.get('task', '')}_{start.get('seed', '')}"
    )
    return EpisodeInfo(
        eid,
        str(start.get("task", "")),
        start.get("seed"),
        str(start.get("policy", "")),
        str(start.get("backend", "")),
        str(summary.get("outcome") or ("(no end: unfinished)" if end is None else "")),
        (e["t1"] - e["t0"]) / 1e9,
        requests,
    )


def _from_events(events: list[tuple[int, Any]]) -> list[EpisodeInfo]:
    out: list[EpisodeInfo] = []
    open_: dict[str, int] = {}
    for t, m in events:
        if m.event == "start":
            open_[m.episode_id] = t
        elif m.event == "end" and m.episode_id in open_:
            detail = json.loads(m.detail_json or "{}") if m.detail_json else {}
            out.append(
                EpisodeInfo(
                    str(m.episode_id),
                    str(detail.get("task", "")),
                    detail.get("seed"),
                    str(detail.get("policy", "")),
                    str(detail.get("backend", "")),
                    str(detail.get("outcome", "")),
                    (t - open_.pop(m.episode_id)) / 1e9,
                )
            )
    out += [EpisodeInfo(eid, "", None, "", "", "(no end: unfinished)", 0.0) for eid in open_]
    return out
