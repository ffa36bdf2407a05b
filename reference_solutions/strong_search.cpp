// strong_search.cpp -- MemoRace reference planner "strong_search" (offset type).
//
// Build: g++ -O2 -std=c++20 -o planner strong_search.cpp
//
// Contract (see README.md): reads $MEMORACE_CASE_DIR/{case.json,buffers.csv},
// writes $MEMORACE_OUT_DIR/plan.csv with header "id,offset".
//
// Pipeline
//   1. Greedy seeds.  Several orderings (size, live total, area, lifespan),
//      each placing buffers one by one at the lowest (first fit) or tightest
//      (best fit) address gap that is free over the buffer's whole lifespan.
//      Time-overlapping placed buffers are found with a segment tree over
//      compressed time, so one run costs about O(n * live * log n), never an
//      all-pairs scan.  The best seed is written to plan.csv at once, so a
//      plan exists even if something later runs long.
//   2. Canonical search in the style of MiniMalloc (Moffitt, ASPLOS 2023),
//      asked "can everything be placed under height T?":
//        - offsets are assigned in non-decreasing order, every buffer at its
//          "floor" (lowest aligned offset above the placed buffers it overlaps
//          in time); ties are ordered by a static preorder rank, so each
//          settled solution is reached exactly once;
//        - children are tried by (floor, preorder rank); three preorders are
//          run round robin with node budgets that double (restarts);
//        - section inference: for every time section (maximal set of buffers
//          live together), max(min unplaced floor, current offset) + unplaced
//          size in the section must fit under T;
//        - dominance: a buffer may not be placed at or above the lowest
//          possible top (floor + size) of another unplaced buffer, since that
//          buffer would then fit entirely in the gap below;
//        - decomposition: when no unplaced buffer crosses a section boundary,
//          the two sides are solved independently (failure of one side fails
//          the node without re-enumerating the other side).
//      First T = capacity (only if the seed does not fit), then T is tightened
//      from the lower bound upwards by a budgeted binary search, until peak ==
//      lower bound or the deadline (min(0.8 * time_limit_s, 55 s)).
//   3. The best plan found is validated and written.

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>
#include <string_view>
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

double elapsedSeconds() {
  return std::chrono::duration<double>(SteadyClock::now() - kProgramStart)
      .count();
}

struct Deadline {
  double at = 0;  // seconds since program start
  bool passed() const { return elapsedSeconds() >= at; }
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
  if (const char* p = jsonValue(json, "capacity"); p && (*p == '-' || isdigit(*p))) {
    char* end = nullptr;
    i64 v = std::strtoll(p, &end, 10);
    if (*end == '.' || *end == 'e' || *end == 'E') v = (i64)std::strtod(p, nullptr);
    if (v > 0) info.capacity = v;
  }
  if (const char* p = jsonValue(json, "time_limit_s"); p && (*p == '-' || isdigit(*p))) {
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

void writePlan(const std::string& path, const std::vector<Buffer>& buffers,
               const std::vector<i64>& offsets) {
  std::string out = "id,offset\n";
  out.reserve(buffers.size() * 24 + 16);
  for (size_t i = 0; i < buffers.size(); ++i) {
    out += buffers[i].id;
    out += ',';
    out += std::to_string(offsets[i]);
    out += '\n';
  }
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return;
  std::fwrite(out.data(), 1, out.size(), f);
  std::fclose(f);
}

// Progress lines on stderr when STRONG_SEARCH_VERBOSE is set.
const bool kVerbose = std::getenv("STRONG_SEARCH_VERBOSE") != nullptr;

template <class... Args>
void logf(const char* fmt, Args... args) {
  if (!kVerbose) return;
  std::fprintf(stderr, "[%7.3fs] ", elapsedSeconds());
  std::fprintf(stderr, fmt, args...);
  std::fputc('\n', stderr);
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

  struct Entry {
    int id, next;
  };
  int width_ = 1;
  std::vector<int> cover_, partial_;
  std::vector<Entry> pool_;
};

// Checks a complete plan: alignment, non-negativity, capacity, and no two
// time-overlapping buffers sharing an address.  O(n * live * log n).
bool planIsValid(const std::vector<Buffer>& buffers, const SlotMap& slots,
                 const std::vector<i64>& offsets, i64 capacity) {
  OverlapIndex index(slots.numSlots);
  std::vector<int> stamp(buffers.size(), -1);
  for (size_t i = 0; i < buffers.size(); ++i) {
    const Buffer& b = buffers[i];
    const i64 o = offsets[i];
    if (o < 0 || o % b.align != 0 || o + b.size > capacity) return false;
    if (isTrivial(b)) continue;
    bool clash = false;
    index.query(slots.lo[i], slots.hi[i], [&](int j) {
      if (stamp[j] == (int)i) return;
      stamp[j] = (int)i;
      if (offsets[j] < o + b.size && o < offsets[j] + buffers[j].size) clash = true;
    });
    if (clash) return false;
    index.insert((int)i, slots.lo[i], slots.hi[i]);
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

// Places buffers in `order`, each at the lowest gap (first fit) or at the
// gap that leaves least slack (best fit) among the time-overlapping buffers
// placed so far.  Returns an empty plan if the deadline passes mid-way
// (unless `mustFinish`, used for the first seed so that some plan exists).
Plan greedyPlace(const std::vector<Buffer>& buffers, const SlotMap& slots,
                 const std::vector<int>& order, bool bestFit,
                 const Deadline& deadline, bool mustFinish) {
  const int n = (int)buffers.size();
  Plan plan;
  plan.offsets.assign(n, 0);
  plan.peak = 0;
  OverlapIndex index(slots.numSlots);
  std::vector<int> stamp(n, -1);
  std::vector<std::pair<i64, i64>> busy;  // (offset, top) of overlapping buffers
  for (int k = 0; k < n; ++k) {
    if (!mustFinish && (k & 1023) == 0 && deadline.passed()) return {};
    const int b = order[k];
    const Buffer& buf = buffers[b];
    if (isTrivial(buf)) {
      plan.peak = std::max(plan.peak, std::max<i64>(buf.size, 0));
      continue;
    }
    busy.clear();
    index.query(slots.lo[b], slots.hi[b], [&](int j) {
      if (stamp[j] == k) return;
      stamp[j] = k;
      busy.push_back({plan.offsets[j], plan.offsets[j] + buffers[j].size});
    });
    std::sort(busy.begin(), busy.end());
    i64 pos = 0, chosen = -1, slack = kInf;
    for (const auto& [off, top] : busy) {
      if (off >= pos + buf.size) {  // the gap [pos, off) fits this buffer
        if (!bestFit) {
          chosen = pos;
          break;
        }
        if (off - pos - buf.size < slack) {
          slack = off - pos - buf.size;
          chosen = pos;
        }
      }
      pos = std::max(pos, alignUp(top, buf.align));
    }
    if (chosen < 0) chosen = pos;  // on top of everything
    plan.offsets[b] = chosen;
    plan.peak = std::max(plan.peak, chosen + buf.size);
    index.insert(b, slots.lo[b], slots.hi[b]);
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

// Runs the seeds (first fit, then best fit) and keeps the lowest peak.
Plan bestGreedy(const std::vector<Buffer>& buffers, const SlotMap& slots,
                const Deadline& deadline) {
  const std::vector<i64> totals = liveTotals(buffers, slots);
  const auto orders = greedyOrders(buffers, totals);
  Plan best;
  for (int bestFit = 0; bestFit < 2; ++bestFit) {
    for (const auto& order : orders) {
      const bool first = best.offsets.empty();
      if (!first && deadline.passed()) return best;
      Plan plan = greedyPlace(buffers, slots, order, bestFit != 0, deadline, first);
      if (!plan.offsets.empty() && plan.peak < best.peak) best = std::move(plan);
    }
  }
  return best;
}

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
  static constexpr int kHeuristics = 3;

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
    secStamp_.assign(numSections_, 0);
    buildPartitions();
    buildPreorders();
    return true;
  }

  int numParts() const { return (int)parts_.size(); }
  const std::vector<int>& partMembers(int p) const { return parts_[p].members; }
  i64 solutionOffset(int b) const { return sol_[b]; }

  // Tries to place every buffer of top-level part `p` under `target`, with
  // preorder `heuristic`, visiting at most `nodeBudget` nodes.
  Result solve(int p, i64 target, int heuristic, i64 nodeBudget,
               const Deadline& deadline) {
    target_ = target;
    rank_ = &ranks_[heuristic];
    nodesLeft_ = nodeBudget;
    deadline_ = &deadline;
    return dfs(parts_[p], 0, -1);
  }

 private:
  // --- construction -------------------------------------------------------

  // Sweeps the lifespans.  A section is recorded at an end event whenever some
  // buffer started since the last section: it is the set of live buffers,
  // i.e. a maximal set of buffers that are live together.  Each buffer b
  // belongs to the contiguous sections [secLo_[b], secHi_[b]), and two
  // buffers overlap in time iff their section ranges intersect.
  void buildSections() {
    std::vector<std::pair<i64, int>> events;  // (time, 2b for end / 2b+1 start)
    events.reserve(2 * n_);
    for (int b = 0; b < n_; ++b) {
      events.push_back({buf_[b].lower, 2 * b + 1});
      events.push_back({buf_[b].upper, 2 * b});
    }
    std::sort(events.begin(), events.end(), [](const auto& x, const auto& y) {
      if (x.first != y.first) return x.first < y.first;
      return (x.second & 1) < (y.second & 1);  // ends before starts
    });
    secLo_.assign(n_, 0);
    secHi_.assign(n_, 0);
    int sections = 0;
    bool startedSinceSection = false;
    for (const auto& [time, code] : events) {
      const int b = code / 2;
      if (code & 1) {
        secLo_[b] = sections;
        startedSinceSection = true;
      } else {
        if (startedSinceSection) ++sections;
        startedSinceSection = false;
        secHi_[b] = sections;
      }
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
    for (int b = 0; b < n_; ++b)
      for (int s = secLo_[b]; s < secHi_[b]; ++s) {
        secMembers_[fill[s]++] = b;
        secTotal_[s] += buf_[b].size;
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

  // Static preorders (MiniMalloc's T/W/A keys): max section total, lifespan
  // width and area, each descending, in three different priority orders.
  void buildPreorders() {
    std::vector<i64> total(n_, 0), width(n_);
    std::vector<double> area(n_);
    for (int b = 0; b < n_; ++b) {
      for (int s = secLo_[b]; s < secHi_[b]; ++s) total[b] = std::max(total[b], secTotal_[s]);
      width[b] = buf_[b].upper - buf_[b].lower;
      area[b] = (double)width[b] * (double)buf_[b].size;
    }
    auto byKeys = [&](const char* keys) {
      std::vector<int> order(n_);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        for (const char* k = keys; *k; ++k) {
          if (*k == 'T' && total[a] != total[b]) return total[a] > total[b];
          if (*k == 'W' && width[a] != width[b]) return width[a] > width[b];
          if (*k == 'A' && area[a] != area[b]) return area[a] > area[b];
        }
        return false;
      });
      std::vector<int> rank(n_);
      for (int r = 0; r < n_; ++r) rank[order[r]] = r;
      return rank;
    };
    const char* keys[kHeuristics] = {"WAT", "TAW", "TWA"};
    for (int h = 0; h < kHeuristics; ++h) ranks_[h] = byKeys(keys[h]);
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

  // Puts b at its floor: lowers section totals, raises the floors of
  // overlapping unplaced buffers, and refreshes the section floors (min floor
  // of the unplaced members) of every section those buffers touch.
  Mark place(int b) {
    Mark mark{floorTrail_.size(), secTrail_.size()};
    const i64 top = floor_[b] + buf_[b].size;
    off_[b] = floor_[b];
    sol_[b] = off_[b];  // last write on the success path wins
    ++stampNow_;
    for (int s = secLo_[b]; s < secHi_[b]; ++s) {
      secTotal_[s] -= buf_[b].size;
      touch(s);
    }
    for (i64 e = adjStart_[b]; e < adjStart_[b + 1]; ++e) {
      const int o = adj_[e];
      if (off_[o] >= 0) continue;
      const i64 raised = alignUp(top, buf_[o].align);
      if (floor_[o] >= raised) continue;
      floorTrail_.push_back({o, floor_[o]});
      floor_[o] = raised;
      for (int s = secLo_[o]; s < secHi_[o]; ++s) touch(s);
    }
    for (int s : touched_) refreshSectionFloor(s);
    touched_.clear();
    return mark;
  }

  void touch(int s) {
    if (secStamp_[s] == stampNow_) return;
    secStamp_[s] = stampNow_;
    touched_.push_back(s);
  }

  void refreshSectionFloor(int s) {
    i64 low = kInf;
    for (i64 e = secStart_[s]; e < secStart_[s + 1]; ++e) {
      const int m = secMembers_[e];
      if (off_[m] < 0) low = std::min(low, floor_[m]);
    }
    if (low == secFloor_[s]) return;
    secTrail_.push_back({s, secFloor_[s]});
    secFloor_[s] = low;
  }

  void unplace(int b, const Mark& mark) {
    while (secTrail_.size() > mark.sections) {
      secFloor_[secTrail_.back().first] = secTrail_.back().second;
      secTrail_.pop_back();
    }
    while (floorTrail_.size() > mark.floors) {
      floor_[floorTrail_.back().first] = floorTrail_.back().second;
      floorTrail_.pop_back();
    }
    for (int s = secLo_[b]; s < secHi_[b]; ++s) secTotal_[s] += buf_[b].size;
    off_[b] = -1;
  }

  // Section inference: every unplaced buffer of section s goes at or above
  // both the section floor and the current offset (offsets never decrease),
  // and they all stack on each other (they are live together).
  bool sectionsFit(const Part& part, i64 offset) const {
    for (int s = part.lo; s < part.hi; ++s) {
      if (secTotal_[s] == 0) continue;
      if (std::max(offset, secFloor_[s]) + secTotal_[s] > target_) return false;
    }
    return true;
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
    for (int b : part.members) {
      if (off_[b] >= 0) continue;
      anyUnplaced = true;
      minTop = std::min(minTop, floor_[b] + buf_[b].size);
    }
    if (!anyUnplaced) return false;
    const size_t base = children_.size();
    for (int b : part.members) {
      if (off_[b] >= 0) continue;
      const i64 f = floor_[b];
      if (f >= minTop || f + buf_[b].size > target_) continue;
      if (f < lastOff || (f == lastOff && rank[b] < lastRank)) continue;
      children_.push_back(b);
    }
    std::sort(children_.begin() + base, children_.end(), [&](int a, int b) {
      if (floor_[a] != floor_[b]) return floor_[a] < floor_[b];
      return rank[a] < rank[b];
    });
    return true;
  }

  Result dfs(const Part& part, i64 lastOff, int lastRank) {
    if (outOfBudget()) return Result::kAborted;
    const size_t base = children_.size();
    if (!collectChildren(part, lastOff, lastRank)) return Result::kFound;
    const size_t end = children_.size();
    Result result = Result::kInfeasible;
    for (size_t i = base; i < end && result == Result::kInfeasible; ++i) {
      const int b = children_[i];
      const Mark mark = place(b);
      if (sectionsFit(part, off_[b])) result = descend(part, b);
      unplace(b, mark);
    }
    children_.resize(base);
    return result;
  }

  // After placing b: if b was the last unplaced buffer crossing some section
  // boundary inside the part, solve the pieces independently; otherwise keep
  // going in canonical order.
  Result descend(const Part& part, int b) {
    std::vector<int> zeros;
    for (int s = secLo_[b]; s + 1 < secHi_[b]; ++s)
      if (--cut_[s] == 0) zeros.push_back(s);
    Result result;
    if (zeros.empty()) {
      result = dfs(part, off_[b], (*rank_)[b]);
    } else {
      std::vector<Part> pieces;
      split(part, zeros, pieces);
      result = Result::kFound;
      for (const Part& piece : pieces) {
        result = dfs(piece, 0, -1);  // pieces are independent: fresh order
        if (result != Result::kFound) break;
      }
    }
    for (int s = secLo_[b]; s + 1 < secHi_[b]; ++s) ++cut_[s];
    return result;
  }

  // --- data -------------------------------------------------------------------

  std::vector<SearchBuffer> buf_;
  int n_ = 0;
  int numSections_ = 0;
  std::vector<int> secLo_, secHi_;     // per buffer: section range
  std::vector<i64> adjStart_;          // CSR overlap lists
  std::vector<int> adj_;
  std::vector<i64> secStart_;          // CSR section members
  std::vector<int> secMembers_;
  std::vector<int> cut_;
  std::vector<Part> parts_;            // independent top-level parts
  std::vector<int> ranks_[kHeuristics];

  // search state
  i64 target_ = 0;
  const std::vector<int>* rank_ = nullptr;
  i64 nodesLeft_ = 0;
  const Deadline* deadline_ = nullptr;
  std::vector<i64> off_, floor_, sol_;
  std::vector<i64> secTotal_, secFloor_;
  std::vector<std::pair<int, i64>> floorTrail_, secTrail_;
  std::vector<int> children_;          // stack of candidate lists
  std::vector<int> secStamp_, touched_;
  int stampNow_ = 0;
};

// ---------------------------------------------------------------------------
// Anytime driver: fit the capacity, then tighten the height.
// ---------------------------------------------------------------------------

class Tightener {
 public:
  using Result = CanonicalSearch::Result;

  Tightener(CanonicalSearch& search, std::vector<i64> offsets,
            const std::vector<SearchBuffer>& buffers, const Deadline& deadline)
      : search_(search), off_(std::move(offsets)), buf_(buffers), deadline_(deadline) {
    partPeak_.assign(search_.numParts(), 0);
    for (int p = 0; p < search_.numParts(); ++p) partPeak_[p] = partPeakOf(p, off_);
  }

  const std::vector<i64>& offsets() const { return off_; }

  i64 peak() const {
    i64 peak = 0;
    for (i64 v : partPeak_) peak = std::max(peak, v);
    return peak;
  }

  // Phase 1: the seed is above capacity; search under the capacity with
  // growing budgets.  Returns false if that was proven impossible.
  bool fitCapacity(i64 capacity) {
    for (i64 budget = 2; !deadline_.passed(); budget *= 2) {
      Result r = attempt(capacity, budget);
      if (r == Result::kFound) return true;
      if (r == Result::kInfeasible) return false;
    }
    return false;
  }

  // Phase 2: lower the peak towards `lo` (a proven lower bound).  Each round
  // tries the lower bound, then binary-searches the heights between it and
  // the current peak; heights whose search ran out of budget are skipped
  // for this round, and the budget grows every round.
  void tighten(i64 lo) {
    for (i64 budget = 2; peak() > lo && !deadline_.passed(); budget *= 2) {
      Result r = attempt(lo, budget);
      if (r == Result::kFound) return;
      if (r == Result::kInfeasible) ++lo;
      i64 softLo = r == Result::kInfeasible ? lo : lo + 1;
      while (softLo < peak() && !deadline_.passed()) {
        const i64 target = softLo + (peak() - 1 - softLo) / 2;
        r = attempt(target, budget);
        if (r == Result::kInfeasible) lo = softLo = target + 1;
        if (r == Result::kAborted) softLo = target + 1;
      }
    }
  }

 private:
  // Tries every part whose peak exceeds `target`.  A part's node budget is
  // `budget` times its size, per preorder heuristic (round robin).
  Result attempt(i64 target, i64 budget) {
    Result result = Result::kFound;
    for (int p = 0; p < search_.numParts() && result == Result::kFound; ++p) {
      if (partPeak_[p] <= target) continue;
      result = attemptPart(p, target, budget * (i64)search_.partMembers(p).size());
    }
    logf("target %lld budget %lld: %s, peak %lld", target, budget,
         result == Result::kFound ? "found" : result == Result::kInfeasible ? "infeasible" : "aborted",
         peak());
    return result;
  }

  Result attemptPart(int p, i64 target, i64 nodes) {
    for (int h = 0; h < CanonicalSearch::kHeuristics; ++h) {
      if (deadline_.passed()) return Result::kAborted;
      Result r = search_.solve(p, target, h, nodes, deadline_);
      if (r == Result::kInfeasible) return r;
      if (r == Result::kFound) {
        std::vector<i64> candidate = off_;
        for (int b : search_.partMembers(p)) candidate[b] = search_.solutionOffset(b);
        const i64 peak = partPeakOf(p, candidate);
        if (peak > target) continue;  // defensive: never accept a worse part
        off_ = std::move(candidate);
        partPeak_[p] = peak;
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

  CanonicalSearch& search_;
  std::vector<i64> off_;
  const std::vector<SearchBuffer>& buf_;
  const Deadline& deadline_;
  std::vector<i64> partPeak_;
};

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
};

// Limits that keep the search's memory bounded (a few hundred MB at most).
constexpr int kMaxSearchBuffers = 60000;
constexpr i64 kMaxSearchEntries = 30'000'000;

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
    logf("search skipped: instance too large");
    return;
  }
  logf("search built: %d parts", search.numParts());

  std::vector<i64> seed(searchBuffers.size());
  for (size_t k = 0; k < toSearch.size(); ++k) seed[k] = job.best.offsets[toSearch[k]];
  Tightener tightener(search, seed, searchBuffers, job.deadline);

  // Trivial buffers sit at 0 and bound the peak by their own size.
  i64 floorPeak = 0, lo = job.lowerBound;
  for (const Buffer& b : buffers) {
    if (isTrivial(b)) floorPeak = std::max(floorPeak, std::max<i64>(b.size, 0));
    lo = std::max(lo, b.size);
  }
  bool fits = tightener.peak() <= job.capacity || tightener.fitCapacity(job.capacity);
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
  const std::vector<Buffer> buffers = parseBuffers(readFile(caseDir + "/buffers.csv"));
  const std::string planPath = outDir + "/plan.csv";

  Job job;
  job.buffers = &buffers;
  job.capacity = info.capacity;
  job.deadline.at = std::min(0.8 * info.timeLimit, 55.0);
  job.lowerBound = lowerBound(buffers);
  const SlotMap slots = buildSlots(buffers);
  job.slots = &slots;

  // Greedy seeds get at most half the time when a search will follow.
  Deadline greedyDeadline = job.deadline;
  if (buffers.size() <= (size_t)kMaxSearchBuffers) greedyDeadline.at = job.deadline.at * 0.5;
  job.best = bestGreedy(buffers, slots, greedyDeadline);
  logf("greedy peak %lld, lower bound %lld", job.best.peak, job.lowerBound);
  writePlan(planPath, buffers, job.best.offsets);  // a plan exists from here on

  if (job.best.peak > job.lowerBound && !job.deadline.passed()) {
    const i64 seedPeak = job.best.peak;
    runSearchWithStack(job);
    if (job.best.peak < seedPeak) writePlan(planPath, buffers, job.best.offsets);
  }
  std::fprintf(stderr, "strong_search: n=%zu lb=%lld peak=%lld cap=%lld t=%.2fs\n",
               buffers.size(), job.lowerBound, job.best.peak, info.capacity,
               elapsedSeconds());
  return 0;
}
