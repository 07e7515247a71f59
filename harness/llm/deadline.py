"""A deadline per HTTP exchange, and a stop for all: each exchange the LLM client makes gets a
deadline for the whole of it, and a stop ends every exchange in flight within a fraction of a
second.

The HTTP library under the openai SDK (httpx, or its successor httpx2) times each socket
operation, not the exchange: a server that sends one byte a second never trips a read timeout,
and a request stuck in `recv` holds its thread (and so the process, at exit) for as long as the
server likes. So the client's connection pool gets a network backend of ours (`deadline_client`)
whose streams

- give every read and write at most what remains of the calling thread's deadline (`within`),
  headers and body alike; a read past it is the library's own read timeout, which the SDK and
  the client already treat as a timeout (`EndpointError`, retried like one);
- wait in slices of `SLICE_S`, and between slices look at `STOP`: once it is set (the first
  SIGINT or SIGTERM, harness/cli/main.py), every read raises `Stopped` at once, and so does every
  new request, so that a run ends within a second, its finished rows kept and resumable.

A read that times out has consumed nothing, so slicing it is safe; a write is never sliced (a
partial send cannot be repeated), it only gets the remaining time.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
import time
from typing import Any, Iterator

SLICE_S = 0.25
STOP = threading.Event()  # set once: the process was asked to stop
_local = threading.local()  # .deadline: time.monotonic() by which this thread's exchange ends


class Stopped(KeyboardInterrupt):
    """The process was asked to stop (SIGINT or SIGTERM) while a request was being made: the
    request is abandoned, nothing of it is recorded, and the run stops as it does on Ctrl-C."""


def check_stop() -> None:
    if STOP.is_set():
        raise Stopped("stopped by a signal")


def sleep(seconds: float) -> None:
    """time.sleep that a stop cuts short (for waits between retries)."""
    if STOP.wait(seconds):
        raise Stopped("stopped by a signal")


@contextlib.contextmanager
def within(seconds: float | None) -> Iterator[None]:
    """Every exchange this thread starts inside the block ends within `seconds` from now."""
    outer = getattr(_local, "deadline", None)
    _local.deadline = None if seconds is None else time.monotonic() + seconds
    try:
        yield
    finally:
        _local.deadline = outer


def _left(timeout: float | None) -> float | None:
    """What an operation given `timeout` may take: no more than what remains of the deadline."""
    deadline = getattr(_local, "deadline", None)
    if deadline is None:
        return timeout
    remaining = deadline - time.monotonic()
    return remaining if timeout is None else min(timeout, remaining)


def _libraries() -> tuple[Any, Any]:
    """(the httpx module, its httpcore module) that this openai SDK is built on: httpx and
    httpcore before openai 3, httpx2 and httpcore2 since (a fork with the same structure)."""
    import openai

    name = openai.DefaultHttpxClient.__mro__[1].__module__.split(".")[0]  # httpx or httpx2
    return importlib.import_module(name), importlib.import_module(name.replace("httpx", "httpcore"))


def deadline_client(max_connections: int = 1000) -> Any:
    """An HTTP client for openai.OpenAI(http_client=...) whose exchanges keep deadlines and stop
    on STOP. The SDK's own defaults otherwise (openai.DefaultHttpxClient), with one SSL context
    for all of them: loading the certificates takes more CPU than the rest of a client, and the
    chat route makes a client per worker thread (harness/llm/wire.py)."""
    import openai

    httpx, httpcore = _libraries()
    ssl_context = _ssl_context(httpx)
    transport = httpx.HTTPTransport(verify=ssl_context, limits=httpx.Limits(
        max_connections=max_connections, max_keepalive_connections=100))
    pool = transport._pool  # the one private name used: the pool's backend has no public setter
    pool._network_backend = _backend_class(httpcore)(pool._network_backend)
    return openai.DefaultHttpxClient(transport=transport, verify=ssl_context)


_SSL_CONTEXTS: dict[str, Any] = {}
_ssl_lock = threading.Lock()


def _ssl_context(httpx: Any) -> Any:
    """The SSL context an httpx transport would make by default (certifi's certificates, or
    SSL_CERT_FILE and SSL_CERT_DIR), made once per process."""
    with _ssl_lock:
        if httpx.__name__ not in _SSL_CONTEXTS:
            _SSL_CONTEXTS[httpx.__name__] = httpx.create_ssl_context(trust_env=True)
        return _SSL_CONTEXTS[httpx.__name__]


_BACKENDS: dict[str, type] = {}


def _backend_class(httpcore: Any) -> type:
    """The deadline backend for `httpcore` (made once per module: httpcore and httpcore2 have
    their own base classes and exceptions)."""
    if httpcore.__name__ in _BACKENDS:
        return _BACKENDS[httpcore.__name__]

    def _connect_left(timeout: float | None) -> float | None:
        left = _left(timeout)
        if left is not None and left <= 0:  # spent waiting for the pool: a socket takes no < 0
            raise httpcore.ConnectTimeout("the request's deadline passed before it connected")
        return left

    class DeadlineStream(httpcore.NetworkStream):
        def __init__(self, inner: Any):
            self._inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            started = time.monotonic()
            while True:
                check_stop()
                left = _left(None if timeout is None else timeout - (time.monotonic() - started))
                if left is not None and left <= 0:
                    raise httpcore.ReadTimeout("no complete reply within the request's deadline")
                try:
                    return self._inner.read(max_bytes, SLICE_S if left is None else min(SLICE_S, left))
                except httpcore.ReadTimeout:
                    continue  # a slice passed with nothing read: look at the stop and the time

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            check_stop()
            left = _left(timeout)
            if left is not None and left <= 0:
                raise httpcore.WriteTimeout("the request's deadline passed while sending it")
            self._inner.write(buffer, left)

        def close(self) -> None:
            self._inner.close()

        def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                      timeout: float | None = None) -> Any:
            return DeadlineStream(self._inner.start_tls(ssl_context, server_hostname,
                                                        _connect_left(timeout)))

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    class DeadlineBackend(httpcore.NetworkBackend):
        def __init__(self, inner: Any):
            self._inner = inner

        def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                        local_address: str | None = None, socket_options: Any = None) -> Any:
            check_stop()
            return DeadlineStream(self._inner.connect_tcp(host, port, _connect_left(timeout),
                                                          local_address, socket_options))

        def connect_unix_socket(self, path: str, timeout: float | None = None,
                                socket_options: Any = None) -> Any:
            check_stop()
            return DeadlineStream(self._inner.connect_unix_socket(path, _connect_left(timeout),
                                                                  socket_options))

        def sleep(self, seconds: float) -> None:
            sleep(seconds)

    _BACKENDS[httpcore.__name__] = DeadlineBackend
    return DeadlineBackend
