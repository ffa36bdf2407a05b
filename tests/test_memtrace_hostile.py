"""`memorace problem import-torch` on hostile `memorace-torch-trace` files: each is a
CaseError naming what is wrong, never a traceback or a case made from a value the
format does not allow (a version of `true` or `1.0`, a float size, NaN, 2^63, deep
nesting, a number of 5000 digits, arrays of different lengths, gzip or xz bombs)."""

from __future__ import annotations

import gzip
import json
import lzma
import struct
from pathlib import Path
from typing import Any

import pytest

from judge.errors import CaseError
from judge.torch_import import compressed
from judge.torch_import.package import read_torch_file


def trace(**change: Any) -> bytes:
    doc: dict[str, Any] = {
        "format": "memorace-torch-trace", "version": 1, "categories": ["a"],
        "op_names": ["x"], "ops": {"name": [0]},
        "tensors": {"size": [10], "lower": [0], "upper": [1], "op": [0], "category": [0]},
    }  # fmt: skip
    for key, value in change.items():
        (doc["tensors"] if key in doc["tensors"] else doc)[key] = value
    return json.dumps(doc).encode()


def ungzipped_size_lies() -> bytes:
    data = bytearray(gzip.compress(trace()))
    data[-4:] = struct.pack("<I", 5)
    return bytes(data)


MIB = 2**20
HOSTILE = {
    "version-true": (trace(version=True), "version"),
    "version-float": (trace(version=1.0), "version"),
    "float-size": (trace().replace(b'"size": [10]', b'"size": [10.0]'), "must be an integer"),
    "nan-size": (trace().replace(b'"size": [10]', b'"size": [NaN]'), "must be an integer"),
    "infinite-upper": (trace().replace(b'"upper": [1]', b'"upper": [Infinity]'), "integer"),
    "size-2^63": (trace(size=[2**63]), "is not from 1 to 2"),
    "negative-size": (trace(size=[-5]), "is not from 1 to 2"),
    "5000-digits": (trace(size=[7]).replace(b"[7]", b"[" + b"9" * 5000 + b"]"), "digits"),
    "deep": (b'{"format": 1, "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested"),
    "lengths": (trace(lower=[0, 1]), "differ in length"),
    "op-out-of-range": (trace(op=[-2]), "is not -1 or an op"),
    "gzip-members": (gzip.compress(trace()) + gzip.compress(b" " * MIB) * 9, "over"),
    "xz-streams": (lzma.compress(trace()) + lzma.compress(b" " * MIB) * 9, "over"),
    "gzip-isize-lies": (ungzipped_size_lies(), "damaged gzip"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_trace_is_a_case_error(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compressed, "MAX_INPUT_BYTES", 8 * MIB)
    data, says = HOSTILE[name]
    path = tmp_path / f"{name}.trace"
    path.write_bytes(data)
    with pytest.raises(CaseError, match=says):
        read_torch_file(path)
