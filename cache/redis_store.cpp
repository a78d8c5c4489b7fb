#include "cache/redis_store.h"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>

#include "cache/store_entry.h"
#include "cache/store_key.h"
#include "cache/version.h"
#include "ir/error.h"

namespace fusor {

namespace {

constexpr EntryFormat kFormat{"FUSORRMT", RedisStore::kEntryFormatVersion};  // Note [Remote store entry]
constexpr uint32_t kTagNone = 0, kTagHmacSha256 = 1;
constexpr size_t kNameHexDigits = 32;

using Clock = std::chrono::steady_clock;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view s, std::string_view what, std::string_view url) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    const int hi = i + 2 < s.size() ? hex_value(s[i + 1]) : -1, lo = i + 2 < s.size() ? hex_value(s[i + 2]) : -1;
    FUSOR_CHECK(hi >= 0 && lo >= 0, InvalidArgument, "remote store URL ", url, ": a bad percent escape in the ", what,
                " (write %XX with two hex digits)");
    out.push_back(char(hi * 16 + lo));
    i += 2;
  }
  return out;
}

// A URL with its password shown as ***, for errors thrown while parsing.
std::string redact(std::string_view url) {
  const size_t scheme = url.find("://"), at = url.rfind('@');
  if (scheme == std::string_view::npos || at == std::string_view::npos || at < scheme) return std::string(url);
  const size_t colon = url.substr(0, at).find(':', scheme + 3);
  if (colon == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, colon + 1)) + "***" + std::string(url.substr(at));
}

int parse_int(std::string_view s, int lo, int hi, std::string_view what, const std::string& url) {
  FUSOR_CHECK(!s.empty() && s.size() <= 9 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }),
              InvalidArgument, "remote store URL ", url, ": the ", what, " '", s, "' is not a number");
  const int v = std::atoi(std::string(s).c_str());
  FUSOR_CHECK(v >= lo && v <= hi, InvalidArgument, "remote store URL ", url, ": the ", what, " ", v,
              " is not in [", lo, ", ", hi, "]");
  return v;
}

// Blocks SIGPIPE on this thread while hiredis writes to a socket whose peer may be gone, and
// swallows the signal such a write raised: a Redis server killed mid-run must be a failed
// operation, never a process killed by SIGPIPE. (hiredis writes with write(2), not
// send(MSG_NOSIGNAL), and a library must not change the process's signal dispositions.)
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeGuard() {
    if (!was_pending_) {
      sigset_t pending;
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        const struct timespec zero{0, 0};
        while (sigtimedwait(&pipe_, nullptr, &zero) == -1 && errno == EINTR) {
        }
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t pipe_, old_;
  bool was_pending_ = false;
};

struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

std::string reply_error(const redisReply& r) { return std::string(r.str, r.len); }

// Escapes glob characters so that SCAN MATCH takes the namespace literally.
std::string glob_literal(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string RedisUrl::redacted() const {
  std::string s = "redis://";
  if (!user.empty() || !password.empty()) s += user + (password.empty() ? "" : ":***") + "@";
  s += host.find(':') != std::string::npos ? "[" + host + "]" : host;
  s += ":" + std::to_string(port) + "/" + std::to_string(db);
  return s;
}

RedisUrl parse_redis_url(std::string_view url) {
  const std::string shown = redact(url);
  FUSOR_CHECK(url.substr(0, 9) != "rediss://", Unsupported, "remote store URL ", shown,
              ": TLS (rediss://) is not supported by this build; reach the server over a trusted network or a "
              "TLS tunnel (entries are authenticated either way)");
  FUSOR_CHECK(url.substr(0, 8) == "redis://", InvalidArgument, "remote store URL ", shown,
              ": expected redis://[user:password@]host[:port][/db]");
  std::string_view rest = url.substr(8);
  RedisUrl u;
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    const std::string_view db = rest.substr(slash + 1);
    if (!db.empty()) u.db = parse_int(db, 0, 1 << 20, "db", shown);
  }
  if (const size_t at = authority.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    const size_t colon = userinfo.find(':');
    u.user = percent_decode(userinfo.substr(0, colon), "user", shown);
    if (colon != std::string_view::npos) u.password = percent_decode(userinfo.substr(colon + 1), "password", shown);
  }
  std::string_view port;
  bool has_port = false;
  if (!authority.empty() && authority[0] == '[') {
    const size_t close = authority.find(']');
    FUSOR_CHECK(close != std::string_view::npos, InvalidArgument, "remote store URL ", shown,
                ": an IPv6 host needs its closing ]");
    u.host = std::string(authority.substr(1, close - 1));
    const std::string_view after = authority.substr(close + 1);
    FUSOR_CHECK(after.empty() || after[0] == ':', InvalidArgument, "remote store URL ", shown,
                ": expected :port after the IPv6 host");
    has_port = !after.empty();
    if (has_port) port = after.substr(1);
  } else {
    const size_t colon = authority.find(':');
    u.host = std::string(authority.substr(0, colon));
    has_port = colon != std::string_view::npos;
    if (has_port) port = authority.substr(colon + 1);
  }
  FUSOR_CHECK(!u.host.empty(), InvalidArgument, "remote store URL ", shown, ": no host");
  if (has_port) u.port = parse_int(port, 1, 65535, "port", shown);
  return u;
}

std::string_view remote_trust_name(RemoteTrust trust) {
  return trust == RemoteTrust::Authenticated ? "authenticated" : "unauthenticated";
}

RemoteTrust parse_remote_trust(std::string_view name) {
  if (name == "authenticated") return RemoteTrust::Authenticated;
  if (name == "unauthenticated") return RemoteTrust::Unauthenticated;
  fail(ErrorCode::InvalidArgument, "remote store trust '", name, "' is not one of: authenticated, unauthenticated");
}

struct RedisStore::State {
  Options options;
  RedisUrl url;
  std::string engine_version, prefix, location;
  std::optional<StoreKey> key;  // set unless trust is Unauthenticated
  bool enabled = false;
  std::string reason;

  // The connection and its state; mu is held for a whole operation.
  std::mutex mu;
  redisContext* ctx = nullptr;
  Clock::time_point retry_at{};
  int backoff_ms = 0;
  std::string link_down;      // why the server cannot be reached ("" when up or never tried)
  std::string write_refused;  // why the server refuses writes ("" when it takes them)

  std::mutex warned_mu;
  std::set<std::string> warned;
  std::vector<std::string> pending;  // warnings given under mu, sent once it is released
  StoreCounters counts;

  ~State() {
    if (ctx) redisFree(ctx);
  }

  // One operation on the connection: holds mu, and once it is released sends the warnings
  // given meanwhile (a sink that throws has its exception dropped here: no store operation
  // throws for a warning).
  class Operation {
   public:
    explicit Operation(State& s) : s_(s), lk_(s.mu) {}
    ~Operation() {
      std::vector<std::string> out;
      out.swap(s_.pending);
      lk_.unlock();
      for (const std::string& m : out) try {
          s_.warn(m);
        } catch (...) {
        }
    }
    Operation(const Operation&) = delete;
    Operation& operator=(const Operation&) = delete;

   private:
    State& s_;
    std::unique_lock<std::mutex> lk_;
  };

  void warn(const std::string& message) const {
    if (options.warn)
      options.warn(message);
    else
      std::fprintf(stderr, "fusor: warning: %s\n", message.c_str());
  }
  void warn_once(const std::string& what, const std::string& message) {
    {
      std::lock_guard<std::mutex> lk(warned_mu);
      if (!warned.insert(what).second) return;
    }
    warn(message);
  }

  // A warning given while mu is held: sent when the operation releases it (Operation), so
  // that a sink calling back into the store (stats()) cannot deadlock on mu.
  void later(std::string message) { pending.push_back(std::move(message)); }
  void later_once(const std::string& what, std::string message) {
    std::lock_guard<std::mutex> lk(warned_mu);
    if (warned.insert(what).second) pending.push_back(std::move(message));
  }

  std::string name_of(std::string_view key_bytes) const { return prefix + sha256_hex(key_bytes, kNameHexDigits); }

  // The connection went away: drop it and back off (mu held).
  void go_down(const std::string& why) {
    if (ctx) redisFree(ctx);
    ctx = nullptr;
    retry_at = Clock::now() + std::chrono::milliseconds(backoff_ms);
    backoff_ms = std::min(std::max(backoff_ms * 2, options.remote.retry_min_ms), options.remote.retry_max_ms);
    if (link_down.empty())
      later("the remote kernel store " + location + " cannot be reached (" + why +
           "): going on with the local store and compiling what it lacks; reconnecting with backoff");
    link_down = why;
  }

  // A connection, made now if none is open and a reconnect is due (mu held); null when the
  // store is down. `now_anyway` ignores the backoff (the command-line tools).
  redisContext* connection(bool now_anyway = false) {
    if (ctx) return ctx;
    if (!now_anyway && Clock::now() < retry_at) return nullptr;
    const auto tv = [](int ms) { return timeval{ms / 1000, (ms % 1000) * 1000}; };
    redisContext* c = redisConnectWithTimeout(url.host.c_str(), url.port, tv(options.remote.connect_timeout_ms));
    if (!c || c->err) {
      const std::string why = c ? std::string(c->errstr) : "out of memory";
      if (c) redisFree(c);
      go_down(why);
      return nullptr;
    }
    ctx = c;
    redisSetTimeout(ctx, tv(options.remote.timeout_ms));
    std::vector<std::string> auth{"AUTH"};
    if (!url.user.empty()) auth.push_back(url.user);
    auth.push_back(url.password);
    if (!url.password.empty() && !handshake(auth, "authentication")) return nullptr;
    if (url.db != 0 && !handshake({"SELECT", std::to_string(url.db)}, "SELECT " + std::to_string(url.db))) return nullptr;
    backoff_ms = options.remote.retry_min_ms;
    if (!link_down.empty()) later("the remote kernel store " + location + " is reachable again");
    link_down.clear();
    return ctx;
  }

  bool handshake(const std::vector<std::string>& args, const std::string& what) {
    Reply r = send(args);
    if (!ctx) return false;  // the connection failed (and went down)
    if (!r || r->type == REDIS_REPLY_ERROR) {
      go_down(what + " refused: " + (r ? reply_error(*r) : "no reply"));
      return false;
    }
    return true;
  }

  // One command on the open connection (mu held). Null when the connection failed: it is
  // dropped and the store goes down.
  Reply send(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const std::string& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    Reply r;
    int err = 0;
    {
      SigpipeGuard guard;
      r.reset(static_cast<redisReply*>(redisCommandArgv(ctx, int(argv.size()), argv.data(), lens.data())));
      err = errno;
    }
    if (!r) {
      go_down(ctx->err == REDIS_ERR_IO && (err == EAGAIN || err == EWOULDBLOCK)
                  ? "no reply within " + std::to_string(options.remote.timeout_ms) + " ms"
                  : std::string(ctx->errstr));
      return nullptr;
    }
    // A server that lost our AUTH (restarted with another configuration) needs a new
    // connection, not a retry on this one.
    if (r->type == REDIS_REPLY_ERROR && reply_error(*r).rfind("NOAUTH", 0) == 0) {
      go_down("the server asks for authentication: " + reply_error(*r));
      return nullptr;
    }
    return r;
  }

  // Runs one command, connecting first when due (mu held); null when the store is down.
  Reply command(const std::vector<std::string>& args, bool now_anyway = false) {
    if (!connection(now_anyway)) return nullptr;
    return send(args);
  }

  // For the command-line tools: the reply, or Error(Io) naming why there is none.
  Reply command_or_throw(const std::vector<std::string>& args) {
    Reply r = command(args, true);
    FUSOR_CHECK(r != nullptr, Io, "the remote kernel store ", location, " cannot be reached: ", link_down);
    FUSOR_CHECK(r->type != REDIS_REPLY_ERROR, Io, "the remote kernel store ", location, " refused ", args[0], ": ",
                reply_error(*r));
    return r;
  }

  // What a value is (Note [Remote store entry]) and, when valid, its entry.
  std::string classify(std::span<const uint8_t> v, DecodedEntry* out, std::string* detail) const {
    if (v.size() > options.remote.max_entry_bytes) {
      *detail = "more than " + std::to_string(options.remote.max_entry_bytes) + " bytes";
      return "oversized";
    }
    DecodedEntry e = decode_entry(v, kFormat, engine_version);
    if (e.fault != EntryFault::None) {
      *detail = e.detail;
      return std::string(entry_fault_name(e.fault));
    }
    if (v.size() - e.end < 4) {
      *detail = "ends before its tag";
      return "truncated";
    }
    const uint32_t kind = get_le32(v.data() + e.end);
    const size_t tag_at = e.end + 4;
    const size_t tag_len = kind == kTagHmacSha256 ? StoreKey::kTagBytes : 0;
    if (kind != kTagNone && kind != kTagHmacSha256) {
      *detail = "tag kind " + std::to_string(kind);
      return "corrupt";
    }
    if (v.size() - tag_at != tag_len) {
      *detail = v.size() - tag_at < tag_len ? "ends in its tag" : "bytes after its tag";
      return v.size() - tag_at < tag_len ? "truncated" : "corrupt";
    }
    if (key) {
      if (kind != kTagHmacSha256) {
        *detail = "it carries no tag, and this store checks every entry";
        return "unsigned";
      }
      if (!key->verify(v.first(tag_at), v.subspan(tag_at))) {
        *detail = "its HMAC-SHA256 tag does not verify under this store's key";
        return "forged";
      }
    }
    *out = e;
    return "valid";
  }

  // The value of `name`, read no further than the size bound (+1 byte, to see that a value
  // passed it); nullopt when the store is down or the server refused (mu held).
  std::optional<std::string> read_value(const std::string& name, bool now_anyway) {
    Reply r = command({"GETRANGE", name, "0", std::to_string(options.remote.max_entry_bytes)}, now_anyway);
    if (!r) return std::nullopt;
    if (r->type != REDIS_REPLY_STRING) {
      if (r->type == REDIS_REPLY_ERROR)
        later_once("get:" + reply_error(*r).substr(0, reply_error(*r).find(' ')),
                  "the remote kernel store " + location + " refused a read (" + reply_error(*r) +
                      "): those kernels are compiled here");
      return std::nullopt;
    }
    return std::string(r->str, r->len);
  }
};

RedisStore::RedisStore(std::unique_ptr<State> state) : state_(std::move(state)) {}
RedisStore::~RedisStore() = default;

std::unique_ptr<RedisStore> RedisStore::open(Options options) {
  auto s = std::make_unique<State>();
  s->url = parse_redis_url(options.url);
  const RemoteStoreOptions& r = options.remote;
  FUSOR_CHECK(r.connect_timeout_ms > 0 && r.timeout_ms > 0, InvalidArgument,
              "remote store timeouts must be positive (connect ", r.connect_timeout_ms, " ms, operation ",
              r.timeout_ms, " ms)");
  FUSOR_CHECK(r.retry_min_ms > 0 && r.retry_max_ms >= r.retry_min_ms, InvalidArgument,
              "remote store backoff must be positive and retry_max_ms >= retry_min_ms (", r.retry_min_ms, ", ",
              r.retry_max_ms, ")");
  FUSOR_CHECK(r.max_entry_bytes >= 1024, InvalidArgument, "remote store max_entry_bytes ", r.max_entry_bytes,
              " is too small for any kernel");
  if (s->url.password.empty())
    if (const char* p = std::getenv("FUSOR_REDIS_PASSWORD"); p && *p) s->url.password = p;
  s->engine_version = options.engine_version.empty() ? std::string(kFusorVersion) : options.engine_version;
  s->prefix = r.key_namespace + s->engine_version + ":";
  s->location = s->url.redacted();
  s->backoff_ms = r.retry_min_ms;
  s->options = std::move(options);
  if (s->options.remote.trust == RemoteTrust::Authenticated) {
    std::string path = s->options.remote.key_file;
    if (path.empty())
      if (const char* e = std::getenv("FUSOR_STORE_KEY_FILE")) path = e;
    std::string why;
    s->key = StoreKey::load(path, &why);
    if (!s->key) {
      s->reason = "the remote kernel store " + s->location + " is not used: " + why +
                  ". Entries are native code, so each must be authenticated: give a private key file "
                  "(FUSOR_STORE_KEY_FILE), or choose trust \"unauthenticated\" if every writer of the server is trusted";
      s->warn(s->reason);
    }
  }
  s->enabled = s->reason.empty();
  return std::unique_ptr<RedisStore>(new RedisStore(std::move(s)));
}

bool RedisStore::enabled() const { return state_->enabled; }
std::string RedisStore::reason_disabled() const { return state_->reason; }
std::string RedisStore::location() const { return state_->location; }
std::string RedisStore::name_prefix() const { return state_->prefix; }

std::optional<std::vector<uint8_t>> RedisStore::get(std::string_view key_bytes) {
  if (!enabled()) return std::nullopt;
  State& s = *state_;
  s.counts.load();
  const std::string name = s.name_of(key_bytes);
  auto miss = [&]() -> std::optional<std::vector<uint8_t>> {
    s.counts.miss();
    return std::nullopt;
  };
  std::optional<std::string> value;
  {
    State::Operation op(s);
    value = s.read_value(name, false);
  }
  if (!value) {
    s.counts.unavailable();
    return miss();
  }
  if (value->empty()) return miss();  // GETRANGE of a missing name
  const auto bytes = std::span(reinterpret_cast<const uint8_t*>(value->data()), value->size());
  DecodedEntry e;
  std::string detail;
  const std::string kind = s.classify(bytes, &e, &detail);
  if (kind != "valid") {
    const bool untrusted = kind == "unsigned" || kind == "forged";
    untrusted ? s.counts.rejected() : s.counts.corrupt();
    s.warn_once("get:" + kind, "ignoring " + std::string(kind == "oversized" || kind == "unsigned" ? "an " : "a ") + kind +
                                   " entry in the remote kernel store " + s.location + " (" + name + ": " + detail +
                                   "); it is never loaded, and the kernel is compiled and stored again" +
                                   (untrusted ? " (someone without the key wrote to the server, or its key differs)"
                                              : ""));
    return miss();
  }
  if (e.key != key_bytes) return miss();  // another key under the same name: not ours
  s.counts.hit(e.payload.size());
  return std::vector<uint8_t>(e.payload.begin(), e.payload.end());
}

bool RedisStore::put(std::string_view key_bytes, std::span<const uint8_t> payload) {
  if (!enabled()) return false;
  State& s = *state_;
  std::string value = encode_entry_header(kFormat, s.engine_version, key_bytes, payload);
  value.append(reinterpret_cast<const char*>(payload.data()), payload.size());
  put_le32(value, s.key ? kTagHmacSha256 : kTagNone);
  if (s.key) {
    const StoreKey::Tag tag = s.key->tag(std::span(reinterpret_cast<const uint8_t*>(value.data()), value.size()));
    value.append(reinterpret_cast<const char*>(tag.data()), tag.size());
  }
  if (value.size() > s.options.remote.max_entry_bytes) {
    s.counts.write_failed();
    s.warn_once("put:too-big", "not saving a " + std::to_string(value.size()) + "-byte entry to the remote kernel store " +
                                   s.location + ": entries are at most " +
                                   std::to_string(s.options.remote.max_entry_bytes) + " bytes (max_entry_bytes)");
    return false;
  }
  State::Operation op(s);
  Reply r = s.command({"SET", s.name_of(key_bytes), std::move(value)});
  if (!r) {
    s.counts.unavailable();
    return false;
  }
  if (r->type == REDIS_REPLY_ERROR) {
    s.counts.write_failed();
    const std::string err = reply_error(*r);
    if (s.write_refused.empty())
      s.later("the remote kernel store " + s.location + " refuses writes (" + err +
             "): kernels compiled here are kept in the local store only");
    s.write_refused = err;
    return false;
  }
  if (!s.write_refused.empty()) s.later("the remote kernel store " + s.location + " accepts writes again");
  s.write_refused.clear();
  s.counts.wrote(payload.size());
  return true;
}

StoreStats RedisStore::stats() const {
  State& s = *state_;
  StoreStats st;
  s.counts.fill(st);
  st.location = s.location;
  std::lock_guard<std::mutex> lk(s.mu);
  if (!s.enabled)
    st.state = "disabled: " + s.reason;
  else if (!s.link_down.empty())
    st.state = "unreachable: " + s.link_down;
  else if (!s.write_refused.empty())
    st.state = "refusing writes: " + s.write_refused;
  return st;
}

std::vector<RedisStore::Listed> RedisStore::list() {
  State& s = *state_;
  State::Operation op(s);
  std::vector<Listed> out;
  const std::string match = glob_literal(s.options.remote.key_namespace) + "*";
  std::string cursor = "0";
  do {
    Reply r = s.command_or_throw({"SCAN", cursor, "MATCH", match, "COUNT", "1000"});
    FUSOR_CHECK(r->type == REDIS_REPLY_ARRAY && r->elements == 2, Io, "the remote kernel store ", s.location,
                " answered SCAN with something else than a cursor and names");
    cursor.assign(r->element[0]->str, r->element[0]->len);
    const redisReply* names = r->element[1];
    for (size_t i = 0; i < names->elements; ++i)
      out.push_back({std::string(names->element[i]->str, names->element[i]->len), 0});
  } while (cursor != "0");
  for (Listed& l : out) {
    Reply r = s.command({"STRLEN", l.name}, true);  // a value of another type (WRONGTYPE): 0 bytes
    FUSOR_CHECK(r != nullptr, Io, "the remote kernel store ", s.location, " cannot be reached: ", s.link_down);
    l.bytes = r->type == REDIS_REPLY_INTEGER ? uint64_t(std::max<long long>(r->integer, 0)) : 0;
  }
  std::sort(out.begin(), out.end(), [](const Listed& a, const Listed& b) { return a.name < b.name; });
  return out;
}

std::string RedisStore::check(const std::string& name) {
  State& s = *state_;
  std::optional<std::string> value;
  {
    State::Operation op(s);
    Reply r = s.command({"GETRANGE", name, "0", std::to_string(s.options.remote.max_entry_bytes)}, true);
    FUSOR_CHECK(r != nullptr, Io, "the remote kernel store ", s.location, " cannot be reached: ", s.link_down);
    if (r->type == REDIS_REPLY_STRING) value = std::string(r->str, r->len);
  }
  if (!value) return "foreign";  // not a string value (WRONGTYPE)
  if (value->empty()) return "missing";
  DecodedEntry e;
  std::string detail;
  std::string kind = s.classify(std::span(reinterpret_cast<const uint8_t*>(value->data()), value->size()), &e, &detail);
  if (kind == "valid" && name != s.name_of(e.key)) return "misnamed";
  return kind;
}

uint64_t RedisStore::remove(const std::vector<std::string>& names) {
  State& s = *state_;
  State::Operation op(s);
  uint64_t removed = 0;
  for (size_t i = 0; i < names.size(); i += 256) {
    std::vector<std::string> args{"DEL"};
    args.insert(args.end(), names.begin() + ptrdiff_t(i), names.begin() + ptrdiff_t(std::min(names.size(), i + 256)));
    Reply r = s.command_or_throw(args);
    if (r->type == REDIS_REPLY_INTEGER) removed += uint64_t(r->integer);
  }
  return removed;
}

}  // namespace fusor
