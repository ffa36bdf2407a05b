// common.hpp: the standard headers and the two integer types every module uses
// (i64 for bytes and offsets, i128 for the simulator's exact time).
// Why a module: the other modules include it first, so each reads on its own.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <queue>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using namespace std;
typedef long long i64;
typedef __int128 i128;
