// Best-fit skyline offset planner.
//
// Algorithm: the best-fit heuristic of Burke, Kendall & Whitwell (2004, "A new
// placement heuristic for the orthogonal stock-cutting problem"), as adapted
// to memory planning by Sekiyama et al. (2018, "Profile-guided memory
// optimization for deep neural networks"). Time is the strip's width and
// addresses its height; unlike strip packing, a buffer's horizontal position
// is fixed by its lifespan.
//
// A skyline (the top of the memory used so far, per time slot) starts flat at
// 0. Repeatedly:
//   1. take the lowest skyline segment [s, e) (leftmost among equals);
//   2. among unplaced buffers whose lifespan lies inside [s, e), take the best
//      fit under a fit rule (see below);
//   3. if there is one, place it at the segment height rounded up to its
//      alignment and raise the skyline over its lifespan; otherwise the gap
//      cannot be used by anybody, so raise the segment to its lower
//      neighbour and merge them.
// Unlike greedy by size, this never leaves a hole under a buffer except when
// step 3 gives a gap up as unusable (or to alignment).
//
// Fit rules: Burke's rule is "widest item that fits", here the longest
// lifespan (ties: largest size). No single rule wins everywhere, so the
// planner also runs largest area (size * lifespan) and largest size (ties:
// longest lifespan) and keeps the plan with the lowest peak (first rule on
// ties). Remaining ties go to the earlier file row, so output is deterministic.
//
// Cost: every placement adds at most two segments and every raise removes
// one, so there are O(n) steps per rule. Unplaced buffers sit in a segment
// tree ordered by lower; each node keeps the smallest upper and the best rank
// in its subtree. The best-fit search prunes subtrees with nothing ending by
// e or nothing better than the best found, and stops in a subtree whose best
// buffer fits, so it visits O((c + 1) log n) nodes, where c counts candidates
// that start in [s, e) but end after e; they are all live at time e - 1, so
// the whole run is O(n log n) plus at most O(n * live * log n).
//
// Build: g++ -O2 -std=c++20 -o planner best_fit.cpp
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <queue>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

struct Buffer {
    std::string id;
    int64_t lower = 0, upper = 0, size = 0, align = 1;
};

// ---------------------------------------------------------------- input/output

[[noreturn]] void die(const std::string& msg) {
    std::cerr << "best_fit: " << msg << "\n";
    std::exit(1);
}

std::string trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return std::string(s);
}

// Splits a CSV line on commas; fields are kept verbatim (ids are copied
// through unchanged), numbers and header names are trimmed where used.
std::vector<std::string> split_commas(std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t i = 0; i <= line.size(); ++i) {
        if (i == line.size() || line[i] == ',') {
            out.emplace_back(line.substr(start, i - start));
            start = i + 1;
        }
    }
    return out;
}

int64_t parse_int(const std::string& field) {
    const std::string s = trim(field);
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size()) die("bad integer '" + s + "'");
    return v;
}

// Reads buffers.csv; columns are located by header name, alignment optional.
std::vector<Buffer> read_buffers(const std::string& path) {
    std::ifstream in(path);
    if (!in) die("cannot open " + path);
    std::string line;
    if (!std::getline(in, line)) die("empty " + path);
    auto header = split_commas(line);
    for (auto& name : header) name = trim(name);
    auto column = [&](const std::string& name) -> int {
        auto it = std::find(header.begin(), header.end(), name);
        return it == header.end() ? -1 : int(it - header.begin());
    };
    const int c_id = column("id"), c_lo = column("lower"), c_up = column("upper");
    const int c_size = column("size"), c_align = column("alignment");
    if (c_id < 0 || c_lo < 0 || c_up < 0 || c_size < 0) die("missing column in header");
    std::vector<Buffer> buffers;
    while (std::getline(in, line)) {
        if (trim(line).empty()) continue;
        auto f = split_commas(line);
        if (int(f.size()) <= std::max({c_id, c_lo, c_up, c_size})) die("short row: " + line);
        Buffer b;
        b.id = f[c_id];
        b.lower = parse_int(f[c_lo]);
        b.upper = parse_int(f[c_up]);
        b.size = parse_int(f[c_size]);
        if (c_align >= 0 && c_align < int(f.size()) && !trim(f[c_align]).empty())
            b.align = std::max<int64_t>(1, parse_int(f[c_align]));
        buffers.push_back(std::move(b));
    }
    return buffers;
}

void write_plan(const std::string& path, const std::vector<Buffer>& buffers,
                const std::vector<int64_t>& offsets) {
    std::ostringstream out;
    out << "id,offset\n";
    for (size_t i = 0; i < buffers.size(); ++i) out << buffers[i].id << ',' << offsets[i] << '\n';
    std::ofstream file(path);
    file << out.str();
    if (!file) die("cannot write " + path);
}

int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// ------------------------------------------------------------------ skyline

// Piecewise-constant height over time slots [0, m). Segments are contiguous,
// so a segment is named by its start slot and the next one starts at its
// end; adjacent segments always differ in height, so the lowest segment is
// bounded by higher ones. The lowest is found with a min-heap whose stale
// entries (segment gone or height changed) are dropped lazily.
class Skyline {
public:
    struct Segment {
        int start, end;
        int64_t height;
    };

    explicit Skyline(int m) : m_(m), end_(m + 1), prev_(m + 1, -1), height_(m + 1), alive_(m + 1, 0) {
        set(0, m, 0);
    }

    Segment lowest() {
        while (true) {
            auto [neg_height, start] = heap_.top();
            if (alive_[start] && height_[start] == -neg_height) return {start, end_[start], -neg_height};
            heap_.pop();
        }
    }

    // Raises [lo, hi), which lies inside the lowest segment, to `height`
    // (above the segment's height).
    void raise(int lo, int hi, int64_t height) {
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
        merge_around(lo);
    }

    // Raises the lowest segment to its lower neighbour's height and merges.
    // Returns false when it has no neighbour (it spans all time).
    bool lift_lowest() {
        const Segment seg = lowest();
        int64_t target = std::numeric_limits<int64_t>::max();
        if (seg.start > 0) target = height_[prev_[seg.start]];
        if (seg.end < m_) target = std::min(target, height_[seg.end]);
        if (target == std::numeric_limits<int64_t>::max()) return false;
        set(seg.start, seg.end, target);
        merge_around(seg.start);
        return true;
    }

private:
    // (Re)defines the segment [start, end); prev_[start] is left to callers.
    void set(int start, int end, int64_t height) {
        alive_[start] = 1;
        end_[start] = end;
        height_[start] = height;
        if (end < m_) prev_[end] = start;
        heap_.push({-height, start});
    }
    // Absorbs the segment right after `left`, which has the same height.
    void absorb_next(int left) {
        const int right = end_[left];
        alive_[right] = 0;
        end_[left] = end_[right];
        if (end_[left] < m_) prev_[end_[left]] = left;
    }
    void merge_around(int start) {
        if (start > 0 && height_[prev_[start]] == height_[start]) {
            start = prev_[start];
            absorb_next(start);
        }
        if (end_[start] < m_ && height_[end_[start]] == height_[start]) absorb_next(start);
    }

    int m_;
    std::vector<int> end_, prev_;  // indexed by segment start
    std::vector<int64_t> height_;
    std::vector<char> alive_;
    std::priority_queue<std::pair<int64_t, int>> heap_;  // (-height, start)
};

// ---------------------------------------------------------------- candidates

// Unplaced buffers, at positions ordered by lower slot. Each position has the
// buffer's upper slot and its rank under the fit rule (0 = best fit).
// best_in(first, last, e) finds the best-ranked position in [first, last)
// whose upper slot is <= e.
class Candidates {
public:
    Candidates(const std::vector<int>& rank_at_pos, const std::vector<int>& hi_at_pos)
        : hi_(hi_at_pos), pos_of_rank_(rank_at_pos.size()) {
        for (size_t p = 0; p < rank_at_pos.size(); ++p) pos_of_rank_[rank_at_pos[p]] = int(p);
        while (leaves_ < int(rank_at_pos.size())) leaves_ *= 2;
        min_hi_.assign(2 * leaves_, kNone);
        min_rank_.assign(2 * leaves_, kNone);
        for (size_t p = 0; p < rank_at_pos.size(); ++p) {
            min_hi_[leaves_ + p] = hi_[p];
            min_rank_[leaves_ + p] = rank_at_pos[p];
        }
        for (int v = leaves_ - 1; v >= 1; --v) pull(v);
    }

    void erase(int pos) {
        int v = leaves_ + pos;
        min_hi_[v] = min_rank_[v] = kNone;
        for (v /= 2; v >= 1; v /= 2) pull(v);
    }

    // Position of the best fitting candidate, or -1.
    int best_in(int first, int last, int e) const {
        int rank = kNone;
        search(1, 0, leaves_, first, last, e, rank);
        return rank == kNone ? -1 : pos_of_rank_[rank];
    }

private:
    static constexpr int kNone = std::numeric_limits<int>::max();

    void pull(int v) {
        min_hi_[v] = std::min(min_hi_[2 * v], min_hi_[2 * v + 1]);
        min_rank_[v] = std::min(min_rank_[2 * v], min_rank_[2 * v + 1]);
    }

    // Branch and bound: skip subtrees where nothing ends by e or nothing beats
    // `rank`; a subtree inside the range whose best buffer fits is settled.
    void search(int v, int nlo, int nhi, int first, int last, int e, int& rank) const {
        if (nhi <= first || last <= nlo || min_hi_[v] > e || min_rank_[v] >= rank) return;
        if (first <= nlo && nhi <= last && hi_[pos_of_rank_[min_rank_[v]]] <= e) {
            rank = min_rank_[v];
            return;
        }
        const int mid = (nlo + nhi) / 2;
        if (min_rank_[2 * v] <= min_rank_[2 * v + 1]) {  // more promising child first
            search(2 * v, nlo, mid, first, last, e, rank);
            search(2 * v + 1, mid, nhi, first, last, e, rank);
        } else {
            search(2 * v + 1, mid, nhi, first, last, e, rank);
            search(2 * v, nlo, mid, first, last, e, rank);
        }
    }

    std::vector<int> hi_, pos_of_rank_;
    int leaves_ = 1;
    std::vector<int> min_hi_, min_rank_;
};

// ------------------------------------------------------------------ planner

// Buffers to pack (non-empty lifespan and size), ordered by lower, with their
// lifespans as slot ranges [lo, hi) of compressed time.
struct Instance {
    std::vector<int> ids, lo, hi;
    int slots = 0;
};

Instance make_instance(const std::vector<Buffer>& buffers) {
    Instance in;
    for (int i = 0; i < int(buffers.size()); ++i)
        if (buffers[i].upper > buffers[i].lower && buffers[i].size > 0) in.ids.push_back(i);
    std::stable_sort(in.ids.begin(), in.ids.end(),
                     [&](int a, int b) { return buffers[a].lower < buffers[b].lower; });
    std::vector<int64_t> times;
    for (int i : in.ids) times.insert(times.end(), {buffers[i].lower, buffers[i].upper});
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
    auto slot = [&](int64_t t) { return int(std::lower_bound(times.begin(), times.end(), t) - times.begin()); };
    for (int i : in.ids) {
        in.lo.push_back(slot(buffers[i].lower));
        in.hi.push_back(slot(buffers[i].upper));
    }
    in.slots = std::max(0, int(times.size()) - 1);  // slot k is [times[k], times[k + 1])
    return in;
}

// Runs the skyline best-fit loop; rank_at_pos ranks the instance's buffers
// under the fit rule. Writes offsets and returns the peak.
int64_t skyline_best_fit(const std::vector<Buffer>& buffers, const Instance& in,
                         const std::vector<int>& rank_at_pos, std::vector<int64_t>& offsets) {
    Candidates candidates(rank_at_pos, in.hi);
    Skyline skyline(in.slots);
    int64_t peak = 0;
    for (size_t placed = 0; placed < in.ids.size();) {
        const Skyline::Segment seg = skyline.lowest();
        // Positions whose lower slot lies in [seg.start, seg.end).
        const int first = int(std::lower_bound(in.lo.begin(), in.lo.end(), seg.start) - in.lo.begin());
        const int last = int(std::lower_bound(in.lo.begin(), in.lo.end(), seg.end) - in.lo.begin());
        const int pos = candidates.best_in(first, last, seg.end);
        if (pos < 0) {
            if (!skyline.lift_lowest()) die("internal error: no buffer fits the whole timeline");
            continue;
        }
        const Buffer& b = buffers[in.ids[pos]];
        const int64_t offset = align_up(seg.height, b.align);
        offsets[in.ids[pos]] = offset;
        skyline.raise(in.lo[pos], in.hi[pos], offset + b.size);
        peak = std::max(peak, offset + b.size);
        candidates.erase(pos);
        ++placed;
    }
    return peak;
}

// Ranks positions by a fit rule given as a "key tuple" function: a smaller
// key is a better fit; ties go to the earlier file row.
template <class Key>
std::vector<int> rank_by(const std::vector<Buffer>& buffers, const Instance& in, Key key) {
    std::vector<int> by_fit(in.ids.size());
    for (size_t p = 0; p < by_fit.size(); ++p) by_fit[p] = int(p);
    std::sort(by_fit.begin(), by_fit.end(), [&](int p, int q) {
        auto kp = key(buffers[in.ids[p]]), kq = key(buffers[in.ids[q]]);
        return kp != kq ? kp < kq : in.ids[p] < in.ids[q];
    });
    std::vector<int> rank(by_fit.size());
    for (size_t r = 0; r < by_fit.size(); ++r) rank[by_fit[r]] = int(r);
    return rank;
}

std::vector<int64_t> plan(const std::vector<Buffer>& buffers) {
    // Buffers with an empty lifespan or size conflict with nothing: offset 0.
    std::vector<int64_t> best(buffers.size(), 0);
    const Instance in = make_instance(buffers);
    if (in.ids.empty()) return best;

    // Fit rules of step 2, each a key where smaller is better.
    auto life = [](const Buffer& b) { return b.upper - b.lower; };
    std::vector<std::vector<int>> rules = {
        rank_by(buffers, in, [&](const Buffer& b) { return std::pair(-life(b), -b.size); }),
        rank_by(buffers, in, [&](const Buffer& b) { return -static_cast<__int128>(life(b)) * b.size; }),
        rank_by(buffers, in, [&](const Buffer& b) { return std::pair(-b.size, -life(b)); }),
    };
    int64_t best_peak = std::numeric_limits<int64_t>::max();
    std::vector<int64_t> offsets(buffers.size(), 0);
    for (const auto& rank : rules) {
        const int64_t peak = skyline_best_fit(buffers, in, rank, offsets);
        if (peak < best_peak) {
            best_peak = peak;
            best = offsets;
        }
    }
    return best;
}

}  // namespace

int main() {
    const char* case_dir = std::getenv("MEMORACE_CASE_DIR");
    const char* out_dir = std::getenv("MEMORACE_OUT_DIR");
    if (!case_dir || !out_dir) die("MEMORACE_CASE_DIR and MEMORACE_OUT_DIR must be set");
    std::ios::sync_with_stdio(false);
    auto buffers = read_buffers(std::string(case_dir) + "/buffers.csv");
    write_plan(std::string(out_dir) + "/plan.csv", buffers, plan(buffers));
    return 0;
}
