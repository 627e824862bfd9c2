"""``captain bag info | recover | export | layout``: a recorded rosbag2 bag, read, repaired,
exported or viewed.

``info`` prints the topics with message type, count and QoS of a closed bag, then its episodes
(task, seed, policy, backend, outcome) and each episode's requests with the robot calls they made
(an unclosed bag, left by a recorder that was killed, is reported as such with the hint to
recover it). ``export --format lerobot --out DIR SOURCES...`` writes one LeRobotDataset v3.0 from
bags, episode folders and evaluation runs (:mod:`captain_ros.bags.lerobot`). ``recover``
rewrites an unclosed bag up to its last complete record so rosbags and mcap readers open it
(what ``ros2 bag reindex`` does for rosbag2), and so does it with a closed bag whose ``.mcap`` was
cut short; a closed bag that opens is left untouched. A bag that cannot be read is one line on
stderr and exit status 2, never a traceback. ``layout`` writes a
Foxglove layout for a bag's rig, or the packaged one (:mod:`captain_ros.bags.foxglove`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from captain_ros.core.errors import InvalidArgumentError


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "bag", help="rosbag2 bags: info | recover | export | replay | layout", parents=[common]
    )
    bag = p.add_subparsers(dest="bag_command", required=True)
    i = bag.add_parser("info", help="topics, types, counts and QoS of a bag", parents=[common])
    i.add_argument("dir")
    i.add_argument("--json", action="store_true")
    i.add_argument(
        "--no-episodes", action="store_true", help="topics only (no episode/request listing)"
    )
    i.set_defaults(fn=cmd_info)
    e = bag.add_parser(
        "export", help="bags / episode folders -> one LeRobotDataset v3.0", parents=[common]
    )
    e.add_argument("sources", nargs="+", help="bags, episode folders or evaluation runs")
    e.add_argument("--format", choices=["lerobot"], default="lerobot")
    e.add_argument("--out", required=True, help="dataset folder to create")
    e.add_argument("--fps", type=int, default=10, help="frame rate every stream is sampled at [Hz]")
    e.add_argument(
        "--cameras",
        default="",
        help="comma-separated cameras to encode, 'none' for no "
        "video (default: those with images in the first episode)",
    )
    e.add_argument(
        "--overwrite", action="store_true", help="replace an existing --out once complete"
    )
    e.set_defaults(fn=cmd_export)
    rp = bag.add_parser(
        "replay",
        help="re-run a bag's robot calls in simulation: sim-to-real report",
        parents=[common],
    )
    rp.add_argument("dir", help="bag or episode folder (one episode)")
    rp.add_argument("--backend", choices=["mujoco"], default="mujoco")
    rp.add_argument("--out", required=True, help="folder for replay.json and replay.png")
    rp.set_defaults(fn=cmd_replay)
    lay = bag.add_parser("layout", help="a Foxglove layout for a bag's rig", parents=[common])
    lay.add_argument(
        "dir",
        nargs="?",
        help="bag whose rig (arms, joints, cameras) the layout shows "
        "(default: the packaged layout of the single-arm rig)",
    )
    lay.add_argument("--out", required=True, help="layout JSON file to write")
    lay.set_defaults(fn=cmd_layout)
    r = bag.add_parser("recover", help="make a crashed recorder's bag readable", parents=[common])
    r.add_argument("dir")
    r.set_defaults(fn=cmd_recover)


def _bag_dir(text: str) -> Path:
    d = Path(text)
    if not d.is_dir():
        raise InvalidArgumentError(f"{d} is not a bag folder (no such directory)")
    if not (d / "metadata.yaml").exists() and not list(d.glob("*.mcap")):
        raise InvalidArgumentError(f"{d} is not a rosbag2 bag (no metadata.yaml, no .mcap)")
    return d


def cmd_info(ns: argparse.Namespace) -> int:
    from captain_ros.bags.rosbag2 import summarize_bag

    d = _bag_dir(ns.dir)
    if not (d / "metadata.yaml").exists():
        raise InvalidArgumentError(
            f"{d} was not closed (a recorder crash?): run `captain bag recover {d}` first"
        )
    s = summarize_bag(d)
    rows: list[dict[str, Any]] = [
        {
            "topic": t,
            "type": s.msgtypes[t],
            "count": s.counts.get(t, 0),
            "qos": [
                f"{q.reliability.name.lower()}/{q.durability.name.lower()}/depth {q.depth}"
                for q in s.qos.get(t, [])
            ],
        }
        for t in sorted(s.msgtypes)
    ]
    episodes = [] if ns.no_episodes else _episodes(d)
    if ns.json:
        print(
            json.dumps(
                {"path": str(d), "topics": rows, "episodes": [e.to_dict() for e in episodes]},
                indent=2,
            )
        )
        return 0
    width = max([len(r["topic"]) for r in rows] + [5])
    print(f"{d}: {sum(r['count'] for r in rows)} messages on {len(rows)} topics")
    for r in rows:
        print(f"  {r['topic']:<{width}}  {r['count']:>6}  {r['type']}  {', '.join(r['qos'])}")
    for e in episodes:
        print(
            f"episode {e.episode_id}: {e.task} seed {e.seed} ({e.backend}, {e.policy}): {e.outcome}, "
            f"{len(e.requests)} requests, {e.duration_s:.1f} s"
        )
        for q in e.requests:
            caps = (
                ", ".join(f"{c} x{n}" if n > 1 else c for c, n in q.capabilities.items())
                or "no robot call"
            )
            failed = f", {q.failed_calls} failed" if q.failed_calls else ""
            print(f"  request {q.index}: {q.cells} cell(s), {q.calls} call(s){failed}: {caps}")
    return 0


def _episodes(d: Path) -> list[Any]:
    from captain_ros.bags.contents import bag_episodes

    try:
        return bag_episodes(d)
    except Exception as exc:  # noqa: BLE001 - a damaged chunk: the topic table still stands
        raise InvalidArgumentError(
            f"{d}: cannot read its episodes ({type(exc).__name__}: {exc}); "
            "--no-episodes lists the topics"
        ) from exc


def cmd_export(ns: argparse.Namespace) -> int:
    import time

    from captain_ros.bags.lerobot import expand, export_lerobot, read_source

    cams = (
        None
        if not ns.cameras
        else ()
        if ns.cameras == "none"
        else tuple(c.strip() for c in ns.cameras.split(",") if c.strip())
    )
    t0 = time.perf_counter()
    paths = [p for s in ns.sources for p in expand(s)]
    episodes = [e for p in paths for e in read_source(p)]
    s = export_lerobot(episodes, Path(ns.out), fps=ns.fps, cameras=cams, overwrite=ns.overwrite)
    dt = time.perf_counter() - t0
    print(
        f"{s.path}: LeRobotDataset v3.0, {s.episodes} episodes, {s.frames} frames at {s.fps} fps, "
        f"cameras: {', '.join(s.cameras) or 'none'} ({dt:.1f} s, {s.frames / dt:.0f} frames/s)"
    )
    return 0


def cmd_replay(ns: argparse.Namespace) -> int:
    from captain_ros.bags.lerobot import read_source
    from captain_ros.bags.lerobot.sources import expand
    from captain_ros.evaluation.bag_replay import replay_bag, write_report

    (path,) = expand(ns.dir)[:1]
    episodes = read_source(path)
    if len(episodes) != 1:
        raise InvalidArgumentError(
            f"{path} holds {len(episodes)} episodes: replay one bag of one episode"
        )
    r = replay_bag(episodes[0], ns.backend)
    js, png = write_report(r, Path(ns.out))
    rms = ", ".join(
        f"{n} {v * 1e3:.2f}" for n, v in zip(r.joint_names, r.joint_rms_rad, strict=True)
    )
    print(f"{r.source} ({r.recorded_backend}) replayed in {ns.backend}: {len(r.calls)} calls")
    print(f"  joint tracking error RMS [mrad]: {rms}; largest {max(r.joint_max_rad) * 1e3:.2f}")
    print(
        f"  jaw opening differs by at most {r.jaw_max_m * 1e3:.2f} mm, contact force by {r.force_max_n:.2f} N"
    )
    print(
        f"  calls whose success differs: {len(r.success_mismatches)}; gripper changes at the same calls: "
        f"{r.gripper['same_calls']}"
    )
    tm = r.timing
    print(
        f"  physical calls took {tm['recorded_s']:.2f} s recorded, {tm['replayed_s']:.2f} s replayed "
        f"({tm['physical_calls']} calls)"
    )
    o = r.outcome
    print(
        f"  outcome: recorded host success {o['recorded_host_success']}, simulated {o['replayed_success']}"
    )
    print(f"wrote {js} and {png}")
    return 0


def cmd_layout(ns: argparse.Namespace) -> int:
    import shutil

    from captain_ros.bags import foxglove

    out = Path(ns.out)
    if ns.dir is None:
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(foxglove.shipped_layout(), out)
    else:
        d = _bag_dir(ns.dir)
        if not (d / "metadata.yaml").exists():
            raise InvalidArgumentError(f"{d} was not closed: run `captain bag recover {d}` first")
        arms, cameras = foxglove.rig_of_bag(d)
        if not arms:
            raise InvalidArgumentError(
                f"{d}: no /joint_states with <arm>_jaw_opening_m (not a captain_ros bag?)"
            )
        foxglove.write(foxglove.layout(arms, cameras), out)
    print(f"wrote {out} (Foxglove: Layouts > Import from file)")
    return 0


def cmd_recover(ns: argparse.Namespace) -> int:
    from captain_ros.bags.rosbag2 import readable, recover_bag, summarize_bag

    d = _bag_dir(ns.dir)
    was_closed = (d / "metadata.yaml").exists() and readable(d)
    recover_bag(d)
    s = summarize_bag(d)
    state = "was already closed" if was_closed else "recovered"
    print(
        f"{d}: {state}; {sum(s.counts.values())} messages on {len(s.counts)} topics",
        file=sys.stdout,
    )
    return 0
