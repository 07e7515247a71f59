"""Text files as freshrag reads them: UTF-8, a byte-order mark allowed, nothing else.

Question and article files, dataset files, run files (`samples.jsonl`, `manifest.json`) and
`freshrag.toml` all come through here. Any other encoding is refused naming the file, the line and
the byte offset of the first byte that is not UTF-8, with the command that converts the file; so is
a NUL byte (a binary file, or UTF-16 without its byte-order mark) and a line longer than
`MAX_LINE_BYTES` (a file that is not line-oriented at all). `lines` streams a file one line at a
time, so that validating a huge file never holds more than one line of it.

Errors are raised as the caller's own error class (`DatasetError`, `ConfigError`, ...), so that
each reader keeps its one error type.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator, TypeVar, cast

from freshrag.core.errors import UserError

MAX_LINE_BYTES = 256 << 20  # far above any Wikipedia article; a file without line breaks is not JSON Lines
UTF8_BOM = b"\xef\xbb\xbf"
# Byte-order marks of encodings we do not read, longest first (UTF-32-LE starts like UTF-16-LE).
OTHER_BOMS = ((b"\xff\xfe\x00\x00", "utf-32le"), (b"\x00\x00\xfe\xff", "utf-32be"),
              (b"\xff\xfe", "utf-16le"), (b"\xfe\xff", "utf-16be"))
# A surrogate code point: in a Python string always alone (json joins an escaped pair into one
# character), so never text that UTF-8 can encode
SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"
T = TypeVar("T")


def lines(path: Path, error: type[Exception],
          keep_breaks: bool = False) -> Iterator[tuple[int, str]]:
    """(line number, text) for every line of a UTF-8 file, streamed; the line break is dropped
    unless `keep_breaks` (a reader that must tell a torn last line, one without, keeps it)."""
    for line_no, text in _decoded_lines(path, error):
        yield line_no, text if keep_breaks else text.removesuffix("\n").removesuffix("\r")


def read_text(path: Path, error: type[Exception]) -> str:
    """A whole UTF-8 file, line breaks kept (a byte-order mark dropped)."""
    return "".join(text for _, text in _decoded_lines(path, error))


def _decoded_lines(path: Path, error: type[Exception]) -> Iterator[tuple[int, str]]:
    try:
        handle = open(path, "rb")
    except OSError as err:
        raise error(f"{path}: cannot open: {err.strerror}") from None
    with handle:
        offset = 0
        line_no = 0
        while raw := handle.readline(MAX_LINE_BYTES + 1):
            line_no += 1
            if len(raw) > MAX_LINE_BYTES:
                raise error(f"{path}:{line_no}: line longer than {MAX_LINE_BYTES} bytes "
                            f"(starting at byte offset {offset}); not a line-oriented text file")
            yield line_no, _decode(raw, path, error, line_no, offset)
            offset += len(raw)


def _decode(raw: bytes, path: Path, error: type[Exception], line_no: int = 1,
            offset: int = 0) -> str:
    """One line of bytes as text, line break kept; `offset` is where it starts in the file."""
    if offset == 0:
        for bom, encoding in OTHER_BOMS:
            if raw.startswith(bom):
                raise error(f"{path}:1: the file is {encoding.upper()} (byte-order mark at byte "
                            f"offset 0), not UTF-8; {_convert_hint(path, encoding[:6])}")
        if raw.startswith(UTF8_BOM):
            raw, offset = raw[len(UTF8_BOM):], len(UTF8_BOM)
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise error(f"{path}:{line_no}: NUL byte at byte offset {offset + nul}: not a UTF-8 "
                    f"text file (a binary file, or UTF-16 without a byte-order mark?); "
                    f"{_convert_hint(path, 'utf-16')}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise error(f"{path}:{line_no}: not UTF-8: byte 0x{raw[err.start]:02x} at byte offset "
                    f"{offset + err.start} ({err.reason}); {_convert_hint(path, 'latin1')}") \
            from None
    return text


def lone_surrogate(value: Any) -> str | None:
    """The first string inside `value` (nested lists and dicts too, keys included) that holds a
    lone surrogate, such as JSON's "\\ud800": text that cannot be written back as UTF-8. None if
    there is none."""
    return next((text for text in _strings(value) if SURROGATE.search(text)), None)


class NotUnicode(UserError, ValueError):
    """Text holding a lone surrogate where a reader keeps text exactly (a dataset's); the
    reader names its file and line."""


def unicode_text(value: T, exact: bool = False) -> T:
    """The one rule for text that is not Unicode (docs/faults.md#text-that-is-not-unicode):
    `value` (text, or the lists and objects JSON decodes) with each lone surrogate, which JSON's
    "\\ud800" or bytes decoded with surrogatepass give and no UTF-8 file can hold, replaced by
    U+FFFD; lists and objects are changed in place. `exact`: NotUnicode naming the text
    instead, for inputs a user would rather fix than see changed."""
    if isinstance(value, str):
        if exact and SURROGATE.search(value):
            raise NotUnicode(f"{value!r:.80} holds a lone surrogate escape (\\ud800-\\udfff "
                             f"alone), which is not Unicode text")
        return cast(T, SURROGATE.sub(REPLACEMENT, value))
    for container in _containers(value):
        if isinstance(container, list):
            for i, item in enumerate(container):
                if isinstance(item, str):
                    container[i] = unicode_text(item, exact)
            continue
        for key, item in list(container.items()):
            if isinstance(item, str):
                container[key] = unicode_text(item, exact)
            if isinstance(key, str) and SURROGATE.search(key):
                container[unicode_text(key, exact)] = container.pop(key)
    return value


def _containers(value: Any) -> Iterator[list[Any] | dict[Any, Any]]:
    """Every list and dict inside `value`, itself included, parents before their children."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, dict)):
            yield item
            stack.extend(item.values() if isinstance(item, dict) else item)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    for container in _containers(value):
        if isinstance(container, dict):
            yield from (key for key in container if isinstance(key, str))
        yield from (item for item in (container.values() if isinstance(container, dict)
                                      else container) if isinstance(item, str))


def _convert_hint(path: Path, encoding: str) -> str:
    return (f"convert it to UTF-8, e.g. iconv -f {encoding} -t utf-8 {path} > {path}.utf8 "
            f"(with the file's real encoding in place of {encoding})")
