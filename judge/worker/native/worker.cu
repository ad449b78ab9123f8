// The candidate worker: the process that loads a submission's library and calls solve().
//
// Native, so that the submission owns a process without an interpreter it could drive (a Python
// worker's own code was rewritten from a submission once: docs/security.md). Built and cached by
// judge/worker/native_build.py, started by judge/worker/client.py; baselines keep the Python worker
// (judge/worker/main.py --torch). Same protocol (judge/worker/protocol.py, whose constants arrive
// in the generated judge_protocol.h) and the same commands, with the same semantics:
//
//   channel     the reply fd's number in $JUDGE_WORKER_FD (removed at once, made close-on-exec),
//               the run's nonce on the first line of stdin; one JSON command per stdin line, one
//               JSON reply per command on the channel, tagged with the nonce;
//   start-up    before any CUDA call, unless JUDGE_PID_NAMESPACE=0, a pid namespace of its own where
//               the OS allows one (confine.h's `own_pid_namespace`: the worker is then pid 2 of it,
//               under a pid 1 that waits, with the namespace's own /proc, which CUDA needs);
//   ready       {"ok":true,"ready":true,"pid":N,"pid_namespace":B} once the CUDA context, the L2
//               flush buffer and the judge's kernels exist (N: its pid as it sees it, 2 in its own
//               namespace); an error is {"ok":false,"error":{kind,name,text[,where]}},
//               then the worker exits (after a CUDA error its context is unusable);
//   init        confine the process (the parent's seccomp program, confine.h), then load the
//               library and find solve();
//   map/unmap   the parent's buffers, by CUDA IPC;
//   call        one call; with `counter`, judge_check of each poisoned output into counter[0..1]
//               right after solve() returns, before synchronising;
//   prepare     the timed calls' arguments per slot, the outputs to poison, the counter buffer, and
//               the inputs a sealed batch opens (`inputs`: per slot, in the order of their keystreams);
//   time_batch  k timed calls: per call poison, L2 reset, the gate (hold.h: once every block is
//               resident, with `sealed` the worker asks the parent for the call's key, a line
//               {"nonce":..,"unseal":i} on the channel answered by {"key":[k0,k1,k2]} on stdin, and
//               the gate opens the call's inputs with it; then the L2 flush (a read), with `hold` the
//               hold, and the start stamp), start event, solve(), end event, a stamp, the checks
//               (protocol.CHECK_STRIDE bytes per call), the hold let go; the reply has each call's
//               time, its host time (solve()'s own, on the CPU) and the batch's crowded and late gates.
//               Where the gate cannot fill the SMs (an SM-limited context): the key, judge_crypt, the
//               flush, the stamp, each on its own, with no hold.
//
// Everything it answers is a claim: the submission shares this process. The parent decides from
// what it checks itself (judge/engine/guards.py).
#include <cuda_runtime.h>
#include <pthread.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <stdexcept>

#include "judge_protocol.h"  // generated from judge/worker/protocol.py by native_build.py
#include "call.h"
#include "confine.h"
#include "json.h"
#include "poison.h"
#include "../../gpu/integrity_kernels.cu"  // judge_fill*, judge_check*, judge_stamp: the source of truth

namespace {

// The legacy default stream (this file is compiled without --default-stream per-thread, as are the
// submissions): the events, the poison, the flush and the stamps are ordered with solve()'s work on it.
const cudaStream_t LEGACY = 0;
// The launch shape of judge/gpu/integrity.py's Kernels: 256 threads, at most 2048 blocks.
constexpr unsigned BLOCK = 256, MAX_BLOCKS = 2048;

// A failure reported on the channel: kind is one of protocol.ERROR_KINDS.
struct Failure {
    std::string kind, name, text, where;
};

[[noreturn]] void refuse(const std::string& name, const std::string& text) { throw Failure{"native", name, text, ""}; }

void cuda(cudaError_t e, const std::string& where) {
    if (e != cudaSuccess) throw Failure{"cuda", cudaGetErrorName(e), cudaGetErrorString(e), where};
}

// -- the channel -------------------------------------------------------------------------------------
int g_channel = -1;
std::string g_nonce;

void write_all(int fd, const std::string& s) {
    size_t done = 0;
    while (done < s.size()) {
        ssize_t n = write(fd, s.data() + done, s.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) _exit(1);  // the parent is gone
        done += (size_t)n;
    }
}

// A reply: {"nonce":..., "ok":..., <fields>}; `fields` appends key/value pairs to the open object.
template <typename F>
void reply(bool ok, F fields) {
    jsn::Writer w;
    w.begin_object().key("nonce").string(g_nonce).key("ok").boolean(ok);
    fields(w);
    w.end_object();
    write_all(g_channel, w.out + "\n");
}

// A line before the reply ({"nonce":..., <fields>}, no `ok`): a sealed call asking for its key.
template <typename F>
void reply_line(F fields) {
    jsn::Writer w;
    w.begin_object().key("nonce").string(g_nonce);
    fields(w);
    w.end_object();
    write_all(g_channel, w.out + "\n");
}

void reply_ok() {
    reply(true, [](jsn::Writer&) {});
}

[[noreturn]] void reply_failure(const Failure& f) {
    reply(false, [&](jsn::Writer& w) {
        w.key("error").begin_object();
        w.key("kind").string(f.kind).key("name").string(f.name);
        w.key("text").string(f.text.substr(0, JUDGE_ERROR_TEXT_CHARS));
        if (!f.where.empty()) w.key("where").string(f.where);
        w.end_object();
    });
    _exit(1);  // no destructors of the submission's library, no runtime teardown: the driver frees
}

// stdin, one line at a time, each at most JUDGE_COMMAND_CAP_BYTES.
class Lines {
  public:
    // The next line without its newline; false at end of input (an unterminated last line is dropped).
    bool next(std::string& line) {
        for (;;) {
            size_t nl = buf_.find('\n', scanned_);
            if (nl != std::string::npos) {
                line.assign(buf_, 0, nl);
                buf_.erase(0, nl + 1);
                scanned_ = 0;
                return true;
            }
            scanned_ = buf_.size();
            if (buf_.size() > (size_t)JUDGE_COMMAND_CAP_BYTES)
                refuse("CommandTooLong", "a command line over " + std::to_string(JUDGE_COMMAND_CAP_BYTES) + " bytes");
            if (eof_) return false;
            char chunk[1 << 16];
            ssize_t n = read(0, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) eof_ = true;
            else buf_.append(chunk, (size_t)n);
        }
    }

  private:
    std::string buf_;
    size_t scanned_ = 0;
    bool eof_ = false;
};

// The channel as the parent passed it, or exit 2 with a line on stderr (which goes to the log).
void open_channel(Lines& in) {
    const char* text = getenv(JUDGE_ENV_FD);
    std::string value = text ? text : "";
    unsetenv(JUDGE_ENV_FD);  // nothing started from here, nor the submission, reads it
    char* stop = nullptr;
    long fd = value.empty() ? -1 : strtol(value.c_str(), &stop, 10);
    if (fd < 0 || fd > 1 << 20 || *stop != '\0' || fcntl((int)fd, F_SETFD, FD_CLOEXEC) != 0) {
        fprintf(stderr, "judge-worker: no result fd in $%s: the worker is started by judge/worker/client.py\n",
                JUDGE_ENV_FD);
        exit(2);
    }
    g_channel = (int)fd;
    std::string nonce;
    bool ok = false;
    try {
        ok = in.next(nonce);
    } catch (const Failure&) {
    }
    while (ok && !nonce.empty() && (nonce.back() == '\r' || nonce.back() == ' ')) nonce.pop_back();
    ok = ok && nonce.size() == JUDGE_NONCE_HEX &&
         nonce.find_first_not_of("0123456789abcdef") == std::string::npos;
    if (!ok) {
        fprintf(stderr, "judge-worker: no nonce on the first line of stdin\n");
        exit(2);
    }
    g_nonce = nonce;
}

// -- reading a command's fields ------------------------------------------------------------------------
const jsn::Value& field(const jsn::Value& obj, const char* key) {
    const jsn::Value* v = obj.get(key);
    if (!v) refuse("BadRequest", std::string("missing field `") + key + "`");
    return *v;
}

const jsn::Value* optional(const jsn::Value& obj, const char* key) {
    const jsn::Value* v = obj.get(key);
    return v && !v->is_null() ? v : nullptr;
}

const std::string& text_of(const jsn::Value& v, const char* what) {
    if (v.type != jsn::Value::String) refuse("BadRequest", std::string("`") + what + "` is not a string");
    return v.text;
}

int64_t int_of(const jsn::Value& v, const char* what) {
    if (v.type != jsn::Value::Number || !v.integral) refuse("BadRequest", std::string("`") + what + "` is not an integer");
    return v.integer;
}

#include "hold.h"  // after cuda() and the judge's kernels, which it uses

double number_of(const jsn::Value& v, const char* what) {
    if (v.type != jsn::Value::Number) refuse("BadRequest", std::string("`") + what + "` is not a number");
    return v.number;
}

const std::vector<jsn::Value>& list_of(const jsn::Value& v, const char* what) {
    if (v.type != jsn::Value::Array) refuse("BadRequest", std::string("`") + what + "` is not a list");
    return v.items;
}

void only_fields(const jsn::Value& cmd, std::initializer_list<const char*> known) {
    for (const auto& f : cmd.fields) {
        bool ok = f.first == "op";
        for (const char* k : known) ok = ok || f.first == k;
        if (!ok) refuse("BadRequest", "unexpected field `" + f.first + "`");
    }
}

std::vector<uint8_t> bytes_of_hex(const std::string& hex, const char* what) {
    auto digit = [&](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        refuse("BadRequest", std::string("`") + what + "` is not hex");
    };
    if (hex.size() % 2) refuse("BadRequest", std::string("`") + what + "` has an odd number of hex digits");
    std::vector<uint8_t> out(hex.size() / 2);
    for (size_t i = 0; i < out.size(); ++i) out[i] = (uint8_t)(digit(hex[2 * i]) << 4 | digit(hex[2 * i + 1]));
    return out;
}

void sleep_ms(double ms) {
    if (!(ms > 0)) return;
    struct timespec t;
    t.tv_sec = (time_t)(ms / 1000);
    t.tv_nsec = (long)((ms - 1000.0 * (double)t.tv_sec) * 1e6);
    if (t.tv_nsec >= 1000000000L) t.tv_nsec = 999999999L;
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

// -- the worker ----------------------------------------------------------------------------------------
struct Output {
    char* ptr;
    uint64_t nbytes;
    std::string dtype;
};

class Worker {
  public:
    explicit Worker(Lines& in) : in_(in) {
        uint64_t seed[4];
        if (getrandom(seed, sizeof seed, 0) != (ssize_t)sizeof seed) {
            judge_confine::OsError e = judge_confine::os_error("getrandom");
            throw Failure{"os", e.name, e.text, "seeding the poison patterns"};
        }
        memcpy(rng_.s, seed, sizeof seed);
        cuda(cudaSetDevice(0), "cudaSetDevice");
        cuda(cudaFree(nullptr), "creating the CUDA context");
        int l2 = 0;
        cuda(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0), "cudaDeviceGetAttribute");
        flush_bytes_ = std::max<size_t>(2 * (size_t)l2, (size_t)JUDGE_FLUSH_MIN_BYTES);
        // The flush buffer (then its sink): set once, then only read (judge_read), so the
        // flush leaves clean lines in L2 whose eviction costs the timed call nothing.
        cuda(cudaMalloc(&flush_, flush_bytes_ + JUDGE_FLUSH_SINK_BYTES), "cudaMalloc(" + std::to_string(flush_bytes_) + ")");
        cuda(cudaMemset(flush_, poison_byte(), flush_bytes_), "filling the L2 flush buffer");
        // The checks' stream: blocking (ordered with the legacy default stream both ways) and of the
        // highest priority, so that its blocks go ahead of the pending blocks of a big kernel on a
        // side stream: judge/gpu/integrity.py says why.
        int least = 0, greatest = 0;
        cuda(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
        cuda(cudaStreamCreateWithPriority(&check_stream_, cudaStreamDefault, greatest), "cudaStreamCreateWithPriority");
        // Load the judge's kernels now (CUDA loads modules lazily, at the first launch otherwise):
        // before the sandbox, and so that a missing image fails here, as the judge's problem.
        const void* kernels[] = {(const void*)judge_fill16, (const void*)judge_fill32, (const void*)judge_check16,
                                 (const void*)judge_check32, (const void*)judge_stamp, (const void*)judge_hold,
                                 (const void*)judge_read, (const void*)judge_crypt};
        for (const void* k : kernels) {
            cudaFuncAttributes attr;
            cuda(cudaFuncGetAttributes(&attr, k), "loading the judge's kernels");
        }
        hold_.setup({flush_, flush_bytes_});
    }

    void dispatch(const std::string& op, const jsn::Value& cmd) {
        if (op == "init") {
            only_fields(cmd, {"params", "lib", "seccomp", "seccomp_learn", "baseline"});
            init(cmd);
        } else if (op == "map") {
            only_fields(cmd, {"buffers"});
            map(field(cmd, "buffers"));
        } else if (op == "unmap") {
            only_fields(cmd, {});
            unmap();
        } else if (op == "call") {
            only_fields(cmd, {"args", "outputs", "counter"});
            call(cmd);
        } else if (op == "prepare") {
            only_fields(cmd, {"slots", "outputs", "counter", "inputs"});
            prepare(cmd);
        } else if (op == "time_batch") {
            only_fields(cmd, {"k", "rest", "per_call", "hold", "sealed"});
            time_batch(cmd);
            return;  // replied with the times
        } else {
            refuse("BadRequest", "unknown command `" + op + "`");
        }
        reply_ok();
    }

  private:
    Lines& in_;  // stdin: a sealed call's key arrives there mid-batch
    judge_poison::Rng rng_;
    void* flush_ = nullptr;
    size_t flush_bytes_ = 0;
    cudaStream_t check_stream_ = nullptr;
    judge_holds::Hold hold_;
    std::vector<judge_call::Kind> kinds_;
    void* solve_ = nullptr;
    std::map<std::string, char*> buffers_;
    std::vector<std::pair<cudaEvent_t, cudaEvent_t>> events_;
    std::vector<std::vector<judge_call::Arg>> slots_;
    std::vector<std::vector<Output>> slot_outputs_;
    char* counter_ = nullptr;
    int64_t next_slot_ = 0;
    // The sealed inputs per slot: (pointer, bytes) pairs in device memory for the gate, from `jobs_`.
    unsigned long long* jobs_ = nullptr;
    std::vector<std::pair<size_t, unsigned>> slot_jobs_;  // per slot: first pair, pairs
    std::vector<std::pair<char*, uint64_t>> jobs_host_;

    // -- init
    void init(const jsn::Value& cmd) {
        if (cmd.get("baseline")) refuse("Unsupported", "the native worker loads libraries; a baseline runs in the Python worker");
        if (solve_) refuse("BadRequest", "init twice");
        std::vector<judge_call::Kind> kinds;
        for (const jsn::Value& p : list_of(field(cmd, "params"), "params")) {
            const std::string& kind = text_of(field(p, "kind"), "kind");
            if (kind == "tensor") kinds.push_back(judge_call::POINTER);
            else if (kind == "int") kinds.push_back(judge_call::INT);
            else if (kind == "float") kinds.push_back(judge_call::FLOAT);
            else refuse("BadRequest", "parameter kind `" + kind + "`");
        }
        std::string why = judge_call::check(kinds);
        if (!why.empty()) refuse("Signature", why);
        const std::string& lib = text_of(field(cmd, "lib"), "lib");
        const jsn::Value* prog = optional(cmd, "seccomp");
        std::vector<uint8_t> filter = prog ? bytes_of_hex(text_of(*prog, "seccomp"), "seccomp") : std::vector<uint8_t>();
        int fd;
        try {
            fd = judge_confine::open_library(lib);
        } catch (const judge_confine::OsError& e) {
            throw Failure{"os", e.name, e.text, "loading the library"};
        }
        try {
            const jsn::Value* learn = optional(cmd, "seccomp_learn");
            if (prog) judge_confine::confine(filter, learn ? text_of(*learn, "seccomp_learn").c_str() : nullptr);
        } catch (const judge_confine::OsError& e) {
            throw Failure{"os", e.name, e.text, "confining the worker"};
        }
        std::string error;
        solve_ = judge_confine::load_solve(fd, lib, error);
        if (!solve_) throw Failure{"os", "dlopen", error, "loading the library"};
        kinds_ = kinds;
    }

    // -- buffers
    void map(const jsn::Value& list) {
        for (const jsn::Value& b : list_of(list, "buffers")) {
            std::vector<uint8_t> handle = bytes_of_hex(text_of(field(b, "handle"), "handle"), "handle");
            cudaIpcMemHandle_t h;
            if (handle.size() != sizeof h.reserved) refuse("BadRequest", "an IPC handle of the wrong size");
            memcpy(h.reserved, handle.data(), sizeof h.reserved);
            void* p = nullptr;
            cuda(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
            buffers_[text_of(field(b, "id"), "id")] = (char*)p;
        }
    }

    void unmap() {
        for (auto& b : buffers_) cuda(cudaIpcCloseMemHandle(b.second), "cudaIpcCloseMemHandle");
        buffers_.clear();
    }

    char* buffer(const jsn::Value& id) {
        auto it = buffers_.find(text_of(id, "buf"));
        if (it == buffers_.end()) refuse("BadRequest", "buffer `" + id.text + "` is not mapped");
        return it->second;
    }

    // solve()'s arguments, checked against the parameters' kinds from init.
    std::vector<judge_call::Arg> args_of(const jsn::Value& list) {
        if (!solve_) refuse("BadRequest", "solve() called before init");
        const auto& items = list_of(list, "args");
        if (items.size() != kinds_.size())
            refuse("BadRequest", std::to_string(items.size()) + " arguments for " + std::to_string(kinds_.size()) + " parameters");
        std::vector<judge_call::Arg> out;
        for (size_t i = 0; i < items.size(); ++i) {
            const jsn::Value* v;
            if (kinds_[i] == judge_call::POINTER && (v = items[i].get("buf"))) {
                out.push_back(judge_call::Arg::pointer(buffer(*v)));
            } else if (kinds_[i] == judge_call::INT && (v = items[i].get("int"))) {
                int64_t n = int_of(*v, "int");
                if (n < INT32_MIN || n > INT32_MAX) refuse("BadRequest", "an int argument out of range");
                out.push_back(judge_call::Arg::integer((int32_t)n));
            } else if (kinds_[i] == judge_call::FLOAT && (v = items[i].get("float"))) {
                out.push_back(judge_call::Arg::real((float)number_of(*v, "float")));
            } else {
                refuse("BadRequest", "argument " + std::to_string(i) + " does not match the parameter's kind");
            }
        }
        return out;
    }

    Output output_of(const jsn::Value& o) {
        const jsn::Value* dtype = optional(o, "dtype");
        int64_t nbytes = int_of(field(o, "nbytes"), "nbytes");
        if (nbytes < 0) refuse("BadRequest", "negative nbytes");
        return {buffer(field(o, "buf")), (uint64_t)nbytes, dtype ? text_of(*dtype, "dtype") : "uint8"};
    }

    // -- the judge's kernels
    static unsigned blocks(uint64_t n) { return (unsigned)std::min<uint64_t>(MAX_BLOCKS, (n + BLOCK - 1) / BLOCK); }

    void launch(const void* kernel, unsigned grid, unsigned block, void** args, cudaStream_t stream, const char* where) {
        cuda(cudaLaunchKernel(kernel, dim3(grid), dim3(block), args, 0, stream), where);
    }

    // Poison one output before a timed call: the pattern where its dtype has one (returned), a byte otherwise.
    bool poison(const Output& o, uint32_t& word) {
        int width = judge_poison::width(o.dtype);
        if (!width || !judge_poison::word(o.dtype, rng_, word)) {
            cuda(cudaMemsetAsync(o.ptr, poison_byte(), o.nbytes, LEGACY), "cudaMemsetAsync");
            return false;
        }
        uint64_t n = o.nbytes / width;  // a trailing partial word keeps what it held
        if (!n) return true;
        void* p = o.ptr;
        uint16_t w16 = (uint16_t)word;
        void* args[] = {&p, width == 2 ? (void*)&w16 : (void*)&word, &n};
        launch(width == 2 ? (const void*)judge_fill16 : (const void*)judge_fill32, blocks(n), BLOCK, args, LEGACY,
               "judge_fill");
        return true;
    }

    // Read the whole flush buffer (judge/gpu/integrity.py's Kernels.read: the same launch).
    void flush_l2() {
        const void* p = flush_;
        uint64_t n = flush_bytes_ / 16;
        unsigned never = JUDGE_FLUSH_NEVER;
        void* sink = (char*)flush_ + flush_bytes_;
        void* args[] = {&p, &n, &never, &sink};
        launch((const void*)judge_read, JUDGE_FLUSH_GRID, JUDGE_FLUSH_BLOCK, args, LEGACY, "judge_read");
    }

    unsigned char poison_byte() { return JUDGE_POISON_BYTES[rng_.below(sizeof JUDGE_POISON_BYTES)]; }

    // judge_check of output `salt` (its index among the call's outputs) into out[0] (words still
    // holding `word`) and out[1] (the fingerprint), on the checks' stream.
    void check(const Output& o, uint32_t word, uint64_t salt, char* out) {
        int width = judge_poison::width(o.dtype);
        if (!width) refuse("BadRequest", "a poison word for an output of dtype " + o.dtype);
        uint64_t n = o.nbytes / width;
        if (!n) return;
        void* p = o.ptr;
        uint16_t w16 = (uint16_t)word;
        void* args[] = {&p, width == 2 ? (void*)&w16 : (void*)&word, &n, &salt, &out};
        launch(width == 2 ? (const void*)judge_check16 : (const void*)judge_check32, blocks(n), BLOCK, args,
               check_stream_, "judge_check");
    }

    void stamp(char* out) {
        void* args[] = {&out};
        launch((const void*)judge_stamp, 1, 1, args, LEGACY, "judge_stamp");
    }

    // A launch of the judge's after solve() failed: most likely solve()'s own error, sticky. Report
    // it as the runtime words it (a synchronisation), else the launch's failure.
    template <typename F>
    void after_solve(F work) {
        try {
            work();
        } catch (const Failure&) {
            cuda(cudaDeviceSynchronize(), "solve() on the device");
            throw;
        }
    }

    // -- call
    void call(const jsn::Value& cmd) {
        std::vector<judge_call::Arg> args = args_of(field(cmd, "args"));
        const jsn::Value* counter = optional(cmd, "counter");
        char* out = counter ? buffer(*counter) : nullptr;
        struct Checked {
            Output output;
            uint32_t word;
            uint64_t salt;  // the output's index among the call's outputs
        };
        std::vector<Checked> checked;
        if (out) {
            if (const jsn::Value* outputs = optional(cmd, "outputs")) {
                const auto& items = list_of(*outputs, "outputs");
                for (size_t j = 0; j < items.size(); ++j)
                    if (const jsn::Value* word = optional(items[j], "word"))
                        checked.push_back({output_of(items[j]), (uint32_t)int_of(*word, "word"), j});
            }
        }
        cuda(cudaDeviceSynchronize(), "before the call");
        judge_call::call(solve_, args);
        cuda(cudaGetLastError(), "launching solve()");
        after_solve([&] {
            for (const Checked& c : checked) check(c.output, c.word, c.salt, out);
        });
        cuda(cudaDeviceSynchronize(), "solve() on the device");
    }

    // -- timed calls
    void prepare(const jsn::Value& cmd) {
        std::vector<std::vector<judge_call::Arg>> slots;
        for (const jsn::Value& s : list_of(field(cmd, "slots"), "slots")) slots.push_back(args_of(s));
        std::vector<std::vector<Output>> outputs;
        for (const jsn::Value& outs : list_of(field(cmd, "outputs"), "outputs")) {
            outputs.emplace_back();
            for (const jsn::Value& o : list_of(outs, "outputs")) outputs.back().push_back(output_of(o));
        }
        if (slots.empty() || outputs.size() != slots.size())
            refuse("BadRequest", "prepare needs one list of outputs per slot, and a slot at least");
        std::vector<std::pair<size_t, unsigned>> slot_jobs;
        std::vector<std::pair<char*, uint64_t>> jobs;
        if (const jsn::Value* inputs = optional(cmd, "inputs")) {
            const auto& per_slot = list_of(*inputs, "inputs");
            if (per_slot.size() != slots.size()) refuse("BadRequest", "prepare needs one list of inputs per slot");
            for (const jsn::Value& ins : per_slot) {
                slot_jobs.emplace_back(jobs.size(), 0u);
                for (const jsn::Value& in : list_of(ins, "inputs")) {
                    Output o = output_of(in);
                    if ((uintptr_t)o.ptr % 16) refuse("BadRequest", "a sealed input that is not 16-byte aligned");
                    jobs.emplace_back(o.ptr, o.nbytes);
                    ++slot_jobs.back().second;
                }
            }
        }
        const jsn::Value* counter = optional(cmd, "counter");
        counter_ = counter ? buffer(*counter) : nullptr;
        slots_ = std::move(slots);
        slot_outputs_ = std::move(outputs);
        next_slot_ = 0;
        if (jobs_) cuda(cudaFree(jobs_), "cudaFree");
        jobs_ = nullptr;
        if (!jobs.empty()) {
            std::vector<unsigned long long> table;
            for (const auto& j : jobs) {
                table.push_back((unsigned long long)(uintptr_t)j.first);
                table.push_back(j.second);
            }
            cuda(cudaMalloc(&jobs_, table.size() * sizeof table[0]), "cudaMalloc (the sealed inputs)");
            cuda(cudaMemcpy(jobs_, table.data(), table.size() * sizeof table[0], cudaMemcpyHostToDevice),
                 "cudaMemcpy (the sealed inputs)");
        }
        slot_jobs_ = std::move(slot_jobs);
        jobs_host_ = std::move(jobs);
        while (events_.size() < (size_t)JUDGE_MAX_CALLS_PER_BATCH) {
            cudaEvent_t a, b;
            cuda(cudaEventCreate(&a), "cudaEventCreate");
            cuda(cudaEventCreate(&b), "cudaEventCreate");
            events_.emplace_back(a, b);
        }
    }

    // Call i's key from the parent, asked for once its gate holds every SM: a line {"unseal": i} on
    // the channel, answered by one line {"key": [k0, k1, k2]} on stdin.
    void ask_key(int64_t i, uint32_t key[3]) {
        reply_line([&](jsn::Writer& w) { w.key("unseal").integer(i); });
        std::string line;
        if (!in_.next(line)) refuse("BadRequest", "no key for a sealed call: stdin ended");
        jsn::Value msg;
        std::string error;
        if (!jsn::parse(line, msg, error) || msg.type != jsn::Value::Object) refuse("BadRequest", "a key that is not a JSON object");
        const auto& words = list_of(field(msg, "key"), "key");
        if (words.size() != 3) refuse("BadRequest", "a key of other than three words");
        for (int j = 0; j < 3; ++j) {
            int64_t w = int_of(words[j], "key");
            if (w < 0 || w > UINT32_MAX) refuse("BadRequest", "a key word out of range");
            key[j] = (uint32_t)w;
        }
    }

    // Without a gate (an SM-limited context): open slot s's inputs with judge_crypt on their own.
    void open_inputs(size_t s, const uint32_t key[3]) {
        for (unsigned j = 0; j < slot_jobs_[s].second; ++j) {
            const auto& in = jobs_host_[slot_jobs_[s].first + j];
            void* p = in.first;
            uint64_t n = in.second;
            uint32_t job = j, k0 = key[0], k1 = key[1], k2 = key[2];
            void* args[] = {&p, &n, &job, &k0, &k1, &k2};
            launch((const void*)judge_crypt, blocks((n + 15) / 16), BLOCK, args, LEGACY, "judge_crypt");
        }
    }

    // Persisting L2 lines survive a plain flush: reset them, and the default stream's access policy
    // window (best effort: that call's error is cleared so that it is not taken for solve()'s).
    void clear_persisting_l2() {
        cuda(cudaCtxResetPersistingL2Cache(), "cudaCtxResetPersistingL2Cache");
        cudaStreamAttrValue none;
        memset(&none, 0, sizeof none);
        if (cudaStreamSetAttribute(LEGACY, cudaStreamAttributeAccessPolicyWindow, &none) != cudaSuccess)
            cudaGetLastError();
    }

    // With `rest` > 0 the GPU idles `rest` × the busy time, after each call (`per_call`, for long
    // calls) or after the batch: judge/worker/main.py's time_batch says why.
    void time_batch(const jsn::Value& cmd) {
        if (slots_.empty()) refuse("BadRequest", "time_batch before prepare");
        int64_t k = int_of(field(cmd, "k"), "k");
        k = std::max<int64_t>(1, std::min<int64_t>(k, JUDGE_MAX_CALLS_PER_BATCH));
        const jsn::Value* rest_v = optional(cmd, "rest");
        double rest = rest_v ? number_of(*rest_v, "rest") : 0.0;
        bool per_call = flag(cmd, "per_call");
        const bool gate = hold_.usable(), held = flag(cmd, "hold") && gate, sealed = flag(cmd, "sealed");
        if (sealed && slot_jobs_.size() != slots_.size()) refuse("BadRequest", "a sealed batch without prepared inputs");
        const unsigned crowded0 = hold_.crowded(), late0 = hold_.late();
        std::vector<uint32_t> words;
        std::vector<bool> poisoned;
        std::vector<double> host((size_t)k);
        for (int64_t i = 0; i < k; ++i) {
            const size_t s = (size_t)(next_slot_++ % (int64_t)slots_.size());
            const std::vector<Output>& outs = slot_outputs_[s];
            words.assign(outs.size(), 0);
            poisoned.assign(outs.size(), false);
            for (size_t j = 0; j < outs.size(); ++j) {  // poison first, then flush: its lines leave L2
                uint32_t w = 0;
                poisoned[j] = poison(outs[j], w);
                words[j] = w;
            }
            clear_persisting_l2();
            char* slot = counter_ ? counter_ + (size_t)JUDGE_CHECK_STRIDE * i : nullptr;
            unsigned long long* start_stamp = slot ? (unsigned long long*)(slot + 16) : nullptr;
            cudaEvent_t start = events_[i].first, end = events_[i].second;
            uint32_t key[3];
            if (gate) {  // the gate, then the start event directly after it
                const bool opens = sealed && slot_jobs_[s].second;
                hold_.begin(opens ? jobs_ + 2 * slot_jobs_[s].first : nullptr, opens ? slot_jobs_[s].second : 0,
                            start_stamp, held);
                cuda(cudaEventRecord(start, LEGACY), "cudaEventRecord");
                if (held || opens) hold_.wait_resident();
                if (opens) {
                    ask_key(i, key);
                    hold_.open(key[0], key[1], key[2]);
                }
            } else {
                if (sealed) {
                    ask_key(i, key);
                    open_inputs(s, key);
                }
                flush_l2();
                if (slot) stamp(slot + 16);
                cuda(cudaEventRecord(start, LEGACY), "cudaEventRecord");
            }
            const double t0 = now_ms();
            judge_call::call(solve_, slots_[s]);
            host[(size_t)i] = now_ms() - t0;
            cuda(cudaEventRecord(end, LEGACY), "cudaEventRecord");
            cuda(cudaGetLastError(), "launching solve()");
            if (slot) {  // right after the end event, before any synchronisation
                after_solve([&] {
                    stamp(slot + 24);
                    for (size_t j = 0; j < outs.size(); ++j)
                        if (poisoned[j]) check(outs[j], words[j], j, slot);
                });
            }
            if (held) hold_.release();
            if (rest > 0 && per_call) {
                cuda(cudaEventSynchronize(end), "solve() on the device");
                float ms = 0;
                cuda(cudaEventElapsedTime(&ms, start, end), "cudaEventElapsedTime");
                sleep_ms(ms * rest);
            }
        }
        cuda(cudaGetLastError(), "launching solve()");
        cuda(cudaDeviceSynchronize(), "solve() on the device");
        std::vector<float> times((size_t)k);
        double total = 0;
        for (int64_t i = 0; i < k; ++i) {
            cuda(cudaEventElapsedTime(&times[i], events_[i].first, events_[i].second), "cudaEventElapsedTime");
            total += times[i];
        }
        if (rest > 0 && !per_call) sleep_ms(total * rest);
        reply(true, [&](jsn::Writer& w) {
            w.key("times_ms").begin_array();
            for (float t : times) w.number(t);
            w.end_array();
            w.key("host_ms").begin_array();
            for (double t : host) w.number(t);
            w.end_array();
            w.key("held").boolean(held);
            w.key("crowded").integer(hold_.crowded() - crowded0);
            w.key("late").integer(hold_.late() - late0);
            w.key("calls").integer(next_slot_);
        });
    }

    static bool flag(const jsn::Value& cmd, const char* name) {
        const jsn::Value* v = optional(cmd, name);
        return v && v->type == jsn::Value::Bool && v->boolean;
    }

    static double now_ms() {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
    }
};

// `judge-worker --selftest-sandbox HEXPROG LIB`: init's confinement and loading without CUDA, for
// tests/worker/test_native_worker.py on a machine without a GPU. A thread started before the filter
// says whether the filter reached it (TSYNC), then solve() (no parameters) runs confined. It cannot
// stand in for a worker: it refuses to run where the parent's channel is set, opens no channel,
// and exits after that one call.
int selftest(int argc, char** argv) {
    if (argc != 4 || getenv(JUDGE_ENV_FD)) {
        fprintf(stderr, "usage: judge-worker --selftest-sandbox HEXPROG LIB (never under a judge)\n");
        return 2;
    }
    int ready[2], go[2];
    if (pipe(ready) != 0 || pipe(go) != 0) return 3;
    pthread_t other;
    auto body = [](void* fds) -> void* {
        int* f = (int*)fds;
        char c;
        while (read(f[0], &c, 1) < 0 && errno == EINTR) {
        }
        int mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
        if (write(f[1], &mode, sizeof mode) < 0) return nullptr;
        return nullptr;
    };
    int fds[2] = {go[0], ready[1]};
    if (pthread_create(&other, nullptr, body, fds) != 0) return 3;
    try {
        int fd = judge_confine::open_library(argv[3]);
        judge_confine::confine(bytes_of_hex(argv[2], "HEXPROG"));
        char c = 1;
        int mode = -1;
        if (write(go[1], &c, 1) != 1 || read(ready[0], &mode, sizeof mode) != (ssize_t)sizeof mode) return 3;
        printf("selftest: the other thread's seccomp mode is %d\n", mode);
        std::string error;
        void* fn = judge_confine::load_solve(fd, argv[3], error);
        if (!fn) {
            printf("selftest: %s\n", error.c_str());
            return 1;
        }
        fflush(stdout);
        judge_call::call(fn, {});
        printf("selftest: solve() returned\n");
    } catch (const judge_confine::OsError& e) {
        printf("selftest: %s (%s)\n", e.text.c_str(), e.name.c_str());
        return 1;
    } catch (const Failure& f) {
        printf("selftest: %s\n", f.text.c_str());
        return 1;
    }
    return 0;
}

// `judge-worker --selftest-pidns ACTION`: the start-up's pid namespace (confine.h's
// `own_pid_namespace`) without CUDA, for tests/worker/test_native_worker.py. It says whether it got
// one, its pid and its parent's as it sees them and what /proc/self names (its own pid when /proc
// is its namespace's), then: `wait` reads stdin to its end and exits 0, `exit` exits with status 7,
// `xfsz` writes past a 1 KiB RLIMIT_FSIZE on stdout (a file). A namespace without its /proc is
// `selftest: TEXT (NAME)` and exit 1. Like the sandbox self-test it refuses to run where the
// parent's channel is set.
int selftest_pidns(int argc, char** argv) {
    if (argc != 3 || getenv(JUDGE_ENV_FD)) {
        fprintf(stderr, "usage: judge-worker --selftest-pidns wait|exit|xfsz (never under a judge)\n");
        return 2;
    }
    std::string action = argv[2], why;
    bool own = false;
    try {
        own = judge_confine::own_pid_namespace(why, {0});
    } catch (const judge_confine::OsError& e) {
        printf("selftest: %s (%s)\n", e.text.c_str(), e.name.c_str());
        return 1;
    }
    char self[32] = "?";
    ssize_t n = readlink("/proc/self", self, sizeof self - 1);
    self[n > 0 ? n : 1] = '\0';
    printf("selftest: pid_namespace=%d pid=%d ppid=%d proc_self=%s%s%s\n", own ? 1 : 0, (int)getpid(),
           (int)getppid(), self, own ? "" : " why=", why.c_str());
    fflush(stdout);
    if (action == "exit") _exit(7);
    if (action == "xfsz") {
        signal(SIGXFSZ, SIG_DFL);
        struct rlimit cap = {1024, 1024};
        if (setrlimit(RLIMIT_FSIZE, &cap) != 0) return 3;
        char block[4096];
        memset(block, 'x', sizeof block);
        for (int i = 0; i < 4; ++i)
            if (write(1, block, sizeof block) < 0) printf("selftest: write failed: %s\n", strerror(errno));
        return 4;  // not reached where SIGXFSZ ends the process
    }
    for (;;) {
        char c;
        ssize_t n = read(0, &c, 1);
        if (n == 0 || (n < 0 && errno != EINTR)) return 0;
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc >= 2 && strcmp(argv[1], "--selftest-sandbox") == 0) return selftest(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "--selftest-pidns") == 0) return selftest_pidns(argc, argv);
    if (argc != 1) {
        fprintf(stderr, "judge-worker: no arguments (started by judge/worker/client.py)\n");
        return 2;
    }
    // Output past the log's cap (RLIMIT_FSIZE) kills the worker, and so does a closed channel.
    signal(SIGXFSZ, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    Lines in;
    open_channel(in);
    // Unless JUDGE_PID_NAMESPACE=0 (judge/paths.py), a pid namespace of its own where the OS allows
    // one, before any CUDA call: from here on this is pid 2 under a waiting pid 1, with a /proc of
    // its own, or, where unshare was refused, the process the judge started (confine.h). A
    // namespace whose /proc could not be mounted is a start-up failure: CUDA would fail in it.
    const char* wanted = getenv(JUDGE_ENV_PID_NAMESPACE);
    bool ask = !(wanted && strcmp(wanted, "0") == 0);
    unsetenv(JUDGE_ENV_PID_NAMESPACE);
    std::string no_namespace;
    bool pid_namespace = false;
    try {
        pid_namespace = ask && judge_confine::own_pid_namespace(no_namespace, {0, g_channel});
    } catch (const judge_confine::OsError& e) {
        std::string off = "; set " JUDGE_ENV_PID_NAMESPACE "=0 to judge without a pid namespace";
        reply_failure(Failure{"os", e.name, e.text + off, ""});
    }
    Worker* worker = nullptr;
    try {
        worker = new Worker(in);
    } catch (const Failure& f) {
        reply_failure(f);
    }
    reply(true, [&](jsn::Writer& w) {
        w.key("ready").boolean(true).key("pid").integer(getpid()).key("pid_namespace").boolean(pid_namespace);
    });
    std::string line;
    for (;;) {
        try {
            if (!in.next(line)) break;
            jsn::Value cmd;
            std::string error;
            if (!jsn::parse(line, cmd, error)) refuse("BadRequest", "a command that is not JSON: " + error);
            if (cmd.type != jsn::Value::Object) refuse("BadRequest", "a command that is not a JSON object");
            const std::string& op = text_of(field(cmd, "op"), "op");
            if (op == "exit") break;
            worker->dispatch(op, cmd);
        } catch (const Failure& f) {
            reply_failure(f);
        } catch (const std::exception& e) {  // the worker's own (bad_alloc), or one solve() let escape
            reply_failure(Failure{"native", "std::exception", e.what(), ""});
        } catch (...) {
            reply_failure(Failure{"native", "exception", "an exception of unknown type escaped", ""});
        }
    }
    fflush(stdout);
    fflush(stderr);
    _exit(0);
}
