// search.hpp: the anytime search until the deadline: baselines (never worse than
// offload_naive.py), starts per (priority, placement, queue model) with the target
// lowered where the placement failed, iterated local search over the parameters,
// then repair.hpp.
// Why: no single setting is best on every case; the deadline bounds the search.
#pragma once

#include "repair.hpp"

namespace {

void search() {
    mt19937_64 rng(12345);
    // Baselines: swap everything (placed as offload_naive.py does, and other ways),
    // and one residency per use packed step by step.
    for (int m : {6, 0, 1, 2, 3, 4, 5}) {
        Result r = evaluate_plan(swap_plan(false), m, false);
        consider(std::move(r), "swap everything");
    }
    {
        Result r;
        r.plan = swap_plan(true);
        r.R = residencies(r.plan);
        per_step_offsets(r.R, r.offs);
        SimOut so = simulate(r.R, r.offs);
        r.ok = true;
        for (size_t q = 0; q < r.R.size(); q++) r.ok = r.ok && r.offs[q] + sz[r.R[q].t] <= C;
        r.makespan = so.makespan;
        consider(std::move(r), "one residency per use");
    }
    if (!best.ok) {  // nothing fits (alignment padding): write the per-use plan anyway
        best.plan = swap_plan(true);
        best.R = residencies(best.plan);
        per_step_offsets(best.R, best.offs);
        best.makespan = simulate(best.R, best.offs).makespan;
    }
    i128 lower = (i128)0;
    for (int s = 0; s < T; s++) lower += (i128)dur[s] * UNIT;
    auto done = [&]() { return time_up() || (best.ok && best.makespan <= lower); };

    // Starts: for several (priority, placement, extension) settings, lower the target
    // where the placement failed until it places.
    struct Start { Theta th; i128 ms; };
    vector<Start> starts;
    // (priority, placement order, extension, queue-aware)
    // placement orders: 0 size, 1 area, 2 time (+ best fit: 6, 7, 8), 3..5 skyline
    const int cfgs[][4] = {{0, 3, 1, 1}, {0, 4, 1, 0}, {3, 3, 1, 0}, {0, 8, 1, 0}, {2, 4, 1, 0},
                           {3, 8, 1, 0}, {1, 3, 1, 1}, {0, 0, 1, 1}, {0, 0, 1, 0}, {3, 4, 1, 0},
                           {0, 5, 1, 0}, {3, 0, 0, 0}, {0, 8, 0, 0}, {3, 2, 0, 0}, {1, 0, 1, 0},
                           {2, 0, 1, 0}, {2, 3, 1, 1}};
    double starts_end = 0.4 * deadline_s;
    for (auto& cfg : cfgs) {
        if (done() || (!starts.empty() && elapsed() > starts_end)) break;
        Theta th;
        th.M = C;
        th.prio = cfg[0], th.pmode = cfg[1] % 6, th.best_fit = cfg[1] >= 6, th.ext = cfg[2], th.qaware = cfg[3];
        th.pen = make_shared<vector<i64>>(P, 0);
        for (int it = 0; it < 40 && !done(); it++) {
            Result r = evaluate(th);
            if (r.ok) {
                starts.push_back({th, r.makespan});
                consider(std::move(r), "start");
                break;
            }
            const Res& q = r.R[fail_res];
            i64 add = fail_over + C / 500;
            for (int x = q.lo; x <= q.hi_ext; x++) (*th.pen)[x] += add;
            if (it % 4 == 3) th.M = max<i64>(0, th.M - (i64)((double)C * 0.01 * pow(1.5, it / 4)));
        }
    }
    if (starts.empty()) return;
    sort(starts.begin(), starts.end(), [](const Start& a, const Start& b) { return a.ms < b.ms; });

    // Iterated local search over the parameters, restarting from the good starts.
    double ils_end = elapsed() + 0.7 * max(0.0, deadline_s - elapsed());
    Theta cur = starts[0].th;
    i128 cur_ms = starts[0].ms;
    {
        SimOut so;
        Result r = evaluate(cur, &so);
        if (r.ok) learn_delays(r, so, 1.0);
    }
    vector<double> learned = q_out;
    const double souts[] = {0.0, 0.5, 1.0, 1.0, 1.25, 1.5, 2.0, 3.0};
    const double sins[] = {1.0, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0};
    const double lams[] = {1.0, 1.5, 2.0, 3.0, 5.0, 1e18, 1e18};
    int iter = 0, since = 0, stale = 0;
    while (!done() && elapsed() < ils_end && stale < 2500) {
        iter++;
        Theta th = cur;
        int moves = 1 + rng() % 3;
        for (int m = 0; m < moves; m++) {
            switch (rng() % 10) {
                case 0: case 1: {
                    double f = exp(((double)(rng() % 2001) / 1000.0 - 1.0) * 0.03);
                    th.M = min(C, max<i64>(0, (i64)((double)th.M * f)));
                    break;
                }
                case 2: th.s_out = souts[rng() % 8]; break;
                case 3: th.s_in = sins[rng() % 7]; break;
                case 4: th.lam = lams[rng() % 7]; break;
                case 5: th.prio = rng() % 4; break;
                case 6: th.pmode = rng() % 6; th.best_fit = rng() % 2; break;
                case 7: th.exp_order = rng() % 2; th.ext = rng() % 4 != 0; break;
                case 9: th.qaware = !th.qaware; break;
                case 8: {
                    double f = 0.5 + (double)(rng() % 1001) / 1000.0;
                    auto np = make_shared<vector<i64>>(*th.pen);
                    for (auto& v : *np) v = (i64)((double)v * f);
                    th.pen = np;
                    break;
                }
            }
        }
        q_out = rng() % 3 != 0 ? learned : vector<double>();
        SimOut so;
        Result r = evaluate(th, &so);
        for (int fix = 0; !r.ok && fix < 3 && rng() % 2; fix++) {
            auto np = make_shared<vector<i64>>(*th.pen);
            const Res& q = r.R[fail_res];
            for (int x = q.lo; x <= q.hi_ext; x++) (*np)[x] += fail_over + C / 1000;
            th.pen = np;
            r = evaluate(th, &so);
        }
        if (r.ok && r.makespan < cur_ms) {
            cur_ms = r.makespan;
            cur = th;
            since = 0;
            if (r.makespan < best.makespan) {
                stale = 0;
                q_out = learned;
                learn_delays(r, so, 0.5);
                learned = q_out;
                consider(std::move(r), "search");
            }
        } else {
            since++, stale++;
            if (since > 150) {  // restart from one of the best starts
                const Start& st = starts[rng() % min<size_t>(3, starts.size())];
                cur = rng() % 2 ? st.th : cur;
                cur_ms = (cur.pen == st.th.pen) ? st.ms : cur_ms;
                since = 0;
            }
        }
    }
    q_out = learned;
    fprintf(stderr, "search: %d iterations, %d evaluations; best M %.4f C, prio %d, place %d%s, ext %d, queue-aware %d, lam %g, s_out %g, s_in %g\n",
            iter, evals, (double)cur.M / (double)C, cur.prio, cur.pmode, cur.best_fit ? " best fit" : "", (int)cur.ext, (int)cur.qaware, cur.lam, cur.s_out, cur.s_in);
    repair(rng);
}

}  // namespace
