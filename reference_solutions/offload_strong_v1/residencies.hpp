// residencies.hpp: a plan as the search edits it (Plan: which gaps are parked and
// when each copy-in is issued) and as the judge sees it (Res: one residency per
// stretch of uses, with the points it occupies).
// Why: choose.hpp writes Plans, placement and simulation read the residencies.
#pragma once

#include "case.hpp"

namespace {

struct Plan {
    vector<char> off;  // off[k]: parked between use k and use k+1 of its tensor
    vector<int> pre;   // prefetch_after of the residency that starts at use k+1
    vector<int> xout;  // first point its bytes may be reused (placement only); 0 = no extension
};

struct Res {
    int t, k0, cnt, pre;  // tensor, first use index, use count, prefetch_after (-1: first)
    int lo, hi, hi_ext;   // occupied points [lo, hi]; placement keeps [lo, hi_ext]
    bool final_;
};

vector<Res> residencies(const Plan& pl) {
    vector<Res> out;
    out.reserve(U);
    for (int i = 0; i < N; i++) {
        int k0 = ust[i], pre = -1;
        for (int k = ust[i]; k < ust[i + 1]; k++) {
            bool last = k + 1 == ust[i + 1];
            if (last || pl.off[k]) {
                Res r;
                r.t = i, r.k0 = k0, r.cnt = k - k0 + 1, r.pre = pre;
                r.lo = pre < 0 ? 2 * us[k0] : 2 * pre + 1;
                r.hi = 2 * us[k];
                r.hi_ext = r.hi;
                if (!last && !pl.xout.empty() && pl.xout[k] > 0) r.hi_ext = max(r.hi, pl.xout[k] - 1);
                r.final_ = last;
                out.push_back(r);
                if (!last) k0 = k + 1, pre = pl.pre[k];
            }
        }
    }
    return out;
}

}  // namespace
