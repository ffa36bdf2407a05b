// placement.hpp: where the residencies go: first fit over their occupancy in step
// time, or, when that passes the capacity, each step's tensors packed side by side
// (lines 450-552 of the single offload_naive.cpp).
// Why a module: placement is a part of its own; it reads the plan and returns offsets.
#pragma once

#include "residencies.hpp"

// ---- Placement ----

struct Window {  // lower point, upper point inclusive, tensor, residency index
    i64 lo, hi;
    size_t i, k;
};

// A tensor that ends on the device holds its last residency past every point.
std::vector<Window> windows(const std::vector<Tensor>& tensors, const Plan& plan, const std::vector<Kind>& kinds,
                            i64 n_points) {
    std::vector<Window> out;
    for (size_t i = 0; i < plan.size(); ++i) {
        const auto& uses = tensors[i].uses;
        bool kept = kinds[i].end == "device";
        for (size_t k = 0; k < plan[i].size(); ++k) {
            const Row& r = plan[i][k];
            i64 lo = r.pre ? 2 * *r.pre + 1 : 2 * uses[r.first];
            i64 hi = kept && k == plan[i].size() - 1 ? n_points : 2 * uses[r.first + r.count - 1];
            out.push_back({lo, hi, i, k});
        }
    }
    return out;
}

// The lowest aligned offset in a hole between live residencies (sorted by offset), or
// above them within the capacity; none when there is no room.
std::optional<i64> lowest_hole(const std::vector<i64>& starts, const std::vector<i64>& ends, i64 size, i64 align,
                               i64 capacity) {
    if (starts.empty()) return size <= capacity ? std::optional<i64>(0) : std::nullopt;
    for (size_t t = 0; t < starts.size(); ++t) {
        i64 cand = align_up(t == 0 ? 0 : ends[t - 1], align);
        if (cand + size <= starts[t]) return cand;
    }
    i64 top = align_up(ends.back(), align);
    return top + size <= capacity ? std::optional<i64>(top) : std::nullopt;
}

// Offsets per residency, or none when first fit passes the capacity.
std::optional<Offsets> first_fit_place(const std::vector<Tensor>& tensors, const Plan& plan, i64 capacity,
                                       const std::vector<Kind>& kinds, i64 n_points) {
    auto res = windows(tensors, plan, kinds, n_points);
    std::vector<size_t> order(res.size());
    for (size_t r = 0; r < res.size(); ++r) order[r] = r;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        auto key = [&](size_t r) { return std::make_tuple(res[r].lo, -tensors[res[r].i].size, r); };
        return key(a) < key(b);
    });
    Offsets offsets;
    for (const auto& rows : plan) offsets.emplace_back(rows.size(), 0);
    std::vector<i64> starts, ends;  // live residencies sorted by offset
    std::priority_queue<std::pair<i64, i64>, std::vector<std::pair<i64, i64>>, std::greater<>> expiry;  // (upper point, offset)
    for (size_t r : order) {
        const Window& w = res[r];
        i64 size = tensors[w.i].size, align = tensors[w.i].alignment;
        while (!expiry.empty() && expiry.top().first < w.lo) {
            i64 off = expiry.top().second;
            expiry.pop();
            size_t j = std::lower_bound(starts.begin(), starts.end(), off) - starts.begin();
            starts.erase(starts.begin() + j);
            ends.erase(ends.begin() + j);
        }
        auto off = lowest_hole(starts, ends, size, align, capacity);
        if (!off) return std::nullopt;
        size_t j = std::lower_bound(starts.begin(), starts.end(), *off) - starts.begin();
        starts.insert(starts.begin() + j, *off);
        ends.insert(ends.begin() + j, *off + size);
        expiry.push({w.hi, *off});
        offsets[w.i][w.k] = *off;
    }
    return offsets;
}

// Every residency covers one use: pack each step's tensors side by side; the last
// residencies of tensors that end on the device stack down from the capacity.
Offsets per_step_place(const std::vector<Tensor>& tensors, const Plan& plan, i64 capacity,
                       const std::vector<Kind>& kinds) {
    std::map<i64, std::vector<std::pair<size_t, size_t>>> by_step;
    for (size_t i = 0; i < plan.size(); ++i)
        for (size_t k = 0; k < plan[i].size(); ++k) by_step[tensors[i].uses[plan[i][k].first]].push_back({i, k});
    Offsets offsets;
    for (const auto& rows : plan) offsets.emplace_back(rows.size(), 0);
    i64 floor = capacity;
    for (auto& [step, members] : by_step) {
        // Largest alignment first: the packing stays aligned with little padding.
        std::stable_sort(members.begin(), members.end(), [&](const auto& a, const auto& b) {
            const Tensor &x = tensors[a.first], &y = tensors[b.first];
            return std::make_pair(-x.alignment, -x.size) < std::make_pair(-y.alignment, -y.size);
        });
        i64 top = 0;
        for (auto [i, k] : members) {
            const Tensor& t = tensors[i];
            if (kinds[i].end == "device" && k == plan[i].size() - 1) {
                floor = floordiv(floor - t.size, t.alignment) * t.alignment;
                offsets[i][k] = floor;
                continue;
            }
            i64 off = align_up(top, t.alignment);
            offsets[i][k] = off;
            top = off + t.size;
        }
    }
    return offsets;
}
