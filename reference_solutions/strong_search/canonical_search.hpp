// canonical_search.hpp -- strong_search (see main.cpp): the canonical search.
//
// CanonicalSearch answers "can every buffer be placed under height T?" in
// the style of MiniMalloc (main.cpp's overview lists its rules): building
// the overlap lists, partitions, preorders and twins; the depth-first search
// (children, dominance, full-section branching, hatless pruning,
// decomposition into independent pieces).  Its sections and section floors,
// and placing / undoing a buffer, are members defined in section_floors.hpp
// (declared here): the search's most delicate bookkeeping, kept on its own.

#pragma once

#include "large_traces.hpp"

namespace {

// ---------------------------------------------------------------------------
// Canonical search
// ---------------------------------------------------------------------------

// The search sees only non-trivial buffers, indexed 0..n-1.
struct SearchBuffer {
  i64 lower, upper, size, align;
};

class CanonicalSearch {
 public:
  enum class Result { kFound, kInfeasible, kAborted };
  static constexpr int kFixedOrders = 4;
  static constexpr int kRandomOrders = 64;
  static constexpr double kNoise = 0.1;

  int numHeuristics() const { return (int)ranks_.size(); }
  // Work bound below which exact section floors are maintained.
  static constexpr i64 kMaxExactFloorWork = 200'000'000;
  // Bounds the candidate stack (children of every node on the current path);
  // past it a node keeps only its first kMinChildren children, and a search
  // that had to drop some proves nothing.
  static constexpr size_t kMaxChildStack = size_t(1) << 24;
  static constexpr size_t kMinChildren = 64;

  // A set of unplaced buffers that share no time section with any other
  // unplaced buffer outside it; sections [lo, hi) are all it touches.
  struct Part {
    std::vector<int> members;
    int lo = 0, hi = 0;
  };

  explicit CanonicalSearch(std::vector<SearchBuffer> buffers)
      : buf_(std::move(buffers)), n_((int)buf_.size()) {}

  // Builds sections, overlap lists, cuts and preorders.  Returns false when
  // the structures would exceed `maxEntries` list entries (too big to search).
  bool build(i64 maxEntries) {
    buildSections();
    if (!buildOverlaps(maxEntries)) return false;
    buildSectionMembers();
    off_.assign(n_, -1);
    floor_.assign(n_, 0);
    sol_.assign(n_, 0);
    secFloor_.assign(numSections_, 0);
    secWitness_.assign(numSections_, -1);
    secSaved_.assign(numSections_, 0);
    tightStamp_.assign(numSections_, 0);
    tightCount_.assign(numSections_, 0);
    nbrLeft_.assign(n_, 0);
    for (int b = 0; b < n_; ++b) nbrLeft_[b] = (int)(adjStart_[b + 1] - adjStart_[b]);
    for (int sec = 0; sec < numSections_; ++sec)  // every floor starts at 0
      if (secStart_[sec + 1] > secStart_[sec]) secWitness_[sec] = secMembers_[secStart_[sec]];
    // Exact section floors cost up to sum(degree * span) per descent (the
    // bound dates from counting members at each floor; a witness costs less
    // but the cases that keep exact floors are kept as they were).
    i64 exactWork = 0;
    for (int b = 0; b < n_; ++b)
      exactWork += (adjStart_[b + 1] - adjStart_[b]) * (i64)(secHi_[b] - secLo_[b]);
    exactFloors_ = exactWork <= kMaxExactFloorWork;
    logLine("search: %d sections, exact floors %s (work %lld)", numSections_,
            exactFloors_ ? "on" : "off", exactWork);
    buildPartitions();
    buildPreorders();
    buildTwins();
    return true;
  }

  int numParts() const { return (int)parts_.size(); }
  const std::vector<int>& partMembers(int p) const { return parts_[p].members; }
  i64 solutionOffset(int b) const { return sol_[b]; }
  i64 nodesUsed() const { return nodesUsed_; }

  // Tries to place every buffer of top-level part `p` under `target`, with
  // preorder `heuristic`, making at most `nodeBudget` placements.  kFound
  // leaves the offsets in solutionOffset(); kInfeasible is a proof.
  // `tightRule` turns on the full-section branching (narrowToTightSection).
  Result solve(int p, i64 target, int heuristic, i64 nodeBudget,
               const Deadline& deadline, bool tightRule = false) {
    target_ = target;
    tightRule_ = tightRule;
    rank_ = &ranks_[heuristic];
    heuristic_ = heuristic;
    nodesLeft_ = nodeBudget;
    deadline_ = &deadline;
    truncated_ = false;
    Result r = dfs(parts_[p], 0, -1);
    nodesUsed_ = nodeBudget - nodesLeft_;
    return r == Result::kInfeasible && truncated_ ? Result::kAborted : r;
  }

 private:
  // --- sections and their floors: defined in section_floors.hpp ------------

  void buildSections();
  void buildSectionMembers();
  void leaveSection(int b, int s);

  struct Mark {
    size_t floors, sections;
  };

  Mark place(int b);
  void saveSection(int s);
  void refreshFloor(int s);
  void unplace(int b, const Mark& mark);
  bool sectionsFit(const Part& part, i64 offset);
  i64 witnessFloor(int s) const;
  void exactFloor(int s);
#ifdef STRONG_SEARCH_CHECK_FLOORS
  void checkFloor(int s, bool lowerBound = false) const;
#endif

  // --- construction -------------------------------------------------------

  // Overlap lists in CSR form, from a sweep over section ranges: buffers are
  // taken by first section; the active ones are exactly those overlapping.
  bool buildOverlaps(i64 maxEntries) {
    std::vector<int> byStart(n_);
    std::iota(byStart.begin(), byStart.end(), 0);
    std::sort(byStart.begin(), byStart.end(),
              [&](int a, int b) { return secLo_[a] < secLo_[b]; });
    std::vector<int> degree(n_, 0);
    i64 pairs = 0, memberEntries = 0;
    for (int b = 0; b < n_; ++b) memberEntries += secHi_[b] - secLo_[b];
    forEachOverlap(byStart, [&](int a, int b) {
      ++degree[a];
      ++degree[b];
      ++pairs;
    }, maxEntries);
    if (2 * pairs + memberEntries > maxEntries) return false;
    adjStart_.assign(n_ + 1, 0);
    for (int b = 0; b < n_; ++b) adjStart_[b + 1] = adjStart_[b] + degree[b];
    adj_.assign(adjStart_[n_], 0);
    std::vector<i64> fill(adjStart_.begin(), adjStart_.end() - 1);
    forEachOverlap(byStart, [&](int a, int b) {
      adj_[fill[a]++] = b;
      adj_[fill[b]++] = a;
    }, kInf);
    return true;
  }

  // Calls pair(a, b) once per overlapping pair (stops counting past `limit`).
  template <class Pair>
  void forEachOverlap(const std::vector<int>& byStart, Pair pair, i64 limit) {
    std::vector<int> active, where(n_, -1);
    std::vector<std::pair<int, int>> ends;  // min-heap of (secHi, buffer)
    i64 count = 0;
    for (int b : byStart) {
      while (!ends.empty() && ends.front().first <= secLo_[b]) {
        const int gone = ends.front().second;
        std::pop_heap(ends.begin(), ends.end(), std::greater<>());
        ends.pop_back();
        where[active.back()] = where[gone];
        active[where[gone]] = active.back();
        active.pop_back();
      }
      for (int a : active) pair(a, b);
      count += (i64)active.size();
      if (count > limit) return;
      where[b] = (int)active.size();
      active.push_back(b);
      ends.push_back({secHi_[b], b});
      std::push_heap(ends.begin(), ends.end(), std::greater<>());
    }
  }

  // cut_[s] = number of unplaced buffers spanning sections s and s+1.  Where
  // it is zero the problem splits into independent top-level parts.
  void buildPartitions() {
    cut_.assign(std::max(0, numSections_ - 1), 0);
    std::vector<int> diff(numSections_ + 1, 0);
    for (int b = 0; b < n_; ++b) {
      diff[secLo_[b]] += 1;
      diff[secHi_[b] - 1] -= 1;
    }
    int run = 0;
    for (int s = 0; s + 1 < numSections_; ++s) cut_[s] = run += diff[s];
    Part whole;
    whole.lo = 0;
    whole.hi = numSections_;
    whole.members.resize(n_);
    std::iota(whole.members.begin(), whole.members.end(), 0);
    std::vector<int> zeros;
    for (int s = 0; s + 1 < numSections_; ++s)
      if (cut_[s] == 0) zeros.push_back(s);
    split(whole, zeros, parts_);
  }

  // Static preorders: MiniMalloc's T/W/A keys (max section total, lifespan
  // width and area, each descending) in three priority orders, plus a sweep
  // order (S: earlier start first, then Z: larger size, then width), which
  // settles floor ties the way an allocator replaying the timeline would.
  // Then kRandomOrders randomized variants (the same key orders with the key
  // values scaled by up to +-kNoise and ties broken at random): the search
  // time of one preorder is heavy-tailed, so several orders at a small node
  // budget beat one order at a large one.
  void buildPreorders() {
    std::mt19937_64 rng(0x9e3779b9);
    std::uniform_real_distribution<double> noise(1 - kNoise, 1 + kNoise);
    const char* keys[] = {"WAT", "TAW", "TWA", "SZW"};
    preorders_.clear();
    ranks_.assign(kFixedOrders + kRandomOrders, std::vector<int>(n_, 0));
    std::vector<int> all(n_);
    std::iota(all.begin(), all.end(), 0);
    for (int h = 0; h < kFixedOrders + kRandomOrders; ++h) {
      Preorder order{keys[h % kFixedOrders], {}, std::vector<int>(all)};
      if (h >= kFixedOrders) {
        order.scale.resize(n_);
        for (auto& scales : order.scale)
          for (double& x : scales) x = noise(rng);
        std::shuffle(order.tie.begin(), order.tie.end(), rng);
      }
      preorders_.push_back(std::move(order));
      rankMembers(all, h, ranks_[h]);
    }
  }

  // Writes into `rank` the position of each of `members` in preorder h, with
  // T (the largest section total) taken from the unplaced sizes now, as
  // MiniMalloc does for every sub-partition it solves: a buffer that shares
  // its sections with little that is left is no longer a bottleneck.
  void rankMembers(const std::vector<int>& members, int h, std::vector<int>& rank) {
    const Preorder& order = preorders_[h];
    auto value = [&](int b, char c, i64 total) {
      const SearchBuffer& x = buf_[b];
      const double width = (double)(x.upper - x.lower);
      const int k = c == 'T' ? 0 : c == 'W' ? 1 : c == 'A' ? 2 : c == 'S' ? 3 : 4;
      const double v = k == 0 ? (double)total : k == 1 ? width : k == 2 ? width * (double)x.size
                     : k == 3 ? -(double)x.lower : (double)x.size;  // S: earlier first
      return order.scale.empty() ? v : v * order.scale[b][k];
    };
    std::vector<std::tuple<std::array<double, 3>, int, int>> keyed;  // (key, tie, b)
    keyed.reserve(members.size());
    for (int b : members) {
      if (off_[b] >= 0) continue;
      i64 total = 0;
      for (int s = secLo_[b]; s < secHi_[b]; ++s) total = std::max(total, secTotal_[s]);
      std::array<double, 3> key{};
      for (int i = 0; i < 3; ++i) key[i] = -value(b, order.keys[i], total);  // descending
      keyed.push_back({key, order.tie[b], b});
    }
    std::sort(keyed.begin(), keyed.end());
    for (size_t r = 0; r < keyed.size(); ++r) rank[std::get<2>(keyed[r])] = (int)r;
  }

  // Symmetry: identical buffers (same lifespan, size and alignment) are
  // interchangeable, so only solutions where they are placed in index order
  // (lower index, lower offset) are searched.  prevTwin_[b] is the identical
  // buffer just before b, or -1.
  void buildTwins() {
    std::vector<int> order(n_);
    std::iota(order.begin(), order.end(), 0);
    auto key = [&](int b) {
      return std::make_tuple(buf_[b].lower, buf_[b].upper, buf_[b].size, buf_[b].align);
    };
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      return key(a) != key(b) ? key(a) < key(b) : a < b;
    });
    prevTwin_.assign(n_, -1);
    int twins = 0;
    for (int k = 1; k < n_; ++k)
      if (key(order[k]) == key(order[k - 1])) {
        prevTwin_[order[k]] = order[k - 1];
        ++twins;
      }
    logLine("search: %d buffers have an identical twin before them", twins);
  }

  // Splits `part` at the boundaries after sections `zeros` (sorted) into
  // non-empty sub-parts holding its unplaced members.
  void split(const Part& part, const std::vector<int>& zeros, std::vector<Part>& out) {
    std::vector<int> bounds = {part.lo};
    for (int z : zeros) bounds.push_back(z + 1);
    bounds.push_back(part.hi);
    std::vector<Part> pieces(bounds.size() - 1);
    for (size_t i = 0; i + 1 < bounds.size(); ++i) {
      pieces[i].lo = bounds[i];
      pieces[i].hi = bounds[i + 1];
    }
    for (int b : part.members) {
      if (off_[b] >= 0) continue;
      size_t i = std::upper_bound(bounds.begin(), bounds.end(), secLo_[b]) - bounds.begin() - 1;
      pieces[i].members.push_back(b);
    }
    for (Part& piece : pieces)
      if (!piece.members.empty()) out.push_back(std::move(piece));
  }

  // --- depth-first search ---------------------------------------------------

  bool outOfBudget() {
    if (--nodesLeft_ < 0) return true;
    return (nodesLeft_ & 255) == 0 && deadline_->passed();
  }

  // Collects the children of this node in the order to try them: unplaced
  // buffers at or after (lastOff, lastRank) in canonical order, whose floor
  // is below every unplaced buffer's lowest top (dominance).  Returns false
  // when the part is complete.
  bool collectChildren(const Part& part, i64 lastOff, int lastRank) {
    const std::vector<int>& rank = *rank_;
    i64 minTop = kInf;
    bool anyUnplaced = false;
    deadEnd_ = false;
    for (int b : part.members) {
      if (off_[b] >= 0) continue;
      anyUnplaced = true;
      minTop = std::min(minTop, floor_[b] + buf_[b].size);
      // Floors only rise: a buffer that no longer fits under the target
      // never will, whatever is placed next, so the node is a dead end.
      if (floor_[b] + buf_[b].size > target_) deadEnd_ = true;
      // Skipped (below the canonical position) with no unplaced buffer left
      // to raise its floor: it can never be placed.
      if (nbrLeft_[b] == 0 &&
          (floor_[b] < lastOff || (floor_[b] == lastOff && rank[b] < lastRank)))
        deadEnd_ = true;
    }
    if (!anyUnplaced) return false;
    if (deadEnd_) return true;
    const size_t base = children_.size();
    for (int b : part.members) {
      if (off_[b] >= 0) continue;
      const i64 f = floor_[b];
      if (f >= minTop || f + buf_[b].size > target_) continue;
      if (f < lastOff || (f == lastOff && rank[b] < lastRank)) continue;
      if (prevTwin_[b] >= 0 && off_[prevTwin_[b]] < 0) continue;  // twins in order
      children_.push_back(b);
    }
    auto first = children_.begin() + base;
    auto less = [&](int a, int b) {
      if (floor_[a] != floor_[b]) return floor_[a] < floor_[b];
      return rank[a] < rank[b];
    };
    const size_t room = std::max(kMinChildren, kMaxChildStack - std::min(base, kMaxChildStack));
    if (children_.size() - base > room) {
      std::nth_element(first, first + room, children_.end(), less);
      children_.resize(base + room);
      truncated_ = true;
    }
    std::sort(first, children_.end(), less);
    tightNode_ = tightRule_ && narrowToTightSection(part, base);
    return true;
  }

  // Full-section branching.  A section s is full when its unplaced members
  // must fill [secFloor, T) with no gap (secFloor + unplaced size == T).  If
  // its floor is h, the lowest floor of any child (no later offset is lower),
  // then in every completion one member of s sits at exactly h: so only the
  // children that cover s at h are tried, for the full section with the
  // fewest of them (first fail; none: a dead end).  On a perfect packing
  // (fillers, below) every section is full and the search is nearly forced.
  // These children may come in any rank order, so the next level starts the
  // canonical order afresh at h (the branches are disjoint: two members of
  // s cannot both sit at h).  Still complete: no later offset is below h
  // (a buffer below it would have been a child), so the lowest-potential
  // solution is never cut by dominance either.  Only the padded searches
  // use it: on the plain search it changed the order so that MiniMalloc D
  // and F no longer fitted in time.  Returns whether it narrowed the children.
  bool narrowToTightSection(const Part& part, size_t base) {
    if (children_.size() == base) return false;
    const i64 h = floor_[children_[base]];
    ++tightClock_;
    bool any = false;
    for (int s = part.lo; s < part.hi; ++s) {
      if (secTotal_[s] == 0 || secFloor_[s] > h || h + secTotal_[s] != target_) continue;
      exactFloor(s);  // the stored floor is a lower bound (see sectionsFit)
      if (secFloor_[s] != h) continue;
      tightStamp_[s] = tightClock_;
      tightCount_[s] = 0;
      any = true;
    }
    if (!any) return false;
    size_t atH = base;
    for (; atH < children_.size() && floor_[children_[atH]] == h; ++atH) {
      const int b = children_[atH];
      for (int s = secLo_[b]; s < secHi_[b]; ++s)
        if (tightStamp_[s] == tightClock_) ++tightCount_[s];
    }
    int best = -1;
    for (int s = part.lo; s < part.hi; ++s)
      if (tightStamp_[s] == tightClock_ && (best < 0 || tightCount_[s] < tightCount_[best])) best = s;
    size_t keep = base;
    for (size_t i = base; i < atH; ++i) {
      const int b = children_[i];
      if (secLo_[b] <= best && best < secHi_[b]) children_[keep++] = b;
    }
    children_.resize(keep);
    return true;
  }

  // A cheap test before placing b: every other unplaced buffer of b's
  // sections overlaps b, so it will sit above b's top.
  bool ownSectionsFit(int b) const {
    for (int s = secLo_[b]; s < secHi_[b]; ++s)
      if (floor_[b] + secTotal_[s] > target_) return false;
    return true;
  }

  // The node budget counts placements (each costs a place/unplace pair).
  Result dfs(const Part& part, i64 lastOff, int lastRank) {
    const size_t base = children_.size();
    if (!collectChildren(part, lastOff, lastRank)) return Result::kFound;
    if (deadEnd_) return Result::kInfeasible;
    const size_t end = children_.size();
    const bool tight = tightNode_;
    Result result = Result::kInfeasible;
    for (size_t i = base; i < end && result == Result::kInfeasible; ++i) {
      const int b = children_[i];
      if (!ownSectionsFit(b)) continue;
      if (outOfBudget()) {
        result = Result::kAborted;
        break;
      }
      const Mark mark = place(b);
      const bool hatless = hatless_;
      if (sectionsFit(part, off_[b])) result = descend(part, b, tight ? -1 : (*rank_)[b]);
      unplace(b, mark);
      // Hatless pruning (MiniMalloc): nothing unplaced overlaps b, so b at
      // its floor blocks nobody; if that failed, no sibling order helps.
      if (hatless) break;
    }
    children_.resize(base);
    return result;
  }

  // After placing b: if b was the last unplaced buffer crossing some section
  // boundary inside the part, solve the pieces independently; otherwise keep
  // going in canonical order.
  Result descend(const Part& part, int b, int lastRank) {
    std::vector<int> zeros;
    for (int s = secLo_[b]; s + 1 < secHi_[b]; ++s)
      if (--cut_[s] == 0) zeros.push_back(s);
    Result result;
    if (zeros.empty()) {
      result = dfs(part, off_[b], lastRank);
    } else {
      std::vector<Part> pieces;
      split(part, zeros, pieces);
      result = Result::kFound;
      for (const Part& piece : pieces) {
        result = solvePiece(piece);
        if (result != Result::kFound) break;
      }
    }
    for (int s = secLo_[b]; s + 1 < secHi_[b]; ++s) ++cut_[s];
    return result;
  }

  // An independent piece: a fresh canonical order, and the preorder ranked
  // again on what is left (restored after, the parent still compares ranks).
  Result solvePiece(const Part& piece) {
    std::vector<int>& rank = ranks_[heuristic_];
    std::vector<int> saved;
    saved.reserve(piece.members.size());
    for (int b : piece.members) saved.push_back(rank[b]);
    rankMembers(piece.members, heuristic_, rank);
    const Result result = dfs(piece, 0, -1);
    for (size_t i = 0; i < saved.size(); ++i) rank[piece.members[i]] = saved[i];
    return result;
  }

  // --- data -------------------------------------------------------------------

  std::vector<SearchBuffer> buf_;
  int n_ = 0;
  int numSections_ = 0;
  std::vector<int> secLo_, secHi_;     // per buffer: section range
  std::vector<i64> adjStart_;          // CSR overlap lists
  std::vector<int> adj_;
  std::vector<i64> secStart_;          // CSR section members, unplaced first
  std::vector<int> secMembers_;
  std::vector<int> secUnplaced_;       // per section: unplaced members (a prefix)
  std::vector<i64> posStart_;          // per buffer: its entries in memberPos_
  std::vector<i64> memberPos_;         // where b sits in section s's members
  std::vector<int> cut_;
  std::vector<Part> parts_;            // independent top-level parts
  struct Preorder {
    const char* keys;                         // three of T, W, A, S, Z
    std::vector<std::array<double, 5>> scale;  // per buffer and key (random orders)
    std::vector<int> tie;                      // tie-break position per buffer
  };
  std::vector<Preorder> preorders_;
  std::vector<std::vector<int>> ranks_;       // working ranks per preorder
  int heuristic_ = 0;
  std::vector<int> prevTwin_;

  // search state
  i64 target_ = 0;
  bool exactFloors_ = true;
  bool truncated_ = false;
  bool hatless_ = false;  // the last place() found no unplaced overlap
  bool deadEnd_ = false;  // collectChildren found a buffer that cannot fit
  bool tightRule_ = false;  // full-section branching on (solve's argument)
  bool tightNode_ = false;  // the last collectChildren narrowed them
  std::vector<i64> tightStamp_;  // full sections of the node being narrowed
  std::vector<int> tightCount_;  // their children at the lowest floor
  i64 tightClock_ = 0;
  std::vector<int> nbrLeft_;  // unplaced buffers overlapping each buffer

  const std::vector<int>* rank_ = nullptr;
  i64 nodesLeft_ = 0;
  i64 nodesUsed_ = 0;  // placements the last solve() made
  const Deadline* deadline_ = nullptr;
  std::vector<i64> off_, floor_, sol_;
  std::vector<i64> secTotal_, secFloor_;  // unplaced size; min unplaced floor
  std::vector<int> secWitness_;           // an unplaced member at that floor
  struct SectionChange {
    int section, witness;
    i64 floor;
  };
  std::vector<std::pair<int, i64>> floorTrail_;
  std::vector<SectionChange> secTrail_;
  std::vector<i64> secSaved_;          // placement stamp of the last save
  i64 placeStamp_ = 0;
  std::vector<int> children_;          // stack of candidate lists
};

}  // namespace
