"""Pickles read as plain data, in work linear in their size; nothing in them runs.

pickle's C unpickler cannot be told what it may hash: a dict key (or set element) that is
a tuple of tuples sharing one object through the memo is hashed 2^depth times (a tuple
does not keep its hash), and a long integer given again and again as a key hashes all its
digits each time: a few hundred bytes kept it busy for days. So this is pickle's own
pure-Python unpickler with every class, function, persistent id and set refused, and dict
keys limited to scalars whose hash is cached or costs O(1) (str, bytes, ints of at most 64
bits, floats, bools, None), which is all a CUDA memory snapshot uses. Every opcode then
does work bounded by its own bytes. It is about 15 times slower than the C one (0.45 s for
a 2.7 MB snapshot), which is fine for an importer.
"""

from __future__ import annotations

import io
import pickle
import struct
from typing import Any, ClassVar

_SCALAR_KEYS = (str, bytes, float, type(None))


class DataOnly(pickle._Unpickler):  # the pure-Python one, on purpose
    """Builds only dicts, lists, tuples, strings, bytes and numbers."""

    dispatch: ClassVar[dict[int, Any]] = dict(pickle._Unpickler.dispatch)

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(
            f"refers to {module}.{name}; a memory snapshot holds only plain data, so this "
            "file is refused (nothing in it was run)"
        )

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("uses persistent ids; a memory snapshot does not")

    def _setitem(self) -> None:
        value = self.stack.pop()
        key = _key(self.stack.pop())
        self.stack[-1][key] = value

    def _setitems(self) -> None:
        items = self.pop_mark()
        target = self.stack[-1]
        for i in range(0, len(items) - 1, 2):
            target[_key(items[i])] = items[i + 1]
        if len(items) % 2:
            raise pickle.UnpicklingError("a dict item without its value")

    def _dict(self) -> None:
        items = self.pop_mark()
        if len(items) % 2:
            raise pickle.UnpicklingError("a dict item without its value")
        self.append({_key(items[i]): items[i + 1] for i in range(0, len(items), 2)})

    def _no_set(self) -> None:
        raise pickle.UnpicklingError("holds a set; a memory snapshot does not")

    def _no_object(self) -> None:
        raise pickle.UnpicklingError(
            "builds an object; a memory snapshot holds only plain data, so this file is "
            "refused (nothing in it was run)"
        )

    dispatch[pickle.SETITEM[0]] = _setitem
    dispatch[pickle.SETITEMS[0]] = _setitems
    dispatch[pickle.DICT[0]] = _dict
    for _op in (pickle.EMPTY_SET, pickle.ADDITEMS, pickle.FROZENSET):
        dispatch[_op[0]] = _no_set
    for _op in (pickle.REDUCE, pickle.BUILD, pickle.NEWOBJ, pickle.NEWOBJ_EX, pickle.OBJ):
        dispatch[_op[0]] = _no_object
    del _op


def _key(key: Any) -> Any:
    """A key whose hash is cached or O(1); a tuple's is neither (see the module's doc)."""
    if isinstance(key, _SCALAR_KEYS) or (isinstance(key, int) and key.bit_length() <= 64):
        return key
    what = "an integer over 64 bits" if isinstance(key, int) else f"a {type(key).__name__}"
    raise pickle.UnpicklingError(
        f"a dict key is {what}; a memory snapshot's keys are strings and numbers"
    )


def load_data(data: bytes) -> Any:
    """The object a pickle holds. Raises UnpicklingError (a message for people) or
    another exception of pickle's for a broken file."""
    try:
        return DataOnly(io.BytesIO(data)).load()
    except (EOFError, struct.error):
        raise pickle.UnpicklingError("pickle data was truncated") from None
    except pickle.UnpicklingError as exc:
        if "exhausted before end of frame" in str(exc):
            raise pickle.UnpicklingError("pickle data was truncated") from None
        raise
