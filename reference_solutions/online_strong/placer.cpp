// Offline placement of one observed iteration, the fast twin of place.py (same rules).
//
// stdin:  "N M BUDGET_S SEED", then M obstacles "OFFSET END FREE_TIME" (live from
//         time -1 to FREE_TIME at fixed addresses), then N items
//         "START END SIZE ALIGN LATE" (lifetime [START, END) in events).
// stdout: "PEAK BOUND" (BOUND: the most bytes live at once), then N offsets in item order.
//
// Greedy orders (largest-first TFLite style, longest-lived first, area first; items
// marked LATE after all others), each item at the lowest aligned offset clear of every
// placed block overlapping it in time (placed blocks kept sorted by offset, scanned
// once); then randomly perturbed size / lifetime orders until the budget is spent.
// The lowest peak wins.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <tuple>
#include <vector>

using i64 = long long;
struct Block { i64 off, end, lo, hi; };

static i64 align_up(i64 x, i64 a) { return (x + a - 1) / a * a; }

struct Problem {
    std::vector<Block> obstacles;
    std::vector<i64> start, end, size, align;
    std::vector<char> late;
};

static i64 place(const Problem& p, const std::vector<int>& order, std::vector<i64>& out) {
    std::vector<Block> placed(p.obstacles);  // sorted by off
    std::sort(placed.begin(), placed.end(), [](const Block& a, const Block& b) { return a.off < b.off; });
    i64 peak = 0;
    for (const Block& b : placed) peak = std::max(peak, b.end);
    for (int i : order) {
        i64 s = p.start[i], e = p.end[i], sz = p.size[i], al = p.align[i];
        i64 below = 0;
        for (const Block& b : placed) {
            if (b.lo >= e || b.hi <= s) continue;
            if (align_up(below, al) + sz <= b.off) break;
            below = std::max(below, b.end);
        }
        i64 off = align_up(below, al);
        out[i] = off;
        Block nb{off, off + sz, s, e};
        auto it = std::upper_bound(placed.begin(), placed.end(), nb,
                                   [](const Block& a, const Block& b) { return a.off < b.off; });
        placed.insert(it, nb);
        peak = std::max(peak, off + sz);
    }
    return peak;
}

int main() {
    int n, m;
    double budget;
    unsigned seed;
    if (std::scanf("%d %d %lf %u", &n, &m, &budget, &seed) != 4) return 1;
    auto t0 = std::chrono::steady_clock::now();
    Problem p;
    for (int k = 0; k < m; ++k) {
        Block b{};
        if (std::scanf("%lld %lld %lld", &b.off, &b.end, &b.hi) != 3) return 1;
        b.lo = -1;
        p.obstacles.push_back(b);
    }
    p.start.resize(n), p.end.resize(n), p.size.resize(n), p.align.resize(n), p.late.resize(n);
    for (int i = 0; i < n; ++i) {
        int late;
        if (std::scanf("%lld %lld %lld %lld %d", &p.start[i], &p.end[i], &p.size[i], &p.align[i], &late) != 5)
            return 1;
        p.late[i] = (char)late;
    }
    std::vector<double> len(n);
    for (int i = 0; i < n; ++i) len[i] = double(p.end[i] - p.start[i]);
    auto by = [&](auto key) {  // key(i) -> tuple, smaller first; LATE items last
        std::vector<int> o(n);
        for (int i = 0; i < n; ++i) o[i] = i;
        std::stable_sort(o.begin(), o.end(), [&](int a, int b) {
            if (p.late[a] != p.late[b]) return p.late[a] < p.late[b];
            return key(a) < key(b);
        });
        return o;
    };
    std::vector<std::vector<int>> orders = {
        by([&](int i) { return std::make_tuple(-len[i], -(double)p.size[i], p.start[i]); }),
        by([&](int i) { return std::make_tuple(-(double)p.size[i], -len[i], p.start[i]); }),
        by([&](int i) { return std::make_tuple(-len[i] * (double)p.size[i], 0.0, p.start[i]); }),
    };
    std::vector<i64> best(n, 0), cur(n, 0);
    i64 best_peak = -1;
    for (auto& o : orders) {
        i64 pk = place(p, o, cur);
        if (best_peak < 0 || pk < best_peak) best_peak = pk, best = cur;
    }
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> noise(0.0, 0.3);
    auto elapsed = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    std::vector<double> a(n), b(n);
    for (int round = 0; n > 1 && elapsed() < budget; ++round) {
        for (int i = 0; i < n; ++i) {
            a[i] = (double)p.size[i] * std::exp(noise(rng));
            b[i] = round % 2 ? len[i] * std::exp(noise(rng)) : 0.0;
        }
        auto o = by([&](int i) { return std::make_tuple(-b[i], -a[i], p.start[i]); });
        i64 pk = place(p, o, cur);
        if (pk < best_peak) best_peak = pk, best = cur;
    }
    // The plan's own lower bound: the most bytes live at one time (obstacles included).
    std::vector<std::pair<i64, i64>> delta;
    for (const Block& b : p.obstacles) delta.push_back({-1, b.end - b.off}), delta.push_back({b.hi, b.off - b.end});
    for (int i = 0; i < n; ++i) delta.push_back({p.start[i], p.size[i]}), delta.push_back({p.end[i], -p.size[i]});
    std::sort(delta.begin(), delta.end());  // at one time, frees (negative) first
    i64 live = 0, bound = 0;
    for (auto& [t, d] : delta) live += d, bound = std::max(bound, live);
    std::printf("%lld %lld\n", best_peak, bound);
    for (int i = 0; i < n; ++i) std::printf("%lld\n", best[i]);
    return 0;
}
