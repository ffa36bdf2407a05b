// section_floors.hpp -- strong_search (see main.cpp): the canonical search's
// sections and section floors.
//
// Members of CanonicalSearch (declared in canonical_search.hpp): the time
// sections and their members (unplaced first), placing a buffer and undoing
// it through trails, the section floors (exact by witness where affordable,
// else the cheap highest top) and section inference (sectionsFit).  A build
// with STRONG_SEARCH_CHECK_FLOORS (a test's) recomputes every exact floor
// read here.  Defined inline, as they were inside the class, so the compiler
// sees the same functions as before the split.

#pragma once

#include "canonical_search.hpp"

namespace {

// --- sections and their members ---------------------------------------------

// Sections are the elementary time intervals between consecutive distinct
// start / end times with something live (MiniMalloc records one at every
// distinct end time; this is a superset).  Each buffer b belongs to the
// contiguous sections [secLo_[b], secHi_[b]), and two buffers overlap in
// time iff their section ranges intersect.  Keeping the non-maximal
// intervals matters: their members are a subset of a maximal clique's, so
// their lowest unplaced floor can be higher, and section inference
// (floor + unplaced size <= T) is checked on each of them.
inline void CanonicalSearch::buildSections() {
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

inline void CanonicalSearch::buildSectionMembers() {
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
inline void CanonicalSearch::leaveSection(int b, int s) {
  const i64 at = memberPos_[posStart_[b] + s - secLo_[b]];
  const i64 last = secStart_[s] + --secUnplaced_[s];
  const int other = secMembers_[last];
  secMembers_[at] = other;
  memberPos_[posStart_[other] + s - secLo_[other]] = at;
  secMembers_[last] = b;
  memberPos_[posStart_[b] + s - secLo_[b]] = last;
}

// --- search state changes (all undone through trails) --------------------

// Puts b at its floor: lowers section totals and raises the floors of
// overlapping unplaced buffers.  Section floors are kept one of two ways:
//  - exact (MiniMalloc's "unallocated floor"): the min floor of the
//    section's unplaced members, checked when sectionsFit reads it (see
//    refreshFloor), so placing costs nothing per section; used only when
//    the work is small (see build());
//  - cheap: the highest top of a placed member, O(b's sections).
inline CanonicalSearch::Mark CanonicalSearch::place(int b) {
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
inline void CanonicalSearch::saveSection(int s) {
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
inline void CanonicalSearch::refreshFloor(int s) {
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

inline void CanonicalSearch::unplace(int b, const Mark& mark) {
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
inline bool CanonicalSearch::sectionsFit(const Part& part, i64 offset) {
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
inline i64 CanonicalSearch::witnessFloor(int s) const {
  const int w = secWitness_[s];
  return w >= 0 && off_[w] < 0 ? floor_[w] : kInf;
}

inline void CanonicalSearch::exactFloor(int s) {
  refreshFloor(s);
#ifdef STRONG_SEARCH_CHECK_FLOORS  // a test's build: every exact floor read is recomputed
  if (exactFloors_) checkFloor(s);
#endif
}

#ifdef STRONG_SEARCH_CHECK_FLOORS
// Aborts unless the stored floor is the exact one (or, `lowerBound`, at most it).
inline void CanonicalSearch::checkFloor(int s, bool lowerBound) const {
  i64 low = kInf;
  for (i64 e = secStart_[s], end = e + secUnplaced_[s]; e < end; ++e)
    low = std::min(low, floor_[secMembers_[e]]);
  if (lowerBound ? secFloor_[s] <= low : secFloor_[s] == low) return;
  std::fprintf(stderr, "section %d: floor %lld, its unplaced members' lowest %lld\n", s,
               (long long)secFloor_[s], (long long)low);
  std::abort();
}
#endif

}  // namespace
