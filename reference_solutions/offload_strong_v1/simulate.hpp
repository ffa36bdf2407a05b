// simulate.hpp: an exact copy of the judge's offload simulator for v1 cases:
// integer time in units of 1/(h2d*d2h) µs, one copy engine per direction, a step
// waits for its copy-ins and for the bytes it takes to be released, the judge's
// tie orders. It also records why each step stalled (for repair.hpp).
// Why: plans are compared by the makespan the judge will compute, not an estimate.
#pragma once

#include "residencies.hpp"

namespace {

struct ByteOwners {
    map<i64, pair<i64, int>> seg;  // start -> (end, owner)
    // Make `owner` occupy [s, e); return the latest release among previous occupants.
    i128 take(i64 s, i64 e, int owner, const vector<i128>& release, int& who) {
        i128 ready = 0;
        who = -1;
        auto it = seg.upper_bound(s);
        if (it != seg.begin()) {
            auto pv = prev(it);
            if (pv->second.first > s) it = pv;
        }
        auto first = it;
        i64 left_s = -1, right_e = -1;
        int left_o = -1, right_o = -1;
        while (it != seg.end() && it->first < e) {
            int q = it->second.second;
            if (who < 0 || release[q] > ready) ready = release[q], who = q;
            if (it == first && it->first < s) left_s = it->first, left_o = q;
            if (it->second.first > e) right_e = it->second.first, right_o = q;
            ++it;
        }
        seg.erase(first, it);
        if (left_o >= 0) seg[left_s] = {s, left_o};
        seg[s] = {e, owner};
        if (right_o >= 0) seg[e] = {right_e, right_o};
        return ready;
    }
};

struct SimOut {
    i128 makespan = 0;
    vector<i128> step_start, step_end;
    vector<i128> co_end, ci_end;  // per residency
    vector<int> stall_res;        // per step: the late copy-in residency, or -2 - the produced one
    vector<int> stall_by;         // per step waiting for bytes: the residency still holding them
    vector<int> ci_by;            // per copy-in: the residency whose bytes it waited for (-1: none)
};

SimOut simulate(const vector<Res>& R, const vector<i64>& offs) {
    int n = (int)R.size();
    vector<vector<int>> produced(T), fetched(T), released(T), copied_out(T), copied_in(T);
    for (int r = 0; r < n; r++) {
        int first = us[R[r].k0], last = us[R[r].k0 + R[r].cnt - 1];
        if (R[r].pre < 0) produced[first].push_back(r);
        else fetched[first].push_back(r), copied_in[R[r].pre].push_back(r);
        if (R[r].final_) released[last].push_back(r);
        else copied_out[last].push_back(r);
    }
    SimOut o;
    o.step_start.assign(T, 0);
    o.step_end.assign(T, 0);
    o.co_end.assign(n, 0);
    o.ci_end.assign(n, 0);
    o.stall_res.assign(T, -1);
    o.stall_by.assign(T, -1);
    o.ci_by.assign(n, -1);
    vector<i128> release(n, 0);
    ByteOwners owners;
    i128 d2h_free = 0, h2d_free = 0, prev_end = 0;
    int who;
    for (int s = 0; s < T; s++) {
        i128 start = prev_end;
        for (int r : produced[s]) {
            i128 ready = owners.take(offs[r], offs[r] + sz[R[r].t], r, release, who);
            if (ready > start) start = ready, o.stall_res[s] = -2 - r, o.stall_by[s] = who;
        }
        for (int r : fetched[s])
            if (o.ci_end[r] > start) start = o.ci_end[r], o.stall_res[s] = r;
        i128 end = start + (i128)dur[s] * UNIT;
        o.step_start[s] = start;
        o.step_end[s] = end;
        prev_end = end;
        for (int r : released[s]) release[r] = end;
        for (int r : copied_out[s]) {
            d2h_free = max(end, d2h_free) + (i128)sz[R[r].t] * H2D;
            release[r] = o.co_end[r] = d2h_free;
        }
        for (int r : copied_in[s]) {
            i128 ready = owners.take(offs[r], offs[r] + sz[R[r].t], r, release, who);
            i128 begin = max(max(end, h2d_free), max(o.co_end[r - 1], ready));
            if (ready > max(max(end, h2d_free), o.co_end[r - 1])) o.ci_by[r] = who;
            h2d_free = o.ci_end[r] = begin + (i128)sz[R[r].t] * D2H;
        }
    }
    o.makespan = prev_end;
    return o;
}

double to_us(i128 t) { return (double)t / (double)UNIT; }

}  // namespace
