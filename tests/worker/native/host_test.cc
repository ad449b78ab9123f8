// The native worker's host-only parts, built with g++ by tests/worker/test_native_worker.py:
//   host_test abi LIB.so      the trampoline (judge/worker/native/call.h) against abi.c's signatures
//   host_test json            the reader and writer (json.h)
//   host_test poison DTYPE N  N poison words (poison.h), one hex per line, for Python to check
// Prints "ok" lines, and "FAIL ..." with exit status 1 at the first failure.
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "call.h"
#include "json.h"
#include "poison.h"

static int failures = 0;
#define EXPECT(cond, ...)                                   \
    do {                                                    \
        if (!(cond)) {                                      \
            printf("FAIL line %d: %s: ", __LINE__, #cond);  \
            printf(__VA_ARGS__);                            \
            printf("\n");                                   \
            ++failures;                                     \
        }                                                   \
    } while (0)

using judge_call::Arg;

static int abi(const char* path) {
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("FAIL dlopen: %s\n", dlerror());
        return 1;
    }
    double* got = (double*)dlsym(lib, "got");
    int* ngot = (int*)dlsym(lib, "ngot");
    auto run = [&](const char* name, const std::vector<Arg>& args, const std::vector<judge_call::Kind>& kinds) {
        EXPECT(judge_call::check(kinds).empty(), "%s: %s", name, judge_call::check(kinds).c_str());
        judge_call::call(dlsym(lib, name), args);
        EXPECT(*ngot == (int)std::max<size_t>(args.size(), 1), "%s: %d values for %zu arguments", name, *ngot, args.size());
        for (size_t i = 0; i < args.size() && (int)i < *ngot; ++i) {
            double want;
            if (args[i].kind == judge_call::FLOAT) {
                float f;
                uint32_t b = (uint32_t)args[i].bits;
                memcpy(&f, &b, 4);
                want = f;
            } else if (args[i].kind == judge_call::INT) {
                want = (double)(int32_t)args[i].bits;
            } else {
                want = (double)args[i].bits;
            }
            EXPECT(got[i] == want, "%s: argument %zu: got %.9g, passed %.9g", name, i, got[i], want);
        }
        printf("ok abi %s\n", name);
    };
    using K = judge_call::Kind;
    const K P = judge_call::POINTER, I = judge_call::INT, F = judge_call::FLOAT;
    float a[1], b[1];
    run("mixed", {Arg::pointer(a), Arg::integer(7), Arg::real(0.5f), Arg::pointer(b), Arg::real(-2.25f), Arg::integer(-3)},
        {P, I, F, P, F, I});
    std::vector<Arg> args;
    std::vector<K> kinds;
    const K many[] = {P, P, F, P, P, I, F, I, F, F, I, F, I, F, F, F, I, F, P, F};
    for (size_t i = 0; i < sizeof many / sizeof many[0]; ++i) {
        kinds.push_back(many[i]);
        if (many[i] == F) args.push_back(Arg::real(1.5f + (float)i));
        else if (many[i] == I) args.push_back(Arg::integer(100 + (int)i));
        else args.push_back(Arg::pointer((const char*)a + 16 * i));
    }
    run("many", args, kinds);
    run("ints", {Arg::integer(-1), Arg::integer(2147483647), Arg::integer(-2147483647 - 1), Arg::integer(0),
                 Arg::integer(5), Arg::integer(-6), Arg::integer(-7), Arg::integer(8)},
        {I, I, I, I, I, I, I, I});
    run("none", {}, {});
    EXPECT(*ngot == 1 && got[0] == 42, "none() was not called");
    // The limits: 6 + 8 in registers, 16 on the stack.
    EXPECT(judge_call::check(std::vector<K>(22, P)).empty(), "22 pointers must be callable");
    EXPECT(!judge_call::check(std::vector<K>(23, P)).empty(), "23 pointers cannot be called");
    EXPECT(judge_call::check(std::vector<K>(24, F)).empty(), "24 floats must be callable");
    EXPECT(!judge_call::check(std::vector<K>(25, F)).empty(), "25 floats cannot be called");
    printf("ok abi limits\n");
    return failures ? 1 : 0;
}

static bool parses(const std::string& text, jsn::Value& v) {
    std::string error;
    return jsn::parse(text, v, error);
}

static int json() {
    jsn::Value v;
    EXPECT(parses(R"( {"op": "init", "params": [{"name": "A", "kind": "tensor"}, {"name": "n", "kind": "int"}],
                       "lib": "/tmp/x \u00e9\ud83d\ude00.so", "seccomp": null, "k": -12, "rest": 0.25, "big": 1e300,
                       "f": 2.0, "esc": "a\"b\\c\/d\n\t", "t": true, "nan": NaN, "inf": -Infinity} )", v), "a command");
    EXPECT(v.type == jsn::Value::Object && v.get("op")->text == "init", "op");
    EXPECT(v.get("params")->items.size() == 2 && v.get("params")->items[1].get("kind")->text == "int", "params");
    EXPECT(v.get("lib")->text == "/tmp/x \xc3\xa9\xf0\x9f\x98\x80.so", "utf-8 and a surrogate pair: %s", v.get("lib")->text.c_str());
    EXPECT(v.get("seccomp")->is_null(), "null");
    EXPECT(v.get("k")->integral && v.get("k")->integer == -12, "an integer");
    EXPECT(!v.get("rest")->integral && v.get("rest")->number == 0.25, "a float");
    EXPECT(!v.get("f")->integral && v.get("f")->number == 2.0, "2.0 is a float");
    EXPECT(v.get("big")->number == 1e300, "an exponent");
    EXPECT(v.get("esc")->text == "a\"b\\c/d\n\t", "escapes");
    EXPECT(v.get("t")->boolean, "true");
    EXPECT(std::isnan(v.get("nan")->number) && v.get("inf")->number < 0 && std::isinf(v.get("inf")->number), "NaN, -Infinity");
    EXPECT(parses("12345678901234567890", v) && !v.integral, "an integer past int64 is a double");
    EXPECT(parses("[]", v) && v.items.empty() && parses("{}", v) && v.fields.empty(), "empty containers");
    const char* bad[] = {"", "{", "{\"a\"}", "{\"a\":1,}", "[1 2]", "01", "1.", "-", "\"abc", "\"\\x\"", "tru",
                         "{\"a\":1} x", "\"a\nb\"", "\"\\u12\"", "[1,]", "{'a':1}", "+1", ".5"};
    for (const char* text : bad) EXPECT(!parses(text, v), "accepted: %s", text);
    std::string deep(17, '['), shallow(16, '[');
    deep += std::string(17, ']');
    shallow += std::string(16, ']');
    EXPECT(!parses(deep, v) && parses(shallow, v), "the nesting limit is 16");
    printf("ok json reader\n");

    jsn::Writer w;
    w.begin_object().key("nonce").string("ab").key("ok").boolean(true).key("times_ms").begin_array();
    w.number(0.125).number(1e-7).number(NAN).end_array().key("calls").integer(-3);
    w.key("e").begin_object().key("text").string(std::string("q\"\\\n\x01\xff\xc3\xa9", 8)).end_object();
    w.key("empty").begin_array().end_array().end_object();
    const std::string want = R"({"nonce":"ab","ok":true,"times_ms":[0.125,1e-07,null],"calls":-3,)"
                             R"("e":{"text":"q\"\\\n\u0001\u00ff\u00c3\u00a9"},"empty":[]})";
    EXPECT(w.out == want, "writer: %s", w.out.c_str());
    EXPECT(parses(w.out, v), "the writer's output parses");
    printf("ok json writer\n");
    return failures ? 1 : 0;
}

static int poison(const char* dtype, int n) {
    judge_poison::Rng rng{{1, 2, 3, 4}};
    for (int i = 0; i < n; ++i) {
        uint32_t w;
        if (!judge_poison::word(dtype, rng, w)) {
            printf("none\n");
            return 0;
        }
        printf("%08x\n", w);
    }
    return 0;
}

int main(int argc, char** argv) {
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "abi" && argc == 3) return abi(argv[2]);
    if (mode == "json") return json();
    if (mode == "poison" && argc == 4) return poison(argv[2], atoi(argv[3]));
    fprintf(stderr, "usage: host_test abi LIB | json | poison DTYPE N\n");
    return 2;
}
