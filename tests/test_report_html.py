"""report.html from an episode folder: per-request reasoning, code, receipts, images; escaping."""

import json

from captain_ros.report.html import render_report, write_report


def _folder(tmp_path):
    (tmp_path / "summary.json").write_text(json.dumps({
        "task": "pick_place", "seed": 3, "outcome": "false_finish", "host_success": False,
        "strict_success": False, "requests": 1, "physical_actions": 2, "wall_s": 3.0,
        "model_s": 1.0, "harness_s": 2.0, "backend_s": 1.5, "policy": "scripted", "backend": "fake"}))
    recs = [
        {"type": "episode_start", "task": "pick_place", "seed": 3, "task_md": "## Task\nput <b>it</b>",
         "initial_images": [{"path": "images/r000_initial_head.png", "camera": "head", "handle": "obs_1"}]},
        {"type": "request", "t": 1, "reasoning": "I will <script>alert(1)</script> look",
         "calls": [{"code": "print('a' < 'b')", "output": "True\n[move_to] reached; peak 0.5 N",
                    "images": [{"path": "images/r001_wrist.png", "camera": "wrist"}]}],
         "gate": [{"accepted": False, "reason": "measure first"}], "model_s": 1.0, "backend_s": 0.5,
         "harness_s": 0.01, "malformed": ["unknown tool 'bash'"]},
        {"type": "episode_end", "summary": {}},
    ]
    (tmp_path / "trajectory.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\nnot json\n")
    return tmp_path


def test_report_shows_requests_code_receipts_images_and_gate(tmp_path):
    html = render_report(_folder(tmp_path))
    assert "Episode pick_place seed 3" in html and "false_finish" in html
    assert "Request 1" in html and "print(&#x27;a&#x27; &lt; &#x27;b&#x27;)" in html
    assert "[move_to] reached; peak 0.5 N" in html
    assert 'src="images/r001_wrist.png"' in html and 'src="images/r000_initial_head.png"' in html
    assert "measure first" in html and "unknown tool" in html
    assert "<script>" not in html and "&lt;script&gt;" in html and "<b>it</b>" not in html


def test_write_report_and_empty_folder(tmp_path):
    path = write_report(_folder(tmp_path))
    assert path.name == "report.html" and path.read_text().startswith("<!doctype html>")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "(no requests recorded)" in render_report(empty)
