// common.hpp -- strong_search (see main.cpp): what every module shares.
//
// The standard headers, the integer type (i64) and "none" (kInf), and time
// keeping: CPU and wall seconds since the start, Deadline (every phase of the
// planner stops at one) and DeadlinePacer (reads the clock only every so much
// work).  Kept apart because every other module needs it and none of the rest.

#pragma once

#include <pthread.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <ctime>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <queue>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using i64 = long long;
constexpr i64 kInf = std::numeric_limits<i64>::max() / 4;

// ---------------------------------------------------------------------------
// Time keeping
// ---------------------------------------------------------------------------

using SteadyClock = std::chrono::steady_clock;
const SteadyClock::time_point kProgramStart = SteadyClock::now();

// CPU seconds of the whole process (what a loaded machine does not inflate).
double cpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double elapsedSeconds() {
  return std::chrono::duration<double>(SteadyClock::now() - kProgramStart)
      .count();
}

struct Deadline {
  double at = 0;  // seconds since program start
  bool passed() const { return elapsedSeconds() >= at; }
};

// Reads the clock only every so many units of work, so that loops whose
// steps vary wildly in cost (queries over thousands of live buffers) still
// notice the deadline promptly without paying for a clock read per step.
class DeadlinePacer {
 public:
  explicit DeadlinePacer(const Deadline& deadline) : deadline_(deadline) {}
  bool passed(i64 work) {
    done_ += work;
    if (done_ < nextCheck_) return false;
    nextCheck_ = done_ + kWorkPerCheck;
    return deadline_.passed();
  }

 private:
  static constexpr i64 kWorkPerCheck = 1 << 18;
  const Deadline& deadline_;
  i64 done_ = 0, nextCheck_ = 0;
};

}  // namespace
