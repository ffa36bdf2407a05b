// choose.hpp: what to park and when to fetch it, for one parameter setting (Theta):
// estimate the copy-out and copy-in times on the stall-free schedule, sweep the
// points and park the gap the priority likes best wherever the load passes the
// target (optionally modelling the copy-out queue), then keep resident what fits
// after all and move copy-ins early (steps 1-3 of main.cpp's overview).
// Why: the search varies Theta; this turns one setting into a plan.
#pragma once

#include "residencies.hpp"

namespace {

struct Theta {
    i64 M;
    double s_out = 1.0, s_in = 1.0, lam = 1e18;
    int prio = 0;  // 0 Belady (window end), 1 window length, 2 largest size, 3 longest idle gap
    int pmode = 0;       // placement order
    bool best_fit = false;
    int exp_order = 0;   // expansion: 0 earliest deadline, 1 largest first
    bool ext = true;     // placement keeps parked bytes until the copy-out should be done
    shared_ptr<vector<i64>> pen;  // per point: how much lower than M the load must stay
    bool qaware = false;  // model the copy-out queue while choosing
};

vector<double> q_out;  // learned copy-out queueing delay per gap (µs)

vector<i64> base_load;  // all-resident load per point

int first_point_at(double tau, int from) {
    // first point x >= from with ptime[x] >= tau (P if none)
    int x = (int)(lower_bound(ptime.begin() + from, ptime.end(), tau - 1e-9 * max(1.0, fabs(tau))) - ptime.begin());
    return x;
}

struct Chosen {
    Plan plan;
    bool ok_load = true;
};

Plan choose(const Theta& th) {
    const vector<i64>* pen = th.pen ? th.pen.get() : nullptr;
    auto lim = [&](int x) -> i64 { return pen ? th.M - (*pen)[x] : th.M; };
    Plan pl;
    pl.off.assign(U, 0);
    pl.pre.assign(U, -1);
    pl.xout.assign(U, 0);
    // windows
    vector<int> wstart(U, 0);
    vector<int> wl_h(U, -1), wr_h(U, -1), wl_f(U, -1), wr_f(U, -1), p_h(U, -1);
    vector<double> stall_f(U, 0);
    vector<vector<int>> start_h(P + 1), start_f(P + 1);
    for (int k = 0; k < U; k++) {
        if (!is_gap(k)) continue;
        int i = tens_of[k], a = us[k], b = us[k + 1];
        if (b <= a + 1) continue;
        double tau = end0[a] + t_out_us(i) * th.s_out + (q_out.empty() ? 0.0 : q_out[k]);
        int xo = max(2 * a + 1, first_point_at(tau, 2 * a + 1));
        pl.xout[k] = xo;
        double tin = t_in_us(i) * th.s_in;
        if (tau + tin <= start0[b]) {
            // latest p in [a, b-1] with end0[p] + tin <= start0[b]
            int p = (int)(upper_bound(end0.begin() + a, end0.begin() + b, start0[b] - tin + 1e-9 * max(1.0, start0[b])) - end0.begin()) - 1;
            p = max(p, a);
            if (xo <= 2 * p) {
                wl_h[k] = xo, wr_h[k] = 2 * p, p_h[k] = p;
                start_h[xo].push_back(k);
            }
        }
        wl_f[k] = 2 * a + 1, wr_f[k] = 2 * b - 2;
        stall_f[k] = th.prio == 3 ? -(start0[b] - end0[a]) : max(tau, end0[b - 1]) + t_in_us(i) - start0[b];
        start_f[2 * a + 1].push_back(k);
    }
    // Queue-aware mode: hidden windows end where the copy-in can still be hidden, and
    // a gap is parked only if the copy-out engine (first in, first out, in order of
    // (step, tensor)) finishes it before the point it is needed for without making
    // an earlier choice late.
    const bool qa = th.qaware;
    if (qa) {
        for (int x = 0; x <= P; x++) start_h[x].clear();
        for (int k = 0; k < U; k++) {
            wl_h[k] = wr_h[k] = p_h[k] = -1;
            if (!is_gap(k) || us[k + 1] <= us[k] + 1) continue;
            int i = tens_of[k], a = us[k], b = us[k + 1];
            double tin = t_in_us(i) * th.s_in;
            int p = (int)(upper_bound(end0.begin() + a, end0.begin() + b, start0[b] - tin + 1e-9 * max(1.0, start0[b])) - end0.begin()) - 1;
            if (p < a || end0[a] + t_out_us(i) * th.s_out + tin > start0[b]) continue;
            wl_h[k] = 2 * a + 1, wr_h[k] = 2 * p, p_h[k] = p;
            if (wl_h[k] <= wr_h[k]) start_h[wl_h[k]].push_back(k);
        }
    }
    auto key_h = [&](int k) -> double {
        if (th.prio == 0) return (double)wr_h[k] * 4.0 + (double)sz[tens_of[k]] / (double)C;
        if (th.prio == 1) return (double)(wr_h[k] - wl_h[k]) * 4.0 + (double)sz[tens_of[k]] / (double)C;
        return (double)sz[tens_of[k]] / (double)C * 1e6 + wr_h[k];
    };
    // the copy-out queue: parked gaps sorted by (step, tensor), completion and deadline
    vector<int> q_k;
    vector<double> q_c, q_need;
    const double eps = 1e-9 * max(1.0, total_compute);
    auto q_pos = [&](int k) {
        int lo = 0, hi = (int)q_k.size();
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            int km = q_k[mid];
            bool before = us[km] != us[k] ? us[km] < us[k] : tens_of[km] < tens_of[k];
            if (before) lo = mid + 1;
            else hi = mid;
        }
        return lo;
    };
    auto q_check = [&](int k, double need, double& cg) -> bool {
        int pos = q_pos(k);
        double prev = pos ? q_c[pos - 1] : 0.0;
        cg = max(end0[us[k]], prev) + t_out_us(tens_of[k]) * th.s_out;
        if (cg > need + eps) return false;
        double c = cg;
        for (int j = pos; j < (int)q_k.size(); j++) {
            double nc = max(end0[us[q_k[j]]], c) + t_out_us(tens_of[q_k[j]]) * th.s_out;
            if (nc <= q_c[j]) break;
            if (nc > q_need[j] + eps) return false;
            c = nc;
        }
        return true;
    };
    auto q_commit = [&](int k, double need) {
        int pos = q_pos(k);
        q_k.insert(q_k.begin() + pos, k);
        q_c.insert(q_c.begin() + pos, 0.0);
        q_need.insert(q_need.begin() + pos, need);
        for (int j = pos; j < (int)q_k.size(); j++) {
            double nc = max(end0[us[q_k[j]]], j ? q_c[j - 1] : 0.0) + t_out_us(tens_of[q_k[j]]) * th.s_out;
            if (j > pos && nc <= q_c[j]) break;
            q_c[j] = nc;
            if (j == pos) q_need[j] = max(need, nc);
        }
    };
    priority_queue<pair<double, int>> hh, hf;
    vector<i64> back(P + 2, 0);
    vector<int> order_sel;
    i64 cur = 0;
    vector<i64> diff(P + 1, 0);
    for (int i = 0; i < N; i++) {
        diff[2 * us[ust[i]]] += sz[i];
        diff[2 * us[ust[i + 1] - 1] + 1] -= sz[i];
    }
    vector<int> tried;
    for (int x = 0; x < P; x++) {
        cur += diff[x] + back[x];
        if (th.prio != 3)
            for (int k : start_h[x]) hh.push({key_h(k), k});
        for (int k : start_f[x]) hf.push({-stall_f[k] + 1e-12 * wr_f[k], k});
        while (cur > lim(x)) {
            int pick = -1, wr = -1, p = -1;
            if (qa) {
                tried.clear();
                int fallback_k = -1;
                double fallback_c = 1e300;
                while (!hh.empty() && (int)tried.size() < 40) {
                    int k = hh.top().second;
                    hh.pop();
                    if (pl.off[k] || wr_h[k] < x) continue;
                    double cg, need = min(ptime[x], start0[us[k + 1]] - t_in_us(tens_of[k]) * th.s_in);
                    if (q_check(k, need, cg)) { pick = k; break; }
                    tried.push_back(k);
                    if (cg < fallback_c) fallback_c = cg, fallback_k = k;
                }
                if (pick < 0 && fallback_k >= 0 && th.prio != 3) pick = fallback_k;
                for (int k : tried)
                    if (k != pick) hh.push({key_h(k), k});
                if (pick >= 0) wr = wr_h[pick], p = p_h[pick];
            } else {
                while (!hh.empty()) {
                    int k = hh.top().second;
                    if (pl.off[k] || wr_h[k] < x) { hh.pop(); continue; }
                    pick = k, wr = wr_h[k], p = p_h[k];
                    wstart[k] = wl_h[k];
                    hh.pop();
                    break;
                }
            }
            if (pick < 0)
                while (!hf.empty()) {
                    int k = hf.top().second;
                    if (pl.off[k] || wr_f[k] < x) { hf.pop(); continue; }
                    pick = k, wr = wr_f[k], p = us[k + 1] - 1;
                    wstart[k] = wl_f[k];
                    hf.pop();
                    break;
                }
            if (pick < 0) break;  // nothing can free this point
            if (qa) q_commit(pick, ptime[x]);
            pl.off[pick] = 1;
            pl.pre[pick] = p;
            order_sel.push_back(pick);
            i64 s = sz[tens_of[pick]];
            cur -= s;
            back[wr + 1] += s;
        }
    }
    if (qa)
        for (int j = 0; j < (int)q_k.size(); j++) {
            int k = q_k[j];
            wstart[k] = pl.xout[k] = max(2 * us[k] + 1, first_point_at(q_c[j], 2 * us[k] + 1));
        }
    // Full load with the chosen windows (parked bytes held until the copy-out ends).
    vector<i64> L(P + 1, 0);
    {
        vector<i64> d(P + 1, 0);
        for (int x = 0; x < P; x++) d[x] = diff[x];
        for (int k : order_sel) {
            i64 s = sz[tens_of[k]];
            d[wstart[k]] -= s;
            d[2 * pl.pre[k] + 1] += s;
        }
        i64 r = 0;
        for (int x = 0; x < P; x++) r += d[x], L[x] = r;
    }
    // Clean-up: un-park what fits after all (latest chosen first).
    for (int idx = (int)order_sel.size() - 1; idx >= 0; idx--) {
        int k = order_sel[idx];
        i64 s = sz[tens_of[k]];
        int x0 = wstart[k], x1 = 2 * pl.pre[k];
        bool fits = true;
        for (int x = x0; x <= x1 && fits; x++) fits = L[x] + s <= lim(x);
        if (fits) {
            for (int x = x0; x <= x1; x++) L[x] += s;
            pl.off[k] = 0;
        }
    }
    // Copy-ins as early as the load allows, no earlier than lam * in-time before the use.
    vector<int> parked;
    for (int k : order_sel)
        if (pl.off[k]) parked.push_back(k);
    if (th.exp_order == 0)
        sort(parked.begin(), parked.end(), [&](int a, int b) { return us[a + 1] != us[b + 1] ? us[a + 1] < us[b + 1] : a < b; });
    else
        sort(parked.begin(), parked.end(), [&](int a, int b) { return sz[tens_of[a]] != sz[tens_of[b]] ? sz[tens_of[a]] > sz[tens_of[b]] : a < b; });
    for (int k : parked) {
        int i = tens_of[k], a = us[k], b = us[k + 1];
        i64 s = sz[i];
        int p = pl.pre[k];
        int pmin = a;
        if (th.lam < 1e17) {
            double lead = th.lam * t_in_us(i);
            // latest p with end0[p] <= start0[b] - lead, else a
            int q = (int)(upper_bound(end0.begin() + a, end0.begin() + b, start0[b] - lead) - end0.begin()) - 1;
            pmin = max(a, min(q, p));
        }
        int low = max(2 * pmin + 1, wstart[k]);
        int x = 2 * p;
        while (x >= low && L[x] + s <= lim(x)) x--;
        int np = (x + 1) / 2;  // start point 2np+1 >= x+1
        if (2 * np + 1 < x + 1) np++;
        np = max(np, pmin);
        if (np < p) {
            for (int y = 2 * np + 1; y <= 2 * p; y++) L[y] += s;
            pl.pre[k] = np;
        }
    }
    if (!th.ext) pl.xout.assign(U, 0);
    return pl;
}

}  // namespace
