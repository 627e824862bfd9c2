"""Sub-plans shared by the task plans: perceive, grasp, place, verify, finish (host side).

Each is a generator of :class:`~captain_ros.policy.expert.cells.Call` that reacts to the notes of
its own cells and returns a value with ``return`` (``yield from`` hands it to the plan). A failed
step leads to one corrective attempt; ``finish()`` comes only after a fresh measurement shows the
standard of TASK.md met, against a tighter margin than TASK.md states.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from captain_ros.policy.expert import kit, skills
from captain_ros.policy.expert.cells import Call, Notes, Plan, kw


def perceive(
    names: Mapping[str, str],
    dest: tuple[str, str] | None = None,
    prefer: Mapping[str, str] | None = None,
    keep: bool = False,
) -> Plan:
    """Observe, find and measure each ``{name: prompt}`` (see :func:`skills.perceive`)."""
    what = ", ".join(names.values())
    notes = yield Call(
        f"Observe the scene and locate {what}; measure them so I plan from metric "
        "geometry, not from the image.",
        skills.perceive,
        (dict(names),),
        kw(dest=dest, prefer=dict(prefer) if prefer else None, keep=keep or None),
    )
    return notes


def grasp_top_down(
    name: str,
    prompt: str,
    faces: int = 4,
    lift_m: float = 0.10,
    from_top_m: float | None = None,
    arm: str | None = None,
) -> Plan:
    """Open, approach above ``S.G[name]``, descend guarded, close, lift; one retry after a miss.
    Returns True when the object is held after the lift."""
    label = name.replace("_", " ")
    for attempt in range(2):
        notes = yield Call(
            f"Grasp the {label} from above: open the jaw, align the jaw with its faces (yaw from the "
            "measurement, nearest the arm's bearing), move above it, then descend guarded to the "
            "grasp height." + (" Second attempt after a miss." if attempt else ""),
            skills.descend,
            (name,),
            kw(from_top=from_top_m, faces=faces if faces != 4 else None, arm=arm),
        )
        if not notes.get("down_ok"):
            yield Call(
                f"The descent stopped early ({notes.get('down')}): back off, re-observe and "
                "re-measure before trying again.",
                skills.back_off,
                (),
                kw(arm=arm),
            )
            yield from perceive({name: prompt})
            continue
        notes = yield Call(
            f"Close the jaw on the {label}, check the gripper reports holding, and lift "
            "in manipulation mode.",
            skills.close_lift,
            (name,),
            kw(lift=lift_m if lift_m != 0.10 else None, arm=arm),
        )
        if notes.get("held"):
            return True
        yield Call(
            "The jaw closed empty: open it, back up and re-measure.", skills.reset, (), kw(arm=arm)
        )
        yield from perceive({name: prompt})
    return False


def place_on(name: str, onto: str) -> Plan:
    """Carry the held ``name`` above ``onto`` and lower it onto it, release, retreat."""
    notes = yield Call(
        f"Carry the {name.replace('_', ' ')} by the measured offset between the tool "
        "and the object at the grasp, lower it onto the support with a few "
        "millimetres to spare, release and retreat.",
        skills.place,
        (name, onto),
    )
    return notes


def verify_on(obj: str, obj_prompt: str, dest: str, dest_prompt: str) -> Plan:
    """A fresh measurement of ``obj`` against ``dest`` (see :func:`skills.verify`)."""
    notes = yield Call(
        f"Verify with a fresh observation (head camera, or the wrist camera looking "
        f"down from above it): measure the {obj.replace('_', ' ')} against the "
        f"{dest.replace('_', ' ')} (offset, resting, height gap).",
        skills.verify,
        (obj, obj_prompt, dest, dest_prompt),
    )
    return notes


def verified(notes: Mapping[str, object], tol_m: float) -> bool:
    """A fresh measurement shows the object resting on its support within ``tol_m``."""
    # a cube on a cube can read "not resting" when the lower one is half hidden: a bottom that
    # touches the support's top (|gap| <= 6 mm) is the same evidence
    gap = notes.get("gap")
    dist = notes.get("dist")
    touching = isinstance(gap, int | float) and abs(gap) <= 0.006
    return (
        isinstance(dist, int | float)
        and dist <= tol_m
        and (bool(notes.get("resting")) or touching)
        and abs(gap if isinstance(gap, int | float) else 0.0) <= 0.012
    )


def finish(summary: str) -> Plan:
    """Call finish(); return True when accepted (the gate may reject with a reason)."""
    notes = yield Call(
        "Fresh measurements show the standard of TASK.md is met: declare completion.",
        skills.finish,
        (summary,),
    )
    return bool(notes.get("accepted"))


def finish_with_retries(
    summary: str, remeasure: Callable[[], Plan], check: Callable[[Notes], bool] = lambda n: True
) -> Plan:
    """finish(); after a gate rejection re-measure and try once more only if my check still holds
    (never lean on the gate's forced third acceptance)."""
    for _ in range(2):
        accepted = yield from finish(summary)
        if accepted:
            return True
        notes = yield from remeasure()
        if not check(notes or {}):
            return False
    return False


def all_found(notes: Notes) -> bool:
    """A perception note found every object (an empty or missing note found nothing)."""
    found = notes.get("found")
    return isinstance(found, dict) and bool(found) and all(found.values())


def transfer(obj: str, obj_prompt: str, dest: str, dest_prompt: str, tol_m: float) -> Plan:
    """Pick ``obj`` and place it on ``dest``; verify; one corrective retry. Returns the final notes."""
    both = {obj: obj_prompt, dest: dest_prompt}
    notes = yield from perceive(both, dest=(obj, dest))
    for attempt in range(2):
        if not all_found(notes):
            yield Call(
                "Not everything is in view: move the arm out of the head camera's way, then "
                "look again.",
                kit.aside,
                key="aside",
            )
            notes = yield from perceive(both, dest=(obj, dest))
            if not all_found(notes):
                return notes
        held = yield from grasp_top_down(obj, obj_prompt)
        if not held:
            return notes
        # re-measure the destination right before placing (it may have been bumped); if the arm
        # hides it now, the measurement from before the grasp stands (I have not touched it)
        yield from perceive({dest: dest_prompt}, keep=True)
        placed = yield from place_on(obj, dest)
        if not placed.get("placed"):
            yield Call(
                "I could not lower the object onto the support from here: set it back down "
                "where I am and re-plan.",
                skills.set_down,
                (obj,),
            )
            notes = yield from perceive(both, dest=(obj, dest))
            continue
        notes = yield from verify_on(obj, obj_prompt, dest, dest_prompt)
        if verified(notes, 0.85 * tol_m):
            return notes
        if attempt == 0:
            notes = yield from perceive(both, dest=(obj, dest))
    return notes


COLOURS = (
    "red",
    "orange",
    "yellow",
    "green",
    "cyan",
    "blue",
    "purple",
    "magenta",
    "pink",
    "brown",
    "white",
    "gray",
    "grey",
    "black",
)


def colour_of(instruction: str, nouns: tuple[str, ...]) -> str | None:
    """The colour word right before one of ``nouns`` in the instruction (None if not stated)."""
    words = re.findall(r"[a-z]+", instruction.lower())
    for i, w in enumerate(words[1:], start=1):
        if w in nouns and words[i - 1] in COLOURS:
            return words[i - 1]
    return None


def prompt_for(instruction: str, noun: str, nouns: tuple[str, ...]) -> str:
    """``"<colour> <noun>"`` when the instruction names a colour for one of ``nouns``."""
    colour = colour_of(instruction, nouns)
    return f"{colour} {noun}" if colour else noun
