// repair.hpp: plan-level repair of the best plan until the deadline: for a stalled
// step, keep the bytes a late copy-out still holds out of the way, issue a late
// copy-in earlier or keep the tensor resident; keep what lowers the makespan.
// Why: the parameter search cannot reach single residencies; this fixes the stalls
// the simulator names.
#pragma once

#include "evaluate.hpp"

namespace {

// Plan-level repair of the best plan until the deadline: pick a stalled step and
// remove its cause (keep the bytes a late copy-out still holds out of others' way,
// issue a late copy-in earlier, or keep a tensor resident), re-place, re-simulate,
// keep the change when the makespan drops.
void repair(mt19937_64& rng) {
    if (!best.ok || best.pmode < 0) return;
    SimOut so;
    Result cur = evaluate_plan(best.plan, best.pmode, best.best_fit, &so);
    if (!cur.ok) return;
    int pm = cur.pmode;
    bool bf = cur.best_fit;
    int fails = 0;
    vector<pair<double, int>> st;
    while (!time_up() && fails < 300) {
        st.clear();
        for (int s = 0; s < T; s++) {
            double stall = to_us(so.step_start[s] - (s ? so.step_end[s - 1] : 0));
            if (stall > 0 && so.stall_res[s] != -1) st.emplace_back(stall, s);
        }
        if (st.empty()) break;
        sort(st.rbegin(), st.rend());
        int s = st[rng() % min<size_t>(st.size(), 6)].second;
        Plan pl = cur.plan;
        if (pl.xout.empty()) pl.xout.assign(U, 0);
        int blocker = -1, until = -1;
        if (so.stall_res[s] <= -2) {
            blocker = so.stall_by[s], until = 2 * s + 1;  // produced in s: keep its bytes free through s
        } else {
            int r = so.stall_res[s];
            if (so.ci_by[r] >= 0 && rng() % 4) blocker = so.ci_by[r], until = 2 * cur.R[r].pre + 2;
        }
        if (blocker >= 0 && !cur.R[blocker].final_) {
            int kq = cur.R[blocker].k0 + cur.R[blocker].cnt - 1;  // its gap
            pl.xout[kq] = max(pl.xout[kq], until + (int)(rng() % 3));
        } else if (so.stall_res[s] >= 0) {
            int r = so.stall_res[s];
            int k = cur.R[r].k0 - 1;  // the gap before this residency
            int a = us[k], p = pl.pre[k];
            if (p <= a || rng() % 8 == 0) {
                pl.off[k] = 0;  // cannot go earlier: keep it resident instead
            } else {
                double need = to_us(so.ci_end[r] - so.step_end[s - 1]);
                int np = p;
                double gained = 0;
                while (np > a && gained < need) gained += (double)dur[np], np--;
                int mode = rng() % 3;
                if (mode == 0) np = p - 1;
                else if (mode == 1) np = max(a, (np + p) / 2);
                pl.pre[k] = max(a, min(np, p - 1));
            }
        } else {
            fails++;
            continue;
        }
        SimOut so2;
        Result nr = evaluate_plan(pl, pm, bf, &so2);
        if (nr.ok && nr.makespan < cur.makespan) {
            cur = std::move(nr);
            so = std::move(so2);
            fails = 0;
            if (cur.makespan < best.makespan) {
                Result copy = cur;
                consider(std::move(copy), "repair");
            }
        } else {
            fails++;
        }
    }
}

}  // namespace
