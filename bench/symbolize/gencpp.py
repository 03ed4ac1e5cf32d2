#!/usr/bin/env python3
"""Writes a C++ program heavy in templates, lambdas and the standard library,
for the C++ case of bench/symbolize: long mangled names (nested templates,
std::function, std::map, std::sort with lambda comparators), many inlined
standard-library calls, namespaces, static functions and member templates.

    gencpp.py OUT.cc [MODULES]

The program is generated (nothing taken from other projects); built with
g++ -O2 -g it gives a binary of a few MB of DWARF.
"""
import sys

out = sys.argv[1]
modules = int(sys.argv[2]) if len(sys.argv) > 2 else 60

types = ["int", "long", "double", "std::string", "std::pair<int, std::string>"]

src = ["""#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

template <typename T> static T make(int i);
template <> int make<int>(int i) { return i; }
template <> long make<long>(int i) { return 3L * i; }
template <> double make<double>(int i) { return i * 0.5; }
template <> std::string make<std::string>(int i) { return std::to_string(i); }
template <> std::pair<int, std::string> make<std::pair<int, std::string>>(int i) { return {i, std::to_string(-i)}; }

static long weigh(int v) { return v; }
static long weigh(long v) { return v; }
static long weigh(double v) { return (long)v; }
static long weigh(const std::string &v) { return (long)v.size(); }
static long weigh(const std::pair<int, std::string> &v) { return v.first + (long)v.second.size(); }
"""]

for m in range(modules):
    src.append("""
namespace mod%(m)d {
namespace detail {
template <typename K, typename V, int N>
struct Table {
    std::map<K, std::vector<V>> rows;
    std::unordered_map<int, std::function<long(const V &)>> views;
    void add(const K &k, const V &v) { rows[k].push_back(v); }
    template <typename F>
    long fold(F f) const {
        long acc = N;
        for (const auto &kv : rows)
            for (const auto &v : kv.second)
                acc += f(v);
        return acc;
    }
    long sorted_weight() {
        std::vector<V> all;
        for (auto &kv : rows)
            all.insert(all.end(), kv.second.begin(), kv.second.end());
        std::sort(all.begin(), all.end(), [](const V &a, const V &b) { return weigh(a) < weigh(b); });
        return std::accumulate(all.begin(), all.end(), 0L, [](long s, const V &v) { return s + weigh(v); });
    }
};
} // namespace detail

template <typename T>
class Pipeline {
public:
    explicit Pipeline(int n) : n_(n) {}
    template <typename Stage>
    long stage(Stage s) {
        detail::Table<int, T, %(m)d> t;
        for (int i = 0; i < n_; i++)
            t.add(i %% 7, make<T>(i));
        t.views[0] = [](const T &v) { return weigh(v); };
        return s(t) + t.fold([this](const T &v) { return weigh(v) + n_; }) + t.sorted_weight();
    }
private:
    int n_;
};

static long run_static(int n) {
    long total = 0;
""" % {"m": m})
    for t in types:
        src.append("""    total += Pipeline<%(t)s>(n).stage([](auto &t) { return (long)t.rows.size(); });
    {
        std::set<%(t)s> s;
        for (int i = 0; i < n; i++) s.insert(make<%(t)s>(i));
        total += (long)s.size();
    }
""" % {"t": t})
    src.append("""    return total;
}

long run(int n) { return run_static(n) + %(m)d; }
} // namespace mod%(m)d
""" % {"m": m})

src.append("\nint main(int argc, char **argv) {\n    long total = 0;\n    int n = argc > 1 ? std::atoi(argv[1]) : 3;\n")
for m in range(modules):
    src.append("    total += mod%d::run(n);\n" % m)
src.append('    std::printf("%ld\\n", total);\n    return 0;\n}\n')

with open(out, "w") as f:
    f.write("".join(src))
