/* Libraries of mixed signatures for tests/worker/native/host_test.cc: each records what it received
 * (in declaration order, as doubles) so that the trampoline of judge/worker/native/call.h can be
 * checked against what a C caller passes. */
#include <stdint.h>

double got[32];
int ngot;

static void put(double x) { got[ngot++] = x; }
#define P(p) put((double)(uintptr_t)(p))

/* The brief's example: pointers, ints and floats interleaved, all in registers. */
void mixed(float* a, int n, float alpha, const float* b, float beta, int m) {
    ngot = 0;
    P(a); put(n); put(alpha); P(b); put(beta); put(m);
}

/* 9 integer-class parameters (flash_attn's shape: 3 on the stack) and 10 floats (2 on the stack),
 * interleaved so that the stack holds ints and floats mixed, in declaration order. */
void many(const float* q, const float* k, float f0, const float* v, float* o, int b, float f1, int h,
          float f2, float f3, int s, float f4, int d, float f5, float f6, float f7, int causal, float f8,
          const float* extra, float f9) {
    ngot = 0;
    P(q); P(k); put(f0); P(v); P(o); put(b); put(f1); put(h); put(f2); put(f3); put(s); put(f4); put(d);
    put(f5); put(f6); put(f7); put(causal); put(f8); P(extra); put(f9);
}

/* Negative ints must arrive as themselves (read from the low 32 bits). */
void ints(int a, int b, int c, int d, int e, int f, int g, int h) {
    ngot = 0;
    put(a); put(b); put(c); put(d); put(e); put(f); put(g); put(h);
}

void none(void) { ngot = 0; put(42); }
