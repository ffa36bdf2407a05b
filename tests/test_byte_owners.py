"""judge.types.offload.byte_owners against a byte-by-byte model: the previous occupants
of every take (in byte order) and the latest release among them (the first in byte
order on ties)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from judge.types.offload.byte_owners import ByteOwners

takes = st.lists(
    st.tuples(st.integers(0, 40), st.integers(1, 12)), min_size=1, max_size=60
)  # (start, length)


@settings(max_examples=400, deadline=None)
@given(takes, st.lists(st.integers(-1, 5), min_size=60, max_size=60))
def test_takes_match_a_byte_by_byte_model(ranges, release):
    owners, model = ByteOwners(), {}
    for r, (start, length) in enumerate(ranges):
        end = start + length
        expected = []
        for b in range(start, end):  # previous occupants in byte order, each once
            q = model.get(b)
            if q is not None and q not in expected:
                expected.append(q)
            model[b] = r
        best, who = 0, -1
        for q in expected:
            if release[q] > best:
                best, who = release[q], q
        if r % 2:
            assert owners.ready(start, end, r, release) == (best, who)
        else:
            # a segment cut in two around another lists its owner twice: same order
            assert list(dict.fromkeys(owners.take(start, end, r))) == expected
    # the segments left are the model's runs of one owner (adjacent ones may be split)
    for lo in owners.starts:
        hi, q = owners.end_of[lo], owners.owner_of[lo]
        assert all(model[b] == q for b in range(lo, hi))
    assert sum(owners.end_of[lo] - lo for lo in owners.starts) == len(model)
    assert owners.starts == sorted(owners.starts)
