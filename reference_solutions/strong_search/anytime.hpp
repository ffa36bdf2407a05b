// anytime.hpp -- strong_search (see main.cpp): the anytime driver.
//
// Tightener runs the canonical search round after round with budgets that
// double: first under the capacity, then tightening the height towards the
// lower bound, handing every better plan on at once.  Also the search's size
// limits (kMaxSearchBuffers, kMaxSearchEntries, kLargeSearch).

#pragma once

#include "section_floors.hpp"

namespace {

// ---------------------------------------------------------------------------
// Anytime driver: fit the capacity, then tighten the height.
// ---------------------------------------------------------------------------

class FillerGuesses;

class Tightener {
 public:
  using Result = CanonicalSearch::Result;

  using OnImprove = std::function<void(const std::vector<i64>&)>;

  Tightener(CanonicalSearch& search, std::vector<i64> offsets,
            const std::vector<SearchBuffer>& buffers, const Deadline& deadline,
            OnImprove onImprove)
      : search_(search), off_(std::move(offsets)), buf_(buffers), deadline_(deadline),
        onImprove_(std::move(onImprove)) {
    partPeak_.assign(search_.numParts(), 0);
    for (int p = 0; p < search_.numParts(); ++p) partPeak_[p] = partPeakOf(p, off_);
    // Settled offsets are sums of sizes rounded up to alignments, so when all
    // sizes and all alignments above 1 share a factor g, every reachable
    // height is a multiple of g and targets in between need not be tried.
    for (const SearchBuffer& b : buf_) {
      grain_ = std::gcd(grain_, b.size);
      if (b.align > 1) grain_ = std::gcd(grain_, b.align);
    }
    grain_ = std::max<i64>(grain_, 1);
  }

  const std::vector<i64>& offsets() const { return off_; }

  i64 peak() const {
    i64 peak = 0;
    for (i64 v : partPeak_) peak = std::max(peak, v);
    return peak;
  }

  // Phase 1: the seed is above capacity; search under the capacity with
  // growing budgets.  Returns false if that was proven impossible.
  // The padded searches of `guesses` (see fillerBuffers) search the same
  // buffers plus fillers, with full-section branching; after each of our
  // rounds they get twice its time, in turn, each at a small budget.  When the
  // fillers are right the search is nearly forced, so many guesses at small
  // budgets beat a few at large ones (dev seeds 2000-2059, 10 s: 16 guesses,
  // 2 a round sharing a round's budget, none past 64 per buffer: 52/60; 256
  // guesses at 16 per buffer, half our time: 55/60).  Budgets, not time, made
  // D and F slow: a guess's search costs several times ours per placement
  // (fillers add buffers), hence time.
  // A fit of theirs is a fit of ours (fillers dropped); their failure proves
  // nothing about ours, so a padded search found infeasible just leaves.
  bool fitCapacity(i64 capacity, FillerGuesses* guesses = nullptr);

  // fitCapacity with filler guesses made from our buffers and our offsets as
  // their seed (no padded searches past kMaxPaddedBuffers buffers).
  bool fitCapacityWithGuesses(i64 capacity);

  // Takes the leading offsets of a padded search (the real buffers) as ours.
  void adopt(const std::vector<i64>& offsets) {
    std::copy(offsets.begin(), offsets.begin() + (long)off_.size(), off_.begin());
    for (int p = 0; p < search_.numParts(); ++p) partPeak_[p] = partPeakOf(p, off_);
  }

  // Phase 2: lower the peak towards `lo` (a proven lower bound).  Each round
  // tries the lower bound, then binary-searches the heights between it and
  // the current peak; heights whose search ran out of budget are skipped
  // for this round, and the budget grows every round.
  void tighten(i64 lo) {
    lo = roundDown(lo + grain_ - 1);
    for (i64 budget = 2; peak() > lo && !deadline_.passed(); budget *= 2) {
      Result r = attempt(lo, budget);
      if (r == Result::kFound) return;
      if (r == Result::kInfeasible) lo += grain_;
      i64 softLo = r == Result::kInfeasible ? lo : lo + grain_;
      while (softLo < peak() && !deadline_.passed()) {
        const i64 target = roundDown(softLo + (peak() - 1 - softLo) / 2);
        r = attempt(target, budget);
        if (r == Result::kInfeasible) lo = softLo = target + grain_;
        if (r == Result::kAborted) softLo = target + grain_;
      }
    }
  }

 private:
  // Tries every part whose peak exceeds `target`.  A part's node budget is
  // `budget` times its size, per preorder heuristic (round robin).
  // `tightRule`: full-section branching (phase 1 only; it proves nothing).
  Result attempt(i64 target, i64 budget, bool tightRule = false) {
    Result result = Result::kFound;
    for (int p = 0; p < search_.numParts() && result == Result::kFound; ++p) {
      if (partPeak_[p] <= target) continue;
      result = attemptPart(p, target, budget * (i64)search_.partMembers(p).size(), tightRule);
    }
    logLine("target %lld budget %lld: %s, peak %lld", target, budget,
         result == Result::kFound ? "found" : result == Result::kInfeasible ? "infeasible" : "aborted",
         peak());
    return result;
  }

  // The fixed preorders get `nodes` each (MiniMalloc's round robin); then
  // kRandomPerRound randomized preorders, new ones every call while they
  // last, share another `nodes` * kRandomFrac, so diversity costs the
  // fixed orders at most that share of the time.
  Result attemptPart(int p, i64 target, i64 nodes, bool tightRule) {
    const int fixed = CanonicalSearch::kFixedOrders, random = search_.numHeuristics() - fixed;
    const int tries = fixed + (random > 0 ? kRandomPerRound : 0);
    for (int i = 0; i < tries; ++i) {
      if (deadline_.passed()) return Result::kAborted;
      const int h = i < fixed ? i : fixed + nextRandom_++ % random;
      const i64 budget = i < fixed ? nodes : std::max<i64>(1, (i64)(nodes * kRandomFrac / kRandomPerRound));
      Result r = search_.solve(p, target, h, budget, deadline_, tightRule);
      if (r == Result::kInfeasible) return r;
      if (r == Result::kFound) {
        logLine("part %d: preorder %d found it in %lld placements", p, h, search_.nodesUsed());
        std::vector<i64> candidate = off_;
        for (int b : search_.partMembers(p)) candidate[b] = search_.solutionOffset(b);
        const i64 peak = partPeakOf(p, candidate);
        if (peak > target) continue;  // defensive: never accept a worse part
        off_ = std::move(candidate);
        partPeak_[p] = peak;
        onImprove_(off_);  // anytime: the caller writes the plan at once
        return r;
      }
    }
    return Result::kAborted;
  }

  i64 partPeakOf(int p, const std::vector<i64>& offsets) const {
    i64 peak = 0;
    for (int b : search_.partMembers(p)) peak = std::max(peak, offsets[b] + buf_[b].size);
    return peak;
  }

  i64 roundDown(i64 height) const { return height - height % grain_; }

  static constexpr int kRandomPerRound = 4;
  static constexpr double kRandomFrac = 0.5;
  // Filler guesses: each try gets kGuessBudget per buffer (times 4 for every
  // pass the rotation has made over all guesses); after each of our rounds
  // they get kGuessShare of its time (at least kMinGuessSeconds).  Seeds
  // 900-1699, 10 s: 0.5 fitted 778-780 of 800, 1.0 779, 2.0 782-783; our
  // own search rarely fits late where the guesses have not.
  static constexpr i64 kGuessBudget = 16;
  static constexpr double kGuessShare = 2.0;
  static constexpr double kMinGuessSeconds = 0.005;
  CanonicalSearch& search_;
  int nextRandom_ = 0;
  i64 grain_ = 0;
  std::vector<i64> off_;
  const std::vector<SearchBuffer>& buf_;
  const Deadline& deadline_;
  OnImprove onImprove_;
  std::vector<i64> partPeak_;
};

// Limits that keep the search's memory bounded (a few hundred MB at most).
constexpr int kMaxSearchBuffers = 60000;
constexpr i64 kMaxSearchEntries = 20'000'000;
// Above this many buffers the search shares its time with the iterated greedy.
constexpr size_t kLargeSearch = 5000;

}  // namespace
