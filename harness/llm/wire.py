"""A chat request on the wire: one POST on an HTTP client made as the openai SDK's own, the reply
read as plain JSON.

The SDK's request path costs more CPU than the exchange itself: per call it copies its options
models, parses and merges URLs and headers, and builds a typed `ChatCompletion` field by field
(two thirds of the client's CPU per call in a profile: docs/measurements.md#scale). freshrag's
request is plain JSON already, and `completion_value` (replies.py) checks the reply's fields
itself, so `ChatRoute` sends the body as the SDK would (its URL, headers and key, on an HTTP
client made as the one the SDK is given, with the deadline backend of harness/llm/deadline.py,
one per thread) and fails as the SDK would: the same openai exception classes for a status, a
timeout or a connection error, so retries and error messages are unchanged. Embeddings take the
same way to `/embeddings` (an agent's searches each embed a query: through the SDK, a search cost
twice a chat call's CPU); the Batch API's files and batches still go through the SDK
(`LLMClient.sdk_call`)."""

from __future__ import annotations

import json
import ssl
import threading
from typing import TYPE_CHECKING, Any

from freshrag.llm import deadline

if TYPE_CHECKING:
    import openai

PATH = "/chat/completions"
EMBEDDINGS_PATH = "/embeddings"


class ChatRoute:
    """`/chat/completions` (or another POST `path`: `/embeddings`) of one SDK client (one endpoint
    and key): its URL and headers, worked out once, and an HTTP client per thread."""

    def __init__(self, sdk: openai.OpenAI, path: str = PATH):
        httpx, _ = deadline._libraries()
        self._sdk = sdk
        # An HTTP client per thread, each made as the SDK's own (deadline.deadline_client): with
        # one client for all, its connection pool looks at every connection twice per request,
        # a third of the CPU of a call with 128 threads; with one per thread, at one.
        self._local = threading.local()
        self._timeout_errors = (httpx.TimeoutException,)
        self._request_errors = (httpx.RequestError, ssl.SSLError)  # what the SDK calls connection errors
        self.url = sdk.base_url.join(path.lstrip("/"))  # the SDK's base URL ends in a slash
        # The SDK's headers for a POST with JSON (User-Agent, OpenAI-Organization and -Project when
        # set, the key), over its HTTP client's own (Accept-Encoding, Connection), as its
        # `build_request` would merge them, but once. An omitted header is not sent, and neither
        # are the SDK's X-Stainless-* telemetry headers: no server needs them, and each header is
        # checked and copied a few times per request on its way through httpx, httpcore and h11.
        sdk_headers = {**sdk.default_headers, **sdk.auth_headers, "Content-Type": "application/json"}
        self.headers = httpx.Headers(self._http().headers)
        self.headers.update({name: value for name, value in sdk_headers.items()
                             if isinstance(value, str) and not name.lower().startswith("x-stainless")})
        self._timeout = httpx.Timeout(sdk.timeout).as_dict()
        self._request = httpx.Request

    def _http(self) -> Any:
        """This thread's HTTP client (proxies, the deadline backend, a pool of its own)."""
        http = getattr(self._local, "http", None)
        if http is None:
            http = self._local.http = deadline.deadline_client()
        return http

    def post(self, body: dict[str, Any]) -> Any:
        """The reply to `body` as JSON data (or its text, when it is no JSON and does not claim to
        be); an `openai.APIStatusError` subclass for a status other than 2xx, `APITimeoutError`
        or `APIConnectionError` (caused by the HTTP library's error) when no reply came."""
        import openai

        http = self._http()
        content = json.dumps(body, ensure_ascii=False, separators=(",", ":"),
                             allow_nan=False).encode()  # as the SDK serialises a body
        # What the client's `build_request` makes of the same arguments, without merging its
        # headers and parsing the URL again for each request; the client's cookies, if a server
        # set any, are sent as it would send them.
        request = self._request("POST", self.url, content=content, headers=self.headers,
                                cookies=http.cookies, extensions={"timeout": self._timeout})
        try:
            response = http.send(request)
        except self._timeout_errors as err:
            raise openai.APITimeoutError(request=request) from err
        except self._request_errors as err:
            raise openai.APIConnectionError(request=request) from err
        if not response.is_success:
            raise self._sdk._make_status_error_from_response(response) from None
        return reply_data(response.content, response.headers.get("content-type", ""))


def reply_data(content: bytes, content_type: str) -> Any:
    """A 2xx reply's body as the SDK reads it: JSON, or else its text (an HTML page), which
    `completion_value` refuses as no completion; a body that claims to be JSON and is not (cut
    short, a number of 5,000 digits) raises the ValueError json raises."""
    try:
        return json.loads(content)
    except ValueError:
        if "json" in content_type:
            raise
        return content.decode("utf-8", errors="replace")
