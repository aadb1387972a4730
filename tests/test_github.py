"""pr-comment and job-summary against a real HTTP server on 127.0.0.1 that plays the GitHub REST API."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gputenancy.cli.app import main
from gputenancy.deliver import github

TOKEN = "t0ken-for-tests"
REPO = "acme/gpu-tenancy"
PR = 7
PREFIX = "/api/v3"  # GitHub Enterprise Server layout: the API below a path


class FakeGitHub:
    """The issue-comment endpoints of one pull request, with small pages to exercise paging."""

    def __init__(self, page_size: int = 2) -> None:
        self.page_size = page_size
        self.comments: list[dict[str, Any]] = []
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.next_id = 100
        self.fail_with: int | None = None
        self.next_link_override: str | None = None
        self.redirect_to: str | None = None
        self.lock = threading.Lock()
        self.base = ""
        self.user: str | None = None  # the token's login at /user; None: a workflow token (403)

    def add(self, body: str, login: str = "someone") -> dict[str, Any]:
        self.next_id += 1
        comment = {
            "id": self.next_id,
            "body": body,
            "user": {"login": login},
            "html_url": f"https://github.example/{REPO}/pull/{PR}#issuecomment-{self.next_id}",
        }
        self.comments.append(comment)
        return comment

    def marked(self) -> list[dict[str, Any]]:
        return [c for c in self.comments if c["body"].startswith(github.MARKER)]


def _handler(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    list_path = f"{PREFIX}/repos/{REPO}/issues/{PR}/comments"
    one_path = re.compile(rf"^{re.escape(PREFIX)}/repos/{re.escape(REPO)}/issues/comments/(\d+)$")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, code: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> Any:
            length = int(self.headers.get("Content-Length", "0"))
            return json.loads(self.rfile.read(length) or b"null")

        def _start(self) -> bool:
            with fake.lock:
                fake.requests.append(
                    (self.command, self.path, {k.lower(): v for k, v in self.headers.items()})
                )
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                self._send(401, {"message": "Bad credentials"})
                return False
            if fake.fail_with is not None:
                self._send(fake.fail_with, {"message": "Resource not accessible by integration"})
                return False
            return True

        def do_GET(self) -> None:
            if not self._start():
                return
            url = urlsplit(self.path)
            if url.path == f"{PREFIX}/user":
                if fake.user is None:
                    self._send(403, {"message": "Resource not accessible by integration"})
                else:
                    self._send(200, {"login": fake.user, "type": "User"})
                return
            if fake.redirect_to is not None:
                self.send_response(302)
                self.send_header("Location", fake.redirect_to)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if url.path != list_path:
                self._send(404, {"message": "Not Found"})
                return
            page = int(parse_qs(url.query).get("page", ["1"])[0])
            start = (page - 1) * fake.page_size
            items = fake.comments[start : start + fake.page_size]
            headers = {}
            if fake.next_link_override is not None:
                headers["Link"] = f'<{fake.next_link_override}>; rel="next"'
            elif start + fake.page_size < len(fake.comments):
                nxt = f"{fake.base}{list_path}?per_page=100&page={page + 1}"
                headers["Link"] = f'<{nxt}>; rel="next", <{fake.base}{list_path}?page=99>; rel="last"'
            self._send(200, items, headers)

        def do_POST(self) -> None:
            if not self._start():
                return
            if urlsplit(self.path).path != list_path:
                self._send(404, {"message": "Not Found"})
                return
            body = self._body()["body"]
            with fake.lock:
                comment = fake.add(body, login="github-actions[bot]")
            self._send(201, comment)

        def do_PATCH(self) -> None:
            if not self._start():
                return
            m = one_path.match(urlsplit(self.path).path)
            found = [c for c in fake.comments if m and c["id"] == int(m.group(1))]
            if not found:
                self._send(404, {"message": "Not Found"})
                return
            found[0]["body"] = self._body()["body"]
            self._send(200, found[0])

    return Handler


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(github, "TIMEOUT_SECONDS", 5.0)
    state = FakeGitHub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def actions_env(fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment of a pull_request workflow run, pointing at the fake API."""
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"action": "synchronize", "number": PR, "pull_request": {"number": PR}}))
    env = {
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_API_URL": f"{fake.base}{PREFIX}",
        "GITHUB_SERVER_URL": "https://github.example",
        "GITHUB_RUN_ID": "4242",
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env


def _plan(tmp_path: Path, text: str, name: str = "plan.md") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_creates_one_comment_then_updates_it_in_place(
    fake: FakeGitHub, actions_env: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in range(5):
        fake.add(f"review comment {i}")
    assert main(["pr-comment", "--body-file", str(_plan(tmp_path, "## Plan\n\n2 changes\n"))]) == 0
    assert "created comment" in capsys.readouterr().out
    gets = [p for m, p, _ in fake.requests if m == "GET"]
    assert gets[0] == f"{PREFIX}/user"  # who posts: a workflow token, github-actions[bot]
    assert len(gets) == 4, gets  # 5 comments, pages of 2: every page was read before posting
    assert [m for m, _, _ in fake.requests].count("POST") == 1
    (sticky,) = fake.marked()
    assert sticky["body"].startswith(f"{github.MARKER}\n## Plan\n\n2 changes\n")
    assert "[workflow run 4242](https://github.example/acme/gpu-tenancy/actions/runs/4242)" in sticky["body"]

    fake.requests.clear()
    assert main(["pr-comment", "--body-file", str(_plan(tmp_path, "## Plan\n\nno changes\n"))]) == 0
    assert "updated comment" in capsys.readouterr().out
    assert [m for m, _, _ in fake.requests] == ["GET", "GET", "GET", "GET", "PATCH"]
    (again,) = fake.marked()
    assert again["id"] == sticky["id"] and "no changes" in again["body"]
    assert len(fake.comments) == 6
    for _, _, headers in fake.requests:
        assert headers["authorization"] == f"Bearer {TOKEN}"
        assert headers["accept"] == "application/vnd.github+json"
        assert headers["x-github-api-version"] == "2022-11-28"


def test_finds_the_marker_on_a_later_page(
    fake: FakeGitHub, actions_env: dict[str, str], tmp_path: Path
) -> None:
    for i in range(4):
        fake.add(f"chatter {i}")
    old = fake.add(f"{github.MARKER}\nold plan", login="github-actions[bot]")
    fake.add("> quoting: <!-- gputenancy-plan --> is not a sticky comment")
    assert main(["pr-comment", "--body-file", str(_plan(tmp_path, "new plan\n"))]) == 0
    assert [m for m, _, _ in fake.requests] == ["GET", "GET", "GET", "GET", "PATCH"]
    assert fake.requests[-1][1] == f"{PREFIX}/repos/{REPO}/issues/comments/{old['id']}"
    assert old["body"].startswith(f"{github.MARKER}\nnew plan\n")


@pytest.mark.parametrize("user", [None, "plan-bot"], ids=["workflow-token", "user-token"])
def test_a_marked_comment_by_someone_else_is_never_updated(
    fake: FakeGitHub,
    actions_env: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    user: str | None,
) -> None:
    """Another account's comment that starts with the marker stays as written; the plan gets its own
    comment, and the next run updates that one."""
    fake.user = user
    me = user or github.ACTIONS_BOT
    squatter = fake.add(f"{github.MARKER}\nfake plan: all good, merge", login="mallory")
    impostor = fake.add(f"{github.MARKER}\nlooks like the bot", login="github-actions")
    assert main(["pr-comment", "--body-file", str(_plan(tmp_path, "real plan\n"))]) == 0
    assert "created comment" in capsys.readouterr().out
    assert [m for m, _, _ in fake.requests].count("PATCH") == 0
    assert squatter["body"] == f"{github.MARKER}\nfake plan: all good, merge"
    assert impostor["body"] == f"{github.MARKER}\nlooks like the bot"
    mine = fake.comments[-1]
    if user is not None:  # the fake posts as the bot; a user token's comment is that user's
        mine["user"] = {"login": user}
    assert mine["body"].startswith(f"{github.MARKER}\nreal plan\n")
    fake.requests.clear()
    assert main(["pr-comment", "--body-file", str(_plan(tmp_path, "newer plan\n"))]) == 0
    assert "updated comment" in capsys.readouterr().out
    (patch,) = [p for m, p, _ in fake.requests if m == "PATCH"]
    assert patch == f"{PREFIX}/repos/{REPO}/issues/comments/{mine['id']}"
    assert mine["body"].startswith(f"{github.MARKER}\nnewer plan\n") and me in (mine["user"]["login"],)
    assert squatter["body"] == f"{github.MARKER}\nfake plan: all good, merge"


def test_repo_and_pr_from_the_command_line(
    fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_API_URL", f"{fake.base}{PREFIX}/")
    monkeypatch.delenv("GITHUB_EVENT_PATH", raising=False)
    monkeypatch.delenv("GITHUB_RUN_ID", raising=False)
    body = _plan(tmp_path, "plan\n")
    assert main(["pr-comment", "--body-file", str(body), "--repo", REPO, "--pr", str(PR)]) == 0
    (sticky,) = fake.marked()
    assert sticky["body"] == f"{github.MARKER}\nplan\n"


def test_a_long_plan_is_cut_with_a_note_and_closed_markup(
    fake: FakeGitHub, actions_env: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = ["## Plan", "", "<details><summary>ClusterQueue nlp</summary>", "", "```diff"]
    lines += [f"+ spec.resourceGroups[0].flavors[{i}].nominalQuota: '{i}' \N{ROCKET}" for i in range(20_000)]
    lines += ["```", "</details>", ""]
    text = "\n".join(lines)
    assert len(text) > 5 * github.MAX_COMMENT_CHARS
    assert main(["pr-comment", "--body-file", str(_plan(tmp_path, text))]) == 0
    assert "(cut to fit)" in capsys.readouterr().out
    (sticky,) = fake.marked()
    body = sticky["body"]
    assert github.utf16_length(body) <= github.MAX_COMMENT_CHARS
    assert github.utf16_length(body) > github.MAX_COMMENT_CHARS - 1000  # cut near the limit, not far below
    assert body.startswith(github.MARKER + "\n## Plan")
    assert "The plan was cut here" in body
    assert "actions/runs/4242" in body  # the footer survives the cut
    fences = [line for line in body.splitlines() if line.startswith("```")]
    assert len(fences) % 2 == 0, "the open ```diff fence is closed before the note"
    assert body.count("<details>") == body.count("</details>")
    before_note = body.split("> [!WARNING]")[0]
    assert all(
        line.startswith(("+ spec", "```", "</details>", "## Plan", "<details>", github.MARKER)) or not line
        for line in before_note.splitlines()
    ), "cut at a line boundary"


@settings(max_examples=200)
@given(
    text=st.text(alphabet=st.characters(codec="utf-8"), max_size=400),
    limit=st.integers(min_value=0, max_value=300),
)
def test_fit_never_exceeds_the_limit(text: str, limit: int) -> None:
    note = "\n(cut)\n"
    for measure in (github.utf16_length, github.utf8_length):
        out = github.fit(text, limit, note, measure)
        assert measure(out) <= limit
        if measure(text) <= limit:
            assert out == text


def test_http_errors_are_reported_not_raised(
    fake: FakeGitHub, actions_env: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.fail_with = 403
    assert main(["pr-comment", "--body-file", str(_plan(tmp_path, "plan\n"))]) == 1
    out = capsys.readouterr().out
    assert "error: pr-comment: GET" in out and "HTTP 403: Resource not accessible by integration" in out
    assert TOKEN not in out


def test_bad_token_is_reported(
    fake: FakeGitHub,
    actions_env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "wrong")
    assert main(["pr-comment", "--body-file", str(_plan(tmp_path, "plan\n"))]) == 1
    assert "HTTP 401: Bad credentials" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("unset", "override", "message"),
    [
        ("GITHUB_TOKEN", {}, "GITHUB_TOKEN is not set"),
        ("GITHUB_REPOSITORY", {}, "the repository must be OWNER/NAME"),
        ("GITHUB_EVENT_PATH", {}, "no pull request number"),
        (None, {"GITHUB_REPOSITORY": "acme/../../x"}, "the repository must be OWNER/NAME"),
        (None, {"GITHUB_API_URL": "file:///etc/passwd"}, "GITHUB_API_URL must be an http(s) URL"),
    ],
)
def test_missing_or_bad_settings(
    actions_env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fake: FakeGitHub,
    unset: str | None,
    override: dict[str, str],
    message: str,
) -> None:
    if unset:
        monkeypatch.delenv(unset)
    for k, v in override.items():
        monkeypatch.setenv(k, v)
    assert main(["pr-comment", "--body-file", str(_plan(tmp_path, "plan\n"))]) == 1
    assert message in capsys.readouterr().out
    assert fake.requests == []


def test_missing_body_file(
    actions_env: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["pr-comment", "--body-file", str(tmp_path / "nope.md")]) == 1
    assert "cannot read" in capsys.readouterr().out


def test_the_token_never_leaves_the_api_origin(
    fake: FakeGitHub, actions_env: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.add("a")
    fake.next_link_override = "http://198.51.100.1/steal?page=2"
    assert main(["pr-comment", "--body-file", str(_plan(tmp_path, "plan\n"))]) == 1
    assert "refusing to send the token to http://198.51.100.1/steal" in capsys.readouterr().out

    fake.next_link_override = None
    fake.redirect_to = "http://198.51.100.1/elsewhere"
    assert main(["pr-comment", "--body-file", str(_plan(tmp_path, "plan\n"))]) == 1
    assert "refusing a redirect" in capsys.readouterr().out
    assert fake.marked() == []


def test_a_paging_loop_is_stopped(
    fake: FakeGitHub, actions_env: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.add("a")
    fake.next_link_override = f"{fake.base}{PREFIX}/repos/{REPO}/issues/{PR}/comments?per_page=100"
    assert main(["pr-comment", "--body-file", str(_plan(tmp_path, "plan\n"))]) == 1
    assert "stopped paging comments" in capsys.readouterr().out
    assert len(fake.requests) == 2  # /user, then the one page


def test_pr_number_from_an_issue_comment_event(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"issue": {"number": 12, "pull_request": {}}}))
    env = {"GITHUB_TOKEN": "x", "GITHUB_REPOSITORY": REPO, "GITHUB_EVENT_PATH": str(event)}
    pr = github.pull_request_from_env(env)
    assert (pr.api, pr.repo, pr.number) == (github.DEFAULT_API, REPO, 12)
    assert "x" not in repr(pr)


# ---------------------------------------------------------------- job summary


def test_job_summary_appends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert main(["job-summary", "--body-file", str(_plan(tmp_path, "## Plan\n\n1 change"))]) == 0
    assert summary.read_text() == "# earlier step\n## Plan\n\n1 change\n"
    assert "appended" in capsys.readouterr().out


def test_job_summary_is_cut_to_what_is_left_of_1_mib(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("x" * 1000 + "\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    text = "```\n" + "\n".join(f"é line {i}" for i in range(200_000)) + "\n```\n"
    assert main(["job-summary", "--body-file", str(_plan(tmp_path, text))]) == 0
    assert "(cut to fit)" in capsys.readouterr().out
    data = summary.read_bytes()
    assert github.MAX_SUMMARY_BYTES - 2000 < len(data) <= github.MAX_SUMMARY_BYTES
    assert data.decode().count("```") == 2
    assert "a job summary holds at most 1 MiB" in data.decode()


def test_job_summary_outside_actions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert main(["job-summary", "--body-file", str(_plan(tmp_path, "x"))]) == 1
    assert "GITHUB_STEP_SUMMARY is not set" in capsys.readouterr().out
