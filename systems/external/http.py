"""A system behind HTTP (docs/own-system.md): the user's own RAG service, asked one question
per request.

freshrag POSTs a JSON body (`{"question": ..., "id": ...}`, field names configurable) and reads
from the JSON reply the answer and, where the service reports them, the retrieved contexts, the
tokens it spent, its retrievals, its retrieval decision and its trajectory (`steps`, or the
conversation its agent had as `messages`: systems/external/trajectory.py), each at its path
(systems/external/reply.py, which also names the reply's fields no path read). What the reply
does not report is recorded as unknown (the row's `unknown` list, `retrievals` null), never as 0.

Every request has one deadline for the whole exchange (`timeout_s`), however slowly the service
sends; 429, 5xx and timeouts are tried again a bounded number of times, after which the pair is a
`failed` row that a resume asks again (the deadline and attempts are how the service is asked, not
its identity: a resume may raise them); a refused connection or a 401/403 stops the run (every
other pair would fail the same way), keeping what finished. Header values come from environment
variables named in the configuration, and are secrets (docs/faults.md#secrets-in-service-headers):
a redirect to another origin is not followed, and every value is scrubbed from the reply and from
every error before anything is written. A stop (harness/llm/deadline.py) ends the wait for a
reply within a quarter of a second.
"""

from __future__ import annotations

import os
import queue
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

from freshrag.core.config import masked_url, shown_url, url_problem
from freshrag.core.errors import FreshragError, UserError
from freshrag.core.jsonl import loads
from freshrag.core.types import CallShape, Declarations, Question, SystemAnswer, SystemContext
from freshrag.llm import deadline
from freshrag.llm.errors import EndpointError, EndpointUnreachable
from freshrag.llm.failures import redact
from freshrag.systems.external.reply import DEFAULT_REPLY, reply_values
from freshrag.systems.external.reported import REPORTED, reported_answer

REPLY_FIELDS = REPORTED
MAX_REPLY_BYTES = 10_000_000  # a larger reply is a fault, not a row
MAX_REDIRECTS = 5
# A shorter value or word of a value (a tenant number, "Bearer") is no secret worth hiding, and
# hiding it would mangle answers.
MIN_SECRET_CHARS = 8
HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # a token (RFC 9110, section 5.1)


@dataclass(frozen=True)
class HttpSettings:
    """One service, as `[systems.NAME]` in freshrag.toml describes it."""

    name: str
    url: str
    timeout_s: float = 60.0
    max_attempts: int = 3
    headers_env: dict[str, str] = field(default_factory=dict)  # header -> environment variable
    request: dict[str, str] = field(default_factory=lambda: {"question": "question", "id": "id"})
    reply: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_REPLY))

    def record(self) -> dict[str, Any]:
        """What decides the service's answers, hashed as its identity: the URL and field names,
        the header names, no values. The deadline and attempts are not in it (`run_settings`):
        a resume may raise them to answer the pairs they failed."""
        return {"url": self.url, "request": self.request, "reply": self.reply,
                "headers": sorted(self.headers_env)}

    def run_settings(self) -> dict[str, Any]:
        """How the service is asked, which the manifest keeps beside its identity."""
        return {"timeout_s": self.timeout_s, "max_attempts": self.max_attempts}


class HttpConfigError(UserError, ValueError):
    """A `[systems.NAME]` table or a URL that cannot describe a service; the message names it."""


class HttpFault(FreshragError):
    """One request that did not give a usable reply; `retry` if asking again may help."""

    def __init__(self, reason: str, retry: bool = False):
        super().__init__(reason)
        self.retry = retry


class HttpSystem(Declarations):
    """The service as a system: `answer` is one POST (with bounded retries)."""

    call_shape = CallShape()  # none through the run's client: the service reports its own

    def __init__(self, context: SystemContext, settings: HttpSettings):
        self.settings = settings
        self.headers = headers(settings)  # a missing variable is named before any request
        self.secrets = secrets_of(self.headers, settings)

    def answer(self, question: Question) -> SystemAnswer:
        return read_reply(self.settings, question, scrubbed(self._ask(question), self.secrets))

    def stand_in(self, question: Question) -> SystemAnswer:
        """What a dry run or a batch pre-pass walks instead of asking the service: an answer of
        typical length, so that the judge's call can be estimated without a request."""
        text = f"A stand-in for the answer of {self.settings.name} to: {question.text}"
        return SystemAnswer(text, retrievals=None, details={"decision": None})

    def _ask(self, question: Question) -> Any:
        settings = self.settings
        body = {settings.request["question"]: question.text}
        if settings.request.get("id"):
            body[settings.request["id"]] = question.id
        where = f"system {settings.name!r} at {shown_url(settings.url)}"
        for attempt in range(settings.max_attempts):
            try:
                return post_json(settings.url, body, self.headers, settings.timeout_s)
            except ConnectionRefusedError as err:
                raise EndpointUnreachable(redact(f"{where}: cannot connect ({err})",
                                                 self.secrets)) from None
            except HttpFault as fault:
                said = redact(str(fault), self.secrets)  # an error body may echo a header
                if said.startswith(("HTTP 401", "HTTP 403")):
                    raise EndpointUnreachable(f"{where}: {said}; check the headers of "
                                              f"[systems.{settings.name}]") from None
                if not fault.retry or attempt == settings.max_attempts - 1:
                    tries = f" after {attempt + 1} attempts" if attempt else ""
                    raise EndpointError(f"{where}: {said}{tries}") from None
            deadline.sleep(min(8.0, 0.5 * 2 ** attempt))
        raise AssertionError("unreachable")


def headers(settings: HttpSettings) -> dict[str, str]:
    """The request's headers, each value read from its environment variable now, without the
    whitespace around it. A value that cannot be one header line is refused naming the header,
    never quoting the value."""
    found = {"Content-Type": "application/json", "Accept": "application/json"}
    for header, variable in settings.headers_env.items():
        value = os.environ.get(variable, "").strip()
        here = f"system {settings.name!r}: header {header} comes from ${variable}"
        if not value:
            raise HttpConfigError(f"{here}, which is not set" if variable not in os.environ
                                  else f"{here}, which holds only whitespace")
        if any(not " " <= char <= "~" for char in value):
            raise HttpConfigError(f"{here}, whose value holds a control character (a line break, "
                                  f"a tab) or a character outside ASCII: a header value is one "
                                  f"line of visible ASCII")
        found[header] = value
    return found


def secrets_of(sent_headers: dict[str, str], settings: HttpSettings) -> list[str]:
    """The configured header values, and their words (the token of "Bearer TOKEN"), longest
    first: what `scrubbed` and every error hide."""
    found = {part for header in settings.headers_env
             for part in (sent_headers[header], *sent_headers[header].split())
             if len(part) >= MIN_SECRET_CHARS}
    return sorted(found, key=len, reverse=True)


def scrubbed(reply: Any, secrets: list[str]) -> Any:
    """The parsed reply with every secret replaced by a mark (redact's, as for the LLM path's
    keys) in its texts and keys at any depth; walked without recursion, however deep."""
    if not secrets or not isinstance(reply, (str, list, dict)):
        return reply
    if isinstance(reply, str):
        return redact(reply, secrets)
    stack: list[Any] = [reply]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key in [key for key in node if redact(key, secrets) != key]:
                node[redact(key, secrets)] = node.pop(key)
        for at, value in list(node.items() if isinstance(node, dict) else enumerate(node)):
            if isinstance(value, str):
                node[at] = redact(value, secrets)
            elif isinstance(value, (list, dict)):
                stack.append(value)
    return reply


def post_json(url: str, body: dict[str, Any], sent_headers: dict[str, str],
              deadline_s: float) -> Any:
    """The parsed JSON reply of one POST, within `deadline_s` for the whole exchange. The request
    runs on a daemon thread, so that a service that never finishes cannot hold the run."""
    results: queue.Queue = queue.Queue(maxsize=1)

    def work() -> None:
        try:
            results.put((True, _post(url, body, sent_headers, deadline_s)))
        except BaseException as err:  # handed to the caller, which names it
            results.put((False, err))

    threading.Thread(target=work, daemon=True, name="freshrag-http-system").start()
    ends = time.monotonic() + deadline_s
    while True:  # in slices, so that a stop is seen within one, as on the LLM path
        deadline.check_stop()
        if (left := ends - time.monotonic()) <= 0:
            raise HttpFault(f"no complete reply within {deadline_s:g} s", retry=True)
        try:
            ok, value = results.get(timeout=min(deadline.SLICE_S, left))
            break
        except queue.Empty:
            continue
    if not ok:
        raise value
    return value


def _post(url: str, body: dict[str, Any], sent_headers: dict[str, str], deadline_s: float) -> Any:
    ends = time.monotonic() + deadline_s
    for _ in range(MAX_REDIRECTS + 1):
        status, content_type, data, location = _exchange(url, body, sent_headers, deadline_s, ends)
        if location is None:
            break
        url = _followed(url, location, status)
    else:
        raise HttpFault(f"redirected more than {MAX_REDIRECTS} times")
    if status != 200:
        raise HttpFault(f"HTTP {status}: {data[:200].decode('utf-8', 'replace')!r}",
                        retry=status == 429 or status >= 500)
    try:  # jsonl.loads: nesting bounded, a lone surrogate as U+FFFD (docs/faults.md)
        return loads(data)
    except (ValueError, RecursionError):  # also a number too long for int()
        kind = content_type.split(";")[0] or "no content type"
        raise HttpFault(f"the reply cannot be read as JSON ({kind}): "
                        f"{data[:120].decode('utf-8', 'replace')!r}") from None


def _exchange(url: str, body: dict[str, Any], sent_headers: dict[str, str], deadline_s: float,
              ends: float) -> tuple[int, str, bytes, str | None]:
    """(status, content type, body, where a redirect points or None) of one POST, never
    following a redirect itself: `_followed` decides."""
    import requests  # here, not at import: `freshrag --help` loads no HTTP library

    left = max(0.01, ends - time.monotonic())
    try:
        with requests.post(url, json=body, headers=sent_headers, stream=True,
                           allow_redirects=False, timeout=(min(10.0, left), left)) as response:
            data = _read_body(response, ends)
            location = response.headers.get("Location") if response.is_redirect else None
            return (response.status_code, response.headers.get("Content-Type", ""), data,
                    location)
    except requests.ConnectionError as err:
        if "refused" in str(err).lower():
            raise ConnectionRefusedError(str(err)) from None
        raise HttpFault(f"connection failed ({type(err).__name__})", retry=True) from None
    except requests.Timeout:
        raise HttpFault(f"no reply within {deadline_s:g} s", retry=True) from None
    except requests.RequestException as err:
        raise HttpFault(f"request failed ({type(err).__name__}: {err})") from None
    except ValueError:  # requests reads a redirect's Location even when not following it
        raise HttpFault("the reply has a header that cannot be read (a Location that is not a "
                        "URL?)") from None


def _followed(url: str, location: str, status: int) -> str:
    """Where a redirect from `url` leads, if freshrag follows it: within the service's origin
    (scheme, host and port) and keeping the POST (307, 308). Anywhere else the configured
    headers would go too, and its reply would be taken for the service's."""
    target = urljoin(url, location)
    shown = shown_url(target)
    if _origin(target) != _origin(url):
        raise HttpFault(f"redirected (HTTP {status}) to another origin, {shown}: not followed, "
                        f"so that the service's headers go nowhere else; if that is the service, "
                        f"configure its URL")
    if status not in (307, 308):
        raise HttpFault(f"redirected (HTTP {status}) to {shown}, which would turn the POST into "
                        f"a GET: not followed; configure that URL")
    return target


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    try:
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower())
    except ValueError:  # a port that is not one: no origin matches it
        return ("", url, None)
    return parts.scheme.lower(), (parts.hostname or "").lower(), port


def _read_body(response: Any, ends: float) -> bytes:
    chunks, size = [], 0
    for chunk in response.iter_content(65536):
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            raise HttpFault(f"the reply is larger than {MAX_REPLY_BYTES:,} bytes")
        if time.monotonic() > ends:
            raise HttpFault("the reply did not finish before the deadline", retry=True)
        chunks.append(chunk)
    return b"".join(chunks)


def read_reply(settings: HttpSettings, question: Question, reply: Any) -> SystemAnswer:
    """The answer and what the service reported; a reply without the answer is a fault."""
    where = f"system {settings.name!r} at {shown_url(settings.url)}"
    if not isinstance(reply, dict):
        raise EndpointError(f"{where}: the reply is a JSON {type(reply).__name__}, not an object")
    values, unread = reply_values(reply, settings.reply)
    names = {name: settings.reply.get(name) or name for name in ("steps", "messages")}
    try:
        answer = reported_answer(values, settings.name, question, names)
    except ValueError as err:
        message = str(err).replace("{answer!r}", repr(settings.reply["answer"]))
        raise EndpointError(f"{where}: {message}") from None
    answer.details["service"] = {"url": shown_url(settings.url),
                                 **({"unread": unread} if unread else {})}
    return answer


SETTINGS_KEYS = ("url", "timeout_s", "max_attempts", "headers", "request", "reply")


def settings_from_table(name: str, table: Any, where: str) -> HttpSettings:
    """A service from its `[systems.NAME]` table of freshrag.toml (`where` names the file)."""
    here = f"{where}: [systems.{name}]"
    if not isinstance(table, dict):
        raise HttpConfigError(f"{here} must be a table, got {table!r:.80}")
    if unknown := sorted(set(table) - set(SETTINGS_KEYS)):
        raise HttpConfigError(f"{here}: unknown key(s) {unknown}; known: {', '.join(SETTINGS_KEYS)}")
    url = table.get("url")
    if not isinstance(url, str) or (problem := url_problem(url)):
        shown = masked_url(url) if isinstance(url, str) else url  # a query may hold a key
        raise HttpConfigError(f"{here}: url {shown!r:.80} is not usable: "
                              f"{'it is missing' if url is None else problem}")
    timeout, attempts = table.get("timeout_s", 60.0), table.get("max_attempts", 3)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
            or not 0 < timeout <= 3600:
        raise HttpConfigError(f"{here}: timeout_s must be seconds from 0 to 3600, got {timeout!r}")
    if isinstance(attempts, bool) or not isinstance(attempts, int) or not 1 <= attempts <= 20:
        raise HttpConfigError(f"{here}: max_attempts must be 1 to 20, got {attempts!r}")
    defaults = HttpSettings(name, url)
    names = {part: _names(table.get(part, {}), known, f"{here}.{part}")
             for part, known in (("headers", None), ("request", ("question", "id")),
                                 ("reply", REPLY_FIELDS))}
    if bad := sorted(header for header in names["headers"] if not HEADER_NAME.fullmatch(header)):
        raise HttpConfigError(f"{here}.headers: {bad!r:.120} not a header name (letters, digits "
                              f"and !#$%&'*+-.^_`|~, no spaces)")
    if "question" in names["request"] and not names["request"]["question"]:
        raise HttpConfigError(f"{here}.request: question needs a field name")
    return HttpSettings(name, url, float(timeout), attempts, names["headers"],
                        {**defaults.request, **names["request"]},
                        {**defaults.reply, **names["reply"]})


def _names(table: Any, known: tuple[str, ...] | None, here: str) -> dict[str, str]:
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise HttpConfigError(f"{here} must be a table of names (text), got {table!r:.80}")
    if known is not None and (unknown := sorted(set(table) - set(known))):
        raise HttpConfigError(f"{here}: unknown key(s) {unknown}; known: {', '.join(known)}")
    return dict(table)
