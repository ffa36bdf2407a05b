// json.hpp: the standard headers and the 64-bit integer type (i64) every module uses,
// a small JSON reader (enough for case.json) and json_string, which writes a string as
// Python's json.dump does (lines 28-262 of the single offload_naive.cpp, unchanged).
// Why a module: the reader is a third of the planner and no part of its algorithm;
// included first, it brings the headers the other modules need.
#pragma once

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
