// residencies.hpp: what to keep and when to fetch it: swap everything (swap_plan) or
// one residency per use (per_use_plan), how each residency leaves (drop, host or NVMe
// copy), the host memory the copies hold, and park_choice (lines 330-448 of the single
// offload_naive.cpp).
// Why a module: the plan's choices in time, apart from where the bytes go.
#pragma once

#include "case.hpp"

// ---- Residencies ----

Plan swap_plan(const std::vector<Tensor>& tensors, const std::vector<Kind>& kinds) {
    Plan plan;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const auto& uses = tensors[i].uses;
        std::vector<Row> rows;
        i64 start = 0, n = uses.size();
        bool made = kinds[i].start == "device";  // else fetched before its first use
        for (i64 j = 1; j <= n; ++j) {
            if (j == n || uses[j] != uses[j - 1] + 1) {
                std::optional<i64> pre;
                if (!(start == 0 && made)) pre = uses[start] - 1;
                rows.push_back({start, j - start, pre});
                start = j;
            }
        }
        plan.push_back(std::move(rows));
    }
    return plan;
}

Plan per_use_plan(const std::vector<Tensor>& tensors, const std::vector<Kind>& kinds) {
    Plan plan;
    for (size_t i = 0; i < tensors.size(); ++i) {
        std::vector<Row> rows;
        for (i64 j = 0; j < i64(tensors[i].uses.size()); ++j) {
            std::optional<i64> pre;
            if (!(j == 0 && kinds[i].start == "device")) pre = tensors[i].uses[j] - 1;
            rows.push_back({j, 1, pre});
        }
        plan.push_back(std::move(rows));
    }
    return plan;
}

// Per residency: how it leaves (Last for a tensor's last): Drop while its off-device
// copy is current, else park[i] (Copy or Nvme).
std::vector<std::vector<Leave>> outs(const std::vector<Kind>& kinds, const Plan& plan, const std::vector<Leave>& park) {
    std::vector<std::vector<Leave>> out;
    for (size_t i = 0; i < plan.size(); ++i) {
        const auto& rows = plan[i];
        bool current = kinds[i].start != "device";
        std::vector<Leave> mine;
        for (size_t k = 0; k < rows.size(); ++k) {
            if (!rows[k].pre || any_written(kinds[i], rows[k].first, rows[k].count)) current = false;
            mine.push_back(k == rows.size() - 1 ? Last : current ? Drop : park[i]);
            current = true;
        }
        out.push_back(std::move(mine));
    }
    return out;
}

// Most bytes the host copies hold at one point (README "Host memory").
i64 host_peak(const std::vector<Tensor>& tensors, const std::vector<Kind>& kinds, const Plan& plan,
              const std::vector<std::vector<Leave>>& out, i64 n_steps) {
    i64 end_point = 2 * n_steps - 1;
    std::vector<i64> diff(2 * n_steps + 2, 0);  // index = point + 1
    auto hold = [&](i64 lo, i64 hi, i64 nbytes) {
        diff[lo + 1] += nbytes;
        diff[std::max(lo, hi) + 2] -= nbytes;
    };
    for (size_t i = 0; i < plan.size(); ++i) {
        const auto& rows = plan[i];
        i64 size = tensors[i].size;
        const auto& uses = tensors[i].uses;
        const Kind& kind = kinds[i];
        std::optional<i64> made;  // point the host copy was made, if on the host
        if (kind.start == "host") made = -1;
        bool current = kind.start != "device";
        std::optional<i64> read_at;
        for (size_t k = 0; k < rows.size(); ++k) {
            const Row& r = rows[k];
            if (r.pre && made) read_at = 2 * uses[r.first] - 1;
            if (!r.pre || any_written(kind, r.first, r.count)) current = false;
            i64 last = 2 * uses[r.first + r.count - 1] + 1;
            if (k < rows.size() - 1 && (out[i][k] == Copy || out[i][k] == Nvme)) {
                if (made) hold(*made, read_at ? *read_at : *made, size);
                made = out[i][k] == Copy ? std::optional<i64>(last) : std::nullopt;
                read_at.reset();
                current = true;
            } else if (k == rows.size() - 1) {
                if (made && kind.end == "host" && current) {
                    hold(*made, end_point, size);
                    continue;
                }
                if (made) hold(*made, read_at ? *read_at : *made, size);
                if (kind.end == "host") hold(last, end_point, size);
            }
        }
    }
    i64 peak = 0, held = 0;
    for (i64 d : diff) {
        held += d;
        peak = std::max(peak, held);
    }
    return peak;
}

// Dirty residencies go to NVMe when the tensor lives there or the host would overflow.
std::vector<std::vector<Leave>> park_choice(const Json& c, const std::vector<Tensor>& tensors,
                                            const std::vector<Kind>& kinds, const Plan& plan) {
    bool nvme = c.get("nvme") != nullptr;
    std::vector<Leave> park;
    for (const Kind& k : kinds) park.push_back(nvme && k.start == "nvme" ? Nvme : Copy);
    auto out = outs(kinds, plan, park);
    const Json* cap = c.get("host_capacity");
    i64 n_steps = c.at("steps").items.size();
    if (cap && cap->kind != Json::Null) {
        i64 limit = cap->as_int();  // the Python compares with the number as it is
        if (host_peak(tensors, kinds, plan, out, n_steps) > limit) {
            if (nvme) out = outs(kinds, plan, std::vector<Leave>(kinds.size(), Nvme));
            if (host_peak(tensors, kinds, plan, out, n_steps) > limit)
                std::cerr << "the host copies pass the host capacity\n";
        }
    }
    return out;
}
