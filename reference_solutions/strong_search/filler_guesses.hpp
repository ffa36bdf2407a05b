// filler_guesses.hpp -- strong_search (see main.cpp): filler guesses.
//
// While nothing fits the capacity: guesses at the pieces removed from a
// perfect packing (random decompositions of the deficit profile and the
// cheapest ones, DeficitDecomposer), each searched as a padded case in the
// FillerGuesses rotation beside the plain search (Tightener::fitCapacity).
// STRONG_SEARCH_GUESSES=<path> writes the guesses (a test's diagnostic).

#pragma once

#include "anytime.hpp"

namespace {

// ---------------------------------------------------------------------------
// Filler guesses: padded searches while nothing fits the capacity
// ---------------------------------------------------------------------------

// Where the deficit profile (height - load, at least 0, and 0 from the last
// time on) changes: the time and the change, in time order.  Both guess
// makers below read only this (and the buffers, for evidence).
struct DeficitChange {
  i64 t, delta;
};

std::vector<DeficitChange> deficitChanges(const std::vector<SearchBuffer>& buffers, i64 height) {
  std::map<i64, i64> delta;  // load change at each time
  for (const SearchBuffer& b : buffers) {
    delta[b.lower] += b.size;
    delta[b.upper] -= b.size;
  }
  std::vector<DeficitChange> changes;
  i64 load = 0, deficit = 0;
  for (auto it = delta.begin(); it != delta.end(); ++it) {
    load += it->second;
    const i64 want = std::next(it) == delta.end() ? 0 : std::max<i64>(0, height - load);
    if (want != deficit) changes.push_back({it->first, want - deficit});
    deficit = want;
  }
  return changes;
}

// Fillers: buffers that raise the load of every time section to exactly
// `height`.  Where the load is below the height the search has slack that
// section inference cannot use (it bites only where a section is full), and
// MiniMalloc's challenging cases look like perfect packings of the square with
// a few pieces removed (the generator's docstring): with the removed pieces
// put back every section is full and the search is nearly forced (6 of 8
// such cases fit in under 0.3 s, against none with the pieces removed).  The
// fillers guess them from the deficit profile (height - load over time): a
// rise opens a filler (from variant 2 on, sometimes merged with open ones
// that end there); a fall closes an open filler of exactly its size if
// there is one (a removed piece ends as it began), otherwise, by `variant`,
// the latest (0), the earliest (1) or a random one (splitting it if it is
// larger).  A fit with fillers is a fit without them.  Where the guess is
// wrong the padded search rarely fails fast, and the guess must have the
// removed pieces' shape: with the true pieces as fillers 18 of 19 misses fit
// in under a second, with the same pieces cut at every deficit change (a
// relaxation) none of 6 did in 10 s.
std::vector<SearchBuffer> fillerBuffers(const std::vector<DeficitChange>& changes, int variant) {
  std::mt19937_64 rng(0x9e3779b9ULL * (variant + 1));
  std::vector<SearchBuffer> fillers;
  std::vector<std::pair<i64, i64>> open;  // (start, size), in opening order
  i64 deficit = 0;
  for (const auto [t, change] : changes) {
    const i64 want = deficit + change;
    if (want > deficit) {
      // Removed pieces may end where a taller one begins (the deficit shows
      // only the net rise): from variant 2 on, at 3 rises in 10, a random set
      // of the open fillers (or all) ends here and one filler of their sum
      // plus the rise begins.  Seeds 300-599's misses, 10 s: 18/34 fit with
      // it, 6/34 without; with the old cuts in time as well, 6/34.
      i64 merged = 0;
      if (variant >= 2 && rng() % 10 < 3) {
        const bool all = rng() % 2;
        for (size_t j = open.size(); j-- > 0;)
          if (all || rng() % 2) {
            if (open[j].first < t) fillers.push_back({open[j].first, t, open[j].second, 1});
            merged += open[j].second;
            open.erase(open.begin() + (long)j);
          }
      }
      open.push_back({t, want - deficit + merged});
    }
    for (i64 fall = deficit - want; fall > 0;) {
      size_t j = variant == 0 ? open.size() - 1 : variant == 1 ? 0 : rng() % open.size();
      for (size_t k = open.size(); k-- > 0;)
        if (open[k].second == fall) {
          j = k;
          break;
        }
      auto& [start, size] = open[j];
      const i64 cut = std::min(fall, size);
      if (start < t) fillers.push_back({start, t, cut, 1});
      fall -= cut;
      if ((size -= cut) == 0) open.erase(open.begin() + (long)j);
    }
    deficit = want;
  }
  return fillers;
}

// Cheapest decompositions of the deficit profile.  The random variants above
// rarely reproduce a case whose removed pieces end where others begin: with
// 3-8 such events per case, a guess must get every one right.  Here the
// deficit (height - load) is swept once per guess, as a uniform-cost search
// over the explanations of each change, and the cheapest complete ones come
// first.  At a rise: a filler opens (the usual case), or one or two open
// fillers end there and one of their sum plus the rise opens.  At a fall: an
// open filler of exactly its size ends; else two whose sum it is; else a
// filler larger than the fall gives up that much (two pieces that began
// together, one ends: "split"), or ends while the difference opens
// ("reopen"), or several end.  The costs are about -ln of how often each
// explanation was the true one on generated cases (scripts/offset_cases.py,
// seeds 3000-3399, counted before any search ran), so the order is a
// likelihood order; a tie between fillers is broken by age.  A piece also
// costs more (kNoEvidence) when no buffer backs its shape: in a guillotine
// packing a removed piece's time sibling usually has its size and meets it
// (a buffer of its size ends where it begins or begins where it ends), or
// its address sibling has its lifespan.  Measured on seeds 3000-3099: the
// true pieces (with joints the deficit cannot show merged) are the cheapest
// guess in 39 of 73 sliced cases and among the first 32 in 64; the random
// variants reached them in none of the 12 cases this planner missed.
class DeficitDecomposer {
 public:
  static constexpr double kOpen = 0.1, kMerge = 2.3, kMergeAge = 0.5, kMerge2 = 4.5;
  static constexpr double kExactAge = 0.7, kPair = 0.03, kPairAge = 0.7;
  static constexpr double kSplit = 0.55, kSplitAge = 0.8, kReopen = 1.26, kReopenAge = 1.0;
  static constexpr double kReopen2 = 4.0, kSeveral = 2.6, kNoEvidence = 1.2;
  // Pairs of open fillers are explanations only while few are open (they
  // grow as the square; generated cases keep at most 12 removed pieces live).
  static constexpr int kMaxPairOpen = 32;
  // Gives up when nothing is complete by then: on generated cases the first
  // complete decomposition comes within 26,000 (seeds 3000-3040, 3173).
  static constexpr size_t kMaxPopsToFirst = 100'000;

  DeficitDecomposer(const std::vector<DeficitChange>& changes,
                    const std::vector<SearchBuffer>& buffers)
      : events_(changes) {
    for (const SearchBuffer& b : buffers) {
      ends_.insert({b.upper, b.size});
      starts_.insert({b.lower, b.size});
      spans_.insert({b.lower, b.upper});
    }
  }

  // Starts (or restarts) the sweep.  With `perEvent` > 0 a node is ranked by
  // its cost plus perEvent for each event left: deeper nodes come first, so
  // complete decompositions come out where the likelihood order alone runs
  // out of room with none (cases with many removed pieces live at once: each
  // partial decomposition holds them all, and the cheapest partial ones fill
  // the bound on open fillers far from the end; 4 of the 4 cases of seeds
  // 900-1099 this planner missed got no guess).
  void start(double perEvent = 0) {
    perEvent_ = perEvent;
    heap_ = {};
    seen_.clear();
    nodes_.clear();
    links_.clear();
    kept_ = 0;
    emitted_ = 0;
    const double rank = perEvent * (double)events_.size();
    nodes_.push_back({0, {}, -1});
    heap_.push({rank, 0});
  }

  // The next distinct guess, cheapest first, or none: the sweep is done, its
  // partial decompositions hold `maxOpen` open fillers (each holds its open
  // list), it popped kMaxPopsToFirst nodes without completing a first one,
  // or the deadline.  Resumable, so a guess costs only when the rotation
  // reaches it (the decomposer may run long where many pieces are live).
  std::optional<std::vector<SearchBuffer>> next(size_t maxOpen, const Deadline& deadline) {
    for (size_t pops = 0; !heap_.empty() && kept_ < maxOpen; ++pops) {
      if ((pops & 1023) == 0 && deadline.passed()) break;
      if (emitted_ == 0 && pops >= kMaxPopsToFirst) break;  // no end in sight (E: 0.4 s)
      const auto [rank, index] = heap_.top();
      heap_.pop();
      if (nodes_[index].event == (int)events_.size()) {
        std::vector<std::array<i64, 3>> key = normalized(nodes_[index].emitted);
        if (key.empty() || !seen_.insert(key).second) continue;
        ++emitted_;
        std::vector<SearchBuffer> fillers;
        for (const auto& [lo, up, size] : key) fillers.push_back({lo, up, size, 1});
        return fillers;
      }
      expand(index, rank);
    }
    return std::nullopt;
  }

  // Guesses returned since start().
  int emitted() const { return emitted_; }

 private:
  struct Open {
    i64 start, size;
  };
  struct Piece {
    i64 start, end, size;
  };
  struct Node {
    int event;
    std::vector<Open> open;  // in opening order
    int emitted;             // last link of its chain of closed pieces, or -1
  };

  // Queues the explanations of the node's next event.
  void expand(size_t index, double rank) {
    for (Option& o : options(nodes_[index])) {
      int chain = nodes_[index].emitted;
      double pieceCost = 0;
      for (const Piece& p : o.emitted) {
        if (p.start >= p.end) continue;
        links_.push_back({p, chain});
        chain = (int)links_.size() - 1;
        if (!evidenced(p)) pieceCost += kNoEvidence;
      }
      kept_ += o.open.size() + 1;
      nodes_.push_back({nodes_[index].event + 1, std::move(o.open), chain});
      heap_.push({rank + o.cost + pieceCost - perEvent_, nodes_.size() - 1});
    }
  }

  struct Link {
    Piece piece;
    int prev;
  };
  struct Option {
    double cost;
    std::vector<Open> open;
    std::vector<Piece> emitted;
  };

  bool evidenced(const Piece& p) const {
    return ends_.count({p.start, p.size}) || starts_.count({p.end, p.size}) ||
           spans_.count({p.start, p.end});
  }

  // The explanations of the node's next event, each with its cost.
  std::vector<Option> options(const Node& node) const {
    const auto [t, delta] = events_[node.event];
    const std::vector<Open>& open = node.open;
    const int n = (int)open.size();
    std::vector<Option> out;
    auto without = [&](int j, int k = -1) {
      std::vector<Open> rest;
      for (int i = 0; i < n; ++i)
        if (i != j && i != k) rest.push_back(open[i]);
      return rest;
    };
    auto ends = [&](int j) { return Piece{open[j].start, t, open[j].size}; };
    if (node.event + 1 == (int)events_.size()) {  // the last time: everything ends
      Option all{0, {}, {}};
      for (int j = 0; j < n; ++j) all.emitted.push_back(ends(j));
      out.push_back(std::move(all));
      return out;
    }
    if (delta > 0) {
      std::vector<Open> opened = open;
      opened.push_back({t, delta});
      out.push_back({kOpen, std::move(opened), {}});
      for (int age = 0; age < n; ++age) {  // youngest first
        const int j = n - 1 - age;
        std::vector<Open> rest = without(j);
        rest.push_back({t, open[j].size + delta});
        out.push_back({kMerge + kMergeAge * age, std::move(rest), {ends(j)}});
      }
      for (int j = 0; j < n && n <= kMaxPairOpen; ++j)
        for (int k = j + 1; k < n; ++k) {
          std::vector<Open> rest = without(j, k);
          rest.push_back({t, open[j].size + open[k].size + delta});
          out.push_back({kMerge2, std::move(rest), {ends(j), ends(k)}});
        }
      return out;
    }
    const i64 fall = -delta;
    int age = 0;
    for (int j = n - 1; j >= 0; --j)  // exactly its size, youngest first
      if (open[j].size == fall) out.push_back({kExactAge * age++, without(j), {ends(j)}});
    if (!out.empty()) return out;
    for (int j = n - 1; j >= 0 && n <= kMaxPairOpen; --j)
      for (int k = j - 1; k >= 0; --k)
        if (open[j].size + open[k].size == fall)
          out.push_back({kPair + kPairAge * age++, without(j, k), {ends(j), ends(k)}});
    if (!out.empty()) return out;
    int splitAge = 0, reopenAge = 0;
    for (int j = 0; j < n; ++j) {  // split: oldest first
      if (open[j].size <= fall) continue;
      std::vector<Open> rest = open;
      rest[j].size -= fall;
      out.push_back({kSplit + kSplitAge * splitAge++, std::move(rest), {{open[j].start, t, fall}}});
    }
    for (int j = n - 1; j >= 0; --j) {  // reopen: youngest first
      if (open[j].size <= fall) continue;
      std::vector<Open> rest = without(j);
      rest.push_back({t, open[j].size - fall});
      out.push_back({kReopen + kReopenAge * reopenAge++, std::move(rest), {ends(j)}});
    }
    for (int j = 0; j < n && n <= kMaxPairOpen; ++j)
      for (int k = j + 1; k < n; ++k) {
        if (open[j].size + open[k].size <= fall) continue;
        std::vector<Open> rest = without(j, k);
        rest.push_back({t, open[j].size + open[k].size - fall});
        out.push_back({kReopen2, std::move(rest), {ends(j), ends(k)}});
      }
    // Several end: the youngest first, the last of them split.
    Option several{kSeveral, open, {}};
    for (i64 left = fall; left > 0 && !several.open.empty();) {
      Open& last = several.open.back();
      const i64 cut = std::min(left, last.size);
      several.emitted.push_back({last.start, t, cut});
      left -= cut;
      if ((last.size -= cut) == 0) several.open.pop_back();
    }
    out.push_back(std::move(several));
    return out;
  }

  // The guess as the search sees it: pieces of one lifespan are one filler,
  // and pieces of one size that meet in time are one (the deficit cannot
  // tell either apart).  Sorted (lower, upper, size) triples.
  std::vector<std::array<i64, 3>> normalized(int chain) const {
    std::map<std::pair<i64, i64>, i64> bySpan;
    for (int l = chain; l >= 0; l = links_[l].prev)
      bySpan[{links_[l].piece.start, links_[l].piece.end}] += links_[l].piece.size;
    std::multimap<std::pair<i64, i64>, i64> byStart;  // (start, size) -> end
    for (const auto& [span, size] : bySpan) byStart.insert({{span.first, size}, span.second});
    std::vector<std::array<i64, 3>> key;
    while (!byStart.empty()) {
      auto it = byStart.begin();
      const auto [start, size] = it->first;
      i64 end = it->second;
      byStart.erase(it);
      for (auto next = byStart.find({end, size}); next != byStart.end();
           next = byStart.find({end, size})) {
        end = next->second;
        byStart.erase(next);
      }
      key.push_back({start, end, size});
    }
    std::sort(key.begin(), key.end());
    return key;
  }

  std::vector<DeficitChange> events_;
  std::set<std::pair<i64, i64>> ends_, starts_, spans_;
  std::vector<Node> nodes_;
  std::vector<Link> links_;
  using Entry = std::pair<double, size_t>;    // (rank, node), lowest first
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap_;
  std::set<std::vector<std::array<i64, 3>>> seen_;
  double perEvent_ = 0;
  size_t kept_ = 0;  // open fillers held by all nodes
  int emitted_ = 0;
};

// Filler guesses searched beside the real problem while it does not fit, on
// cases of up to kMaxPaddedBuffers search buffers (MiniMalloc's have 150-300).
constexpr int kFillerVariants = 256;
constexpr int kStructuredGuesses = 256;
// The decomposer's second try ranks a node by its cost plus this per event
// left (complete decompositions of generated cases cost 0.4-0.7 per event;
// at 0.5 one of the four missed cases still got none, at 1.0 all got 256).
constexpr double kDeeperPerEvent = 1.0;
// The decomposer's room: open fillers over all its partial decompositions
// (about 40 bytes each with their nodes: 590 MB at most measured on seeds
// 900-1699).  At 2 M it ran out of room before the truth on seeds 1128 and
// 1350 (ranks 240 and 121 at 16 M) and after 7 guesses on 1471 (208).
constexpr size_t kMaxDecomposerOpen = 16'000'000;
// Bounds the padded searches' memory (about 300 MB: 300 guesses of a
// MiniMalloc-sized case, 50 of a 2,000-buffer one).
constexpr size_t kMaxPaddedTotal = 100'000;
constexpr size_t kMaxPaddedBuffers = 2000;

// Diagnostics: with STRONG_SEARCH_GUESSES=path the decomposer's guesses are
// written there in order (guess,lower,upper,size), for measuring where the
// true removed pieces rank (benchmarks/filler_truths.py --ranks).
void dumpGuesses(const char* path, const std::deque<std::vector<SearchBuffer>>& guesses) {
  std::ofstream out(path);
  out << "guess,lower,upper,size\n";
  for (size_t g = 0; g < guesses.size(); ++g)
    for (const SearchBuffer& f : guesses[g])
      out << g << ',' << f.lower << ',' << f.upper << ',' << f.size << '\n';
}

// The filler guesses of one case (the buffers alone, then DeficitDecomposer's
// cheapest decompositions, then fillerBuffers' variants), each distinct one
// built into a padded search, and one with time reversed, when the rotation
// first reaches it: building costs about as much as a small search, so the
// hundreds a case may try are not all paid for up front.
class FillerGuesses {
 public:
  FillerGuesses(const std::vector<SearchBuffer>& buffers, i64 capacity, int variants,
                std::vector<i64> seed, const Deadline& deadline, Tightener::OnImprove onImprove)
      : buffers_(buffers), capacity_(capacity), variants_(variants), seed_(std::move(seed)),
        deadline_(deadline), onImprove_(std::move(onImprove)) {}

  // The next guess in rotation (a new one while any is left to build), or
  // nullptr when none is left.
  Tightener* next() {
    if (cursor_ >= rotation_.size() && !buildNext()) {
      if (rotation_.empty()) return nullptr;
      cursor_ = 0;
      ++passes_;
    }
    return rotation_[last_ = cursor_++];
  }

  // The guess next() returned last was proven infeasible: it leaves.
  void dropLast() {
    rotation_.erase(rotation_.begin() + (long)last_);
    if (cursor_ > last_) --cursor_;
  }

  // How many times the rotation has gone over every guess.
  int passes() const { return passes_; }
  int built() const { return (int)searches_.size(); }

 private:
  // The decomposer's next guess (it is made when first needed, after the
  // buffers alone), or none: kStructuredGuesses taken, or it has no more.
  std::optional<std::vector<SearchBuffer>> nextStructured() {
    if (!decomposed_) {
      decomposed_ = true;
      deficit_ = deficitChanges(buffers_, capacity_);
      decomposer_.emplace(deficit_, buffers_);
      decomposer_->start();
      if (const char* path = std::getenv("STRONG_SEARCH_GUESSES")) {  // a diagnostic: all at once
        while (std::optional<std::vector<SearchBuffer>> guess = pullStructured())
          dumped_.push_back(std::move(*guess));
        dumpGuesses(path, dumped_);
      }
    }
    if (dumped_.empty()) return pullStructured();  // none once the decomposer is done
    std::vector<SearchBuffer> guess = std::move(dumped_.front());
    dumped_.pop_front();
    return guess;
  }

  // From the decomposer while it has guesses to give; freed once it has not.
  std::optional<std::vector<SearchBuffer>> pullStructured() {
    while (decomposer_ && decomposer_->emitted() < kStructuredGuesses) {
      if (std::optional<std::vector<SearchBuffer>> guess =
              decomposer_->next(kMaxDecomposerOpen, deadline_))
        return guess;
      if (decomposer_->emitted() > 0 || deeper_ || deadline_.passed()) break;
      decomposer_->start(kDeeperPerEvent);  // none complete: a deeper-first order
      deeper_ = true;
    }
    decomposer_.reset();  // its room (up to several hundred MB) is not needed again
    return std::nullopt;
  }

  // Builds the next distinct guess and appends it to the rotation.
  bool buildNext() {
    while (nextVariant_ < variants_ && !deadline_.passed()) {
      const bool alone = nextVariant_ < 0;  // the buffers alone come first
      std::vector<SearchBuffer> fillers;
      if (alone)
        ++nextVariant_;
      else if (std::optional<std::vector<SearchBuffer>> guess = nextStructured())
        fillers = std::move(*guess);  // before the random variants
      else
        fillers = fillerBuffers(deficit_, nextVariant_++);
      if (!alone && fillers.empty()) break;  // the buffers fill every section
      std::vector<std::array<i64, 3>> key;
      for (const SearchBuffer& f : fillers) key.push_back({f.lower, f.upper, f.size});
      std::sort(key.begin(), key.end());
      if (!seen_.insert(std::move(key)).second) continue;
      std::vector<SearchBuffer> padded = buffers_;
      padded.insert(padded.end(), fillers.begin(), fillers.end());
      if (!addSearch(mirrored(padded)) || !addSearch(std::move(padded))) break;
      return true;
    }
    nextVariant_ = variants_;
    return false;
  }

  // The same buffers with time reversed: a plan for them is a plan for the
  // original (offsets do not depend on the direction of time), but the
  // search's canonical order and its floors differ, and its time to a fit is
  // as heavy-tailed: with the true removed pieces, 3 of 7 slow cases fitted
  // in under 0.3 s reversed.
  static std::vector<SearchBuffer> mirrored(std::vector<SearchBuffer> buffers) {
    i64 first = kInf, last = -kInf;
    for (const SearchBuffer& b : buffers) {
      first = std::min(first, b.lower);
      last = std::max(last, b.upper);
    }
    for (SearchBuffer& b : buffers) b = {first + last - b.upper, first + last - b.lower, b.size, b.align};
    return buffers;
  }

  // Builds a padded search of `padded` into the rotation (false: too large,
  // or the searches built so far hold kMaxPaddedTotal buffers: each costs
  // a few KB per buffer, its preorders' keys mostly).
  bool addSearch(std::vector<SearchBuffer> padded) {
    if ((paddedTotal_ += padded.size()) > kMaxPaddedTotal) return false;
    padBuffers_.push_back(std::move(padded));  // a deque: Tighteners keep references
    auto search = std::make_unique<CanonicalSearch>(padBuffers_.back());
    if (!search->build(kMaxSearchEntries)) return false;
    std::vector<i64> padSeed = seed_;
    padSeed.resize(padBuffers_.back().size(), 0);
    tighteners_.push_back(std::make_unique<Tightener>(*search, padSeed, padBuffers_.back(),
                                                      deadline_, onImprove_));
    searches_.push_back(std::move(search));
    rotation_.push_back(tighteners_.back().get());
    return true;
  }

  const std::vector<SearchBuffer>& buffers_;
  i64 capacity_;
  int variants_;
  std::vector<DeficitChange> deficit_;
  bool decomposed_ = false;                      // deficit_ and decomposer_ are made
  std::optional<DeficitDecomposer> decomposer_;  // made when first needed, freed when done
  bool deeper_ = false;                          // it runs its deeper-first order
  std::deque<std::vector<SearchBuffer>> dumped_;  // its guesses not yet taken, under the diagnostic
  size_t paddedTotal_ = 0;  // buffers over all padded searches built
  std::vector<i64> seed_;
  const Deadline& deadline_;
  Tightener::OnImprove onImprove_;
  int nextVariant_ = -1;
  std::deque<std::vector<SearchBuffer>> padBuffers_;
  std::vector<std::unique_ptr<CanonicalSearch>> searches_;
  std::vector<std::unique_ptr<Tightener>> tighteners_;
  std::vector<Tightener*> rotation_;
  std::set<std::vector<std::array<i64, 3>>> seen_;
  size_t cursor_ = 0, last_ = 0;
  int passes_ = 0;
};

bool Tightener::fitCapacity(i64 capacity, FillerGuesses* guesses) {
  for (i64 budget = 2; !deadline_.passed(); budget *= 2) {
    const double start = elapsedSeconds();
    Result r = attempt(roundDown(capacity), budget);
    if (r == Result::kFound) return true;
    if (r == Result::kInfeasible) return false;
    // The guesses' time this round: a share of ours (a guess's search can
    // cost far more per placement than ours: fillers add buffers).
    const double now = elapsedSeconds();
    const double until = now + std::max(kMinGuessSeconds, kGuessShare * (now - start));
    while (guesses != nullptr && elapsedSeconds() < until && !deadline_.passed()) {
      Tightener* pad = guesses->next();
      if (pad == nullptr) break;
      const i64 guessBudget = kGuessBudget << std::min(2 * guesses->passes(), 20);
      r = pad->attempt(pad->roundDown(capacity), guessBudget, true);
      if (r == Result::kFound && pad->peak() <= capacity) {
        adopt(pad->offsets());
        return true;
      }
      if (r == Result::kInfeasible) guesses->dropLast();  // cannot complete
    }
  }
  return false;
}

bool Tightener::fitCapacityWithGuesses(i64 capacity) {
  const int variants = buf_.size() <= kMaxPaddedBuffers ? kFillerVariants : -1;
  FillerGuesses guesses(buf_, capacity, variants, off_, deadline_, onImprove_);
  const bool fits = fitCapacity(capacity, &guesses);
  logLine("search: %d distinct filler guesses built", guesses.built());
  return fits;
}

}  // namespace
