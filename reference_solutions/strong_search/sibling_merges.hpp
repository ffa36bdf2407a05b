// sibling_merges.hpp -- strong_search (see main.cpp): sibling merges.
//
// The guillotine guess: buffers of one lifespan stacked into one, buffers of
// one size where one ends as the other begins chained into one
// (SiblingMerger), searched with their own filler guesses for a share of the
// time before the case itself (fitMergedGuess); a fit expands to a plan of
// the case.  STRONG_SEARCH_NO_MERGE=1 skips it.

#pragma once

#include "filler_guesses.hpp"

namespace {

// ---------------------------------------------------------------------------
// Sibling merges: the guillotine guess
// ---------------------------------------------------------------------------
// MiniMalloc's challenging cases are guillotine cuts of the horizon x capacity
// rectangle with some pieces left out (scripts/offset_cases.py measures it:
// A-E match random cuts of every piece above an area cap).  Two pieces cut
// apart across addresses share one lifespan; two cut apart in time share one
// size and meet where the first ends.  Merging them back (every group of one
// lifespan stacked into one buffer of the summed size; a pair of one size where
// one ends exactly as the other begins, the only such pair at that time and
// size, chained into one buffer over both lifespans), until nothing changes,
// is a restriction: each member's rectangle lies inside its merged buffer's,
// so an expanded plan of the merged case is a plan of ours.  It shrinks the
// search (A 154 -> 11 buffers, E 215 -> 54, F 296 -> 136) and leaves mostly
// the removed pieces' neighbours to place.  A coincidence of times and sizes
// can merge pieces that were not siblings and make it infeasible, so it is a
// guess, tried for a share of the time before the rest (see fitMergedGuess).
// Only buffers with alignment 1 merge (a stacked member's offset is its
// merged buffer's plus the sizes below it).

struct MergedCase {
  std::vector<SearchBuffer> buffers;  // the merged buffers
  std::vector<int> item;              // per original buffer: its merged buffer
  std::vector<i64> delta;             // per original buffer: its offset inside it

  std::vector<i64> expand(const std::vector<i64>& offsets) const {
    std::vector<i64> out(item.size());
    for (size_t b = 0; b < item.size(); ++b) out[b] = offsets[item[b]] + delta[b];
    return out;
  }
};

class SiblingMerger {
 public:
  SiblingMerger(const std::vector<SearchBuffer>& buffers, i64 capacity)
      : cur_(buffers), capacity_(capacity) {
    members_.resize(buffers.size());
    for (size_t b = 0; b < buffers.size(); ++b) members_[b] = {(int)b};
    delta_.assign(buffers.size(), 0);
  }

  // Merges to a fixed point (`chains`: time siblings too, else stacks only).
  MergedCase run(bool chains) {
    for (int round = 0; round < kMaxRounds; ++round) {
      const bool stacked = stackRound();
      if (!(chains && chainRound()) && !stacked) break;
    }
    MergedCase merged{cur_, std::vector<int>(delta_.size()), delta_};
    for (size_t k = 0; k < members_.size(); ++k)
      for (int b : members_[k]) merged.item[b] = (int)k;
    return merged;
  }

 private:
  // Merged buffers whose alignment lets them merge, sorted by `key`.
  template <typename Key>
  std::vector<int> mergeable(Key key) const {
    std::vector<int> order;
    for (size_t k = 0; k < cur_.size(); ++k)
      if (cur_[k].align == 1) order.push_back((int)k);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return key(a) < key(b); });
    return order;
  }

  // One lifespan, one buffer: members in index order, each above the last.
  bool stackRound() {
    auto span = [&](int k) { return std::tuple(cur_[k].lower, cur_[k].upper, k); };
    const std::vector<int> order = mergeable(span);
    std::vector<std::vector<int>> groups;
    for (size_t i = 0; i < order.size();) {
      size_t j = i + 1;
      i64 total = cur_[order[i]].size;
      while (j < order.size() && cur_[order[j]].lower == cur_[order[i]].lower &&
             cur_[order[j]].upper == cur_[order[i]].upper && total <= capacity_)
        total += cur_[order[j++]].size;  // sizes <= capacity <= 2^61 here: no wrap
      if (j - i > 1 && total <= capacity_) groups.emplace_back(order.begin() + (long)i, order.begin() + (long)j);
      i = j;
    }
    for (const std::vector<int>& group : groups) {
      i64 below = 0;
      for (int k : group) {
        for (int b : members_[k]) delta_[b] += below;
        below += cur_[k].size;
      }
    }
    return apply(groups, [&](const std::vector<int>& g) {
      i64 size = 0;
      for (int k : g) size += cur_[k].size;
      return SearchBuffer{cur_[g[0]].lower, cur_[g[0]].upper, size, 1};
    });
  }

  // One size, meeting in time, the only pair at that time and size.
  bool chainRound() {
    auto byEnd = [&](int k) { return std::pair(cur_[k].upper, cur_[k].size); };
    auto byStart = [&](int k) { return std::pair(cur_[k].lower, cur_[k].size); };
    const std::vector<int> ends = mergeable(byEnd), starts = mergeable(byStart);
    std::vector<char> used(cur_.size(), 0);
    std::vector<std::vector<int>> pairs;
    size_t s = 0;
    for (size_t e = 0; e < ends.size();) {
      size_t e2 = e + 1;
      while (e2 < ends.size() && byEnd(ends[e2]) == byEnd(ends[e])) ++e2;
      while (s < starts.size() && byStart(starts[s]) < byEnd(ends[e])) ++s;
      size_t s2 = s;
      while (s2 < starts.size() && byStart(starts[s2]) == byEnd(ends[e])) ++s2;
      const int a = ends[e], b = s2 == s + 1 ? starts[s] : -1;
      if (e2 == e + 1 && b >= 0 && !used[a] && !used[b]) {
        used[a] = used[b] = 1;
        pairs.push_back({a, b});
      }
      e = e2;
    }
    return apply(pairs, [&](const std::vector<int>& g) {
      return SearchBuffer{cur_[g[0]].lower, cur_[g[1]].upper, cur_[g[0]].size, 1};
    });
  }

  // Replaces every group by the buffer `make` gives it (members joined).
  template <typename Make>
  bool apply(const std::vector<std::vector<int>>& groups, Make make) {
    if (groups.empty()) return false;
    std::vector<char> gone(cur_.size(), 0);
    std::vector<SearchBuffer> next;
    std::vector<std::vector<int>> members;
    for (const std::vector<int>& g : groups) {
      next.push_back(make(g));
      members.emplace_back();
      for (int k : g) {
        gone[k] = 1;
        members.back().insert(members.back().end(), members_[k].begin(), members_[k].end());
      }
    }
    for (size_t k = 0; k < cur_.size(); ++k) {
      if (gone[k]) continue;
      next.push_back(cur_[k]);
      members.push_back(std::move(members_[k]));
    }
    cur_ = std::move(next);
    members_ = std::move(members);
    return true;
  }

  static constexpr int kMaxRounds = 64;  // generated cases settle in under 10
  std::vector<SearchBuffer> cur_;
  i64 capacity_;
  std::vector<std::vector<int>> members_;  // original buffers in each merged one
  std::vector<i64> delta_;
};

// Each merged guess (all siblings, then stacks only) gets this share of the
// time left.  Seeds 900-999 (10 s): the full merge fits 100/100 in under
// 0.03 s each; F's fits in 5.7 s merged fully and 0.02 s stacks only.
constexpr double kMergedShare = 0.1;

// Tries the merged guesses while the plan is above `capacity`; on a fit,
// `tightener` adopts the expanded plan.  Each gets its own canonical search
// and filler guesses (the merged case keeps the removed pieces' holes).
bool fitMergedGuess(const std::vector<SearchBuffer>& buffers, i64 capacity,
                    const Deadline& deadline, Tightener& tightener,
                    const Tightener::OnImprove& onImprove) {
  if (std::getenv("STRONG_SEARCH_NO_MERGE")) return false;  // a diagnostic: the search alone
  size_t previous = buffers.size();
  for (const bool chains : {true, false}) {
    const MergedCase merged = SiblingMerger(buffers, capacity).run(chains);
    const size_t count = merged.buffers.size();
    if (count == buffers.size() || count == previous || deadline.passed()) continue;  // nothing new
    previous = count;
    const double now = elapsedSeconds();
    const Deadline slice{now + kMergedShare * (deadline.at - now)};
    CanonicalSearch search(merged.buffers);
    if (!search.build(kMaxSearchEntries)) continue;
    std::vector<i64> seed;  // stacked: valid, and above the capacity unless it fits
    i64 top = 0;
    for (const SearchBuffer& b : merged.buffers) {
      seed.push_back(top);
      top += b.size;
    }
    auto expanded = [&](const std::vector<i64>& found) { onImprove(merged.expand(found)); };
    Tightener ours(search, std::move(seed), merged.buffers, slice, expanded);
    const bool fits = ours.fitCapacityWithGuesses(capacity);
    logLine("merged guess (%s): %zu buffers, %s", chains ? "all siblings" : "stacks only",
            merged.buffers.size(), fits ? "fits" : "no fit");
    if (fits) {
      tightener.adopt(merged.expand(ours.offsets()));
      return true;
    }
  }
  return false;
}

}  // namespace
