// case.hpp: the case as flat arrays (steps, tensors, their uses flattened), the
// stall-free schedule (time of every point), the deadline and the clock, and
// read_case, which fills them from case.json.
// Why: every other module reads these globals; they are set once and never change.
#pragma once

#include "json.hpp"

namespace {

int T = 0, P = 0, N = 0, U = 0;  // steps, points (2T), tensors, uses
i64 C = 0, H2D = 1, D2H = 1;
vector<i64> dur;
vector<string> ids;
vector<i64> sz, al;
vector<int> us, ust, tens_of;  // flattened uses; tensor i owns us[ust[i] .. ust[i+1]); tensor of use k
i128 UNIT;
vector<double> start0, end0, ptime;  // stall-free schedule (µs); time of each point
double total_compute = 0;

chrono::steady_clock::time_point t_begin;
double deadline_s = 10;
double elapsed() { return chrono::duration<double>(chrono::steady_clock::now() - t_begin).count(); }
bool time_up() { return elapsed() > deadline_s; }

i64 align_up(i64 x, i64 a) { return (x + a - 1) / a * a; }
bool is_gap(int k) { return k + 1 < ust[tens_of[k] + 1]; }  // use k is not its tensor's last

void read_case(const string& dir) {
    ifstream f(dir + "/case.json", ios::binary);
    if (!f) { fprintf(stderr, "cannot read %s/case.json\n", dir.c_str()); exit(2); }
    stringstream buf;
    buf << f.rdbuf();
    string text = buf.str();
    JParser jp(text);
    JVal root = jp.value();
    auto num = [&](const char* key, i64 dflt) { const JVal* v = root.get(key); return v ? v->as_int() : dflt; };
    C = num("capacity", (i64)1 << 62);
    H2D = max<i64>(1, num("h2d_bandwidth", 1));
    D2H = max<i64>(1, num("d2h_bandwidth", 1));
    double limit = 30;
    if (const JVal* v = root.get("time_limit_s")) limit = v->as_double();
    deadline_s = max(0.5, min(0.8 * limit, 25.0)) - 0.4;  // margin for writing the plan
    const JVal* steps = root.get("steps");
    if (steps)
        for (auto& d : steps->arr) dur.push_back(d.as_int());
    T = (int)dur.size();
    P = 2 * T;
    ust.push_back(0);
    if (const JVal* tensors = root.get("tensors")) {
        for (auto& t : tensors->arr) {
            ids.push_back(t.get("id")->text);
            sz.push_back(t.get("size")->as_int());
            const JVal* a = t.get("alignment");
            al.push_back(max<i64>(1, a ? a->as_int() : 1));
            for (auto& u : t.get("uses")->arr) {
                us.push_back((int)u.as_int());
                tens_of.push_back((int)ids.size() - 1);
            }
            ust.push_back((int)us.size());
        }
    }
    N = (int)ids.size();
    U = (int)us.size();
    UNIT = (i128)H2D * D2H;
    start0.assign(T + 1, 0);
    end0.assign(T, 0);
    double t = 0;
    for (int s = 0; s < T; s++) {
        start0[s] = t;
        t += (double)dur[s];
        end0[s] = t;
    }
    start0[T] = t;
    total_compute = t;
    ptime.assign(P, 0);
    for (int s = 0; s < T; s++) ptime[2 * s] = start0[s], ptime[2 * s + 1] = end0[s];
}

double t_in_us(int i) { return (double)sz[i] / (double)H2D; }
double t_out_us(int i) { return (double)sz[i] / (double)D2H; }

}  // namespace
