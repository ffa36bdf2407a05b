// json.hpp: a minimal JSON reader for case.json (values kept as text, numbers read
// on demand).
// Why: the sandbox has no JSON library for C++, and the planner reads one small
// document once; nothing here knows about offload.
#pragma once

#include "common.hpp"

namespace {

struct JVal {
    enum Kind { NUL, BOOL, NUM, STR, ARR, OBJ } kind = NUL;
    string text;  // number literal or string
    vector<JVal> arr;
    vector<pair<string, JVal>> obj;
    const JVal* get(const string& key) const {
        for (auto& kv : obj)
            if (kv.first == key) return &kv.second;
        return nullptr;
    }
    i64 as_int() const { return kind == NUM ? strtoll(text.c_str(), nullptr, 10) : 0; }
    double as_double() const { return kind == NUM ? strtod(text.c_str(), nullptr) : 0.0; }
};

struct JParser {
    const string& s;
    size_t i = 0;
    explicit JParser(const string& src) : s(src) {}
    void ws() {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) i++;
    }
    [[noreturn]] void fail(const char* what) {
        fprintf(stderr, "case.json: %s at byte %zu\n", what, i);
        exit(2);
    }
    string str() {
        if (s[i] != '"') fail("expected a string");
        i++;
        string out;
        while (i < s.size() && s[i] != '"') {
            if (s[i] == '\\') {
                i++;
                char c = s[i];
                if (c == 'u') {
                    out += '?';
                    i += 4;
                } else if (c == 'n') out += '\n';
                else if (c == 't') out += '\t';
                else if (c == 'r') out += '\r';
                else if (c == 'b') out += '\b';
                else if (c == 'f') out += '\f';
                else out += c;
                i++;
            } else {
                out += s[i++];
            }
        }
        i++;
        return out;
    }
    JVal value() {
        ws();
        JVal v;
        if (i >= s.size()) fail("unexpected end");
        char c = s[i];
        if (c == '{') {
            v.kind = JVal::OBJ;
            i++;
            ws();
            if (s[i] == '}') { i++; return v; }
            while (true) {
                ws();
                string key = str();
                ws();
                if (s[i] != ':') fail("expected ':'");
                i++;
                v.obj.emplace_back(std::move(key), value());
                ws();
                if (s[i] == ',') { i++; continue; }
                if (s[i] == '}') { i++; break; }
                fail("expected ',' or '}'");
            }
        } else if (c == '[') {
            v.kind = JVal::ARR;
            i++;
            ws();
            if (s[i] == ']') { i++; return v; }
            while (true) {
                v.arr.push_back(value());
                ws();
                if (s[i] == ',') { i++; continue; }
                if (s[i] == ']') { i++; break; }
                fail("expected ',' or ']'");
            }
        } else if (c == '"') {
            v.kind = JVal::STR;
            v.text = str();
        } else if (c == 't' || c == 'f') {
            v.kind = JVal::BOOL;
            i += (c == 't') ? 4 : 5;
        } else if (c == 'n') {
            i += 4;
        } else {
            v.kind = JVal::NUM;
            size_t j = i;
            while (j < s.size() && (isdigit((unsigned char)s[j]) || s[j] == '-' || s[j] == '+' || s[j] == '.' || s[j] == 'e' || s[j] == 'E')) j++;
            v.text = s.substr(i, j - i);
            i = j;
        }
        return v;
    }
};

}  // namespace
