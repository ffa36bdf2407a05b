"""judge.csvscan, the fast path of the CSV reader: on any table it either declines (None)
or reads exactly what the row-by-row path reads; its ids (csvscan.Ids, rows of bytes
decoded on demand) behave as the list of strings they stand for."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judge.csvscan import Ids, scan
from judge.csvtable import _slow_path
from judge.errors import CaseError

# Ids of every kind the files hold: short and alike, long, non-ASCII, spaces around,
# NUL and other control bytes, repeats (never a comma or a line end).
ID_CHARS = st.sampled_from(list("ab09_-.Zé😀 \t\x00\x1c\x7f\x85"))
IDS = st.one_of(
    st.integers(0, 10**9).map(lambda i: f"b{i}"),
    st.text(ID_CHARS, min_size=1, max_size=12),
    st.text(ID_CHARS, min_size=60, max_size=90),
)
# Cells: mostly integers of 1 to 18 digits, some signed, padded, huge or not integers.
CELLS = st.one_of(
    st.integers(0, 10**18 - 1).map(str),
    st.integers(-(10**18) + 1, 0).map(str),
    st.integers(0, 999).map(lambda i: "0" * 12 + str(i)),
    st.integers(10**18, 10**22).map(str),
    st.text(st.sampled_from(list("0123456789-+ x\x80é")), max_size=10),
)


def table_bytes(ids: list[str], cells: list[list[str]]) -> bytes:
    rows = (",".join([b, *row]) for b, row in zip(ids, cells, strict=True))
    return ("head\n" + "\n".join(rows)).encode()


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[str], list[list[str]], int]:
    width = draw(st.integers(1, 4))
    n = draw(st.integers(1, 40))
    if draw(st.booleans()):
        ids = [f"b{i}" for i in range(n)]  # distinct, alike: the keyed path
        if draw(st.booleans()):
            ids[draw(st.integers(0, n - 1))] = ids[draw(st.integers(0, n - 1))]
    else:
        ids = draw(st.lists(IDS, min_size=n, max_size=n))
    plain = st.integers(0, 10**18 - 1).map(str)
    cell = plain if draw(st.booleans()) else CELLS
    cells = draw(st.lists(st.lists(cell, min_size=width, max_size=width), min_size=n, max_size=n))
    return ids, cells, width


def check_agrees(ids: list[str], cells: list[list[str]], width: int) -> bool:
    """scan() of the table declines or equals the row-by-row read; True when it read it."""
    data = table_bytes(ids, cells)
    found = scan(data, 5, len(data), width, keys=True)
    if found is None:
        return False
    header = ["id", *(f"c{k}" for k in range(width))]
    slow_ids, slow_values = _slow_path(data[5:].decode(), header, "t", CaseError)
    assert found.ids == slow_ids and found.ids.tolist() == slow_ids == ids
    assert found.ids.text() == ",".join(ids) and found.ids.chars() == sum(map(len, ids))
    assert np.array_equal(found.values, slow_values.T)
    if found.plainly_distinct:
        assert len(set(ids)) == len(ids) and all(b == b.strip() for b in ids)
    return True


@settings(max_examples=150, deadline=None)
@given(tables())
def test_the_fast_path_reads_what_the_row_by_row_path_reads(table):
    check_agrees(*table)


def test_the_fast_path_agrees_on_a_seeded_sweep_of_large_tables():
    """Tables over one block (1 MiB): ids alike; ids growing longer from block to block
    (rows of several widths, padded to one); a few long ids among short ones (text)."""
    rng = random.Random(36)
    alike = [f"b{i}" for i in range(40_000)]
    growing = [f"b{'x' * (i // 25_000 * 4)}{i}" for i in range(45_000)]
    unlike = [f"b{i}" if i % 7 else "x" * 70 + str(i) for i in range(30_000)]
    forms = []
    for ids in (alike, growing, unlike):
        cells = [[str(rng.randrange(10**17, 10**18)) for _ in range(2)] for _ in ids]
        cells[rng.randrange(len(ids))][1] = "-7"
        assert check_agrees(ids, cells, 2)
        data = table_bytes(ids, cells)
        found = scan(data, 5, len(data), 2)
        assert found is not None
        forms.append(found.ids._rows is not None)
    assert forms == [True, True, False]


def test_ids_behave_as_their_list():
    ids = ["alpha", "béta", "x" * 20, "\x00z", "b7"]
    data = table_bytes(ids, [["1"]] * len(ids))
    found = scan(data, 5, len(data), 1)
    assert found is not None
    column = found.ids
    assert isinstance(column, Ids) and column._rows is not None  # held as rows
    assert len(column) == 5 and list(column) == ids and column == ids and ids == column
    assert [column[i] for i in range(-5, 5)] == ids + ids
    assert column[np.int64(1)] == "béta" and column[1:4] == ids[1:4] and column[::-2] == ids[::-2]
    assert "b7" in column and "b8" not in column and column.index("b7") == 4
    assert column != ids[:4] and column != [*ids[:4], "b8"] and column != "alpha"
    with pytest.raises(IndexError):
        column[5]
    with pytest.raises(TypeError):
        hash(column)
    assert Ids("a,b") == ["a", "b"] and len(Ids("")) == 0 and Ids(ids=["a"]).text() == "a"


@settings(max_examples=100, deadline=None)
@given(st.lists(IDS, min_size=1, max_size=30, unique=True), st.randoms())
def test_two_columns_are_equal_exactly_when_their_ids_are(ids, rnd):
    """How a plan in the case's order is told: compared as rows, never as strings."""
    other = list(ids)
    change = rnd.random()
    if change < 0.3:
        rnd.shuffle(other)
    elif change < 0.6:
        i = rnd.randrange(len(other))
        other[i] = other[i][:-1] + ("a" if other[i][-1] != "a" else "b")  # same length
    data, more = table_bytes(ids, [["1"]] * len(ids)), table_bytes(other, [["2"]] * len(other))
    a, b = scan(data, 5, len(data), 1), scan(more, 5, len(more), 1)
    if a is None or b is None:
        return
    assert (a.ids == b.ids) == (ids == other) == (a.ids.text() == b.ids.text())
