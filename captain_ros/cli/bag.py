"""``captain bag info DIR`` and ``captain bag recover DIR``: a recorded rosbag2 bag, read or repaired.

``info`` prints the topics with message type, count and QoS of a closed bag (an unclosed one, left
by a recorder that was killed, is reported as such with the hint to recover it). ``recover``
rewrites an unclosed bag up to its last complete record so rosbags and mcap readers open it
(what ``ros2 bag reindex`` does for rosbag2); a closed bag is left untouched.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from captain_ros.core.errors import InvalidArgumentError


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("bag", help="rosbag2 bags: info | recover", parents=[common])
    bag = p.add_subparsers(dest="bag_command", required=True)
    i = bag.add_parser("info", help="topics, types, counts and QoS of a bag", parents=[common])
    i.add_argument("dir")
    i.add_argument("--json", action="store_true")
    i.set_defaults(fn=cmd_info)
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
        raise InvalidArgumentError(f"{d} was not closed (a recorder crash?): run `captain bag "
                                   f"recover {d}` first")
    s = summarize_bag(d)
    rows = [{"topic": t, "type": s.msgtypes[t], "count": s.counts.get(t, 0),
             "qos": [f"{q.reliability.name.lower()}/{q.durability.name.lower()}/depth {q.depth}"
                     for q in s.qos.get(t, [])]} for t in sorted(s.msgtypes)]
    if ns.json:
        print(json.dumps({"path": str(d), "topics": rows}, indent=2))
        return 0
    width = max([len(r["topic"]) for r in rows] + [5])
    print(f"{d}: {sum(r['count'] for r in rows)} messages on {len(rows)} topics")
    for r in rows:
        print(f"  {r['topic']:<{width}}  {r['count']:>6}  {r['type']}  {', '.join(r['qos'])}")
    return 0


def cmd_recover(ns: argparse.Namespace) -> int:
    from captain_ros.bags.rosbag2 import recover_bag, summarize_bag

    d = _bag_dir(ns.dir)
    was_closed = (d / "metadata.yaml").exists()
    recover_bag(d)
    s = summarize_bag(d)
    state = "was already closed" if was_closed else "recovered"
    print(f"{d}: {state}; {sum(s.counts.values())} messages on {len(s.counts)} topics", file=sys.stdout)
    return 0
