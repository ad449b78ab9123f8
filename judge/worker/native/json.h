// A small JSON reader and writer for the native worker's channel (judge/worker/protocol.py).
//
// The reader parses one command line from the parent into a tree: the parent is trusted, but the
// reader is strict anyway (a nesting limit, no trailing bytes, numbers and escapes as RFC 8259 has
// them, plus Python's NaN/Infinity, which `json.dumps` writes for a non-finite float). The writer
// emits ASCII only (bytes >= 0x80 and control characters as \u00XX), so that whatever a string
// holds (a path, dlerror()'s text) the reply stays valid UTF-8 and valid JSON: the parent calls a
// reply that is not malformed, which is the candidate's RUNTIME_ERROR, not the judge's message.
// No CUDA here: tests/worker/native/host_test.cc compiles it with g++.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace jsn {

struct Value {
    enum Type { Null, Bool, Number, String, Array, Object } type = Null;
    bool boolean = false;
    double number = 0;
    bool integral = false;  // a number written without fraction or exponent that fits int64
    int64_t integer = 0;
    std::string text;
    std::vector<Value> items;
    std::vector<std::pair<std::string, Value>> fields;

    const Value* get(const char* key) const {
        for (const auto& f : fields)
            if (f.first == key) return &f.second;
        return nullptr;
    }
    bool is_null() const { return type == Null; }
};

class Reader {
  public:
    Reader(const char* p, size_t n, int max_depth) : p_(p), end_(p + n), max_depth_(max_depth) {}

    // The whole input as one value; false with `error` set otherwise.
    bool parse(Value& out, std::string& error) {
        space();
        if (!value(out, 0)) {
            error = error_.empty() ? "not JSON" : error_;
            return false;
        }
        space();
        if (p_ != end_) {
            error = "trailing bytes after the JSON value";
            return false;
        }
        return true;
    }

  private:
    const char* p_;
    const char* end_;
    int max_depth_;
    std::string error_;

    bool fail(const char* why) {
        if (error_.empty()) error_ = why;
        return false;
    }
    void space() {
        while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
    }
    bool literal(const char* word) {
        size_t n = strlen(word);
        if ((size_t)(end_ - p_) < n || memcmp(p_, word, n) != 0) return false;
        p_ += n;
        return true;
    }

    bool value(Value& v, int depth) {
        if (p_ == end_) return fail("unexpected end");
        switch (*p_) {
            case '{': return object(v, depth + 1);
            case '[': return array(v, depth + 1);
            case '"': v.type = Value::String; return string(v.text);
            case 't': v.type = Value::Bool; v.boolean = true; return literal("true") || fail("bad literal");
            case 'f': v.type = Value::Bool; v.boolean = false; return literal("false") || fail("bad literal");
            case 'n': v.type = Value::Null; return literal("null") || fail("bad literal");
            case 'N':
                v.type = Value::Number; v.number = NAN;
                return literal("NaN") || fail("bad literal");
            case 'I':
                v.type = Value::Number; v.number = INFINITY;
                return literal("Infinity") || fail("bad literal");
            default: return number(v);
        }
    }

    bool object(Value& v, int depth) {
        if (depth > max_depth_) return fail("nested too deep");
        v.type = Value::Object;
        ++p_;
        space();
        if (p_ != end_ && *p_ == '}') { ++p_; return true; }
        for (;;) {
            space();
            if (p_ == end_ || *p_ != '"') return fail("expected a key");
            std::string key;
            if (!string(key)) return false;
            space();
            if (p_ == end_ || *p_ != ':') return fail("expected ':'");
            ++p_;
            space();
            v.fields.emplace_back(std::move(key), Value());
            if (!value(v.fields.back().second, depth)) return false;
            space();
            if (p_ == end_) return fail("unexpected end");
            if (*p_ == ',') { ++p_; continue; }
            if (*p_ == '}') { ++p_; return true; }
            return fail("expected ',' or '}'");
        }
    }

    bool array(Value& v, int depth) {
        if (depth > max_depth_) return fail("nested too deep");
        v.type = Value::Array;
        ++p_;
        space();
        if (p_ != end_ && *p_ == ']') { ++p_; return true; }
        for (;;) {
            space();
            v.items.emplace_back();
            if (!value(v.items.back(), depth)) return false;
            space();
            if (p_ == end_) return fail("unexpected end");
            if (*p_ == ',') { ++p_; continue; }
            if (*p_ == ']') { ++p_; return true; }
            return fail("expected ',' or ']'");
        }
    }

    static void utf8(std::string& out, uint32_t c) {
        if (c < 0x80) {
            out += (char)c;
        } else if (c < 0x800) {
            out += (char)(0xC0 | (c >> 6));
            out += (char)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            out += (char)(0xE0 | (c >> 12));
            out += (char)(0x80 | ((c >> 6) & 0x3F));
            out += (char)(0x80 | (c & 0x3F));
        } else {
            out += (char)(0xF0 | (c >> 18));
            out += (char)(0x80 | ((c >> 12) & 0x3F));
            out += (char)(0x80 | ((c >> 6) & 0x3F));
            out += (char)(0x80 | (c & 0x3F));
        }
    }

    bool hex4(uint32_t& c) {
        if (end_ - p_ < 4) return fail("short \\u escape");
        c = 0;
        for (int i = 0; i < 4; ++i) {
            char h = *p_++;
            c <<= 4;
            if (h >= '0' && h <= '9') c |= h - '0';
            else if (h >= 'a' && h <= 'f') c |= h - 'a' + 10;
            else if (h >= 'A' && h <= 'F') c |= h - 'A' + 10;
            else return fail("bad \\u escape");
        }
        return true;
    }

    bool string(std::string& out) {
        ++p_;  // the opening quote
        for (;;) {
            if (p_ == end_) return fail("unterminated string");
            unsigned char c = (unsigned char)*p_++;
            if (c == '"') return true;
            if (c < 0x20) return fail("control character in a string");
            if (c != '\\') { out += (char)c; continue; }
            if (p_ == end_) return fail("unterminated string");
            char e = *p_++;
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    uint32_t cp;
                    if (!hex4(cp)) return false;
                    // A high surrogate followed by a low one is one code point (json.dumps writes
                    // characters outside the BMP so); a lone surrogate is kept as it is.
                    if (cp >= 0xD800 && cp < 0xDC00 && end_ - p_ >= 6 && p_[0] == '\\' && p_[1] == 'u') {
                        const char* save = p_;
                        p_ += 2;
                        uint32_t lo;
                        if (hex4(lo) && lo >= 0xDC00 && lo < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        else p_ = save;
                        error_.clear();
                    }
                    utf8(out, cp);
                    break;
                }
                default: return fail("bad escape");
            }
        }
    }

    bool number(Value& v) {
        const char* start = p_;
        bool simple = true;  // no fraction, no exponent
        if (p_ != end_ && *p_ == '-') {
            ++p_;
            if (p_ != end_ && *p_ == 'I') {  // -Infinity
                v.type = Value::Number;
                v.number = -INFINITY;
                return literal("Infinity") || fail("bad literal");
            }
        }
        if (p_ == end_ || *p_ < '0' || *p_ > '9') return fail("unexpected character");
        if (*p_ == '0') ++p_;
        else while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
        if (p_ != end_ && *p_ == '.') {
            simple = false;
            ++p_;
            if (p_ == end_ || *p_ < '0' || *p_ > '9') return fail("bad number");
            while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
        }
        if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
            simple = false;
            ++p_;
            if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
            if (p_ == end_ || *p_ < '0' || *p_ > '9') return fail("bad number");
            while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
        }
        std::string text(start, p_);  // strtod/strtoll need a terminated copy
        v.type = Value::Number;
        v.number = strtod(text.c_str(), nullptr);
        if (simple && text.size() <= 20) {
            errno = 0;
            char* stop = nullptr;
            long long n = strtoll(text.c_str(), &stop, 10);
            if (errno == 0 && *stop == '\0') {
                v.integral = true;
                v.integer = n;
            }
        }
        return true;
    }
};

inline bool parse(const std::string& text, Value& out, std::string& error, int max_depth = 16) {
    out = Value();
    return Reader(text.data(), text.size(), max_depth).parse(out, error);
}

// A JSON text built in order: `begin_object`, then `key` + a value per field, `end_object`.
class Writer {
  public:
    std::string out;

    Writer& begin_object() { sep(); out += '{'; first_ = true; return *this; }
    Writer& end_object() { out += '}'; first_ = false; return *this; }
    Writer& begin_array() { sep(); out += '['; first_ = true; return *this; }
    Writer& end_array() { out += ']'; first_ = false; return *this; }
    Writer& key(const char* k) {
        sep();
        quoted(k, strlen(k));
        out += ':';
        first_ = true;  // the value follows without a comma
        return *this;
    }
    Writer& string(const std::string& s) { sep(); quoted(s.data(), s.size()); return *this; }
    Writer& boolean(bool b) { sep(); out += b ? "true" : "false"; return *this; }
    Writer& null() { sep(); out += "null"; return *this; }
    Writer& integer(int64_t n) {
        sep();
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", (long long)n);
        out += buf;
        return *this;
    }
    // A float's shortest round trip is at most 9 significant digits; JSON has no NaN or infinity.
    Writer& number(double x) {
        sep();
        if (!std::isfinite(x)) { out += "null"; return *this; }
        char buf[40];
        snprintf(buf, sizeof buf, "%.9g", x);
        out += buf;
        return *this;
    }

  private:
    bool first_ = true;
    void sep() {
        if (!first_) out += ',';
        first_ = false;
    }
    void quoted(const char* s, size_t n) {
        static const char hex[] = "0123456789abcdef";
        out += '"';
        for (size_t i = 0; i < n; ++i) {
            unsigned char c = (unsigned char)s[i];
            if (c == '"') out += "\\\"";
            else if (c == '\\') out += "\\\\";
            else if (c == '\n') out += "\\n";
            else if (c < 0x20 || c >= 0x7F) {
                out += "\\u00";
                out += hex[c >> 4];
                out += hex[c & 15];
            } else out += (char)c;
        }
        out += '"';
    }
};

}  // namespace jsn
