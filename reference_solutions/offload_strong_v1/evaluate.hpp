// evaluate.hpp: a plan placed and simulated (Result), the best one so far
// (consider), the swap-everything plans, and the copy-out delays learned from a
// simulation that choose.hpp adds to its estimates.
// Why: the one way search.hpp and repair.hpp judge a candidate.
#pragma once

#include "choose.hpp"
#include "simulate.hpp"
#include "skyline.hpp"

namespace {

struct Result {
    bool ok = false;
    int pmode = -1;  // placement used (-1: packed step by step)
    bool best_fit = false;
    i128 makespan = 0;
    Plan plan;
    vector<Res> R;
    vector<i64> offs;
};

Result best;
int evals = 0;

void consider(Result&& r, const char* what) {
    if (!r.ok) return;
    if (!best.ok || r.makespan < best.makespan) {
        fprintf(stderr, "[%6.2fs] %-22s score %.6f\n", elapsed(), what, r.makespan > 0 ? total_compute / to_us(r.makespan) : 1.0);
        best = std::move(r);
    }
}

Result evaluate_plan(const Plan& pl, int pmode, bool best_fit, SimOut* sim_out = nullptr) {
    Result res;
    res.plan = pl;
    res.R = residencies(pl);
    res.pmode = pmode, res.best_fit = best_fit;
    evals++;
    if (!place(res.R, pmode, best_fit, res.offs)) return res;
    SimOut so = simulate(res.R, res.offs);
    res.ok = true;
    res.makespan = so.makespan;
    if (sim_out) *sim_out = std::move(so);
    return res;
}

Result evaluate(const Theta& th, SimOut* sim_out = nullptr) { return evaluate_plan(choose(th), th.pmode, th.best_fit, sim_out); }

Plan swap_plan(bool per_use) {
    Plan pl;
    pl.off.assign(U, 0);
    pl.pre.assign(U, -1);
    for (int k = 0; k < U; k++)
        if (is_gap(k) && (per_use || us[k + 1] > us[k] + 1)) pl.off[k] = 1, pl.pre[k] = us[k + 1] - 1;
    return pl;
}

// Learn each parked gap's copy-out queueing delay from a simulation.
void learn_delays(const Result& r, const SimOut& so, double weight) {
    if (q_out.empty()) q_out.assign(U, 0.0);
    for (int x = 0; x + 1 < (int)r.R.size(); x++) {
        const Res& q = r.R[x];
        if (q.final_) continue;
        int k = q.k0 + q.cnt - 1;
        double delay = to_us(so.co_end[x] - so.step_end[us[k]]) - t_out_us(q.t);
        q_out[k] = (1 - weight) * q_out[k] + weight * max(0.0, delay);
    }
}

}  // namespace
