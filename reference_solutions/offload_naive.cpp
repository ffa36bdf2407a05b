// offload_naive.cpp: the naive offload planner ("swap everything"), a C++20 port of
// offload_naive.py (same algorithm, byte-identical plan.json); standard library only.
//
// Reads $MEMORACE_CASE_DIR/case.json, writes $MEMORACE_OUT_DIR/plan.json
// (judge/types/offload/README.md). Handles v1 and v2 cases.
//
// A tensor stays on the device only across consecutive uses (steps s and s+1); before
// every other use it is swapped out after its previous use and fetched back just in
// time: its copy-in is issued after the step right before the use (prefetch_after =
// use - 1). Nothing overlaps with compute, so most fetched uses stall for a whole
// transfer.
//
// Residencies are placed by first fit over their occupancy in step time (points 2s =
// "during step s", 2s+1 = "after step s"): in order of their first point, each goes at
// the lowest aligned offset that no live residency occupies. If first fit passes the
// capacity, every use gets a residency of its own and each step's tensors are packed
// side by side.
//
// v2 cases: a tensor that starts on the host or NVMe is fetched just in time before its
// first use; a residency whose off-device copy is still current is dropped instead of
// copied out; dirty ones go back to the host, or to NVMe when the tensor lives there or
// the host copies would pass the host capacity. A tensor that ends on the device keeps
// its last residency to the end; one that ends on the host gets the verifier's final
// copy-out. Recompute and compression are never used.
//
// All sizes, offsets and points are exact 64-bit integers, as the Python's are.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using i64 = std::int64_t;

// ---- A small JSON reader (enough for case.json) ----

struct Json {
    enum Kind { Null, Bool, Int, Float, String, Array, Object } kind = Null;
    bool b = false;
    i64 i = 0;
    double f = 0;
    std::string s;
    std::vector<Json> items;
    std::vector<std::pair<std::string, Json>> fields;

    const Json* get(const std::string& key) const {  // nullptr when absent
        for (const auto& [k, v] : fields)
            if (k == key) return &v;
        return nullptr;
    }
    const Json& at(const std::string& key) const {
        const Json* v = get(key);
        if (!v) throw std::runtime_error("case.json: missing field " + key);
        return *v;
    }
    i64 as_int() const {  // Python's int(): a float truncates toward zero
        if (kind == Int) return i;
        if (kind == Float) return static_cast<i64>(f);
        if (kind == Bool) return b;
        throw std::runtime_error("case.json: not a number");
    }
};

class Reader {
public:
    explicit Reader(const std::string& text) : t_(text) {}
    Json document() {
        Json v = value();
        skip();
        if (p_ != t_.size()) fail("trailing characters");
        return v;
    }

private:
    const std::string& t_;
    size_t p_ = 0;

    [[noreturn]] void fail(const std::string& why) const {
        throw std::runtime_error("case.json: " + why + " at byte " + std::to_string(p_));
    }
    void skip() {
        while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\n' || t_[p_] == '\r' || t_[p_] == '\t')) ++p_;
    }
    void expect(char c) {
        skip();
        if (p_ >= t_.size() || t_[p_] != c) fail(std::string("expected '") + c + "'");
        ++p_;
    }
    bool literal(const char* word) {
        size_t n = std::char_traits<char>::length(word);
        if (t_.compare(p_, n, word) != 0) return false;
        p_ += n;
        return true;
    }
    Json value() {
        skip();
        if (p_ >= t_.size()) fail("unexpected end");
        Json v;
        char c = t_[p_];
        if (c == '{') {
            v.kind = Json::Object;
            ++p_;
            skip();
            if (p_ < t_.size() && t_[p_] == '}') return ++p_, v;
            for (;;) {
                skip();
                std::string key = string();
                expect(':');
                v.fields.emplace_back(std::move(key), value());
                skip();
                if (p_ < t_.size() && t_[p_] == ',') { ++p_; continue; }
                expect('}');
                return v;
            }
        }
        if (c == '[') {
            v.kind = Json::Array;
            ++p_;
            skip();
            if (p_ < t_.size() && t_[p_] == ']') return ++p_, v;
            for (;;) {
                v.items.push_back(value());
                skip();
                if (p_ < t_.size() && t_[p_] == ',') { ++p_; continue; }
                expect(']');
                return v;
            }
        }
        if (c == '"') {
            v.kind = Json::String;
            v.s = string();
            return v;
        }
        if (literal("null")) return v;
        if (literal("true")) { v.kind = Json::Bool; v.b = true; return v; }
        if (literal("false")) { v.kind = Json::Bool; return v; }
        return number();
    }
    Json number() {
        size_t start = p_;
        bool integral = true;
        if (p_ < t_.size() && t_[p_] == '-') ++p_;
        while (p_ < t_.size()) {
            char c = t_[p_];
            if (c >= '0' && c <= '9') ++p_;
            else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') { integral = false; ++p_; }
            else break;
        }
        std::string text = t_.substr(start, p_ - start);
        if (text.empty() || text == "-") fail("bad value");
        Json v;
        if (integral) {
            v.kind = Json::Int;
            v.i = std::stoll(text);
        } else {
            v.kind = Json::Float;
            v.f = std::stod(text);
        }
        return v;
    }
    unsigned hex4() {
        if (p_ + 4 > t_.size()) fail("bad \\u escape");
        unsigned u = std::stoul(t_.substr(p_, 4), nullptr, 16);
        p_ += 4;
        return u;
    }
    static void put_utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) out += char(cp);
        else if (cp < 0x800) { out += char(0xC0 | cp >> 6); out += char(0x80 | (cp & 0x3F)); }
        else if (cp < 0x10000) {
            out += char(0xE0 | cp >> 12); out += char(0x80 | (cp >> 6 & 0x3F)); out += char(0x80 | (cp & 0x3F));
        } else {
            out += char(0xF0 | cp >> 18); out += char(0x80 | (cp >> 12 & 0x3F));
            out += char(0x80 | (cp >> 6 & 0x3F)); out += char(0x80 | (cp & 0x3F));
        }
    }
    std::string string() {  // the text as UTF-8
        if (p_ >= t_.size() || t_[p_] != '"') fail("expected a string");
        ++p_;
        std::string out;
        for (;;) {
            if (p_ >= t_.size()) fail("unterminated string");
            char c = t_[p_++];
            if (c == '"') return out;
            if (c != '\\') { out += c; continue; }
            if (p_ >= t_.size()) fail("unterminated string");
            char e = t_[p_++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    unsigned cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00 && t_.compare(p_, 2, "\\u") == 0) {
                        size_t back = p_;
                        p_ += 2;
                        unsigned low = hex4();
                        if (low >= 0xDC00 && low < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                        else p_ = back;
                    }
                    put_utf8(out, cp);
                    break;
                }
                default: fail("bad escape");
            }
        }
    }
};

// A string as Python's json.dump writes it (ensure_ascii: non-ASCII as \uXXXX).
std::string json_string(const std::string& s) {
    std::string out = "\"";
    char buf[16];
    auto escape = [&](unsigned u) {
        std::snprintf(buf, sizeof buf, "\\u%04x", u);
        out += buf;
    };
    for (size_t p = 0; p < s.size();) {
        unsigned char c = s[p];
        unsigned cp;
        size_t n;
        if (c < 0x80) cp = c, n = 1;
        else if ((c >> 5) == 0x6) cp = c & 0x1F, n = 2;
        else if ((c >> 4) == 0xE) cp = c & 0x0F, n = 3;
        else cp = c & 0x07, n = 4;
        for (size_t k = 1; k < n && p + k < s.size(); ++k) cp = cp << 6 | (s[p + k] & 0x3F);
        p += n;
        switch (cp) {
            case '"': out += "\\\""; continue;
            case '\\': out += "\\\\"; continue;
            case '\n': out += "\\n"; continue;
            case '\r': out += "\\r"; continue;
            case '\t': out += "\\t"; continue;
            case '\b': out += "\\b"; continue;
            case '\f': out += "\\f"; continue;
        }
        if (cp < 0x20 || (cp >= 0x7F && cp < 0x10000)) escape(cp);  // all but ' '..'~'
        else if (cp >= 0x10000) {
            escape(0xD800 + ((cp - 0x10000) >> 10));
            escape(0xDC00 + ((cp - 0x10000) & 0x3FF));
        } else out += char(cp);
    }
    return out + "\"";
}

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

// ---- The plan ----

void write_plan(const std::string& path, const std::vector<Tensor>& tensors, const Plan& plan,
                const Offsets& offsets, const std::vector<std::vector<Leave>>& leave) {
    std::string s = "{\"tensors\":[";
    for (size_t i = 0; i < plan.size(); ++i) {
        if (i) s += ",";
        s += "{\"id\":" + json_string(tensors[i].id) + ",\"residencies\":[";
        for (size_t k = 0; k < plan[i].size(); ++k) {
            const Row& r = plan[i][k];
            if (k) s += ",";
            s += "{\"offset\":" + std::to_string(offsets[i][k]) + ",\"uses\":" + std::to_string(r.count);
            if (r.pre) s += ",\"prefetch_after\":" + std::to_string(*r.pre);
            if (leave[i][k] == Drop) s += ",\"out\":\"drop\"";
            if (leave[i][k] == Nvme) s += ",\"out\":\"nvme\"";
            s += "}";
        }
        s += "]}";
    }
    s += "]}";
    std::ofstream f(path, std::ios::binary);
    f << s;
    if (!f) throw std::runtime_error("cannot write " + path);
}

int main() {
    const char* case_dir = std::getenv("MEMORACE_CASE_DIR");
    const char* out_dir = std::getenv("MEMORACE_OUT_DIR");
    if (!case_dir || !out_dir) {
        std::cerr << "MEMORACE_CASE_DIR and MEMORACE_OUT_DIR must be set\n";
        return 1;
    }
    std::ifstream in(std::string(case_dir) + "/case.json", std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    std::string raw = text.str();
    Json c = Reader(raw).document();

    auto tensors = read_tensors(c);
    auto kinds = tiers(c);
    i64 capacity = c.at("capacity").as_int();
    i64 n_points = 2 * i64(c.at("steps").items.size());
    Plan plan = swap_plan(tensors, kinds);
    Offsets offsets;
    if (auto placed = first_fit_place(tensors, plan, capacity, kinds, n_points)) {
        offsets = std::move(*placed);
    } else {
        std::cerr << "first fit passed the capacity: one residency per use\n";
        plan = per_use_plan(tensors, kinds);
        offsets = per_step_place(tensors, plan, capacity, kinds);
    }
    auto leave = park_choice(c, tensors, kinds, plan);
    write_plan(std::string(out_dir) + "/plan.json", tensors, plan, offsets, leave);
    return 0;
}
