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
//   2. among unplaced buffers whose lifespan lies inside [s, e), choose the
//      best fit: the longest lifespan (it fills most of the gap), then the
//      largest size, then the earliest file row;
//   3. if there is one, place it at the segment height rounded up to its
//      alignment and raise the skyline over its lifespan; otherwise the gap
//      cannot be used by anybody, so raise the segment to its lower
//      neighbour and merge them.
// Every placement adds at most two segments and every raise removes one, so
// there are O(n) steps. Candidates sit in a segment tree ordered by lower;
// each node keeps the smallest upper and the best buffer of its subtree, and
// the search for the best buffer ending by e prunes with both.
//
// Build: g++ -O2 -std=c++20 -o planner best_fit.cpp
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <set>
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

std::vector<std::string> split_commas(std::string_view line) {
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t i = 0; i <= line.size(); ++i) {
        if (i == line.size() || line[i] == ',') {
            out.push_back(trim(line.substr(start, i - start)));
            start = i + 1;
        }
    }
    return out;
}

int64_t parse_int(const std::string& s) {
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
        if (c_align >= 0 && c_align < int(f.size()) && !f[c_align].empty())
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

// Piecewise-constant height over time slots [0, m); adjacent segments always
// differ in height, so the lowest segment is bounded by higher ones.
class Skyline {
public:
    struct Segment {
        int start, end;
        int64_t height;
    };

    explicit Skyline(int m) { add({0, m, 0}); }

    Segment lowest() const {
        auto [height, start] = *by_height_.begin();
        return {start, by_start_.at(start).first, height};
    }

    // Raises [lo, hi), which lies inside the lowest segment, to `height`
    // (not below the segment's height).
    void raise(int lo, int hi, int64_t height) {
        Segment seg = lowest();
        remove(seg.start);
        if (seg.start < lo) add({seg.start, lo, seg.height});
        if (hi < seg.end) add({hi, seg.end, seg.height});
        add({lo, hi, height});
        merge_around(lo);
    }

    // Raises the lowest segment to its lower neighbour's height and merges.
    // Returns false when it has no neighbour (it spans all time).
    bool lift_lowest() {
        Segment seg = lowest();
        auto it = by_start_.find(seg.start);
        int64_t target = std::numeric_limits<int64_t>::max();
        if (it != by_start_.begin()) target = std::prev(it)->second.second;
        if (std::next(it) != by_start_.end()) target = std::min(target, std::next(it)->second.second);
        if (target == std::numeric_limits<int64_t>::max()) return false;
        remove(seg.start);
        add({seg.start, seg.end, target});
        merge_around(seg.start);
        return true;
    }

private:
    void add(Segment s) {
        by_start_[s.start] = {s.end, s.height};
        by_height_.insert({s.height, s.start});
    }
    void remove(int start) {
        auto it = by_start_.find(start);
        by_height_.erase({it->second.second, start});
        by_start_.erase(it);
    }
    // Merges the segment starting at `start` with equal-height neighbours.
    void merge_around(int start) {
        auto it = by_start_.find(start);
        Segment seg{start, it->second.first, it->second.second};
        if (it != by_start_.begin() && std::prev(it)->second.second == seg.height) {
            seg.start = std::prev(it)->first;
            remove(seg.start);
            remove(start);
            add(seg);
            it = by_start_.find(seg.start);
        }
        auto next = std::next(it);
        if (next != by_start_.end() && next->second.second == seg.height) {
            seg.end = next->second.first;
            remove(next->first);
            remove(seg.start);
            add(seg);
        }
    }

    std::map<int, std::pair<int, int64_t>> by_start_;  // start -> (end, height)
    std::set<std::pair<int64_t, int>> by_height_;      // (height, start)
};

// ---------------------------------------------------------------- candidates

// Unplaced buffers ordered by lower slot. best_in(first, last, e) returns the
// best buffer among positions [first, last) whose upper slot is <= e.
class Candidates {
public:
    // slot_lo/slot_hi: slot range of the buffer at each position;
    // better(a, b): whether buffer a is a better fit than buffer b.
    template <class Better>
    Candidates(std::vector<int> ids, std::vector<int> slot_hi, Better better)
        : ids_(std::move(ids)), hi_(std::move(slot_hi)), better_(better) {
        leaves_ = 1;
        while (leaves_ < int(ids_.size())) leaves_ *= 2;
        min_hi_.assign(2 * leaves_, kNone);
        best_.assign(2 * leaves_, -1);
        for (int p = 0; p < int(ids_.size()); ++p) {
            min_hi_[leaves_ + p] = hi_[p];
            best_[leaves_ + p] = p;
        }
        for (int v = leaves_ - 1; v >= 1; --v) pull(v);
    }

    void erase(int pos) {
        int v = leaves_ + pos;
        min_hi_[v] = kNone;
        best_[v] = -1;
        for (v /= 2; v >= 1; v /= 2) pull(v);
    }

    int id_at(int pos) const { return ids_[pos]; }

    // Position of the best fitting candidate, or -1.
    int best_in(int first, int last, int e) const {
        int found = -1;
        search(1, 0, leaves_, first, last, e, found);
        return found;
    }

private:
    static constexpr int kNone = std::numeric_limits<int>::max();

    bool better_pos(int p, int q) const {
        if (p < 0) return false;
        if (q < 0) return true;
        return better_(ids_[p], ids_[q]);
    }
    void pull(int v) {
        min_hi_[v] = std::min(min_hi_[2 * v], min_hi_[2 * v + 1]);
        best_[v] = better_pos(best_[2 * v], best_[2 * v + 1]) ? best_[2 * v] : best_[2 * v + 1];
    }

    // Branch and bound: skip subtrees with nothing ending by e or nothing
    // better than `found`; a subtree inside the range whose best fits is done.
    void search(int v, int nlo, int nhi, int first, int last, int e, int& found) const {
        if (nhi <= first || last <= nlo || min_hi_[v] > e || !better_pos(best_[v], found)) return;
        if (first <= nlo && nhi <= last && hi_[best_[v]] <= e) {
            found = best_[v];
            return;
        }
        int mid = (nlo + nhi) / 2;
        int a = 2 * v, b = 2 * v + 1, alo = nlo, ahi = mid, blo = mid, bhi = nhi;
        if (better_pos(best_[b], best_[a])) {  // explore the more promising child first
            std::swap(a, b);
            std::swap(alo, blo);
            std::swap(ahi, bhi);
        }
        search(a, alo, ahi, first, last, e, found);
        search(b, blo, bhi, first, last, e, found);
    }

    std::vector<int> ids_, hi_;
    std::function<bool(int, int)> better_;
    int leaves_ = 1;
    std::vector<int> min_hi_, best_;
};

// ------------------------------------------------------------------ planner

std::vector<int64_t> plan(const std::vector<Buffer>& buffers) {
    const int n = int(buffers.size());
    std::vector<int64_t> offsets(n, 0);

    // Buffers with an empty lifespan or size conflict with nothing: offset 0.
    std::vector<int> todo;
    for (int i = 0; i < n; ++i)
        if (buffers[i].upper > buffers[i].lower && buffers[i].size > 0) todo.push_back(i);
    if (todo.empty()) return offsets;

    // Compress time: slot k is [times[k], times[k + 1]).
    std::vector<int64_t> times;
    for (int i : todo) times.insert(times.end(), {buffers[i].lower, buffers[i].upper});
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
    auto slot = [&](int64_t t) { return int(std::lower_bound(times.begin(), times.end(), t) - times.begin()); };

    std::stable_sort(todo.begin(), todo.end(),
                     [&](int a, int b) { return buffers[a].lower < buffers[b].lower; });
    std::vector<int> slot_lo, slot_hi;
    for (int i : todo) {
        slot_lo.push_back(slot(buffers[i].lower));
        slot_hi.push_back(slot(buffers[i].upper));
    }
    auto better = [&](int a, int b) {  // the best-fit rule of step 2
        const Buffer &x = buffers[a], &y = buffers[b];
        int64_t lx = x.upper - x.lower, ly = y.upper - y.lower;
        if (lx != ly) return lx > ly;
        if (x.size != y.size) return x.size > y.size;
        return a < b;
    };
    Candidates candidates(todo, slot_hi, better);
    Skyline skyline(int(times.size()) - 1);

    for (size_t placed = 0; placed < todo.size();) {
        Skyline::Segment seg = skyline.lowest();
        // Positions whose lower slot lies in [seg.start, seg.end).
        int first = int(std::lower_bound(slot_lo.begin(), slot_lo.end(), seg.start) - slot_lo.begin());
        int last = int(std::lower_bound(slot_lo.begin(), slot_lo.end(), seg.end) - slot_lo.begin());
        int pos = candidates.best_in(first, last, seg.end);
        if (pos < 0) {
            if (!skyline.lift_lowest()) die("internal error: no buffer fits the whole timeline");
            continue;
        }
        int i = candidates.id_at(pos);
        offsets[i] = align_up(seg.height, buffers[i].align);
        skyline.raise(slot_lo[pos], slot_hi[pos], offsets[i] + buffers[i].size);
        candidates.erase(pos);
        ++placed;
    }
    return offsets;
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
