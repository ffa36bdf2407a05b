// strong_search.cpp -- MemoRace reference planner "strong_search" (offset type).
//
// Build: g++ -O2 -std=c++20 -o planner strong_search.cpp
//
// Contract (see README.md): reads $MEMORACE_CASE_DIR/{case.json,buffers.csv},
// writes $MEMORACE_OUT_DIR/plan.csv with header "id,offset".
//
// Pipeline
//   1. Greedy seeds.  A sweep allocator (replays the lifespans in time order
//      with a best-fit free list; O(n log n) whatever the overlap, so a plan
//      always exists), then several orderings (size, live total, area,
//      lifespan) with three placement rules: first fit and best fit (lowest /
//      tightest address gap free over the whole lifespan) and a "floor dive"
//      (the canonical search's first path, without backtracking).  First and
//      best fit find the placed buffers that meet a lifespan with
//      greedy_size.cpp's PlacedSet (a stabbing tree plus a bitset, each one
//      reported once), so greedy by size runs as fast as greedy_size; a run
//      costs O(n log n) plus the overlapping pairs, never an all-pairs scan.
//      The best seed is
//      written to plan.csv at once.  Large traces (over 5,000 buffers): the
//      sweep plan is written first, then best_fit's skyline rules (they win on
//      most large traces), then greedy by size until the deadline.
//   2. Canonical search in the style of MiniMalloc (Moffitt, ASPLOS 2023),
//      asked "can everything be placed under height T?":
//        - offsets are assigned in non-decreasing order, every buffer at its
//          "floor" (lowest aligned offset above the placed buffers it overlaps
//          in time); ties are ordered by a static preorder rank, so each
//          settled solution is reached exactly once;
//        - children are tried by (floor, preorder rank); four preorders are
//          run round robin with placement budgets that double (restarts),
//          plus randomized preorders (new ones each round) that share a
//          further half budget: search time per order is heavy-tailed;
//        - a node fails at once when an unplaced buffer's floor + size
//          exceeds T (floors only rise);
//        - section inference: in every time section (elementary interval
//          between consecutive start / end times) the unplaced buffers stack
//          above both the section floor and the current offset, so
//          floor + unplaced size <= T;
//        - a buffer skipped by the canonical order with no unplaced
//          neighbour left to raise its floor can never be placed;
//        - symmetry: identical buffers are placed in index order;
//        - dominance: a buffer may not be placed at or above the lowest
//          possible top (floor + size) of another unplaced buffer, since that
//          buffer would then fit entirely in the gap below;
//        - decomposition: when no unplaced buffer crosses a section boundary,
//          the two sides are solved independently (failure of one side fails
//          the node without re-enumerating the other side), each with its
//          preorder ranked again on what is left of it (MiniMalloc's SubSolve:
//          T, the largest section total, counts only unplaced buffers).
//      While the seed is above the capacity, the search first runs on the
//      case with its guillotine siblings merged (SiblingMerger: buffers of
//      one lifespan stacked into one, buffers of one size where one ends as
//      the other begins chained into one; a restriction, so a fit of it is a
//      fit of ours), for a tenth of the time left, then with the stacks only,
//      for a tenth of what is left then (STRONG_SEARCH_NO_MERGE=1 skips both).
//      Then the same search also runs on
//      the buffers plus "fillers" that fill every section to the capacity
//      (guesses at the pieces removed from a perfect packing, MiniMalloc's
//      challenging cases): the buffers alone, then the 256 cheapest
//      decompositions of the deficit profile (DeficitDecomposer, a
//      likelihood order), then up to 256 randomized ones (fillerBuffers),
//      each searched both ways in time, built when first tried
//      (FillerGuesses; the decompositions too are made only as the
//      rotation reaches them) and tried at a small budget in turn after
//      each of our rounds, for twice its time: a right guess fits almost at
//      once, so many cheap guesses beat a few long ones.
//      These searches branch on a full section (narrowToTightSection): with
//      no room to waste, one of its members must sit at the lowest floor.
//      First T = capacity (only if the seed does not fit), then T is tightened
//      by rounds of growing budget: the lower bound first, then a binary
//      search between it and the current peak, until peak == lower bound or
//      the deadline (min(0.8 * time_limit_s, 55 s) from program start).
//      Measured, not kept (generated sliced seeds 1000-1039, 10 s limit;
//      this search with fillers: 30/40): the plain search alone, i.e.
//      MiniMalloc's rules without fillers, fits 17/40 (so MiniMalloc's own
//      algorithm is not what fits this family; the fillers are), 19/40 with
//      explicit bans instead of the rank rule (a failed sibling may not sit
//      at its floor in later siblings' subtrees, so children may be
//      reordered) plus full-section branching and "tightest section first"
//      ordering.  A release-date bound per section (its unplaced buffers as
//      jobs with release dates = floors; the earliest-release schedule must
//      end within T) in every search: 31/40 with fillers, but the plain
//      search fitted E in 5.1 s of CPU against 3.5; with bans and fail
//      first too, 32/40 but E did not fit in 8 s; in the padded searches
//      only, they ran several times slower per budget and D did not fit.
//   3. Iterated greedy with the time left (large cases): the best seed's
//      order is perturbed by moving a buffer that touches the peak earlier.
//   4. The best plan is written (a search plan only after validation).
//
// Set STRONG_SEARCH_VERBOSE=1 for progress lines on stderr.
//
// Sections (each opens with a header comment): time keeping; input / output;
// wide values (cases past 2^60, mapped onto units of 2^k bytes); basic facts
// about a case (lower bound, slots); OverlapIndex (segment tree over slots,
// used by the floor dive and the skyline's descent); PlacedSet (greedy_size's
// overlap structure: first / best fit, plan checks); greedy seeds (first / best
// fit, sweep allocator, floor dive, iterated greedy); skyline best fit and its
// iterated variant; canonical search; anytime driver (fit the capacity, then
// tighten); filler guesses (random and cheapest decompositions of the deficit,
// the padded searches' rotation); sibling merges (the guillotine guess);
// putting it together (time plan, main).

#include <pthread.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <ctime>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <queue>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using i64 = long long;
constexpr i64 kInf = std::numeric_limits<i64>::max() / 4;

// ---------------------------------------------------------------------------
// Time keeping
// ---------------------------------------------------------------------------

using SteadyClock = std::chrono::steady_clock;
const SteadyClock::time_point kProgramStart = SteadyClock::now();

// CPU seconds of the whole process (what a loaded machine does not inflate).
double cpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double elapsedSeconds() {
  return std::chrono::duration<double>(SteadyClock::now() - kProgramStart)
      .count();
}

struct Deadline {
  double at = 0;  // seconds since program start
  bool passed() const { return elapsedSeconds() >= at; }
};

// Reads the clock only every so many units of work, so that loops whose
// steps vary wildly in cost (queries over thousands of live buffers) still
// notice the deadline promptly without paying for a clock read per step.
class DeadlinePacer {
 public:
  explicit DeadlinePacer(const Deadline& deadline) : deadline_(deadline) {}
  bool passed(i64 work) {
    done_ += work;
    if (done_ < nextCheck_) return false;
    nextCheck_ = done_ + kWorkPerCheck;
    return deadline_.passed();
  }

 private:
  static constexpr i64 kWorkPerCheck = 1 << 18;
  const Deadline& deadline_;
  i64 done_ = 0, nextCheck_ = 0;
};

// ---------------------------------------------------------------------------
// Input / output
// ---------------------------------------------------------------------------

struct Buffer {
  std::string id;
  i64 lower = 0, upper = 0, size = 0, align = 1;
};

struct CaseInfo {
  i64 capacity = i64(1) << 62;  // "no capacity" means effectively unbounded
  double timeLimit = 20.0;
};

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Returns the text right after `"key":` in a flat JSON object, or nullptr.
const char* jsonValue(const std::string& json, const std::string& key) {
  const std::string quoted = "\"" + key + "\"";
  size_t pos = json.find(quoted);
  if (pos == std::string::npos) return nullptr;
  pos = json.find(':', pos + quoted.size());
  if (pos == std::string::npos) return nullptr;
  const char* p = json.c_str() + pos + 1;
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') ++p;
  return p;
}

CaseInfo parseCase(const std::string& json) {
  CaseInfo info;
  // Integers are parsed exactly (capacities may pass 2^53).
  // A missing or null capacity leaves the default.
  if (const char* p = jsonValue(json, "capacity"); p && std::isdigit((unsigned char)*p)) {
    char* end = nullptr;
    i64 v = std::strtoll(p, &end, 10);
    if (*end == '.' || *end == 'e' || *end == 'E') v = (i64)std::strtod(p, nullptr);
    info.capacity = v;
  }
  if (const char* p = jsonValue(json, "time_limit_s"); p && std::isdigit((unsigned char)*p)) {
    double v = std::strtod(p, nullptr);
    if (v > 0) info.timeLimit = v;
  }
  return info;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

void splitFields(std::string_view line, std::vector<std::string_view>& out) {
  out.clear();
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) {
      out.push_back(trim(line.substr(start)));
      return;
    }
    out.push_back(trim(line.substr(start, comma - start)));
    start = comma + 1;
  }
}

i64 parseInt(std::string_view s) {
  std::string tmp(s);
  return std::strtoll(tmp.c_str(), nullptr, 10);
}

// Parses buffers.csv; columns are located by header name.
std::vector<Buffer> parseBuffers(const std::string& text) {
  std::vector<Buffer> buffers;
  std::vector<std::string_view> fields;
  std::string_view all(text);
  int col[5] = {0, 1, 2, 3, -1};  // id, lower, upper, size, alignment
  bool header = true;
  size_t pos = 0;
  while (pos < all.size()) {
    size_t nl = all.find('\n', pos);
    if (nl == std::string_view::npos) nl = all.size();
    std::string_view line = trim(all.substr(pos, nl - pos));
    pos = nl + 1;
    if (line.empty()) continue;
    splitFields(line, fields);
    if (header) {
      header = false;
      const char* names[5] = {"id", "lower", "upper", "size", "alignment"};
      for (int c = 0; c < 5; ++c) {
        col[c] = c < 4 ? c : -1;
        for (size_t f = 0; f < fields.size(); ++f)
          if (fields[f] == names[c]) col[c] = (int)f;
      }
      continue;
    }
    int needed = std::max(std::max(col[0], col[1]), std::max(col[2], col[3]));
    if ((int)fields.size() <= needed) continue;  // malformed row
    Buffer b;
    b.id = std::string(fields[col[0]]);
    b.lower = parseInt(fields[col[1]]);
    b.upper = parseInt(fields[col[2]]);
    b.size = parseInt(fields[col[3]]);
    if (col[4] >= 0 && (size_t)col[4] < fields.size() && !fields[col[4]].empty())
      b.align = std::max<i64>(1, parseInt(fields[col[4]]));
    buffers.push_back(std::move(b));
  }
  return buffers;
}

// Offsets (and sizes) are in units of kUnit bytes: 1 but on cases with wide
// values (see "Wide values" below), which set it once before any plan.
i64 kUnit = 1;

std::string toString(__int128 v) {
  if (v < 0) return "-" + toString(-v);
  std::string digits;
  do digits += char('0' + (int)(v % 10)); while ((v /= 10) > 0);
  return {digits.rbegin(), digits.rend()};
}

// Internally buffers are numbered by start time (overlapping buffers then
// sit close in memory); `byRow[r]` is the internal index of input row r, so
// plan.csv lists the buffers in input order.
void writePlan(const std::string& path, const std::vector<Buffer>& buffers,
               const std::vector<int>& byRow, const std::vector<i64>& offsets) {
  std::string out = "id,offset\n";
  out.reserve(buffers.size() * 24 + 16);
  for (int i : byRow) {
    out += buffers[i].id;
    out += ',';
    out += toString((__int128)offsets[i] * kUnit);
    out += '\n';
  }
  // Written aside, then renamed: a kill at the deadline never leaves half a plan.
  const std::string part = path + ".part";
  FILE* f = std::fopen(part.c_str(), "wb");
  if (!f) return;
  std::fwrite(out.data(), 1, out.size(), f);
  if (std::fclose(f) != 0 || std::rename(part.c_str(), path.c_str()) != 0) return;
  i64 peak = 0;
  for (size_t i = 0; i < buffers.size(); ++i) peak = std::max(peak, offsets[i] + buffers[i].size);
  std::fprintf(stderr, "strong_search: plan peak=%s t=%.3f cpu=%.3f\n",
               toString((__int128)peak * kUnit).c_str(), elapsedSeconds(), cpuSeconds());
}

// Progress lines on stderr when STRONG_SEARCH_VERBOSE is set.
const bool kVerbose = std::getenv("STRONG_SEARCH_VERBOSE") != nullptr;

template <class... Args>
void logLine(const char* fmt, Args... args) {
  if (!kVerbose) return;
  std::fprintf(stderr, "[%7.3fs] ", elapsedSeconds());
  std::fprintf(stderr, fmt, args...);
  std::fputc('\n', stderr);
}

// ---------------------------------------------------------------------------
// Wide values
// ---------------------------------------------------------------------------

// The contract allows times, sizes, alignments and the capacity up to 2^62,
// but the planner adds sizes and offsets in 64 bits (peaks, floors, section
// totals, alignUp, mirrored times) and takes kInf (about 2^61) for "none".
// A case whose stacked height (the sum of size + alignment - 1: no offset or
// peak the planner makes passes it) or whose times reach kWide is mapped at
// input onto one that stays below it:
//   - times are shifted to start at 0 and, if still that wide, replaced by
//     their ranks (a plan's validity depends only on which lifespans
//     overlap; only ordering heuristics read lengths);
//   - sizes and the capacity are counted in units of kUnit = 2^k bytes, for
//     the least such k: sizes rounded up to whole units, the capacity down,
//     and an alignment a becomes a / gcd(a, 2^k) units (a unit offset o is
//     aligned iff a divides o * 2^k).  So a plan in units is a valid plan in
//     bytes, within the capacity whenever it is within the capacity in units.
// Every other case is left exactly as it is (the same search, byte for byte).
constexpr i64 kWide = i64(1) << 60;

i64 unitAlignment(i64 align, int k) {
  const int twos = std::min(k, __builtin_ctzll((unsigned long long)align));
  return align >> twos;
}

__int128 stackedHeight(const std::vector<Buffer>& buffers, int k) {
  __int128 height = 0;
  for (const Buffer& b : buffers) {
    const __int128 units = ((__int128)std::max<i64>(b.size, 0) + ((i64(1) << k) - 1)) >> k;
    height += units + unitAlignment(b.align, k) - 1;
  }
  return height;
}

void narrowTimes(std::vector<Buffer>& buffers) {
  i64 first = kInf, last = 0;
  for (const Buffer& b : buffers) first = std::min(first, b.lower), last = std::max(last, b.upper);
  if (last < kWide) return;
  for (Buffer& b : buffers) b.lower -= first, b.upper -= first;
  if (last - first < kWide) return;
  std::vector<i64> times;
  for (const Buffer& b : buffers) times.push_back(b.lower), times.push_back(b.upper);
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  auto rank = [&](i64 t) { return (i64)(std::lower_bound(times.begin(), times.end(), t) - times.begin()); };
  for (Buffer& b : buffers) b.lower = rank(b.lower), b.upper = rank(b.upper);
}

// Maps a wide case as above (sets kUnit) and returns the capacity in units,
// or none when no unit brings its height under kWide (alignments of 2^60 or
// more with an odd part that large).
std::optional<i64> narrowValues(std::vector<Buffer>& buffers, i64 capacity) {
  narrowTimes(buffers);
  int k = 0;
  while (k < 62 && stackedHeight(buffers, k) >= kWide) ++k;
  if (stackedHeight(buffers, k) >= kWide) return std::nullopt;
  if (k == 0) return capacity;
  kUnit = i64(1) << k;
  for (Buffer& b : buffers) {
    b.size = b.size <= 0 ? b.size : ((b.size - 1) >> k) + 1;
    b.align = unitAlignment(b.align, k);
  }
  return capacity >> k;
}

// The plan for a case narrowValues cannot map: every buffer above the last
// (aligned), so no two share an address; offsets past the contract's 2^62
// leave it to the judge to say which.
void writeStackedPlan(const std::string& path, const std::vector<Buffer>& buffers) {
  std::string out = "id,offset\n";
  __int128 top = 0;
  for (const Buffer& b : buffers) {
    top = (top + b.align - 1) / b.align * b.align;
    out += b.id + ',' + toString(top) + '\n';
    top += std::max<i64>(b.size, 0);
  }
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(out.data(), 1, out.size(), f);
    std::fclose(f);
  }
}

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
  // --- construction -------------------------------------------------------

  // Sections are the elementary time intervals between consecutive distinct
  // start / end times with something live (MiniMalloc records one at every
  // distinct end time; this is a superset).  Each buffer b belongs to the
  // contiguous sections [secLo_[b], secHi_[b]), and two buffers overlap in
  // time iff their section ranges intersect.  Keeping the non-maximal
  // intervals matters: their members are a subset of a maximal clique's, so
  // their lowest unplaced floor can be higher, and section inference
  // (floor + unplaced size <= T) is checked on each of them.
  void buildSections() {
    std::vector<i64> times;
    times.reserve(2 * n_);
    for (int b = 0; b < n_; ++b) {
      times.push_back(buf_[b].lower);
      times.push_back(buf_[b].upper);
    }
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
    const int k = (int)times.size();
    std::vector<int> delta(k, 0);  // live count change at each time
    auto at = [&](i64 t) { return int(std::lower_bound(times.begin(), times.end(), t) - times.begin()); };
    for (int b = 0; b < n_; ++b) {
      ++delta[at(buf_[b].lower)];
      --delta[at(buf_[b].upper)];
    }
    std::vector<int> firstSection(k + 1, 0);  // sections starting before time i
    int live = 0, sections = 0;
    for (int i = 0; i < k; ++i) {
      firstSection[i] = sections;
      live += delta[i];
      if (live > 0 && i + 1 < k) ++sections;  // [times[i], times[i+1]) is live
    }
    firstSection[k] = sections;
    secLo_.assign(n_, 0);
    secHi_.assign(n_, 0);
    for (int b = 0; b < n_; ++b) {
      secLo_[b] = firstSection[at(buf_[b].lower)];
      secHi_[b] = firstSection[at(buf_[b].upper)];
    }
    numSections_ = sections;
  }

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

  void buildSectionMembers() {
    secStart_.assign(numSections_ + 1, 0);
    for (int b = 0; b < n_; ++b)
      for (int s = secLo_[b]; s < secHi_[b]; ++s) ++secStart_[s + 1];
    for (int s = 0; s < numSections_; ++s) secStart_[s + 1] += secStart_[s];
    secMembers_.assign(secStart_[numSections_], 0);
    std::vector<i64> fill(secStart_.begin(), secStart_.end() - 1);
    secTotal_.assign(numSections_, 0);
    posStart_.assign(n_ + 1, 0);
    for (int b = 0; b < n_; ++b) posStart_[b + 1] = posStart_[b] + (secHi_[b] - secLo_[b]);
    memberPos_.assign(posStart_[n_], 0);
    for (int b = 0; b < n_; ++b)
      for (int s = secLo_[b]; s < secHi_[b]; ++s) {
        memberPos_[posStart_[b] + s - secLo_[b]] = fill[s];
        secMembers_[fill[s]++] = b;
        secTotal_[s] += buf_[b].size;
      }
    secUnplaced_.assign(numSections_, 0);
    for (int sec = 0; sec < numSections_; ++sec)
      secUnplaced_[sec] = (int)(secStart_[sec + 1] - secStart_[sec]);
  }

  // Each section's members are kept with its unplaced ones first, so the
  // exact floor's rescan (refreshFloor, most of a padded search's time) reads
  // only those.  Placing b swaps it past the end of that prefix in each of its
  // sections; placements are undone last-in first-out, so unplacing b only
  // moves the prefix end back over it (the order within the prefix may change).
  void leaveSection(int b, int s) {
    const i64 at = memberPos_[posStart_[b] + s - secLo_[b]];
    const i64 last = secStart_[s] + --secUnplaced_[s];
    const int other = secMembers_[last];
    secMembers_[at] = other;
    memberPos_[posStart_[other] + s - secLo_[other]] = at;
    secMembers_[last] = b;
    memberPos_[posStart_[b] + s - secLo_[b]] = last;
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

  // --- search state changes (all undone through trails) --------------------

  struct Mark {
    size_t floors, sections;
  };

  // Puts b at its floor: lowers section totals and raises the floors of
  // overlapping unplaced buffers.  Section floors are kept one of two ways:
  //  - exact (MiniMalloc's "unallocated floor"): the min floor of the
  //    section's unplaced members, checked when sectionsFit reads it (see
  //    refreshFloor), so placing costs nothing per section; used only when
  //    the work is small (see build());
  //  - cheap: the highest top of a placed member, O(b's sections).
  Mark place(int b) {
    Mark mark{floorTrail_.size(), secTrail_.size()};
    ++placeStamp_;
    const i64 top = floor_[b] + buf_[b].size;
    off_[b] = floor_[b];
    sol_[b] = off_[b];  // last write on the success path wins
    for (int s = secLo_[b]; s < secHi_[b]; ++s) {
      secTotal_[s] -= buf_[b].size;
      leaveSection(b, s);
      if (!exactFloors_ && secFloor_[s] < top) {
        saveSection(s);
        secFloor_[s] = top;
      }
    }
    hatless_ = true;
    for (i64 e = adjStart_[b]; e < adjStart_[b + 1]; ++e) {
      const int o = adj_[e];
      if (off_[o] >= 0) continue;
      hatless_ = false;
      --nbrLeft_[o];
      const i64 raised = alignUp(top, buf_[o].align);
      const i64 old = floor_[o];
      if (old >= raised) continue;
      floorTrail_.push_back({o, old});
      floor_[o] = raised;
    }
    return mark;
  }

  // Saves section s for undo, once per placement.  unplace moves the stamp
  // on too, so a save after an undo cannot match an entry the undo popped
  // (today every save follows a place: sectionsFit runs right after it).
  void saveSection(int s) {
    if (secSaved_[s] == placeStamp_) return;
    secSaved_[s] = placeStamp_;
    secTrail_.push_back({s, secWitness_[s], secFloor_[s]});
  }

  // Makes section s's floor exact.  The floor was exact when set, with a
  // witness: an unplaced member at it.  Floors only rise and members only
  // leave until the undo that restores the section, so while the witness is
  // still unplaced at the floor, the floor is still the minimum.  Otherwise
  // the unplaced members are rescanned (saved first: the rescan is undone
  // with the placement in force).  This replaces counting the members at
  // each floor, which made every raised buffer visit all its sections (21 %
  // of a padded search's time on seed 1334; the same floors, hence the same
  // search node for node, with 17 % less CPU to the first fits of seeds
  // 900-1099, 24 % on 1100-1299).  The witness is the member at the floor with the fewest
  // unplaced neighbours: the one least likely to be raised soon.
  void refreshFloor(int s) {
    if (witnessFloor(s) == secFloor_[s]) return;
    saveSection(s);
    i64 low = kInf;
    int witness = -1;
    for (i64 e = secStart_[s], end = e + secUnplaced_[s]; e < end; ++e) {
      const int m = secMembers_[e];
      if (floor_[m] < low || (floor_[m] == low && nbrLeft_[m] < nbrLeft_[witness])) {
        low = floor_[m];
        witness = m;
      }
    }
    secFloor_[s] = low;
    secWitness_[s] = witness;
  }

  void unplace(int b, const Mark& mark) {
    while (secTrail_.size() > mark.sections) {
      const SectionChange& c = secTrail_.back();
      secFloor_[c.section] = c.floor;
      secWitness_[c.section] = c.witness;
      secTrail_.pop_back();
    }
    while (floorTrail_.size() > mark.floors) {
      floor_[floorTrail_.back().first] = floorTrail_.back().second;
      floorTrail_.pop_back();
    }
    for (int s = secLo_[b]; s < secHi_[b]; ++s) {
      secTotal_[s] += buf_[b].size;
      ++secUnplaced_[s];  // b sits just past the prefix (see leaveSection)
    }
    off_[b] = -1;
    ++placeStamp_;  // see saveSection
    for (i64 e = adjStart_[b]; e < adjStart_[b + 1]; ++e)
      if (off_[adj_[e]] < 0) ++nbrLeft_[adj_[e]];
  }

  // Section inference: every unplaced buffer of section s goes at or above
  // both the section floor and the current offset (offsets never decrease),
  // and they all stack on each other (they are live together).  A stored
  // floor is a lower bound of the exact one (it was exact when stored; since
  // then members only left and floors only rose), so a section that fails on
  // it fails: that pass runs first, and most nodes that fail stop there.
  // Then a section is made exact (refreshFloor) only when an upper bound of
  // its floor (its witness's floor) does not already let it pass.  The same
  // answer as making every floor exact; narrowToTightSection makes exact the
  // floors it reads.
  bool sectionsFit(const Part& part, i64 offset) {
    for (int s = part.lo; s < part.hi; ++s) {
#ifdef STRONG_SEARCH_CHECK_FLOORS
      if (exactFloors_ && secTotal_[s] != 0) checkFloor(s, true);
#endif
      if (secTotal_[s] != 0 && std::max(offset, secFloor_[s]) + secTotal_[s] > target_)
        return false;
    }
    for (int s = part.lo; s < part.hi; ++s) {
      if (secTotal_[s] == 0 || std::max(offset, witnessFloor(s)) <= target_ - secTotal_[s])
        continue;
      exactFloor(s);
      if (std::max(offset, secFloor_[s]) + secTotal_[s] > target_) return false;
    }
    return true;
  }

  // The floor of section s's witness if it is still unplaced (at or above the
  // exact floor), else no bound.
  i64 witnessFloor(int s) const {
    const int w = secWitness_[s];
    return w >= 0 && off_[w] < 0 ? floor_[w] : kInf;
  }

  void exactFloor(int s) {
    refreshFloor(s);
#ifdef STRONG_SEARCH_CHECK_FLOORS  // a test's build: every exact floor read is recomputed
    if (exactFloors_) checkFloor(s);
#endif
  }

#ifdef STRONG_SEARCH_CHECK_FLOORS
  // Aborts unless the stored floor is the exact one (or, `lowerBound`, at most it).
  void checkFloor(int s, bool lowerBound = false) const {
    i64 low = kInf;
    for (i64 e = secStart_[s], end = e + secUnplaced_[s]; e < end; ++e)
      low = std::min(low, floor_[secMembers_[e]]);
    if (lowerBound ? secFloor_[s] <= low : secFloor_[s] == low) return;
    std::fprintf(stderr, "section %d: floor %lld, its unplaced members' lowest %lld\n", s,
                 (long long)secFloor_[s], (long long)low);
    std::abort();
  }
#endif

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

// ---------------------------------------------------------------------------
// Putting it together
// ---------------------------------------------------------------------------

struct Job {
  const std::vector<Buffer>* buffers = nullptr;
  const SlotMap* slots = nullptr;
  i64 capacity = 0;
  i64 lowerBound = 0;
  Deadline deadline;
  Plan best;  // in: greedy seed; out: best plan found
  std::string planPath;
  const std::vector<int>* byRow = nullptr;
  i64 written = kInf;  // peak of the plan on disk

  // Anytime output: writes `best` when it beats the plan on disk.
  void publish() {
    if (best.peak >= written) return;
    writePlan(planPath, *buffers, *byRow, best.offsets);
    written = best.peak;
  }
};

// Whether the search's structures stay within the limits above: counts the
// time-overlapping pairs with one sweep (ends before starts at a tie).
bool searchIsAffordable(const std::vector<Buffer>& buffers) {
  std::vector<std::pair<i64, int>> events;  // (time, -1 end / +1 start)
  for (const Buffer& b : buffers) {
    if (isTrivial(b)) continue;
    events.push_back({b.lower, 1});
    events.push_back({b.upper, -1});
  }
  if (events.size() > 2 * (size_t)kMaxSearchBuffers) return false;
  std::sort(events.begin(), events.end());
  i64 live = 0, pairs = 0;
  for (const auto& e : events) {
    if (e.second > 0) pairs += live;
    live += e.second;
  }
  return 2 * pairs <= kMaxSearchEntries;
}

void runSearch(Job& job) {
  const std::vector<Buffer>& buffers = *job.buffers;
  std::vector<int> toSearch;  // original index of each search buffer
  std::vector<SearchBuffer> searchBuffers;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (isTrivial(buffers[i])) continue;
    toSearch.push_back((int)i);
    const Buffer& b = buffers[i];
    searchBuffers.push_back({b.lower, b.upper, b.size, b.align});
  }
  if (searchBuffers.empty() || (int)searchBuffers.size() > kMaxSearchBuffers) return;
  CanonicalSearch search(searchBuffers);
  if (!search.build(kMaxSearchEntries)) {
    logLine("search skipped: instance too large");
    return;
  }
  logLine("search built: %d parts", search.numParts());

  std::vector<i64> seed(searchBuffers.size());
  for (size_t k = 0; k < toSearch.size(); ++k) seed[k] = job.best.offsets[toSearch[k]];
  i64 floorPeak0 = 0;
  for (const Buffer& b : buffers)
    if (isTrivial(b)) floorPeak0 = std::max(floorPeak0, std::max<i64>(b.size, 0));
  // Each part the search settles lower is checked and written at once.
  auto onImprove = [&](const std::vector<i64>& found) {
    std::vector<i64> offsets = job.best.offsets;
    i64 peak = floorPeak0;
    for (size_t k = 0; k < toSearch.size(); ++k) {
      offsets[toSearch[k]] = found[k];
      peak = std::max(peak, found[k] + searchBuffers[k].size);
    }
    if (peak >= job.best.peak) return;
    if (!planIsValid(buffers, *job.slots, offsets, std::max(job.capacity, peak))) return;
    job.best.offsets = std::move(offsets);
    job.best.peak = peak;
    job.publish();
  };
  Tightener tightener(search, std::move(seed), searchBuffers, job.deadline, onImprove);

  // Trivial buffers sit at 0 and bound the peak by their own size.
  i64 floorPeak = 0, lo = job.lowerBound;
  for (const Buffer& b : buffers) {
    if (isTrivial(b)) floorPeak = std::max(floorPeak, std::max<i64>(b.size, 0));
    lo = std::max(lo, b.size);
  }
  bool fits = tightener.peak() <= job.capacity;
  if (!fits) fits = fitMergedGuess(searchBuffers, job.capacity, job.deadline, tightener, onImprove);
  if (!fits) fits = tightener.fitCapacityWithGuesses(job.capacity);
  if (fits) tightener.tighten(lo);

  std::vector<i64> offsets = job.best.offsets;
  for (size_t k = 0; k < toSearch.size(); ++k) offsets[toSearch[k]] = tightener.offsets()[k];
  const i64 peak = std::max(floorPeak, tightener.peak());
  if (peak >= job.best.peak) return;
  // Accept only a plan that checks out (guards against any search bug).
  if (!planIsValid(buffers, *job.slots, offsets, std::max(job.capacity, peak))) return;
  job.best.offsets = std::move(offsets);
  job.best.peak = peak;
}

void* runSearchThread(void* arg) {
  runSearch(*static_cast<Job*>(arg));
  return nullptr;
}

// The search recurses once per placed buffer, so it runs on a thread whose
// stack is sized for the deepest possible recursion.
void runSearchWithStack(Job& job) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  const size_t stack = (size_t)64 * 1024 * 1024 + job.buffers->size() * (size_t)2048;
  pthread_attr_setstacksize(&attr, std::min(stack, (size_t)512 * 1024 * 1024));
  pthread_t thread;
  if (pthread_create(&thread, &attr, runSearchThread, &job) == 0) {
    pthread_join(thread, nullptr);
  } else if (job.buffers->size() < 20000) {
    runSearch(job);  // small enough for the default stack
  }
  pthread_attr_destroy(&attr);
}

std::string envOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string(fallback);
}

}  // namespace

int main() {
  const std::string caseDir = envOr("MEMORACE_CASE_DIR", ".");
  const std::string outDir = envOr("MEMORACE_OUT_DIR", ".");
  const CaseInfo info = parseCase(readFile(caseDir + "/case.json"));
  std::vector<Buffer> buffers = parseBuffers(readFile(caseDir + "/buffers.csv"));
  const std::string planPath = outDir + "/plan.csv";
  const std::optional<i64> capacity = narrowValues(buffers, info.capacity);
  if (!capacity) {
    writeStackedPlan(planPath, buffers);
    return 0;
  }

  // Renumber by start time; byRow remembers the input order for the output.
  std::vector<int> byRow(buffers.size());
  {
    std::vector<int> order(buffers.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      if (buffers[a].lower != buffers[b].lower) return buffers[a].lower < buffers[b].lower;
      return buffers[a].upper < buffers[b].upper;
    });
    std::vector<Buffer> sorted;
    sorted.reserve(buffers.size());
    for (size_t k = 0; k < order.size(); ++k) {
      byRow[order[k]] = (int)k;
      sorted.push_back(std::move(buffers[order[k]]));
    }
    buffers = std::move(sorted);
  }

  Job job;
  job.buffers = &buffers;
  job.capacity = *capacity;
  job.deadline.at = std::min(0.8 * info.timeLimit, 55.0);
  job.lowerBound = lowerBound(buffers);
  const SlotMap slots = buildSlots(buffers);
  job.slots = &slots;

  // Time plan. Small cases: greedy seeds and the skyline rules (fast), then
  // the canonical search for the rest of the time. Large traces (over
  // kLargeSearch buffers): greedy by size, the skyline rules, greedy seeds for at most a
  // quarter of the time (unless the rules reached the lower bound), then the
  // iterated skyline best fit. Any time left goes to the iterated skyline
  // and greedy. Every better plan is written at once (anytime).
  const bool search = searchIsAffordable(buffers) && buffers.size() <= kLargeSearch;
  Deadline greedyDeadline = job.deadline;
  greedyDeadline.at = job.deadline.at * (search ? 0.5 : 0.25);
  std::vector<int> rowOf(buffers.size());
  for (size_t r = 0; r < byRow.size(); ++r) rowOf[byRow[r]] = (int)r;
  job.planPath = planPath;
  job.byRow = &byRow;
  GreedyPortfolio portfolio(buffers, slots);
  SkylineFit skyline(buffers, slots, rowOf);
  const Deadline now{0};  // the skyline rules, no iterations yet
  const std::function<void()> publish = [&] { job.publish(); };
  const bool large = buffers.size() > kLargeSearch;
  if (large) {
    // The sweep allocator (a plan within a fraction of a second, whatever the
    // size), then best_fit's skyline rules (about a second at 100k buffers; they
    // win on most large traces), each written at once; then greedy by size (the
    // baseline: about a second at 100k buffers, but several when thousands are
    // live at once) until the deadline. So a short limit never leaves strong
    // without a plan or past its time, nor above greedy by size when that
    // finishes in time.
    job.best = sweepAllocate(buffers);
    job.publish();  // a plan exists from here on
    skyline.improve(job.best, job.lowerBound, now, job.deadline, publish);
    job.publish();
    Plan seeded = portfolio.seed(job.lowerBound, now, job.deadline);
    if (!seeded.offsets.empty() && seeded.peak < job.best.peak) job.best = std::move(seeded);
    job.publish();
  }
  if (job.best.peak > job.lowerBound && !(large && job.deadline.passed())) {
    Plan seeded = portfolio.seed(job.lowerBound, greedyDeadline, job.deadline, large);
    logLine("greedy peak %lld, lower bound %lld", seeded.peak, job.lowerBound);
    if (seeded.peak < job.best.peak) job.best = std::move(seeded);
  }
  if (!large) skyline.improve(job.best, job.lowerBound, search ? now : job.deadline, job.deadline, publish);
  job.publish();  // a plan exists from here on
  if (search && job.best.peak > job.lowerBound && !job.deadline.passed()) {
    runSearchWithStack(job);
    job.publish();
  }
  if (job.best.peak > job.lowerBound && !job.deadline.passed()) {
    skyline.improve(job.best, job.lowerBound, job.deadline, job.deadline, publish);
    if (!large) portfolio.perturb(job.best, job.lowerBound, job.deadline);
    job.publish();
  }
  std::fprintf(stderr, "strong_search: n=%zu lb=%lld peak=%lld cap=%lld unit=%lld t=%.2fs\n",
               buffers.size(), job.lowerBound, job.best.peak, job.capacity, kUnit,
               elapsedSeconds());
  return 0;
}
