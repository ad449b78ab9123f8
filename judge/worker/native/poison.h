// The per-call poison patterns of the timed calls (worker.cu's `time_batch`), by the rules of
// judge/gpu/integrity.py's `poison_word` (the parent draws the test calls' patterns with it):
// a NaN with a random sign and a random payload that is neither 0 nor a canonical quiet NaN's
// (float32/float16/bfloat16), or 0x80000000 | 16 random bits (int32/uint32); other dtypes have no
// pattern (the output gets a poison byte instead, and is not counted).
// tests/worker/test_native_worker.py checks that words drawn here obey those rules.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace judge_poison {

// xoshiro256**, seeded once from getrandom() before the submission is loaded. Not a secret from
// the submission (it shares the process, as it shares the device the pattern is written on):
// what matters is that the pattern changes with every call, unknown before the call.
struct Rng {
    uint64_t s[4];
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    uint64_t next() {
        const uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = rotl(s[3], 45);
        return out;
    }
    // Uniform in [0, n) (the modulo bias is below 2^-40 for the n used here).
    uint64_t below(uint64_t n) { return next() % n; }
};

// Bytes per pattern word (judge/gpu/integrity.py's WIDTH), 0 when the dtype has no pattern.
inline int width(const std::string& dtype) {
    if (dtype == "float32" || dtype == "int32" || dtype == "uint32") return 4;
    if (dtype == "float16" || dtype == "bfloat16") return 2;
    return 0;
}

// A fresh pattern for an output of `dtype`; false when the dtype has none.
inline bool word(const std::string& dtype, Rng& rng, uint32_t& out) {
    struct Nan {
        const char* dtype;
        int sign_bit;
        uint32_t exponent, mask, quiet, all;  // quiet and all: the canonical payloads
    };
    static const Nan nans[] = {{"float32", 31, 0x7F800000u, 0x7FFFFFu, 0x400000u, 0x7FFFFFu},
                               {"float16", 15, 0x7C00u, 0x3FFu, 0x200u, 0x3FFu},
                               {"bfloat16", 15, 0x7F80u, 0x7Fu, 0x40u, 0x7Fu}};
    for (const Nan& n : nans) {
        if (dtype != n.dtype) continue;
        uint32_t payload;
        do payload = 1 + (uint32_t)rng.below(n.mask);  // 1..mask
        while (payload == n.quiet || payload == n.all);
        out = ((uint32_t)(rng.next() & 1) << n.sign_bit) | n.exponent | payload;
        return true;
    }
    if (dtype == "int32" || dtype == "uint32") {
        out = 0x80000000u | (uint32_t)(rng.next() & 0xFFFF);
        return true;
    }
    return false;
}

}  // namespace judge_poison
