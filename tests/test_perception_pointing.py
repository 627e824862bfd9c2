"""Point-output parsing, the OpenAI-compatible endpoint pointer (in-process fake server) and the
weight-free default pointer."""

import base64
import io
import json
import subprocess
import sys

import httpx
import numpy as np
import pytest
from perception_synth import Box, SynthBackend

from captain_ros.perception import PerceptionService, parse_points
from captain_ros.perception.camera import project_points
from captain_ros.perception.vlm_pointer import EndpointVLM, VLMPointer


def uv(points):
    return [(round(p.u, 2), round(p.v, 2)) for p in points]


@pytest.mark.parametrize(
    "text,expected",
    [
        ('<point x="50" y="25" alt="cup">cup</point>', [(256, 128)]),
        ('<point x="50.0" y="25.0" alt="cup">cup</point>', [(256, 128)]),
        (
            'Sure! <points x1="10" y1="10" x2="90.5" y2="50" alt="cubes">cubes</points> done',
            [(51.2, 51.2), (463.36, 256)],
        ),
        ("<point x='12.5' y='100'>edge</point>", []),  # y=100 % is the bottom border: off the image
        ('<point x="300" y="200" alt="a">a</point>', [(300, 200)]),  # > 100: pixels
        ('<points coords="1 500 250 2 100 900">x</points>', [(256, 128), (51.2, 460.8)]),
        ('<points coords="500 250;100 900">x</points>', [(256, 128), (51.2, 460.8)]),
        ('```json\n[{"point_2d": [100, 200], "label": "cube"}]\n```', [(100, 200)]),
        ("The cube is at (0.5, 0.25).", [(256, 128)]),
        ("The cube is at (300, 40).", [(300, 40)]),
        ("no idea", []),
        ("", []),
        ('<point x="nan" y="3">', []),
        ('<point x="5"', []),
        ('<point x="-5" y="10">a</point><point x="20" y="30">b</point>', [(102.4, 153.6)]),
    ],
)
def test_parse_points(text, expected):
    got = uv(parse_points(text, 512, 512))
    assert len(got) == len(expected)
    for a, b in zip(got, expected, strict=True):
        assert a == pytest.approx(b)


def test_parse_points_labels_units_and_limits():
    pts = parse_points('<point x="10" y="20" alt="red cube">red cube</point>', 200, 100)
    assert pts[0].label == "red cube" and (pts[0].u, pts[0].v) == pytest.approx((20, 20))
    px = parse_points('<point x="10" y="20">a</point>', 200, 100, coords="pixels")
    assert (px[0].u, px[0].v) == (10, 20)
    many = "".join(f'<point x="{i % 90 + 1}" y="5">p</point>' for i in range(100))
    assert len(parse_points(many, 100, 100, max_points=7)) == 7
    assert parse_points(None, 10, 10) == []  # type: ignore[arg-type]
    assert parse_points("<point>" * 1000, 10, 10) == []


class FakeChatServer:
    """In-process OpenAI-compatible chat endpoint: answers with a Molmo-style point at the pixel
    of a known world point, and records the requests."""

    def __init__(self, reply):
        self.reply = reply
        self.requests = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.requests.append((request, body))
        if request.url.path != "/v1/chat/completions":
            return httpx.Response(404, json={"error": "not found"})
        return httpx.Response(
            200, json={"choices": [{"message": {"role": "assistant", "content": self.reply(body)}}]}
        )


def test_endpoint_pointer_with_fake_server_drives_point():
    from PIL import Image

    cube = Box((0.45, 0.05, 0.025), (0.05, 0.05, 0.05), (200, 30, 30), 0.3)
    b = SynthBackend(objects=[cube], size_px=256)
    s0 = PerceptionService(b)
    h0 = s0.observe(["head"]).value["handle"]
    frame = s0.observations.get(h0).frame("head")
    uvs, _ = project_points(frame, np.array([[0.45, 0.05, 0.05]]))
    u, v = uvs[0]
    pct = (100 * u / 256, 100 * v / 256)

    def reply(body):
        text = body["messages"][0]["content"][1]["text"]
        assert text == "Point to the red cube."
        return f'<point x="{pct[0]:.1f}" y="{pct[1]:.1f}" alt="red cube">red cube</point>'

    server = FakeChatServer(reply)
    client = EndpointVLM(
        "http://vlm.local/v1", "molmo", api_key="k", transport=httpx.MockTransport(server)
    )
    svc = PerceptionService(b, pointer=VLMPointer(client))
    r = svc.point("red cube", None, "head")
    assert r.success, r.message
    p = r.value["points"][0]
    assert abs(p["u"] - u) <= 1 and abs(p["v"] - v) <= 1 and p["label"] == "red cube"
    req, body = server.requests[-1]
    assert req.headers["authorization"] == "Bearer k" and body["model"] == "molmo"
    url = body["messages"][0]["content"][0]["image_url"]["url"]
    img = np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))))
    assert img.shape == (256, 256, 3)


def test_endpoint_pointer_failures_are_structured():
    b = SynthBackend(objects=[], size_px=64)
    down = EndpointVLM(
        "http://vlm.local/v1",
        "m",
        transport=httpx.MockTransport(lambda r: httpx.Response(500, text="boom")),
    )
    r = PerceptionService(b, pointer=VLMPointer(down)).point("cube")
    assert not r.success and r.failure_category.value == "internal_error"
    assert "endpoint" in r.message and "mark_point" in r.message
    junk = EndpointVLM(
        "http://vlm.local/v1",
        "m",
        transport=httpx.MockTransport(
            lambda r: httpx.Response(200, json={"choices": [{"message": {"content": "no idea"}}]})
        ),
    )
    r2 = PerceptionService(b, pointer=VLMPointer(junk)).point("cube")
    assert r2.failure_category.value == "not_detected"
    bad_json = EndpointVLM(
        "http://vlm.local/v1",
        "m",
        transport=httpx.MockTransport(lambda r: httpx.Response(200, json={"nope": 1})),
    )
    assert (
        PerceptionService(b, pointer=VLMPointer(bad_json)).point("cube").failure_category.value
        == "internal_error"
    )


def test_import_is_torch_free():
    code = (
        "import sys, captain_ros.perception, captain_ros.perception.sam, "
        "captain_ros.perception.vlm_pointer; "
        "print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False False", out.stderr
