"""The helper library the scripted expert writes into the session in its first request.

Like the frontier agents of the paper (appendix C: ``val``, ``need``, ``downq``, ``go``), the
expert defines a few helpers once; variables persist across requests, so later cells call them.
Everything here uses the public robot API only. Each cell ends with ``note(...)``, which prints
one ``NOTE {json}`` line: the expert reads its own notes back from the cell output to decide the
next request, the way an agent reads its printed values.

Conventions stated in TASK.md: world frame x forward, y left, z up [m]; quaternions (w, x, y, z);
the tool approaches along its +z axis and the jaw closes along its y axis, so a top-down grasp is
the half-turn about world y, ``(0, 0, 1, 0)``, turned by a yaw about world z.
"""

HELPERS = r'''
import json, math
import numpy as np

def note(**kw):
    """Print one machine-readable line for my own bookkeeping."""
    print("NOTE " + json.dumps(kw, default=lambda o: np.asarray(o).tolist()))

def val(r, *keys, default=None):
    """r['value'][k1][k2]... when the call succeeded, else default."""
    if not r or not r.get("success"):
        return default
    v = r.get("value")
    for k in keys:
        if not isinstance(v, dict) or k not in v:
            return default
        v = v[k]
    return v

def qmul(a, b):
    aw, ax, ay, az = a; bw, bx, by, bz = b
    return [aw*bw - ax*bx - ay*by - az*bz, aw*bx + ax*bw + ay*bz - az*by,
            aw*by - ax*bz + ay*bw + az*bx, aw*bz + ax*by - ay*bx + az*bw]

def downq(yaw):
    """Top-down tool orientation with the jaw's closing axis turned by yaw [rad] about world z."""
    return qmul([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)], [0.0, 0.0, 1.0, 0.0])

def wrap(a):
    return (a + math.pi) % (2 * math.pi) - math.pi

def grasp_yaw(obj_yaw, bearing, sym=math.pi / 2):
    """Jaw yaw aligned with a face of an object of yaw obj_yaw (symmetry sym), nearest the arm's bearing."""
    # jaw closing axis at yaw psi is (-sin psi, cos psi): psi = face normal angle - pi/2
    cands = [wrap(obj_yaw + k * sym) for k in range(int(round(2 * math.pi / sym)))]
    return min(cands, key=lambda p: abs(wrap(p - bearing)))

def tcp_q(arm=None):
    s = robot.get_robot_state(arm=arm)
    arms = val(s, "arms", default={}) or {}
    st = arms.get(arm) if arm in arms else (val(s) or {})
    return st.get("end_effector_quat_wxyz")

def tcp(arm=None):
    s = robot.get_robot_state(arm=arm)
    arms = val(s, "arms", default={}) or {}
    st = arms.get(arm) if arm in arms else (val(s) or {})
    return np.array(st.get("end_effector_position_m", [np.nan] * 3), dtype=float)

_GEOM = {}
def base_xy(arm=None):
    if not _GEOM:
        _GEOM.update(val(robot.robot_geometry(), default={}) or {})
    arms = _GEOM.get("arms") or {}
    a = arms.get(arm) if arm in arms else next(iter(arms.values()), {})
    return np.array(((a or {}).get("base_pose") or {}).get("position_m", [0, 0, 0])[:2], dtype=float)

def bearing_to(xy, arm=None):
    d = np.asarray(xy[:2], dtype=float) - base_xy(arm)
    return math.atan2(d[1], d[0])

def feasible(c):
    return bool(c.get("success")) and val(c, "feasible", default=val(c, "reachable")) is not False

def qy(a):
    return [math.cos(a / 2), 0.0, math.sin(a / 2), 0.0]

def qz(a):
    return [math.cos(a / 2), 0.0, 0.0, math.sin(a / 2)]

def approach(c, top_z, grasp_z, face_yaw, arm=None, sym=math.pi / 2, clearance=0.08,
             mode="guarded"):
    """Move above c (x, y) in a grasp orientation and return (orientation, grasp height).

    Candidates: tool as vertical as possible (tilted toward the arm's bearing otherwise), rolled
    about the approach axis so the jaw closes across a pair of faces of yaw face_yaw (symmetry
    sym). A candidate is kept when check_motion accepts the move above and then the descent; the
    grasp height is raised in 4 mm steps (at most 12 mm) if the fingers would touch the table.
    If no orientation is reachable straight from here, I first go above tilted 40 deg and turn
    there. Returns (None, None) when nothing works."""
    brg = bearing_to(c, arm)
    above = [float(c[0]), float(c[1]), float(top_z + clearance)]
    base = 0.0 if face_yaw is None else wrap(brg + math.pi / 2 - face_yaw)
    rolls = sorted({round(wrap(base - k * sym), 6) for k in range(int(round(2 * math.pi / sym)))},
                   key=abs)
    for pre in (False, True):
        if pre:
            r = go(above, qmul(qz(brg), qy(math.radians(140))), speed=0.06, arm=arm, mode=mode)
            if not r.get("success"):
                return None, None
        for th in (180, 172, 164):
            for d in rolls:
                q = qmul(qz(brg), qmul(qy(math.radians(th)), qz(d)))
                if not feasible(robot.check_motion(position=above, orientation=q, arm=arm)):
                    continue
                robot.move_to(position=above, orientation=q, arm=arm, speed_m_s=0.06, mode=mode)
                for dz in (0.0, 0.004, 0.008, 0.012):
                    down = [float(c[0]), float(c[1]), float(grasp_z + dz)]
                    if feasible(robot.check_motion(position=down, arm=arm)):
                        return q, grasp_z + dz
    return None, None

def rise(arm=None, heights=(0.08, 0.06, 0.045, 0.035, 0.025), speed=0.04, mode="guarded"):
    """Straight up from here, as high as the joints allow (a sideways sweep from down here would
    catch what I just let go of with the open fingers). Returns the height gained [m]."""
    t = tcp(arm)
    for h in heights:
        up = (t + [0, 0, h]).tolist()
        if feasible(robot.check_motion(position=up, arm=arm)):
            robot.move_to(position=up, arm=arm, speed_m_s=speed, mode=mode)
            return float(tcp(arm)[2] - t[2])
    return 0.0

def climb(z, arm=None, speed=0.04):
    """Up to height z [m] where a vertical tool cannot get (joint 5 caps it near the base): close
    the jaw (the fingertips then stay at the tool point), tilt the tool back in steps in place
    (turning while climbing would pass the joint limit half way), then climb. True when there."""
    t = tcp(arm)
    if t[2] >= z - 0.005:
        return True
    b, closed = bearing_to(t, arm), False
    for th in (None, 164, 156, 148, 140):
        if th is not None:
            q = qmul(qz(b), qy(math.radians(th)))
            if not feasible(robot.check_motion(position=t.tolist(), orientation=q, arm=arm)):
                continue
            if not closed:
                jaw("close", arm=arm); closed = True
            robot.move_to(position=t.tolist(), orientation=q, arm=arm, speed_m_s=speed)
        if feasible(robot.check_motion(position=[t[0], t[1], z], arm=arm)):
            return bool(robot.move_to(position=[t[0], t[1], z], arm=arm, speed_m_s=speed).get("success"))
    return False

def ready(arm=None):
    """Back to the pose I started from (out of the head camera's view of the table)."""
    p, q = READY.get(arm, (None, None))
    if p is not None:
        return go(p, q, speed=0.08, arm=arm)

def aside(away_from=None, arm=None, side=(0.0, 1.0), up_m=0.02):
    """Out of the head camera's way: 15 (else 12, 9) cm to one side of the ready pose along the
    horizontal unit vector side (the side farther from the xy away_from first), up_m higher. A
    tower right under the ready pose merges with the gripper in the head image. Returns the stop
    reason (None when no side is reachable)."""
    p0, q0 = READY.get(arm, (None, None))
    if p0 is None:
        return None
    p0, v = np.array(p0, dtype=float), np.array([side[0], side[1], 0.0], dtype=float)
    sides = [1, -1]
    if away_from is not None:
        sides.sort(key=lambda s: -np.linalg.norm(p0[:2] + s * 0.15 * v[:2] - np.asarray(away_from[:2], dtype=float)))
    for d in (0.15, 0.12, 0.09):
        for s in sides:
            p = (p0 + s * d * v + [0.0, 0.0, up_m]).tolist()
            if feasible(robot.check_motion(position=p, orientation=q0, arm=arm)):
                return stop_reason(go(p, q0, speed=0.06, arm=arm))
    return None

def go(p, q=None, speed=0.06, mode="guarded", arm=None, force=None):
    """Check, then move the tool in a straight line to p (and orientation q); if the straight
    sweep is infeasible from here, rise 8 cm first and try again from there."""
    p = [float(v) for v in p]
    c = robot.check_motion(position=p, orientation=q, arm=arm)
    if not feasible(c):
        t = tcp(arm)
        up = [float(t[0]), float(t[1]), float(max(t[2], p[2]) + 0.08)]
        if feasible(robot.check_motion(position=up, arm=arm)):
            robot.move_to(position=up, arm=arm, speed_m_s=speed, mode=mode, force_limit_n=force)
            c = robot.check_motion(position=p, orientation=q, arm=arm)
    if not feasible(c):
        print("check_motion refused", p, c.get("failure_category"), val(c, "reason", default=c.get("message")))
        return c
    return robot.move_to(position=p, orientation=q, arm=arm, speed_m_s=speed, mode=mode,
                         force_limit_n=force)

def stop_reason(r):
    return val(r, "stop_reason", default=(r or {}).get("failure_category"))

CAMS = []
def _rank(d, prefer):
    e = d.get("extents_m") or [0, 0, 0]
    return {"longest": max(e[0], e[1]), "tallest": e[2], "widest": e[0] * e[1],
            "smallest": -e[0] * e[1] * e[2]}.get(prefer, 0.0)

def find(text, handle=None, camera="head", fallback=False, prefer=None):
    """Best detection for text in an observation (a fresh one when handle is None); with
    fallback=True, look through the wrist cameras when the head camera sees nothing."""
    if handle is None:
        o = robot.observe()
        handle = val(o, "handle")
        CAMS[:] = val(o, "cameras", default=CAMS) or CAMS
    if fallback:
        for cam in [camera] + [c for c in CAMS if c != camera and "wrist" in c]:
            d = find(text, handle, cam, prefer=prefer)
            if d is not None:
                return d
        return None
    s = robot.segment(text, handle=handle, camera=camera)
    dets = val(s, "detections", default=[]) or []
    # task objects lie on the table in front of the robot: drop robot parts and far-off blobs
    def plausible(d):
        c = np.asarray(d.get("centroid_m", [0, 0, 9]), dtype=float)
        near_base = min(np.linalg.norm(c[:2] - base_xy(a)) for a in (_GEOM.get("arms") or {None: 0}))
        return c[2] < 0.15 and near_base > 0.12
    dets = [d for d in dets if plausible(d) and d.get("score", 0.0) >= 0.35]
    if not dets:
        return None
    if prefer:  # geometry decides among plausible matches (e.g. the widest "block")
        return max(dets, key=lambda d: (_rank(d, prefer), d.get("score", 0.0)))
    return max(dets, key=lambda d: (round(d.get("score", 0.0), 2), d.get("area_px", 0)))

def scan(texts, handle, cams=None):
    """Every detection of every text in observation handle, in every camera (head first, then the
    wrist cameras; or just cams), text by text: the candidates to choose from by geometry."""
    cams = cams or ["head"] + [c for c in CAMS if "wrist" in c]
    return [d for text in texts for cam in cams
            for d in (val(robot.segment(text, handle=handle, camera=cam), "detections", default=[]) or [])]

def measure(det, dest=None):
    if det is None:
        return None
    m = robot.measure_object_geometry(det["id"], destination=dest["id"] if dest else None)
    return val(m)

def relabel(d, text):
    """Detection d under my own name for it (mark_point at its pixel), so that my measurements say
    what they are about; d itself when the click grows a different region."""
    if d is None or text in str(d.get("label", "")):
        return d
    n = val(robot.mark_point(d["handle"], d["camera"], d["pixel_uv"][0], d["pixel_uv"][1], label=text))
    if n and np.linalg.norm(np.subtract(n["centroid_m"], d["centroid_m"])) < 0.02:
        return n
    return d

def holding(arm=None):
    return bool(val(robot.gripper_state(arm=arm), "holding", default=False))

def jaw(cmd, arm=None):
    return robot.move_to(jaw=cmd, arm=arm)
'''
