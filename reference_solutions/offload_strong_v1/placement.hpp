// placement.hpp: offsets for the residencies' windows by greedy orders (size, area,
// time order, offload_naive.py's order), lowest or best fit; a residency's wish to
// keep its bytes until its copy-out ends is dropped where it does not fit.
// Why: the search tries several placements per plan (pmode); the skyline ones are in
// skyline.hpp. A failed placement says which residency and by how much (fail_res,
// fail_over), which the search uses to lower the target there.
#pragma once

#include "residencies.hpp"

namespace {

// Greedy placement of the residencies' windows [lo, hi_ext]: orders
// 0 = size desc, 1 = area desc, 2 = time order; lowest fit or best fit.
int fail_res = -1;      // the residency that did not fit in the last failed placement
i64 fail_over = 0;      // by how many bytes it passed the capacity

bool place_skyline(const vector<Res>& R, int rule, vector<i64>& offs);

bool place(const vector<Res>& R, int order_mode, bool best_fit, vector<i64>& offs) {
    if (order_mode >= 3 && order_mode <= 5) return place_skyline(R, order_mode - 3, offs);
    int n = (int)R.size();
    vector<int> order(n);
    iota(order.begin(), order.end(), 0);
    auto len = [&](int r) { return (i64)(R[r].hi_ext - R[r].lo + 1); };
    if (order_mode == 0)
        stable_sort(order.begin(), order.end(), [&](int a, int b) {
            if (sz[R[a].t] != sz[R[b].t]) return sz[R[a].t] > sz[R[b].t];
            return len(a) > len(b);
        });
    else if (order_mode == 1)
        stable_sort(order.begin(), order.end(), [&](int a, int b) {
            double x = (double)sz[R[a].t] * len(a), y = (double)sz[R[b].t] * len(b);
            if (x != y) return x > y;
            return sz[R[a].t] > sz[R[b].t];
        });
    else if (order_mode == 2)
        stable_sort(order.begin(), order.end(), [&](int a, int b) {
            if (R[a].lo != R[b].lo) return R[a].lo < R[b].lo;
            if (len(a) != len(b)) return len(a) > len(b);
            return sz[R[a].t] > sz[R[b].t];
        });
    else  // 6: what offload_naive.py does (time order, larger first)
        stable_sort(order.begin(), order.end(), [&](int a, int b) {
            if (R[a].lo != R[b].lo) return R[a].lo < R[b].lo;
            return sz[R[a].t] > sz[R[b].t];
        });
    const int B = 16;
    int nb = P / B + 1;
    vector<vector<int>> all_in(nb), start_in(nb);
    vector<int> hu(n);  // the window each placed residency keeps: [lo, hu]
    offs.assign(n, 0);
    vector<pair<i64, i64>> busy;
    auto fit = [&](int r, int hi) -> i64 {
        int lo = R[r].lo;
        i64 size = sz[R[r].t], a = al[R[r].t];
        busy.clear();
        int bl = lo / B, bh = hi / B;
        for (int q : all_in[bl])
            if (R[q].lo <= hi && hu[q] >= lo) busy.emplace_back(offs[q], offs[q] + sz[R[q].t]);
        for (int b = bl + 1; b <= bh; b++)
            for (int q : start_in[b])
                if (R[q].lo <= hi) busy.emplace_back(offs[q], offs[q] + sz[R[q].t]);
        sort(busy.begin(), busy.end());
        i64 cur = 0, chosen = -1, best_waste = -1;
        for (auto& [s, e] : busy) {
            i64 cand = align_up(cur, a);
            if (cand + size <= s) {
                if (!best_fit) { chosen = cand; break; }
                i64 waste = s - cand - size;
                if (best_waste < 0 || waste < best_waste) best_waste = waste, chosen = cand;
            }
            cur = max(cur, e);
        }
        if (chosen < 0) chosen = align_up(cur, a);
        return chosen;
    };
    for (int r : order) {
        int hi = R[r].hi_ext;
        i64 chosen = fit(r, hi);
        if (chosen + sz[R[r].t] > C && hi > R[r].hi) {
            hi = R[r].hi;  // the extension is a wish, not a rule
            chosen = fit(r, hi);
        }
        if (chosen + sz[R[r].t] > C) {
            fail_res = r;
            fail_over = chosen + sz[R[r].t] - C;
            return false;
        }
        offs[r] = chosen;
        hu[r] = hi;
        for (int b = R[r].lo / B; b <= hi / B; b++) all_in[b].push_back(r);
        start_in[R[r].lo / B].push_back(r);
    }
    return true;
}

}  // namespace
