"""A pickle checked before it is loaded: plain data only, of bounded size
(docs/running.md#answers-made-elsewhere-freshrag-import-legacy).

Refusing classes (legacy.py's unpickler) stops a pickle from running code, but not from costing
unbounded time and memory. The memo lets one object be referred to again in a few bytes, so a
pickle of a few hundred bytes can hold a list that holds one list ten times, which holds one list
ten times, thirty levels down (a "billion laughs"): loaded, it is small, but everything that
then reads it without knowing about sharing (`str`, `json.dumps`, the row checks) visits 10^30
items. And a dict key or set member is hashed while it loads, a tuple's hash reading all of it.

`check` follows the pickle's opcodes (`pickletools.genops`, which builds nothing) as the unpickler
would run them, keeping for each object only its kind and its *unfolded size*: one for each value
and one for each character, counted again wherever it is referred to again. It refuses, with
PickleRefused, as soon as any object unfolds beyond a bound (a million, plus 32 per byte of the
file: a released run, which shares little, stays far below it), a class other than set and
frozenset, an opcode that plain data never needs, a container changed after a second reference to
it was taken (which would grow what was counted as complete), and a dict key or set member that
is not a string, bytes, None, a float or an int of at most 60 bits. Those hash cheaply and cannot
be lined up on one hash by the thousand (a string's hash is keyed per process, such an int is its
own hash); a tuple's hash reads all of it each time, and keys that share one hash make a dict
take time quadratic in their number. The work is one pass over the opcodes: within a second for
any file of a few kilobytes.
"""

from __future__ import annotations

import pickle
import pickletools
from dataclasses import dataclass

from freshrag.core.errors import FreshragError

BASE_LIMIT = 1_000_000
LIMIT_PER_BYTE = 32
# The classes a plain pickle names: sets and frozensets are rebuilt through their class in
# protocols 0-3 (named __builtin__ in protocols 0-2, for Python 2).
ALLOWED_CLASSES = {(module, name) for module in ("builtins", "__builtin__")
                   for name in ("set", "frozenset")}
SCALARS = {"INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "STRING", "BINSTRING",
           "SHORT_BINSTRING", "BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8", "UNICODE",
           "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "NONE", "NEWTRUE", "NEWFALSE", "FLOAT",
           "BINFLOAT"}
EMPTY = {"EMPTY_LIST": "list", "EMPTY_DICT": "dict", "EMPTY_SET": "set", "EMPTY_TUPLE": "tuple"}
FROM_MARK = {"LIST": "list", "TUPLE": "tuple", "DICT": "dict", "FROZENSET": "frozenset"}
ADD_FROM_MARK = {"APPENDS": "list", "SETITEMS": "dict", "ADDITEMS": "set"}
NO_EFFECT = {"PROTO", "FRAME", "STOP"}
PUTS = {"PUT", "BINPUT", "LONG_BINPUT"}
GETS = {"GET", "BINGET", "LONG_BINGET"}
HASHABLE_INT_BITS = 60  # below 2**61 - 1 an int hashes to itself: no two collide
NAME_CHARS = 200  # strings kept for STACK_GLOBAL, which names a module and a class by two


class PickleRefused(FreshragError, pickle.UnpicklingError):
    """The pickle is not plain data of bounded size; the message says what it holds. Caught by
    legacy.load_pickle, which names the file (a LegacyError)."""


@dataclass(eq=False, slots=True)
class _Object:
    """What the check knows of one object the unpickler would build."""

    kind: str  # "key" (a string or number: cheap to hash), another value, a container, "class"
    size: int            # values and characters, counting a shared object at every reference
    shared: bool = False  # a second reference exists: it may no longer change
    text: str | None = None  # a short string's value (for STACK_GLOBAL), a class's name
    not_key: str | None = None  # the kind of its first member that is no "key" (no set of it)
    parts: list[_Object] | None = None  # a tuple's members (REDUCE reads its arguments)


def check(data: bytes) -> None:
    """Follow every opcode of `data`; PickleRefused (or the ValueError of pickletools for bytes
    that are no pickle) at the first thing a plain pickle of bounded size would not do."""
    _Check(BASE_LIMIT + LIMIT_PER_BYTE * len(data)).run(data)


class _Check:
    def __init__(self, limit: int):
        self.limit = limit
        self.stack: list[_Object] = []
        self.marks: list[int] = []
        self.memo: dict[int, _Object] = {}

    def run(self, data: bytes) -> None:
        for opcode, arg, _ in pickletools.genops(data):
            self.step(opcode.name, arg)

    def step(self, name: str, arg: object) -> None:
        stack = self.stack
        if name in SCALARS:
            stack.append(_scalar(arg))
        elif name in EMPTY:
            stack.append(_Object(EMPTY[name], 1, parts=[] if name == "EMPTY_TUPLE" else None))
        elif name in FROM_MARK:
            stack.append(self.made(FROM_MARK[name], self.pop_mark()))
        elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
            items = [stack.pop() for _ in range(int(name[-1]))][::-1]
            stack.append(self.made("tuple", items))
        elif name == "APPEND":
            item = stack.pop()
            self.grow(self.target("list"), [item])
        elif name == "SETITEM":
            value, key = stack.pop(), stack.pop()
            self.grow(self.target("dict"), [key, value])
        elif name in ADD_FROM_MARK:
            items = self.pop_mark()
            self.grow(self.target(ADD_FROM_MARK[name]), items)
        elif name == "MARK":
            self.marks.append(len(stack))
        elif name == "POP":
            if self.marks and self.marks[-1] == len(stack):
                self.marks.pop()  # as the unpickler does: POP right after MARK drops the mark
            else:
                stack.pop()
        elif name == "POP_MARK":
            self.pop_mark()
        elif name == "DUP":
            stack[-1].shared = True
            stack.append(stack[-1])
        elif name in PUTS:
            self.memo[_index(arg)] = stack[-1]
        elif name == "MEMOIZE":
            self.memo[len(self.memo)] = stack[-1]
        elif name in GETS:
            found = self.memo.get(_index(arg))
            if found is None:
                raise PickleRefused(f"memo entry {arg!r} is read before it is written")
            found.shared = True
            stack.append(found)
        elif name in ("GLOBAL", "INST"):
            module, _, attribute = str(arg).partition(" ")
            stack.append(_class(module, attribute))
            if name == "INST":
                raise PickleRefused("refused INST: plain data never builds an instance")
        elif name == "STACK_GLOBAL":
            named, owner = stack.pop(), stack.pop()
            if named.text is None or owner.text is None:
                raise PickleRefused("refused a class named by something other than strings")
            stack.append(_class(owner.text, named.text))
        elif name == "REDUCE":
            arguments, function = stack.pop(), stack.pop()
            stack.append(self.called(function, arguments))
        elif name in ("PERSID", "BINPERSID"):
            raise PickleRefused("refused a persistent id: not a plain pickle")
        elif name not in NO_EFFECT:
            raise PickleRefused(f"refused the opcode {name}: plain data never needs it")

    def pop_mark(self) -> list[_Object]:
        start = self.marks.pop()
        items = self.stack[start:]
        del self.stack[start:]
        return items

    def target(self, kind: str) -> _Object:
        """The container on top of the stack that an opcode adds to: of `kind`, and not referred
        to from elsewhere yet (whatever holds it counted its size as final)."""
        top = self.stack[-1]
        if top.kind != kind:
            raise PickleRefused(f"adds to a {top.kind} as if it were a {kind}")
        if top.shared:
            raise PickleRefused(f"changes a {kind} after a second reference to it was taken")
        return top

    def made(self, kind: str, items: list[_Object]) -> _Object:
        """A new container of `items` (a tuple keeps them, for REDUCE)."""
        return self.grow(_Object(kind, 1, parts=items if kind == "tuple" else None), items)

    def grow(self, container: _Object, items: list[_Object]) -> _Object:
        """`container` holding `items` too; its keys or members must be strings or numbers."""
        if container.kind == "dict":
            if len(items) % 2:
                raise PickleRefused("a dict is given a key without a value")
            hashed = items[::2]
        else:
            hashed = items if container.kind in ("set", "frozenset") else []
            container.not_key = container.not_key or next(
                (item.kind for item in items if item.kind != "key"), None)
        for item in hashed:
            if item.kind != "key":
                raise _not_a_key(item.kind)
        return self.sized(container, container.size + sum(item.size for item in items))

    def sized(self, thing: _Object, size: int) -> _Object:
        if size > self.limit:
            raise PickleRefused(f"its shared references unfold to more than {self.limit:,} values "
                                f"and characters, far more than a released run of this size holds")
        thing.size = size
        return thing

    def called(self, function: _Object, arguments: _Object) -> _Object:
        """set(items) or frozenset(items), as protocols 0-3 write sets; nothing else is called."""
        if function.kind != "class" or arguments.parts is None or len(arguments.parts) > 1:
            raise PickleRefused("calls something other than set(...) or frozenset(...)")
        made = _Object(function.text or "set", 1)
        if not arguments.parts:
            return made
        source = arguments.parts[0]
        if source.kind not in ("list", "tuple", "set", "frozenset", "dict"):
            raise PickleRefused(f"makes a {made.kind} of a {source.kind}")
        if source.not_key:
            raise _not_a_key(source.not_key)
        return self.sized(made, 1 + source.size)


def _not_a_key(kind: str) -> PickleRefused:
    return PickleRefused(f"a {kind} as a dict key or set member: only strings and numbers of at "
                         f"most {HASHABLE_INT_BITS} bits are")


def _scalar(arg: object) -> _Object:
    if isinstance(arg, bytearray):
        return _Object("bytearray", 1 + len(arg))
    if isinstance(arg, (str, bytes)):
        name = arg if isinstance(arg, str) and len(arg) <= NAME_CHARS else None
        return _Object("key", 1 + len(arg), text=name)
    if isinstance(arg, int):  # a bool too
        large = arg.bit_length() > HASHABLE_INT_BITS
        return _Object(f"number of more than {HASHABLE_INT_BITS} bits" if large else "key",
                       1 + arg.bit_length() // 3)
    return _Object("key", 1)  # None, a float


def _class(module: str, name: str) -> _Object:
    if (module, name) not in ALLOWED_CLASSES:
        raise PickleRefused(f"refused to load {module}.{name}: only plain containers, strings, "
                            f"numbers, booleans and None are accepted")
    return _Object("class", 1, text=name)


def _index(arg: object) -> int:
    if not isinstance(arg, int):
        raise PickleRefused(f"a memo index {arg!r:.40} that is not a number")
    return arg
