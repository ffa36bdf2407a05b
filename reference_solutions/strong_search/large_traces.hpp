// large_traces.hpp -- strong_search (see main.cpp): the large-trace
// improvement, the skyline best fit and its iterated variant.
//
// best_fit.cpp's three fit rules (so strong_search is never above best_fit),
// four classic orders, then ranks perturbed while time is left.  On traces of
// more than kLargeSearch buffers (main.cpp) the search does not run and this
// is what improves the plan; on small cases it runs once as a seed.

#pragma once

#include "greedy_seeds.hpp"

namespace {

// ---------------------------------------------------------------------------
// Skyline best fit and its iterated variant (large traces)
// ---------------------------------------------------------------------------
//
// The skyline best fit of best_fit.cpp (Burke et al. 2004 as adapted by
// Sekiyama et al. 2018): take the lowest skyline segment, put there the
// unplaced buffer that fits it best under a fit rank, or raise the segment to
// its lower neighbour when none fits. Its three fit rules are run first, so
// strong_search is never worse than best_fit; four more classic orders
// follow (area with the lifespan weighed more or less, earliest start first,
// latest end first). Then, while time is left, the
// rank is perturbed (iterated greedy): buffers whose top lies in the highest
// band of the best plan are promoted (placed earlier, so lower), or ranks are
// jittered at random; a plan at least as low replaces the incumbent.
// Each run is O(n log n) plus O(n * live * log n) at worst.

class Skyline {
 public:
  struct Segment {
    int start, end;
    i64 height;
  };

  explicit Skyline(int m)
      : m_(m), end_(m + 1), prev_(m + 1, -1), height_(m + 1), alive_(m + 1, 0) {
    set(0, m, 0);
  }

  Segment lowest() {
    while (true) {
      auto [negHeight, start] = heap_.top();
      if (alive_[start] && height_[start] == -negHeight) return {start, end_[start], -negHeight};
      heap_.pop();
    }
  }

  // Raises [lo, hi), inside the lowest segment, to `height`.
  void raise(int lo, int hi, i64 height) {
    const Segment seg = lowest();
    if (seg.start < lo) {
      set(seg.start, lo, seg.height);
      prev_[lo] = seg.start;
    }
    set(lo, hi, height);
    if (hi < seg.end) {
      set(hi, seg.end, seg.height);
      prev_[hi] = lo;
    }
    mergeAround(lo);
  }

  // Raises the lowest segment to its lower neighbour; false if it spans all.
  bool liftLowest() {
    const Segment seg = lowest();
    i64 target = kInf;
    if (seg.start > 0) target = height_[prev_[seg.start]];
    if (seg.end < m_) target = std::min(target, height_[seg.end]);
    if (target == kInf) return false;
    set(seg.start, seg.end, target);
    mergeAround(seg.start);
    return true;
  }

 private:
  void set(int start, int end, i64 height) {
    alive_[start] = 1;
    end_[start] = end;
    height_[start] = height;
    if (end < m_) prev_[end] = start;
    heap_.push({-height, start});
  }
  void absorbNext(int left) {
    const int right = end_[left];
    alive_[right] = 0;
    end_[left] = end_[right];
    if (end_[left] < m_) prev_[end_[left]] = left;
  }
  void mergeAround(int start) {
    if (start > 0 && height_[prev_[start]] == height_[start]) {
      start = prev_[start];
      absorbNext(start);
    }
    if (end_[start] < m_ && height_[end_[start]] == height_[start]) absorbNext(start);
  }

  int m_;
  std::vector<int> end_, prev_;
  std::vector<i64> height_;
  std::vector<char> alive_;
  std::priority_queue<std::pair<i64, int>> heap_;  // (-height, start)
};

// Unplaced buffers at positions ordered by lower slot; bestIn(first, last, e)
// is the best-ranked position in [first, last) whose upper slot is <= e.
class FitCandidates {
 public:
  FitCandidates(const std::vector<int>& rankAtPos, const std::vector<int>& hiAtPos)
      : hi_(hiAtPos), posOfRank_(rankAtPos.size()) {
    for (size_t p = 0; p < rankAtPos.size(); ++p) posOfRank_[rankAtPos[p]] = (int)p;
    while (leaves_ < (int)rankAtPos.size()) leaves_ *= 2;
    minHi_.assign(2 * leaves_, kNone);
    minRank_.assign(2 * leaves_, kNone);
    for (size_t p = 0; p < rankAtPos.size(); ++p) {
      minHi_[leaves_ + p] = hi_[p];
      minRank_[leaves_ + p] = rankAtPos[p];
    }
    for (int v = leaves_ - 1; v >= 1; --v) pull(v);
  }

  void erase(int pos) {
    int v = leaves_ + pos;
    minHi_[v] = minRank_[v] = kNone;
    for (v /= 2; v >= 1; v /= 2) pull(v);
  }

  int bestIn(int first, int last, int e) const {
    int rank = kNone;
    search(1, 0, leaves_, first, last, e, rank);
    return rank == kNone ? -1 : posOfRank_[rank];
  }

 private:
  static constexpr int kNone = std::numeric_limits<int>::max();

  void pull(int v) {
    minHi_[v] = std::min(minHi_[2 * v], minHi_[2 * v + 1]);
    minRank_[v] = std::min(minRank_[2 * v], minRank_[2 * v + 1]);
  }

  void search(int v, int nlo, int nhi, int first, int last, int e, int& rank) const {
    if (nhi <= first || last <= nlo || minHi_[v] > e || minRank_[v] >= rank) return;
    if (first <= nlo && nhi <= last && hi_[posOfRank_[minRank_[v]]] <= e) {
      rank = minRank_[v];
      return;
    }
    const int mid = (nlo + nhi) / 2;
    if (minRank_[2 * v] <= minRank_[2 * v + 1]) {
      search(2 * v, nlo, mid, first, last, e, rank);
      search(2 * v + 1, mid, nhi, first, last, e, rank);
    } else {
      search(2 * v + 1, mid, nhi, first, last, e, rank);
      search(2 * v, nlo, mid, first, last, e, rank);
    }
  }

  std::vector<int> hi_, posOfRank_;
  int leaves_ = 1;
  std::vector<int> minHi_, minRank_;
};

class SkylineFit {
 public:
  // Gravity costs O(n * live) per plan: only for instances up to this size.
  static constexpr size_t kSettleBuffers = 5000;

  // `buffers` are sorted by lower (main() renumbers them so).
  // `row[i]` is buffer i's row in the input: ties go to the earlier row, as
  // in best_fit.cpp, so the first three runs are exactly best_fit's plans.
  SkylineFit(const std::vector<Buffer>& buffers, const SlotMap& slots, const std::vector<int>& row)
      : buf_(buffers), row_(row), slots_map_(&slots) {
    for (int i = 0; i < (int)buffers.size(); ++i) {
      if (isTrivial(buffers[i])) continue;
      ids_.push_back(i);
      lo_.push_back(slots.lo[i]);
      hi_.push_back(slots.hi[i]);
    }
    slots_ = slots.numSlots;
  }

  // Best of best_fit's three rules, then the iterated variant until the
  // deadline or the lower bound; `publish` is called after every gain.
  // Returns false when `best` did not improve.
  // Rules after the first stop when `rulesDeadline` passes.
  bool improve(Plan& best, i64 lowerBound, const Deadline& deadline,
               const Deadline& rulesDeadline, const std::function<void()>& publish) {
    if (ids_.empty()) return false;
    publish_ = &publish;
    const i64 start = best.peak;
    if (!rank_.empty()) {  // the rules ran before: iterate from their best
      iterate(rank_, rankPeak_, best, lowerBound, deadline);
      return best.peak < start;
    }
    auto life = [&](int i) { return buf_[i].upper - buf_[i].lower; };
    std::vector<std::vector<int>> rules = {
        rankBy([&](int i) { return std::pair(-life(i), -buf_[i].size); }),
        rankBy([&](int i) { return -(__int128)life(i) * buf_[i].size; }),
        rankBy([&](int i) { return std::pair(-buf_[i].size, -life(i)); }),
        // More rules, each a classic order: area with the lifespan weighed
        // more or less, earliest start first (a sweep), latest end first.
        rankBy([&](int i) { return -std::pow((double)life(i), 2.0) * (double)buf_[i].size; }),
        rankBy([&](int i) { return -std::sqrt((double)life(i)) * (double)buf_[i].size; }),
        rankBy([&](int i) { return std::pair(buf_[i].lower, -life(i)); }),
        rankBy([&](int i) { return std::pair(-buf_[i].upper, -life(i)); }),
    };
    std::vector<int> rank = rules[0];
    i64 rankPeak = kInf;
    for (const auto& r : rules) {
      if (&r != &rules[0] && rulesDeadline.passed()) break;
      const i64 peak = run(r, best, &r == &rules[0] ? nullptr : &rulesDeadline);
      logLine("skyline best fit: peak %lld", peak);
      if (peak < rankPeak) rankPeak = peak, rank = r;
    }
    publish();
    descend(best, deadline);
    if (ids_.size() <= kSettleBuffers) settle(best, deadline);
    publish();
    rank_ = rank;
    rankPeak_ = rankPeak;
    iterate(rank, rankPeak, best, lowerBound, deadline);
    return best.peak < start;
  }

  // Peak descent: the buffer with the highest top moves to the lowest gap
  // (first fit) left by all the others over its lifespan, while that lowers
  // it; stops at the first top buffer that cannot go lower. Skyline best fit
  // leaves long-lived small buffers on top of a peak elsewhere in their
  // lifespan, with room for them lower down. O(live log n) per move.
  void descend(Plan& best, const Deadline& deadline) {
    const SlotMap& slots = *slots_map_;
    OverlapIndex index(slots.numSlots);
    std::priority_queue<std::pair<i64, int>> tops;
    for (int i : ids_) {
      index.insert(i, slots.lo[i], slots.hi[i]);
      tops.push({best.offsets[i] + buf_[i].size, i});
    }
    std::vector<int> stamp(buf_.size(), -1);
    std::vector<std::pair<i64, i64>> busy;
    int moves = 0;
    for (int round = 0; !tops.empty() && !deadline.passed(); ++round) {
      const auto [top, b] = tops.top();
      const Buffer& x = buf_[b];
      busy.clear();
      index.query(slots.lo[b], slots.hi[b], [&](int j) {
        if (j == b || stamp[j] == round) return;
        stamp[j] = round;
        busy.push_back({best.offsets[j], best.offsets[j] + buf_[j].size});
      });
      std::sort(busy.begin(), busy.end());
      i64 pos = 0;
      for (const auto& [off, end] : busy) {
        if (off >= pos + x.size) break;  // the gap [pos, off) fits
        pos = std::max(pos, alignUp(end, x.align));
      }
      if (pos + x.size >= top) break;  // b stays: so does the peak
      tops.pop();
      best.offsets[b] = pos;
      tops.push({pos + x.size, b});
      ++moves;
    }
    if (tops.empty()) return;
    if (tops.top().first < best.peak) logLine("peak descent: %d moves, peak %lld", moves, tops.top().first);
    best.peak = std::min(best.peak, tops.top().first);
  }

  // Gravity: every buffer, in order of offset, drops to the lowest gap among
  // those placed before it. Its old place is always free (everything placed
  // before it only moved down), so no buffer rises and the peak never grows;
  // buffers above the holes skyline best fit gave up may fall into them.
  void settle(Plan& best, const Deadline& deadline) {
    std::vector<int> order(buf_.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return best.offsets[a] < best.offsets[b]; });
    Plan settled = greedyPlace(buf_, *slots_map_, order, false, deadline);
    if (!settled.offsets.empty() && settled.peak < best.peak) {
      logLine("skyline settled: peak %lld", settled.peak);
      best = std::move(settled);
    }
    (*publish_)();
  }

 private:
  template <class Key>
  std::vector<int> rankBy(Key key) const {
    std::vector<int> byFit(ids_.size());
    std::iota(byFit.begin(), byFit.end(), 0);
    std::stable_sort(byFit.begin(), byFit.end(),
                     [&](int p, int q) {
                       const auto kp = key(ids_[p]), kq = key(ids_[q]);
                       return kp != kq ? kp < kq : row_[ids_[p]] < row_[ids_[q]];
                     });
    std::vector<int> rank(byFit.size());
    for (size_t r = 0; r < byFit.size(); ++r) rank[byFit[r]] = (int)r;
    return rank;
  }

  // One skyline run under `rank`; replaces `best` when strictly lower.
  // One skyline run under `rank`; kInf when `stop` passes mid-way (on 100k
  // buffers a run takes about half a second: it must not overrun the limit).
  i64 run(const std::vector<int>& rank, Plan& best, const Deadline* stop = nullptr) {
    FitCandidates candidates(rank, hi_);
    Skyline skyline(slots_);
    off_.assign(ids_.size(), 0);
    i64 peak = 0;
    const Deadline never{1e300};
    DeadlinePacer pacer(stop ? *stop : never);
    for (size_t placed = 0; placed < ids_.size();) {
      if (stop && pacer.passed(64)) return kInf;
      const Skyline::Segment seg = skyline.lowest();
      const int first = (int)(std::lower_bound(lo_.begin(), lo_.end(), seg.start) - lo_.begin());
      const int last = (int)(std::lower_bound(lo_.begin(), lo_.end(), seg.end) - lo_.begin());
      const int pos = candidates.bestIn(first, last, seg.end);
      if (pos < 0) {
        if (!skyline.liftLowest()) return kInf;  // cannot happen: defensive
        continue;
      }
      const Buffer& b = buf_[ids_[pos]];
      off_[pos] = alignUp(seg.height, b.align);
      skyline.raise(lo_[pos], hi_[pos], off_[pos] + b.size);
      peak = std::max(peak, off_[pos] + b.size);
      candidates.erase(pos);
      ++placed;
    }
    if (peak < best.peak) {
      best.peak = peak;
      for (size_t p = 0; p < ids_.size(); ++p) best.offsets[ids_[p]] = off_[p];
    }
    return peak;
  }

  // Iterated greedy over ranks: promote the buffers in the top band of the
  // incumbent's plan, or jitter ranks; keep a rank whose plan is no higher.
  void iterate(std::vector<int> rank, i64 rankPeak, Plan& best, i64 lowerBound,
               const Deadline& deadline) {
    std::mt19937_64 rng(20231201);
    std::vector<i64> rankOff = off_;
    if (run(rank, best, &deadline) == kInf) return;  // off_ of the chosen rank
    rankOff = off_;
    const int n = (int)ids_.size();
    std::vector<std::pair<double, int>> keyed(n);
    fresh_.assign(n, 0);
    int trials = 0;
    while (best.peak > lowerBound && !deadline.passed()) {
      ++trials;
      const int move = (int)(rng() % 4);
      const double band = 0.002 * (1 + rng() % 20);
      const double jitter = (double)(1 + rng() % 50) / 1000.0 * n;
      // move 3: a fresh rule, larger life^a * size^b first (a, b random).
      const double a = std::uniform_real_distribution<double>(0, 2)(rng);
      const double b = std::uniform_real_distribution<double>(0, 2)(rng);
      if (move == 3) {
        std::vector<std::pair<double, int>> byKey(n);
        for (int p = 0; p < n; ++p) {
          const Buffer& x = buf_[ids_[p]];
          byKey[p] = {-(a * std::log((double)(x.upper - x.lower)) + b * std::log((double)x.size)), p};
        }
        std::sort(byKey.begin(), byKey.end());
        for (int r = 0; r < n; ++r) fresh_[byKey[r].second] = r;
      }
      for (int p = 0; p < n; ++p) {
        double key = move == 3 ? fresh_[p] : rank[p];
        const i64 top = rankOff[p] + buf_[ids_[p]].size;
        if (move != 2 && top > rankPeak - band * (double)rankPeak)
          key -= (double)n * std::uniform_real_distribution<double>(0.05, 1.0)(rng);
        if (move == 1 || move == 2) key += std::uniform_real_distribution<double>(0, jitter)(rng);
        keyed[p] = {key, p};
      }
      std::sort(keyed.begin(), keyed.end());
      std::vector<int> next(n);
      for (int r = 0; r < n; ++r) next[keyed[r].second] = r;
      const i64 peak = run(next, best, &deadline);
      if (peak <= rankPeak) {
        if (peak < rankPeak) logLine("skyline iteration %d (move %d): peak %lld", trials, move, peak);
        if (peak < rankPeak && peak <= best.peak) {
          descend(best, deadline);
          if (ids_.size() <= kSettleBuffers) settle(best, deadline);
          (*publish_)();
        }
        rank = std::move(next);
        rankPeak = peak;
        rankOff = off_;
      }
    }
    logLine("skyline iterations: %d", trials);
  }

  const std::vector<Buffer>& buf_;
  const std::vector<int>& row_;
  const SlotMap* slots_map_;
  const std::function<void()>* publish_ = nullptr;
  std::vector<int> ids_, lo_, hi_;  // non-trivial buffers, by lower
  int slots_ = 1;
  std::vector<i64> off_;            // offsets of the last run, by position
  std::vector<int> fresh_;          // rank under a random rule
  std::vector<int> rank_;           // the best rule's rank, once the rules ran
  i64 rankPeak_ = kInf;
};

}  // namespace
