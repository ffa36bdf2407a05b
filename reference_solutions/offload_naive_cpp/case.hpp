// case.hpp: the case as the planner sees it (Tensor, Kind: Python's tiers(), Row: one
// residency, Plan, Leave, Offsets), Python's floor division and align_up, and the readers
// that fill them from case.json (lines 264-328 of the single offload_naive.cpp).
// Why a module: the types every later module works on, read once from the case.
#pragma once

#include "json.hpp"

// ---- The case ----

struct Tensor {
    std::string id;
    i64 size, alignment;
    std::vector<i64> uses;
};

struct Kind {  // Python's tiers(): (start, end, written use flags)
    std::string start, end;
    std::vector<bool> written;
};

struct Row {  // one residency: first use index, use count, prefetch_after (or none)
    i64 first, count;
    std::optional<i64> pre;
};

using Plan = std::vector<std::vector<Row>>;
enum Leave { Last, Drop, Copy, Nvme };  // how a residency leaves (Last: a tensor's last)
using Offsets = std::vector<std::vector<i64>>;

i64 floordiv(i64 a, i64 b) {  // Python's //
    i64 q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

i64 align_up(i64 x, i64 alignment) { return -floordiv(-x, alignment) * alignment; }

std::vector<Tensor> read_tensors(const Json& c) {
    std::vector<Tensor> out;
    for (const Json& t : c.at("tensors").items) {
        Tensor x{t.at("id").s, t.at("size").as_int(), std::max<i64>(1, t.at("alignment").as_int()), {}};
        for (const Json& u : t.at("uses").items) x.uses.push_back(u.as_int());
        out.push_back(std::move(x));
    }
    return out;
}

std::vector<Kind> tiers(const Json& c) {  // v1 defaults: device, none, every use written
    std::vector<Kind> out;
    for (const Json& t : c.at("tensors").items) {
        const Json& uses = t.at("uses");
        const Json* w = t.get("writes");
        const Json& writes = w ? *w : uses;
        Kind k;
        const Json* s = t.get("start");
        const Json* e = t.get("end");
        k.start = s ? s->s : "device";
        k.end = e ? e->s : "none";
        for (const Json& u : uses.items) {
            bool hit = false;
            for (const Json& x : writes.items) hit = hit || x.as_int() == u.as_int();
            k.written.push_back(hit);
        }
        out.push_back(std::move(k));
    }
    return out;
}

bool any_written(const Kind& k, i64 first, i64 count) {
    for (i64 j = first; j < first + count && j < i64(k.written.size()); ++j)
        if (k.written[j]) return true;
    return false;
}
