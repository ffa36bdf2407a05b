// case_facts.hpp -- strong_search (see main.cpp): basic facts about a case and
// the overlap structures the greedy planners share.
//
// The lower bound, slots (distinct times), OverlapIndex (a segment tree over
// slots: the floor dive and the skyline's descent) and PlacedSet
// (greedy_size.cpp's structure: first / best fit and the plan check every
// published plan passes).  Shared by the greedy seeds, the skyline and main.

#pragma once

#include "io.hpp"

namespace {

// ---------------------------------------------------------------------------
// Basic facts about a case
// ---------------------------------------------------------------------------

i64 alignUp(i64 x, i64 a) { return a <= 1 ? x : (x + a - 1) / a * a; }

// Buffers of size 0 or with an empty lifespan conflict with nothing.
bool isTrivial(const Buffer& b) { return b.size <= 0 || b.lower >= b.upper; }

// Largest total size live at one time (half-open lifespans: ends first).
i64 lowerBound(const std::vector<Buffer>& buffers) {
  std::vector<std::pair<i64, i64>> events;
  events.reserve(buffers.size() * 2);
  for (const Buffer& b : buffers) {
    if (isTrivial(b)) continue;
    events.push_back({b.lower, b.size});
    events.push_back({b.upper, -b.size});
  }
  std::sort(events.begin(), events.end());  // negative deltas first at a tie
  i64 live = 0, best = 0;
  for (const auto& e : events) best = std::max(best, live += e.second);
  return best;
}

// Lifespans mapped onto "slots" between consecutive distinct times, so that
// two buffers overlap in time iff their slot ranges [slotLo, slotHi) overlap.
struct SlotMap {
  std::vector<int> lo, hi;
  int numSlots = 1;
};

SlotMap buildSlots(const std::vector<Buffer>& buffers) {
  std::vector<i64> times;
  times.reserve(buffers.size() * 2);
  for (const Buffer& b : buffers) {
    times.push_back(b.lower);
    times.push_back(b.upper);
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  SlotMap m;
  m.numSlots = std::max<int>(1, (int)times.size());
  m.lo.resize(buffers.size());
  m.hi.resize(buffers.size());
  auto index = [&](i64 t) {
    return (int)(std::lower_bound(times.begin(), times.end(), t) - times.begin());
  };
  for (size_t i = 0; i < buffers.size(); ++i) {
    m.lo[i] = index(buffers[i].lower);
    m.hi[i] = std::max(m.lo[i], index(buffers[i].upper));
  }
  return m;
}

// ---------------------------------------------------------------------------
// OverlapIndex: which inserted buffers overlap a slot range in time?
//
// A segment tree over slots.  An inserted range is stored in the "cover" list
// of its O(log) canonical nodes and in the "partial" list of every node it
// only partly covers.  A query [l, r) reports the cover lists of all nodes it
// touches plus the partial lists of its own canonical nodes; everything it
// reports does overlap the query, each hit at most O(log) times (callers
// deduplicate).  Lists are singly linked through one pool to keep memory at a
// few words per (buffer, node) pair.
// ---------------------------------------------------------------------------

class OverlapIndex {
 public:
  explicit OverlapIndex(int numSlots) {
    width_ = 1;
    while (width_ < numSlots) width_ <<= 1;
    cover_.assign(2 * width_, -1);
    partial_.assign(2 * width_, -1);
  }

  void insert(int id, int l, int r) { insertAt(1, 0, width_, l, r, id); }

  template <class Visit>
  void query(int l, int r, Visit&& visit) const {
    queryAt(1, 0, width_, l, r, visit);
  }

  // Like query(), but `keep(id)` returning false unlinks that entry from the
  // list it was found in, so that buffers no longer of interest stop
  // costing time in later queries.
  template <class Keep>
  void queryAndPrune(int l, int r, Keep&& keep) {
    pruneAt(1, 0, width_, l, r, keep);
  }

 private:
  void push(std::vector<int>& head, int node, int id) {
    pool_.push_back({id, head[node]});
    head[node] = (int)pool_.size() - 1;
  }

  void insertAt(int node, int nl, int nr, int l, int r, int id) {
    if (r <= nl || nr <= l) return;
    if (l <= nl && nr <= r) {
      push(cover_, node, id);
      return;
    }
    push(partial_, node, id);
    int mid = (nl + nr) / 2;
    insertAt(2 * node, nl, mid, l, r, id);
    insertAt(2 * node + 1, mid, nr, l, r, id);
  }

  template <class Visit>
  void visitList(int head, Visit& visit) const {
    for (int e = head; e >= 0; e = pool_[e].next) visit(pool_[e].id);
  }

  template <class Visit>
  void queryAt(int node, int nl, int nr, int l, int r, Visit& visit) const {
    if (r <= nl || nr <= l) return;
    visitList(cover_[node], visit);
    if (l <= nl && nr <= r) {
      visitList(partial_[node], visit);
      return;
    }
    int mid = (nl + nr) / 2;
    queryAt(2 * node, nl, mid, l, r, visit);
    queryAt(2 * node + 1, mid, nr, l, r, visit);
  }

  template <class Keep>
  void pruneList(int& head, Keep& keep) {
    int* link = &head;
    while (*link >= 0) {
      Entry& e = pool_[*link];
      if (keep(e.id)) link = &e.next;
      else *link = e.next;
    }
  }

  template <class Keep>
  void pruneAt(int node, int nl, int nr, int l, int r, Keep& keep) {
    if (r <= nl || nr <= l) return;
    pruneList(cover_[node], keep);
    if (l <= nl && nr <= r) {
      pruneList(partial_[node], keep);
      return;
    }
    int mid = (nl + nr) / 2;
    pruneAt(2 * node, nl, mid, l, r, keep);
    pruneAt(2 * node + 1, mid, nr, l, r, keep);
  }

  struct Entry {
    int id, next;
  };
  int width_ = 1;
  std::vector<int> cover_, partial_;
  std::vector<Entry> pool_;
};

// ---------------------------------------------------------------------------
// PlacedSet: the address ranges of placed buffers that meet a lifespan, each
// reported exactly once (greedy_size.cpp's structure).
//
// A placed lifespan [a, b) meets a query [lo, hi) iff either (1) it is live
// at lo (a <= lo < b), a stabbing query on a segment tree over slots whose
// nodes hold the canonical pieces of placed lifespans with their address
// ranges inline, or (2) it starts inside the query (lo < a < hi), a range of
// buffer positions by lower, kept as a bitset of placed positions.  A query
// costs O(log m + k + range / 64) for k reported buffers, where
// OverlapIndex reports a buffer once per tree node it sits in (callers
// deduplicate), which made strong's greedy by size 2-3x slower than
// greedy_size on traces with thousands of buffers live at once.
// ---------------------------------------------------------------------------

struct Block {
  i64 start, end;  // address range [start, end)
};

class PlacedSet {
 public:
  PlacedSet(const std::vector<Buffer>& buffers, const SlotMap& slots)
      : buffers_(buffers), slots_(slots) {
    while (leaves_ < slots.numSlots) leaves_ <<= 1;
    nodes_.resize(2 * (size_t)leaves_);
    const size_t n = buffers.size();
    pos_.resize(n);
    std::iota(pos_.begin(), pos_.end(), 0);
    // Buffers are numbered by start time already; sort only if they are not.
    auto byLower = [&](int a, int b) { return buffers[a].lower < buffers[b].lower; };
    std::vector<int> order(pos_.begin(), pos_.end());
    if (!std::is_sorted(order.begin(), order.end(), byLower)) {
      std::stable_sort(order.begin(), order.end(), byLower);
      for (size_t r = 0; r < n; ++r) pos_[order[r]] = (int)r;
    }
    lowers_.resize(n);
    for (size_t r = 0; r < n; ++r) lowers_[r] = buffers[order[r]].lower;
    bits_.assign((n + 63) / 64, 0);
    byPos_.resize(n);
  }

  // Buffer i (non-trivial) now occupies `block`.
  void insert(int i, Block block) {
    addAt(1, 0, leaves_, slots_.lo[i], slots_.hi[i], block);
    const size_t p = (size_t)pos_[i];
    bits_[p / 64] |= uint64_t(1) << (p % 64);
    byPos_[p] = block;
  }

  // Appends the blocks of the placed buffers whose lifespan meets buffer i's.
  void query(int i, std::vector<Block>& out) const {
    for (int node = leaves_ + slots_.lo[i]; node >= 1; node /= 2)
      out.insert(out.end(), nodes_[node].begin(), nodes_[node].end());
    const Buffer& b = buffers_[i];
    const size_t first = std::upper_bound(lowers_.begin(), lowers_.end(), b.lower) - lowers_.begin();
    const size_t last = std::lower_bound(lowers_.begin(), lowers_.end(), b.upper) - lowers_.begin();
    for (size_t w = first / 64; w * 64 < last; ++w) {
      uint64_t bits = bits_[w];
      if (w == first / 64) bits &= ~uint64_t(0) << (first % 64);
      if ((w + 1) * 64 > last) bits &= ~uint64_t(0) >> ((w + 1) * 64 - last);
      for (; bits; bits &= bits - 1) out.push_back(byPos_[w * 64 + (size_t)__builtin_ctzll(bits)]);
    }
  }

 private:
  void addAt(int node, int nl, int nr, int l, int r, Block block) {
    if (r <= nl || nr <= l) return;
    if (l <= nl && nr <= r) {
      nodes_[node].push_back(block);
      return;
    }
    const int mid = (nl + nr) / 2;
    addAt(2 * node, nl, mid, l, r, block);
    addAt(2 * node + 1, mid, nr, l, r, block);
  }

  const std::vector<Buffer>& buffers_;
  const SlotMap& slots_;
  int leaves_ = 1;
  std::vector<std::vector<Block>> nodes_;  // leaf t at leaves_ + t
  std::vector<int> pos_;                   // rank of each buffer by lower
  std::vector<i64> lowers_;                // lowers in that order
  std::vector<uint64_t> bits_;             // placed positions
  std::vector<Block> byPos_;
};

// Checks a complete plan: alignment, non-negativity, capacity, and no two
// time-overlapping buffers sharing an address.  O(n log n + overlapping pairs).
bool planIsValid(const std::vector<Buffer>& buffers, const SlotMap& slots,
                 const std::vector<i64>& offsets, i64 capacity) {
  PlacedSet placed(buffers, slots);
  std::vector<Block> met;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const Buffer& b = buffers[i];
    const i64 o = offsets[i];
    if (o < 0 || o % b.align != 0 || o + b.size > capacity) return false;
    if (isTrivial(b)) continue;
    met.clear();
    placed.query((int)i, met);
    for (const Block& m : met)
      if (m.start < o + b.size && o < m.end) return false;
    placed.insert((int)i, {o, o + b.size});
  }
  return true;
}

}  // namespace
