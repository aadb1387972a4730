"""GitHub glue for pull requests: one sticky plan comment, updated in place, and the job summary.

`pr-comment` finds its earlier comment by a hidden marker (paging through every comment of the pull
request), then PATCHes it, or POSTs a new one when there is none. Only a comment written by the
identity that posts counts as its own: the authenticated user (`GET /user`), or
`github-actions[bot]` for a workflow's installation token (which may not read `/user`). A comment
by anyone else that starts with the marker is never PATCHed; the plan gets a comment of its own. The token comes from GITHUB_TOKEN,
the repository and pull request from GITHUB_REPOSITORY and the event file GITHUB_EVENT_PATH (or the
command line), the API from GITHUB_API_URL (GitHub Enterprise Server works the same). Only the REST
API origin ever receives the token: redirects and pagination links to another origin are refused.

Bodies over GitHub's limits are cut at a line boundary, with open code fences and <details> closed and
a note saying so: 65,536 characters for a comment, 1 MiB for one step's job summary.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

MARKER = "<!-- gputenancy-plan -->"
MAX_COMMENT_CHARS = 65_536
MAX_SUMMARY_BYTES = 1024 * 1024
DEFAULT_API = "https://api.github.com"
TIMEOUT_SECONDS = 30.0
PER_PAGE = 100
MAX_PAGES = 300

_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+\Z")
_LINK = re.compile(r'<([^>]+)>\s*;\s*rel="([^"]+)"')
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")


class GitHubError(Exception):
    """A request to GitHub failed, or the environment does not say where to send it."""


@dataclasses.dataclass(frozen=True)
class PullRequest:
    api: str
    repo: str
    number: int
    token: str = dataclasses.field(repr=False)

    @property
    def comments_url(self) -> str:
        return f"{self.api}/repos/{self.repo}/issues/{self.number}/comments"

    def comment_url(self, comment_id: int) -> str:
        return f"{self.api}/repos/{self.repo}/issues/comments/{comment_id}"


@dataclasses.dataclass(frozen=True)
class Upserted:
    action: str  # "created" or "updated"
    comment_id: int
    url: str


# ---------------------------------------------------------------- where to post


def _event_number(event_path: str) -> int | None:
    try:
        event = json.loads(Path(event_path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise GitHubError(f"cannot read the event file {event_path}: {exc}") from exc
    if not isinstance(event, dict):
        return None
    for key in ("pull_request", "issue"):
        item = event.get(key)
        if isinstance(item, dict) and isinstance(item.get("number"), int):
            return int(item["number"])
    number = event.get("number")
    return number if isinstance(number, int) else None


def pull_request_from_env(
    env: Mapping[str, str], repo: str | None = None, number: int | None = None
) -> PullRequest:
    """The pull request to comment on: arguments first, then the GitHub Actions environment."""
    token = env.get("GITHUB_TOKEN", "")
    if not token:
        raise GitHubError("GITHUB_TOKEN is not set (in a workflow: env: GITHUB_TOKEN: ${{ github.token }})")
    api = (env.get("GITHUB_API_URL") or DEFAULT_API).rstrip("/")
    if urllib.parse.urlsplit(api).scheme not in ("https", "http") or not urllib.parse.urlsplit(api).netloc:
        raise GitHubError(f"GITHUB_API_URL must be an http(s) URL, got {api!r}")
    repo = repo or env.get("GITHUB_REPOSITORY", "")
    if not _REPO.match(repo):
        raise GitHubError(f"the repository must be OWNER/NAME (--repo or GITHUB_REPOSITORY), got {repo!r}")
    if number is None and env.get("GITHUB_EVENT_PATH"):
        number = _event_number(env["GITHUB_EVENT_PATH"])
    if number is None or number <= 0:
        raise GitHubError("no pull request number: pass --pr N, or run on a pull_request event")
    return PullRequest(api, repo, number, token)


# ---------------------------------------------------------------- bodies


def utf16_length(text: str) -> int:
    """Length as GitHub counts characters (UTF-16 code units; never less than the code points)."""
    return len(text.encode("utf-16-le")) // 2


def utf8_length(text: str) -> int:
    return len(text.encode("utf-8"))


def _closers(text: str) -> str:
    fence: str | None = None
    for line in text.splitlines():
        m = _FENCE.match(line)
        if m is None:
            continue
        mark = m.group(1)
        if fence is None:
            fence = mark
        elif mark[0] == fence[0] and len(mark) >= len(fence) and not line.strip()[len(mark) :].strip():
            fence = None
    out = f"\n{fence}\n" if fence is not None else ""
    open_details = len(re.findall(r"<details\b", text)) - len(re.findall(r"</details\s*>", text))
    return out + "\n</details>\n" * max(0, open_details)


def fit(text: str, limit: int, note: str, measure: Callable[[str], int] = utf16_length) -> str:
    """`text` when it fits in `limit` (as `measure` counts), else its longest prefix ending at a line
    break, with open code fences and <details> closed, followed by `note`."""
    if measure(text) <= limit:
        return text

    def candidate(n: int) -> str:
        head = text[:n]
        if "\n" in head:
            head = head[: head.rfind("\n") + 1]
        return head + _closers(head) + note

    best = note
    while best and measure(best) > limit:
        best = best[:-1]
    low, high = 0, len(text)
    while low <= high:
        mid = (low + high) // 2
        out = candidate(mid)
        if measure(out) <= limit:
            best, low = out, mid + 1
        else:
            high = mid - 1
    return best


def comment_body(text: str, footer: str = "") -> str:
    """The sticky comment: the marker, the plan and a footer, within GitHub's comment limit."""
    note = (
        "\n\n> [!WARNING]\n> The plan was cut here: a comment holds at most 65,536 characters."
        " The full plan is in the job summary of the workflow run.\n"
    )
    limit = MAX_COMMENT_CHARS - utf16_length(MARKER) - 1 - utf16_length(footer)
    return f"{MARKER}\n{fit(text, limit, note)}{footer}"


def footer_from_env(env: Mapping[str, str]) -> str:
    """A link to the workflow run that wrote the comment, when run under GitHub Actions."""
    server, repo, run = env.get("GITHUB_SERVER_URL"), env.get("GITHUB_REPOSITORY"), env.get("GITHUB_RUN_ID")
    if not (server and repo and run):
        return ""
    return (
        f"\n\n<sub>Updated by [workflow run {run}]({server.rstrip('/')}/{repo}/actions/runs/{run}).</sub>\n"
    )


# ---------------------------------------------------------------- HTTP


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        if _origin(newurl) != _origin(req.full_url):
            raise GitHubError(f"refusing a redirect from {req.full_url} to another origin: {newurl}")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _origin(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme, parts.netloc.lower()


def _request(pr: PullRequest, method: str, url: str, payload: Any = None) -> tuple[Any, Mapping[str, str]]:
    if _origin(url) != _origin(pr.api):
        raise GitHubError(f"refusing to send the token to {url}: not the API origin {pr.api}")
    data = json.dumps(payload).encode() if payload is not None else None
    req = urllib.request.Request(url, data=data, method=method)  # noqa: S310 - http(s) checked above
    req.add_header("Accept", "application/vnd.github+json")
    req.add_header("Authorization", f"Bearer {pr.token}")
    req.add_header("X-GitHub-Api-Version", "2022-11-28")
    req.add_header("User-Agent", "gputenancy")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    opener = urllib.request.build_opener(_SameOriginRedirects)
    try:
        with opener.open(req, timeout=TIMEOUT_SECONDS) as resp:
            raw = resp.read()
            headers = {k.lower(): v for k, v in resp.headers.items()}
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")
        with contextlib.suppress(ValueError, AttributeError):
            detail = str(json.loads(detail).get("message", detail))
        raise GitHubError(f"{method} {url}: HTTP {exc.code}: {detail.strip()[:500]}") from exc
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise GitHubError(f"{method} {url}: {getattr(exc, 'reason', exc)}") from exc
    try:
        return (json.loads(raw) if raw else None), headers
    except ValueError as exc:
        raise GitHubError(f"{method} {url}: the response is not JSON") from exc


def _next_link(headers: Mapping[str, str]) -> str | None:
    for m in _LINK.finditer(headers.get("link", "")):
        if m.group(2) == "next":
            return m.group(1)
    return None


ACTIONS_BOT = "github-actions[bot]"


def identity(pr: PullRequest) -> str:
    """The login the token posts as: the authenticated user, or github-actions[bot] when the token
    is a workflow's, which GitHub answers with 403 (or 404 on some servers) at /user."""
    try:
        user, _ = _request(pr, "GET", f"{pr.api}/user")
    except GitHubError as exc:
        if isinstance(exc.__cause__, urllib.error.HTTPError) and exc.__cause__.code in (403, 404):
            return ACTIONS_BOT
        raise
    login = user.get("login") if isinstance(user, dict) else None
    if not isinstance(login, str) or not login:
        raise GitHubError(f"GET {pr.api}/user: the response has no login")
    return login


def _author(comment: Mapping[str, Any]) -> str | None:
    user = comment.get("user")
    login = user.get("login") if isinstance(user, dict) else None
    return login if isinstance(login, str) else None


def find_comment(pr: PullRequest, author: str | None = None) -> dict[str, Any] | None:
    """The first comment of the pull request whose body starts with the marker, through every page;
    with `author`, only one written by that login."""
    url: str | None = f"{pr.comments_url}?per_page={PER_PAGE}"
    seen: set[str] = set()
    while url is not None:
        if url in seen or len(seen) >= MAX_PAGES:
            raise GitHubError(f"stopped paging comments at {url} (a loop, or more than {MAX_PAGES} pages)")
        seen.add(url)
        page, headers = _request(pr, "GET", url)
        if not isinstance(page, list):
            raise GitHubError(f"GET {url}: expected a list of comments")
        for comment in page:
            if (
                isinstance(comment, dict)
                and str(comment.get("body") or "").lstrip().startswith(MARKER)
                and (author is None or _author(comment) == author)
            ):
                return comment
        url = _next_link(headers)
    return None


def upsert_comment(pr: PullRequest, body: str) -> Upserted:
    """PATCH the marked comment this identity wrote when there is one, else POST a new one."""
    if not body.startswith(MARKER):
        raise ValueError("the body must start with the marker (use comment_body)")
    existing = find_comment(pr, identity(pr))
    if existing is not None:
        answer, _ = _request(pr, "PATCH", pr.comment_url(int(existing["id"])), {"body": body})
        action = "updated"
    else:
        answer, _ = _request(pr, "POST", pr.comments_url, {"body": body})
        action = "created"
    if not isinstance(answer, dict) or not isinstance(answer.get("id"), int):
        raise GitHubError(f"{action} a comment but the response has no id")
    return Upserted(action, int(answer["id"]), str(answer.get("html_url", "")))


# ---------------------------------------------------------------- job summary


def append_summary(text: str, path: Path) -> bool:
    """Append `text` to a step summary file within what is left of its 1 MiB; True when it was cut."""
    used = path.stat().st_size if path.exists() else 0
    note = (
        "\n\n> [!WARNING]\n> Cut here: a job summary holds at most 1 MiB."
        " The full text is in the run's artifacts.\n"
    )
    limit = max(0, MAX_SUMMARY_BYTES - used)
    out = fit(text if text.endswith("\n") else text + "\n", limit, note, utf8_length)
    with path.open("a", encoding="utf-8") as f:
        f.write(out)
    return out != text and out != text + "\n"


# ---------------------------------------------------------------- commands


def _read_body(body_file: Path) -> str:
    try:
        return body_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GitHubError(f"cannot read {body_file}: {exc}") from exc


def cmd_pr_comment(body_file: Path, repo: str | None, number: int | None, env: Mapping[str, str]) -> int:
    """`pr-comment`: upsert the sticky comment. 0 done, 1 error (printed)."""
    try:
        text = _read_body(body_file)
        pr = pull_request_from_env(env, repo, number)
        footer = footer_from_env(env)
        body = comment_body(text, footer)
        done = upsert_comment(pr, body)
    except GitHubError as exc:
        print(f"error: pr-comment: {exc}")
        return 1
    cut = "" if body == f"{MARKER}\n{text}{footer}" else " (cut to fit)"
    print(f"{done.action} comment {done.comment_id} on {pr.repo}#{pr.number}{cut} {done.url}".rstrip())
    return 0


def cmd_job_summary(body_file: Path, env: Mapping[str, str]) -> int:
    """`job-summary`: append a Markdown file to $GITHUB_STEP_SUMMARY. 0 done, 1 error (printed)."""
    target = env.get("GITHUB_STEP_SUMMARY", "")
    try:
        if not target:
            raise GitHubError("GITHUB_STEP_SUMMARY is not set (job summaries exist only in GitHub Actions)")
        cut = append_summary(_read_body(body_file), Path(target))
    except (GitHubError, OSError) as exc:
        print(f"error: job-summary: {exc}")
        return 1
    print(f"appended {body_file} to the job summary{' (cut to fit)' if cut else ''}")
    return 0
