// Calling solve() with the problem's parameters, without libffi (judge/worker/native/worker.cu).
//
// solve()'s signature comes from problem.yaml (pointers, `int`, `float`: judge/problem/abi.py), so
// it is only known at run time. On x86-64 System V every such parameter is one eightbyte of class
// INTEGER (a pointer, an int) or SSE (a float), and the classes are assigned independently:
//
//   - the first 6 INTEGER parameters, in order, go in rdi, rsi, rdx, rcx, r8, r9;
//   - the first 8 SSE parameters, in order, go in xmm0..xmm7 (a float in the low 32 bits);
//   - every parameter left over, of either class, goes on the stack in declaration order, one
//     8-byte slot each (a float in the slot's low 4 bytes, an int in its low 4).
//
// So one fixed function type reaches every signature: `Trampoline` below takes 6 int64, then
// 8 floats, then STACK_SLOTS uint64. A call through it fills every register (the first 14
// arguments) and passes the uint64s on the stack, in order. We place the real arguments where the
// ABI says the callee looks for them and leave zeros elsewhere; the callee reads only what it
// declares (the caller pops the stack on SysV, so unread slots are harmless). `float` and not
// `double` in the xmm slots: a `float` parameter is the low 32 bits of its register. `int`
// parameters are passed sign-extended in 64 bits; the callee reads the low 32.
//
// Calling through a function pointer of another type is undefined in C++ but defined by the ABI,
// which is what the callee (a separately compiled library) obeys; the compiler cannot see the
// callee, so it has nothing to optimise away. tests/worker/native/host_test.cc calls libraries of
// mixed signatures (more than 6 pointers, more than 8 floats, interleaved) through it.
#pragma once

#if !defined(__x86_64__) || !defined(__linux__)
#error "judge/worker/native/call.h: solve() is called by the x86-64 System V convention; port `call` first"
#endif

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace judge_call {

enum Kind { POINTER, INT, FLOAT };

constexpr int INT_REGS = 6;
constexpr int FLOAT_REGS = 8;
constexpr int STACK_SLOTS = 16;  // 30 parameters in all at least; the largest problem has 9

struct Arg {
    Kind kind;
    uint64_t bits;  // a pointer, an int sign-extended, or a float's bits in the low 32
    static Arg pointer(const void* p) { return {POINTER, (uint64_t)(uintptr_t)p}; }
    static Arg integer(int32_t n) { return {INT, (uint64_t)(int64_t)n}; }
    static Arg real(float f) {
        uint32_t b;
        memcpy(&b, &f, 4);
        return {FLOAT, b};
    }
};

using Trampoline = void (*)(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                            float, float, float, float, float, float, float, float,
                            uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
                            uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);

// Empty when a signature of these kinds can be called; otherwise why not.
inline std::string check(const std::vector<Kind>& kinds) {
    int ints = 0, floats = 0, stack = 0;
    for (Kind k : kinds) {
        if (k == FLOAT ? floats++ >= FLOAT_REGS : ints++ >= INT_REGS) ++stack;
    }
    if (stack > STACK_SLOTS)
        return "solve() has " + std::to_string(kinds.size()) + " parameters: " + std::to_string(stack) +
               " of them would go on the stack, and the worker passes at most " + std::to_string(STACK_SLOTS);
    return "";
}

// Place the arguments in the registers and stack slots the callee reads (see above) and call.
// The caller has checked the kinds with `check`.
inline void call(void* fn, const std::vector<Arg>& args) {
    int64_t r[INT_REGS] = {};
    float x[FLOAT_REGS] = {};
    uint64_t s[STACK_SLOTS] = {};
    int ints = 0, floats = 0, stack = 0;
    for (const Arg& a : args) {
        if (a.kind == FLOAT && floats < FLOAT_REGS) {
            uint32_t b = (uint32_t)a.bits;
            memcpy(&x[floats++], &b, 4);
        } else if (a.kind != FLOAT && ints < INT_REGS) {
            r[ints++] = (int64_t)a.bits;
        } else if (stack < STACK_SLOTS) {
            s[stack++] = a.bits;
        }
    }
    reinterpret_cast<Trampoline>(fn)(r[0], r[1], r[2], r[3], r[4], r[5],
                                     x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7],
                                     s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7],
                                     s[8], s[9], s[10], s[11], s[12], s[13], s[14], s[15]);
}

}  // namespace judge_call
