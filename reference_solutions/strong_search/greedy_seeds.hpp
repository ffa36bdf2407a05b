// greedy_seeds.hpp -- strong_search (see main.cpp): the greedy seeds.
//
// First fit, best fit, the sweep allocator (a plan for any size at once) and
// the floor dive over several orders, run by GreedyPortfolio, which also
// perturbs the best seed's order (iterated greedy) with time left over.  The
// seeds are the plans every later phase starts from and must beat.

#pragma once

#include "case_facts.hpp"

namespace {

// ---------------------------------------------------------------------------
// Greedy seeds
// ---------------------------------------------------------------------------

struct Plan {
  std::vector<i64> offsets;
  i64 peak = kInf;
};

// Lowest aligned offset whose [offset, offset + size) misses every block.
// Blocks are consumed from a min-heap on start, not sorted: the first gap is
// usually low, so most are never popped (as in greedy_size.cpp; on 100k-buffer
// traces with thousands live, sorting them made greedy by size several times
// slower than the baseline).
i64 firstGap(std::vector<Block>& blocks, i64 size, i64 align) {
  auto later = [](const Block& a, const Block& b) { return a.start > b.start; };
  std::make_heap(blocks.begin(), blocks.end(), later);
  i64 candidate = 0;
  for (auto end = blocks.end(); end != blocks.begin(); --end) {
    const Block next = blocks.front();  // lowest start among the rest
    if (next.start >= candidate + size) break;  // the gap below it fits
    if (next.end > candidate) candidate = alignUp(next.end, align);
    std::pop_heap(blocks.begin(), end, later);
  }
  return candidate;
}

// The aligned gap between blocks that leaves least slack above the buffer;
// on top of everything when no gap fits.
i64 bestGap(std::vector<Block>& blocks, i64 size, i64 align) {
  std::sort(blocks.begin(), blocks.end(),
            [](const Block& a, const Block& b) { return a.start < b.start; });
  i64 pos = 0, chosen = -1, slack = kInf;
  for (const Block& m : blocks) {
    if (m.start >= pos + size && m.start - pos - size < slack) {
      slack = m.start - pos - size;
      chosen = pos;
    }
    pos = std::max(pos, alignUp(m.end, align));
  }
  return chosen < 0 ? pos : chosen;
}

// Places buffers in `order`, each at the lowest gap (first fit) or at the
// gap that leaves least slack (best fit) among the time-overlapping buffers
// placed so far.  Returns an empty plan if the deadline passes mid-way.
Plan greedyPlace(const std::vector<Buffer>& buffers, const SlotMap& slots,
                 const std::vector<int>& order, bool bestFit, const Deadline& deadline) {
  const int n = (int)buffers.size();
  Plan plan;
  plan.offsets.assign(n, 0);
  plan.peak = 0;
  PlacedSet placed(buffers, slots);
  std::vector<Block> met;  // placed buffers overlapping in time
  DeadlinePacer pacer(deadline);
  i64 work = 0;  // the last buffer's overlapping buffers (its query's cost)
  for (int k = 0; k < n; ++k) {
    if (pacer.passed(1 + work)) return {};
    const int b = order[k];
    const Buffer& buf = buffers[b];
    if (isTrivial(buf)) {
      plan.peak = std::max(plan.peak, std::max<i64>(buf.size, 0));
      continue;
    }
    met.clear();
    placed.query(b, met);
    work = (i64)met.size();
    const i64 chosen = bestFit ? bestGap(met, buf.size, buf.align)
                               : firstGap(met, buf.size, buf.align);
    plan.offsets[b] = chosen;
    plan.peak = std::max(plan.peak, chosen + buf.size);
    placed.insert(b, {chosen, chosen + buf.size});
  }
  return plan;
}

// For each buffer, the largest total size live at any time in its lifespan
// (MiniMalloc's "T" key): a difference array over slots plus a max tree.
std::vector<i64> liveTotals(const std::vector<Buffer>& buffers, const SlotMap& slots) {
  const int s = slots.numSlots;
  std::vector<i64> live(s + 1, 0);
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (isTrivial(buffers[i])) continue;
    live[slots.lo[i]] += buffers[i].size;
    live[slots.hi[i]] -= buffers[i].size;
  }
  int width = 1;
  while (width < s) width <<= 1;
  std::vector<i64> tree(2 * width, 0);
  i64 run = 0;
  for (int t = 0; t < s; ++t) tree[width + t] = run += live[t];
  for (int v = width - 1; v >= 1; --v) tree[v] = std::max(tree[2 * v], tree[2 * v + 1]);
  std::vector<i64> result(buffers.size(), 0);
  for (size_t i = 0; i < buffers.size(); ++i) {
    i64 best = 0;
    for (int l = slots.lo[i] + width, r = slots.hi[i] + width; l < r; l >>= 1, r >>= 1) {
      if (l & 1) best = std::max(best, tree[l++]);
      if (r & 1) best = std::max(best, tree[--r]);
    }
    result[i] = best;
  }
  return result;
}

// Buffer orderings for the greedy seeds, most promising first.
std::vector<std::vector<int>> greedyOrders(const std::vector<Buffer>& buffers,
                                           const std::vector<i64>& totals) {
  const int n = (int)buffers.size();
  auto width = [&](int i) { return buffers[i].upper - buffers[i].lower; };
  auto area = [&](int i) { return (double)buffers[i].size * (double)width(i); };
  std::vector<int> base(n);
  std::iota(base.begin(), base.end(), 0);
  auto sorted = [&](auto less) {
    std::vector<int> order = base;
    std::stable_sort(order.begin(), order.end(), less);
    return order;
  };
  std::vector<std::vector<int>> orders;
  orders.push_back(sorted([&](int a, int b) {  // greedy by size (TFLite)
    if (buffers[a].size != buffers[b].size) return buffers[a].size > buffers[b].size;
    return width(a) > width(b);
  }));
  orders.push_back(sorted([&](int a, int b) {  // busiest time first
    if (totals[a] != totals[b]) return totals[a] > totals[b];
    return buffers[a].size > buffers[b].size;
  }));
  orders.push_back(sorted([&](int a, int b) { return area(a) > area(b); }));
  orders.push_back(sorted([&](int a, int b) {  // longest lifespan first
    if (width(a) != width(b)) return width(a) > width(b);
    return buffers[a].size > buffers[b].size;
  }));
  return orders;
}

// An online allocator replayed over time: buffers are taken in order of
// start time (larger first at a tie) and given the best-fitting free block at
// that moment; blocks are freed when their lifespan ends.  O(n log n) and
// independent of how many buffers are live at once, so it is the seed that
// always finishes, however large the case.
class SweepAllocator {
 public:
  // Returns an offset for `size` bytes aligned to `align`.
  i64 allocate(i64 size, i64 align) {
    auto it = bySize_.lower_bound({size, -1});
    for (int tries = 0; it != bySize_.end() && tries < 8; ++it, ++tries) {
      const auto [blockSize, start] = *it;
      const i64 at = alignUp(start, align);
      if (at + size <= start + blockSize) return take(start, blockSize, at, size);
    }
    // Nothing fits below the high-water mark: extend it, reusing the free
    // block that touches it if there is one.
    i64 start = top_;
    if (!byAddr_.empty()) {
      const auto last = std::prev(byAddr_.end());
      if (last->first + last->second == top_) start = last->first;
    }
    const i64 at = alignUp(start, align);
    if (start < top_) eraseBlock(start, top_ - start);
    if (at > start) addBlock(start, at - start);
    top_ = std::max(top_, at + size);
    return at;
  }

  void release(i64 offset, i64 size) {
    i64 start = offset, end = offset + size;
    auto next = byAddr_.lower_bound(start);
    if (next != byAddr_.end() && next->first == end) {  // merge with the block above
      end += next->second;
      eraseBlock(next->first, next->second);
    }
    next = byAddr_.lower_bound(start);
    if (next != byAddr_.begin()) {
      const auto prev = std::prev(next);
      if (prev->first + prev->second == start) {  // merge with the block below
        start = prev->first;
        eraseBlock(prev->first, prev->second);
      }
    }
    addBlock(start, end - start);
  }

 private:
  i64 take(i64 start, i64 blockSize, i64 at, i64 size) {
    eraseBlock(start, blockSize);
    if (at > start) addBlock(start, at - start);
    if (at + size < start + blockSize) addBlock(at + size, start + blockSize - at - size);
    return at;
  }
  void addBlock(i64 start, i64 size) {
    byAddr_[start] = size;
    bySize_.insert({size, start});
  }
  void eraseBlock(i64 start, i64 size) {
    byAddr_.erase(start);
    bySize_.erase({size, start});
  }

  i64 top_ = 0;                                // everything above is free
  std::map<i64, i64> byAddr_;                   // free blocks below top_
  std::set<std::pair<i64, i64>> bySize_;        // (size, start), best fit
};

Plan sweepAllocate(const std::vector<Buffer>& buffers) {
  const int n = (int)buffers.size();
  Plan plan;
  plan.offsets.assign(n, 0);
  plan.peak = 0;
  std::vector<int> order;
  for (int i = 0; i < n; ++i) {
    if (!isTrivial(buffers[i])) order.push_back(i);
    else plan.peak = std::max(plan.peak, std::max<i64>(buffers[i].size, 0));
  }
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    if (buffers[a].lower != buffers[b].lower) return buffers[a].lower < buffers[b].lower;
    return buffers[a].size > buffers[b].size;
  });
  SweepAllocator heap;
  using End = std::pair<i64, int>;  // (upper, buffer): min-heap of live buffers
  std::priority_queue<End, std::vector<End>, std::greater<>> live;
  for (int b : order) {
    while (!live.empty() && live.top().first <= buffers[b].lower) {  // half-open
      const int gone = live.top().second;
      live.pop();
      heap.release(plan.offsets[gone], buffers[gone].size);
    }
    plan.offsets[b] = heap.allocate(buffers[b].size, buffers[b].align);
    plan.peak = std::max(plan.peak, plan.offsets[b] + buffers[b].size);
    live.push({buffers[b].upper, b});
  }
  return plan;
}

// A canonical dive without backtracking: repeatedly places the unplaced
// buffer with the lowest floor (ties: earlier in `order`) at that floor,
// then raises the floors of the buffers it overlaps.  This is the first
// path the canonical search would take; it packs tightly when lifespans
// nest.  Heap keys may be stale (floors only rise), so a popped entry whose
// key is out of date is pushed back with its current floor.
Plan floorDive(const std::vector<Buffer>& buffers, const SlotMap& slots,
               const std::vector<int>& order, const Deadline& deadline) {
  const int n = (int)buffers.size();
  Plan plan;
  plan.offsets.assign(n, 0);
  plan.peak = 0;
  OverlapIndex index(slots.numSlots);
  std::vector<i64> floor(n, 0);
  std::vector<char> placed(n, 0);
  using Key = std::pair<i64, int>;  // (floor, position in order)
  std::vector<Key> heap;
  for (int k = 0; k < n; ++k) {
    const int b = order[k];
    if (isTrivial(buffers[b])) {
      plan.peak = std::max(plan.peak, std::max<i64>(buffers[b].size, 0));
      continue;
    }
    heap.push_back({0, k});
  }
  // Inserted in id (= start time) order, so list entries of buffers that are
  // close in time are close in memory.
  for (int b = 0; b < n; ++b)
    if (!isTrivial(buffers[b])) index.insert(b, slots.lo[b], slots.hi[b]);
  std::make_heap(heap.begin(), heap.end(), std::greater<>());
  DeadlinePacer pacer(deadline);
  i64 visited = 0;
  while (!heap.empty()) {
    if (pacer.passed(1 + visited)) return {};
    visited = 0;
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const auto [key, k] = heap.back();
    heap.pop_back();
    const int b = order[k];
    if (key != floor[b]) {  // stale: reinsert with the current floor
      heap.push_back({floor[b], k});
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
      continue;
    }
    placed[b] = 1;
    plan.offsets[b] = floor[b];
    const i64 top = floor[b] + buffers[b].size;
    plan.peak = std::max(plan.peak, top);
    index.queryAndPrune(slots.lo[b], slots.hi[b], [&](int j) {
      ++visited;
      if (placed[j]) return false;  // placed buffers need no more raising
      if (floor[j] < top) floor[j] = alignUp(top, buffers[j].align);
      return true;
    });
  }
  return plan;
}

// The greedy portfolio: seeds first, then (when time is left over) an
// iterated greedy that perturbs the best seed's order and keeps changes that
// do not raise the peak.
class GreedyPortfolio {
 public:
  GreedyPortfolio(const std::vector<Buffer>& buffers, const SlotMap& slots)
      : buffers_(buffers), slots_(slots),
        orders_(greedyOrders(buffers, liveTotals(buffers, slots))) {}

  // Runs the seeds, most promising first, and keeps the lowest peak.  The
  // sweep allocator always runs to completion so that a plan exists; the
  // others give up when `deadline` passes, except greedy by size (the usual
  // baseline, which the result should never lose to): it may run on until
  // `lastDeadline`.
  Plan seed(i64 lowerBound, const Deadline& deadline, const Deadline& lastDeadline,
            bool baselineDone = false) {
    // orders_: 0 size, 1 live total, 2 area, 3 lifespan
    const std::pair<Kind, int> seeds[] = {
        {kFirstFit, 0},  {kFloorDive, 2}, {kFloorDive, 1}, {kFloorDive, 0},
        {kFloorDive, 3}, {kBestFit, 0},   {kFirstFit, 3},  {kBestFit, 1},
        {kFirstFit, 2},  {kBestFit, 3},   {kFirstFit, 1},  {kBestFit, 2}};
    Plan best = sweepAllocate(buffers_);
    logLine("greedy sweep allocator: peak %lld", best.peak);
    for (const auto& [kind, o] : seeds) {
      const bool baseline = kind == kFirstFit && o == 0;
      if (baseline && baselineDone) continue;  // ran already (large traces)
      const Deadline& until = baseline ? lastDeadline : deadline;
      if (best.peak <= lowerBound || until.passed()) break;
      Plan plan = run(kind, orders_[o], until);
      logLine("greedy %s, order %d: peak %lld", kNames[kind], o,
           plan.offsets.empty() ? -1LL : plan.peak);
      if (!plan.offsets.empty() && plan.peak < best.peak) {
        best = std::move(plan);
        bestKind_ = kind;
        bestOrder_ = o;
        bestSeedPeak_ = best.peak;
        bestSeedOffsets_ = best.offsets;
      }
    }
    return best;
  }

  // Iterated greedy: a buffer that reaches the incumbent's peak is moved
  // earlier in the order (to a random earlier position), so it gets a lower
  // spot next time.  A trial replaces the incumbent when its peak is no
  // higher (equal peaks let the order drift across plateaus).
  void perturb(Plan& best, i64 lowerBound, const Deadline& deadline) {
    if (bestOrder_ < 0) return;  // the sweep allocator won: nothing to perturb
    std::vector<int> order = orders_[bestOrder_];
    Plan incumbent;  // the plan of `order` under bestKind_
    incumbent.peak = bestSeedPeak_;
    incumbent.offsets = bestSeedOffsets_;
    std::mt19937_64 rng(0x5eed);
    const int n = (int)order.size();
    std::vector<int> position(n), critical;
    int trials = 0;
    while (best.peak > lowerBound && !deadline.passed()) {
      critical.clear();
      for (int k = 1; k < n; ++k) {  // (the first one cannot move earlier)
        const int b = order[k];
        position[b] = k;
        if (incumbent.offsets[b] + buffers_[b].size == incumbent.peak) critical.push_back(b);
      }
      if (critical.empty()) break;
      const int b = critical[rng() % critical.size()];
      const int from = position[b];
      const int to = (int)(rng() % from);
      std::vector<int> trial = order;
      std::rotate(trial.begin() + to, trial.begin() + from, trial.begin() + from + 1);
      Plan plan = run(bestKind_, trial, deadline);
      ++trials;
      if (plan.offsets.empty() || plan.peak > incumbent.peak) continue;
      order = std::move(trial);
      if (plan.peak < best.peak) {
        logLine("perturbation %d: peak %lld", trials, plan.peak);
        best = plan;
      }
      incumbent = std::move(plan);
    }
    logLine("perturbation: %d trials", trials);
  }

 private:
  enum Kind { kFirstFit, kBestFit, kFloorDive };
  static constexpr const char* kNames[] = {"first-fit", "best-fit", "floor-dive"};

  Plan run(Kind kind, const std::vector<int>& order, const Deadline& deadline) const {
    if (kind == kFloorDive) return floorDive(buffers_, slots_, order, deadline);
    return greedyPlace(buffers_, slots_, order, kind == kBestFit, deadline);
  }

  const std::vector<Buffer>& buffers_;
  const SlotMap& slots_;
  std::vector<std::vector<int>> orders_;
  Kind bestKind_ = kFirstFit;
  int bestOrder_ = -1;
  i64 bestSeedPeak_ = kInf;
  std::vector<i64> bestSeedOffsets_;
};

}  // namespace
