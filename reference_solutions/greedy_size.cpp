// Greedy-by-size offset planner (TFLite style; Pisarchyk & Lee 2020,
// "Efficient Memory Management for Deep Neural Net Inference").
//
// Buffers are placed largest first (ties: longer lifespan, then smaller
// lower, then file row). Each buffer takes the lowest aligned offset at which
// it does not collide with any already placed buffer whose lifespan
// intersects its own (first fit from the bottom).
//
// To stay fast on hundreds of thousands of buffers, the placed buffers that
// meet a new lifespan are not found by scanning all placed buffers but with
// PlacedSet (a stabbing segment tree plus a bitset over buffers ordered by
// lower; see there), which reports each of the k of them once in
// O(log m + k + n / 64) time, worst case. Their address ranges are then
// consumed in offset order from a heap until the first gap that fits, so the
// total cost is O(n log n) plus O(k log k) per buffer, i.e. bounded by the
// number of intersecting pairs (at most n * live).
//
// Build: g++ -O2 -std=c++20 -o planner greedy_size.cpp
#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
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
    std::cerr << "greedy_size: " << msg << "\n";
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

// ------------------------------------------------------- interval structure

// A placed buffer as seen by later buffers: its address range [start, end).
struct Block {
    int64_t start, end;
    bool operator>(const Block& o) const { return start > o.start; }
};

// Placed buffers, searchable by lifespan. A placed lifespan [a, b) meets a
// query lifespan [lo, hi) iff exactly one of these holds:
//   (1) a <= lo < b  (it is live at lo), or
//   (2) lo < a < hi  (it starts inside the query).
// (1) is a stabbing query on a segment tree over compressed time whose nodes
// hold the canonical pieces of placed lifespans; (2) is a range query over
// buffers ordered by lower, kept as a bitset of placed positions. Each
// intersecting buffer is reported exactly once and nothing else is touched
// except O(log m) tree nodes and (range length / 64) bitset words, so a query
// costs O(log m + k + range / 64) for k reported buffers. Address ranges are
// stored inline so that reporting reads memory sequentially.
class PlacedSet {
public:
    // lowers_sorted: every buffer's lower, ascending (one entry per buffer).
    PlacedSet(int slots, std::vector<int64_t> lowers_sorted)
        : m_(std::max(slots, 1)), nodes_(2 * size_t(pow2_at_least(m_))),
          lowers_(std::move(lowers_sorted)), placed_bits_((lowers_.size() + 63) / 64, 0),
          blocks_by_pos_(lowers_.size()) {}

    // Adds a buffer with slot range [lo, hi) (lo < hi) whose lower has rank
    // `pos` in lowers_sorted (distinct buffers get distinct ranks).
    void insert(int lo, int hi, size_t pos, Block block) {
        add_canonical(1, 0, leaves(), lo, hi, block);
        placed_bits_[pos / 64] |= uint64_t(1) << (pos % 64);
        blocks_by_pos_[pos] = block;
    }

    // Appends the blocks of all placed buffers whose lifespan meets the query
    // lifespan, given as slot `lo` and times (lower, upper).
    void query(int lo, int64_t lower, int64_t upper, std::vector<Block>& out) const {
        stab(lo, out);
        size_t first = size_t(std::upper_bound(lowers_.begin(), lowers_.end(), lower) - lowers_.begin());
        size_t last = size_t(std::lower_bound(lowers_.begin(), lowers_.end(), upper) - lowers_.begin());
        starts_in(first, last, out);
    }

private:
    static int pow2_at_least(int x) {
        int p = 1;
        while (p < x) p *= 2;
        return p;
    }
    int leaves() const { return int(nodes_.size() / 2); }

    void add_canonical(int node, int nlo, int nhi, int lo, int hi, Block block) {
        if (hi <= nlo || nhi <= lo) return;
        if (lo <= nlo && nhi <= hi) {
            nodes_[node].push_back(block);
            return;
        }
        int mid = (nlo + nhi) / 2;
        add_canonical(2 * node, nlo, mid, lo, hi, block);
        add_canonical(2 * node + 1, mid, nhi, lo, hi, block);
    }

    // Blocks of buffers live in slot t: those stored on the root-to-leaf path.
    void stab(int t, std::vector<Block>& out) const {
        for (int node = leaves() + t; node >= 1; node /= 2)
            out.insert(out.end(), nodes_[node].begin(), nodes_[node].end());
    }

    // Blocks of placed buffers at positions [first, last) of the lower order.
    void starts_in(size_t first, size_t last, std::vector<Block>& out) const {
        for (size_t w = first / 64; w * 64 < last; ++w) {
            uint64_t bits = placed_bits_[w];
            if (w == first / 64) bits &= ~uint64_t(0) << (first % 64);
            if ((w + 1) * 64 > last) bits &= ~uint64_t(0) >> ((w + 1) * 64 - last);
            for (; bits; bits &= bits - 1) out.push_back(blocks_by_pos_[w * 64 + size_t(std::countr_zero(bits))]);
        }
    }

    int m_;
    std::vector<std::vector<Block>> nodes_;  // heap-ordered tree, leaf t at leaves() + t
    std::vector<int64_t> lowers_;
    std::vector<uint64_t> placed_bits_;
    std::vector<Block> blocks_by_pos_;
};

// ------------------------------------------------------------------ planner

// Lowest offset >= 0, multiple of align, such that [offset, offset + size)
// misses every block. Blocks are consumed from a min-heap on start rather than
// fully sorted: the first fit is usually low, so most blocks are never popped.
int64_t first_fit(std::vector<Block>& blocks, int64_t size, int64_t align) {
    auto later = std::greater<Block>();
    std::make_heap(blocks.begin(), blocks.end(), later);
    int64_t candidate = 0;
    for (auto heap_end = blocks.end(); heap_end != blocks.begin(); --heap_end) {
        const Block next = blocks.front();  // lowest start among the rest
        if (next.start >= candidate + size) break;  // the gap below it is big enough
        if (next.end > candidate) candidate = align_up(next.end, align);
        std::pop_heap(blocks.begin(), heap_end, later);
    }
    return candidate;
}

// Placement order: largest first; ties longer lifespan, smaller lower, file row.
std::vector<int> size_order(const std::vector<Buffer>& buffers) {
    std::vector<int> order(buffers.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = int(i);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
        const Buffer &x = buffers[a], &y = buffers[b];
        if (x.size != y.size) return x.size > y.size;
        int64_t lx = x.upper - x.lower, ly = y.upper - y.lower;
        if (lx != ly) return lx > ly;
        if (x.lower != y.lower) return x.lower < y.lower;
        return a < b;
    });
    return order;
}

std::vector<int64_t> plan(const std::vector<Buffer>& buffers) {
    const int n = int(buffers.size());

    // Compress time so that lifespans become slot ranges [lo, hi).
    std::vector<int64_t> times;
    for (const auto& b : buffers) times.insert(times.end(), {b.lower, b.upper});
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
    auto slot = [&](int64_t t) { return int(std::lower_bound(times.begin(), times.end(), t) - times.begin()); };

    // Rank of every buffer in the order of lower (ties by file row).
    std::vector<int> by_lower(n);
    for (int i = 0; i < n; ++i) by_lower[i] = i;
    std::stable_sort(by_lower.begin(), by_lower.end(),
                     [&](int a, int b) { return buffers[a].lower < buffers[b].lower; });
    std::vector<size_t> rank(n);
    std::vector<int64_t> lowers(n);
    for (int r = 0; r < n; ++r) {
        rank[by_lower[r]] = size_t(r);
        lowers[r] = buffers[by_lower[r]].lower;
    }

    PlacedSet placed(int(times.size()), std::move(lowers));
    std::vector<int64_t> offsets(n, 0);
    std::vector<Block> blocks;
    for (int i : size_order(buffers)) {
        const Buffer& b = buffers[i];
        // An empty lifespan or an empty address range conflicts with nothing:
        // offset 0 is valid and the buffer never blocks anyone.
        if (b.upper <= b.lower || b.size <= 0) continue;
        blocks.clear();
        placed.query(slot(b.lower), b.lower, b.upper, blocks);
        offsets[i] = first_fit(blocks, b.size, b.align);
        placed.insert(slot(b.lower), slot(b.upper), rank[i], Block{offsets[i], offsets[i] + b.size});
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
