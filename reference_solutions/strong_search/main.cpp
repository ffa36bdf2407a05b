// strong_search -- MemoRace reference planner "strong_search" (offset type).
//
// Build: g++ -O2 -std=c++20 -o planner main.cpp  (memorace.toml; one unit)
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
// Modules.  main.cpp is the program's one translation unit: it includes every
// module below, each one the module before it, so the compiler sees one file
// in this order (a unity build, with the judge's flags for a single .cpp): the
// code of the single strong_search.cpp it was split from, in its order, with
// only CanonicalSearch's section-floor members moved out of the class (inline).
// Everything but main() sits in an anonymous namespace, as before.
//   common.hpp            standard headers, i64 / kInf, time keeping
//   io.hpp                input / output; wide values (cases past 2^60)
//   case_facts.hpp        lower bound, slots, OverlapIndex, PlacedSet
//   greedy_seeds.hpp      first / best fit, sweep allocator, floor dive,
//                         the greedy portfolio and its iterated greedy
//   large_traces.hpp      skyline best fit and its iterated variant (best_fit's
//                         rules first; what improves large traces)
//   canonical_search.hpp  the MiniMalloc-style search (CanonicalSearch)
//   section_floors.hpp    its sections and section floors (kept exact by
//                         witness), placing / undoing, section inference
//   anytime.hpp           fit the capacity, then tighten (Tightener)
//   filler_guesses.hpp    guesses at the removed pieces; padded searches
//   sibling_merges.hpp    the guillotine guess (SiblingMerger)
//   main.cpp              putting it together: time plan, search thread, main
// reference_solutions/strong_search/pack.py packs them (with memorace.toml)
// into reference_solutions/strong_search.tar.gz, the archive the judge runs.

#include "common.hpp"
#include "io.hpp"
#include "case_facts.hpp"
#include "greedy_seeds.hpp"
#include "large_traces.hpp"
#include "canonical_search.hpp"
#include "section_floors.hpp"
#include "anytime.hpp"
#include "filler_guesses.hpp"
#include "sibling_merges.hpp"

namespace {

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
