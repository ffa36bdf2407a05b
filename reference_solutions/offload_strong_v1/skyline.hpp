// skyline.hpp: skyline best fit (Burke, Kendall & Whitwell 2004, as best_fit.cpp)
// over the residencies' windows, with a segment tree of the unplaced candidates;
// and the last-resort placement, one residency per use packed step by step.
// Why: the densest placement for plans with many overlapping windows (pmode 3-5).
// The last resort follows the skyline here as it did in the single file: moved to
// placement.hpp, the compiler lays the program out otherwise (not byte for byte the
// program offload_strong.cpp was).
#pragma once

#include "placement.hpp"

namespace {

// Skyline best fit (Burke, Kendall & Whitwell 2004, as in best_fit.cpp): take the
// lowest skyline segment, put there the best-ranked unplaced residency whose
// window lies inside it, or lift the segment to its lower neighbour.
class Skyline {
public:
    struct Segment {
        int start, end;
        i64 height;
    };
    explicit Skyline(int m) : m_(m), end_(m + 1), prev_(m + 1, -1), height_(m + 1), alive_(m + 1, 0) { set(0, m, 0); }
    Segment lowest() {
        while (true) {
            auto [neg_height, start] = heap_.top();
            if (alive_[start] && height_[start] == -neg_height) return {start, end_[start], -neg_height};
            heap_.pop();
        }
    }
    void raise(int lo, int hi, i64 height) {
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
    bool lift_lowest() {
        const Segment seg = lowest();
        i64 target = numeric_limits<i64>::max();
        if (seg.start > 0) target = height_[prev_[seg.start]];
        if (seg.end < m_) target = min(target, height_[seg.end]);
        if (target == numeric_limits<i64>::max()) return false;
        set(seg.start, seg.end, target);
        merge_around(seg.start);
        return true;
    }

private:
    void set(int start, int end, i64 height) {
        alive_[start] = 1;
        end_[start] = end;
        height_[start] = height;
        if (end < m_) prev_[end] = start;
        heap_.push({-height, start});
    }
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
    vector<int> end_, prev_;
    vector<i64> height_;
    vector<char> alive_;
    priority_queue<pair<i64, int>> heap_;
};

// Unplaced residencies by window start; best_in(first, last, e) finds the
// best-ranked one among positions [first, last) whose window ends by e.
class Candidates {
public:
    Candidates(const vector<int>& rank_at_pos, const vector<int>& hi_at_pos) : hi_(hi_at_pos), pos_of_rank_(rank_at_pos.size()) {
        for (size_t p = 0; p < rank_at_pos.size(); ++p) pos_of_rank_[rank_at_pos[p]] = (int)p;
        while (leaves_ < (int)rank_at_pos.size()) leaves_ *= 2;
        min_hi_.assign(2 * leaves_, kNone);
        min_rank_.assign(2 * leaves_, kNone);
        for (size_t p = 0; p < rank_at_pos.size(); ++p) min_hi_[leaves_ + p] = hi_[p], min_rank_[leaves_ + p] = rank_at_pos[p];
        for (int v = leaves_ - 1; v >= 1; --v) pull(v);
    }
    void erase(int pos) {
        int v = leaves_ + pos;
        min_hi_[v] = min_rank_[v] = kNone;
        for (v /= 2; v >= 1; v /= 2) pull(v);
    }
    int best_in(int first, int last, int e) const {
        int rank = kNone;
        search(1, 0, leaves_, first, last, e, rank);
        return rank == kNone ? -1 : pos_of_rank_[rank];
    }

private:
    static constexpr int kNone = numeric_limits<int>::max();
    void pull(int v) {
        min_hi_[v] = min(min_hi_[2 * v], min_hi_[2 * v + 1]);
        min_rank_[v] = min(min_rank_[2 * v], min_rank_[2 * v + 1]);
    }
    void search(int v, int nlo, int nhi, int first, int last, int e, int& rank) const {
        if (nhi <= first || last <= nlo || min_hi_[v] > e || min_rank_[v] >= rank) return;
        if (first <= nlo && nhi <= last && hi_[pos_of_rank_[min_rank_[v]]] <= e) {
            rank = min_rank_[v];
            return;
        }
        const int mid = (nlo + nhi) / 2;
        if (min_rank_[2 * v] <= min_rank_[2 * v + 1]) {
            search(2 * v, nlo, mid, first, last, e, rank);
            search(2 * v + 1, mid, nhi, first, last, e, rank);
        } else {
            search(2 * v + 1, mid, nhi, first, last, e, rank);
            search(2 * v, nlo, mid, first, last, e, rank);
        }
    }
    vector<int> hi_, pos_of_rank_;
    int leaves_ = 1;
    vector<int> min_hi_, min_rank_;
};

// rule 0: longest window first, 1: largest area, 2: largest size. Windows are
// [lo, hi_ext] (hi_ext + 1 as a half-open end).
bool place_skyline(const vector<Res>& R, int rule, vector<i64>& offs) {
    int n = (int)R.size();
    offs.assign(n, 0);
    if (!n) return true;
    vector<int> ids(n);
    iota(ids.begin(), ids.end(), 0);
    stable_sort(ids.begin(), ids.end(), [&](int a, int b) { return R[a].lo < R[b].lo; });
    vector<int> lo(n), hi(n);
    for (int p = 0; p < n; p++) lo[p] = R[ids[p]].lo, hi[p] = R[ids[p]].hi_ext + 1;
    auto life = [&](int p) { return (i64)(hi[p] - lo[p]); };
    auto size = [&](int p) { return sz[R[ids[p]].t]; };
    vector<int> by_fit(n);
    iota(by_fit.begin(), by_fit.end(), 0);
    stable_sort(by_fit.begin(), by_fit.end(), [&](int p, int q) {
        if (rule == 0) return life(p) != life(q) ? life(p) > life(q) : size(p) > size(q);
        if (rule == 1) {
            double x = (double)life(p) * (double)size(p), y = (double)life(q) * (double)size(q);
            return x != y ? x > y : size(p) > size(q);
        }
        return size(p) != size(q) ? size(p) > size(q) : life(p) > life(q);
    });
    vector<int> rank(n);
    for (int r = 0; r < n; r++) rank[by_fit[r]] = r;
    Candidates cand(rank, hi);
    Skyline sky(P);
    i64 worst = 0;
    int worst_r = -1;
    for (int placed = 0; placed < n;) {
        const Skyline::Segment seg = sky.lowest();
        int first = (int)(lower_bound(lo.begin(), lo.end(), seg.start) - lo.begin());
        int last = (int)(lower_bound(lo.begin(), lo.end(), seg.end) - lo.begin());
        int pos = cand.best_in(first, last, seg.end);
        if (pos < 0) {
            if (!sky.lift_lowest()) return false;
            continue;
        }
        int r = ids[pos];
        i64 off = align_up(seg.height, al[R[r].t]);
        offs[r] = off;
        sky.raise(lo[pos], hi[pos], off + size(pos));
        if (off + size(pos) > worst) worst = off + size(pos), worst_r = r;
        cand.erase(pos);
        ++placed;
    }
    if (worst > C) {
        fail_res = worst_r;
        fail_over = worst - C;
        return false;
    }
    return true;
}

// One residency per use, each step's tensors packed side by side (alignment desc).
void per_step_offsets(const vector<Res>& R, vector<i64>& offs) {
    vector<vector<int>> by_step(T);
    for (int r = 0; r < (int)R.size(); r++) by_step[us[R[r].k0]].push_back(r);
    offs.assign(R.size(), 0);
    for (auto& m : by_step) {
        stable_sort(m.begin(), m.end(), [&](int a, int b) {
            if (al[R[a].t] != al[R[b].t]) return al[R[a].t] > al[R[b].t];
            return sz[R[a].t] > sz[R[b].t];
        });
        i64 top = 0;
        for (int r : m) {
            offs[r] = align_up(top, al[R[r].t]);
            top = offs[r] + sz[R[r].t];
        }
    }
}

}  // namespace
