// An honest library as the worker loads it (tests/sandbox/test_seccomp.py): dlopen after the
// seccomp filter brings in libstdc++ and runs C++ static initialisers that allocate, throw and
// catch an exception, and write to stderr through iostream and stdio. All of it must pass.
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {
struct Init {
    std::vector<std::string> names;
    Init() {
        names.push_back(std::string(1000, 'x'));
        try {
            throw std::runtime_error("thrown and caught while the library loads");
        } catch (const std::exception &e) {
            names.push_back(e.what());
        }
        std::cerr << "honest_static_init: loaded" << std::endl;
        std::fprintf(stderr, "honest_static_init: %zu names\n", names.size());
    }
} init;
}  // namespace

extern "C" int honest_value() {
    static const std::string lazy = "lazy";  // a function-local static: __cxa_guard_acquire
    return static_cast<int>(lazy.size() + init.names.size());
}
