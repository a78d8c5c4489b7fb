// RedisStore: a kernel store that many processes and machines share (a fleet's replicas),
// on a Redis server, with every entry authenticated. LayeredStore (cache/layered_store.h)
// puts it behind the disk store. hiredis and libcrypto stay in the .cpp files. Layer: cache.
//
// Note [Remote store]
// ~~~~~~~~~~~~~~~~~~~
// Where: a URL, redis://[user:password@]host[:port][/db] (port 6379, db 0 by default;
// user and password percent-decoded; an IPv6 host in brackets). Without a password in the
// URL, $FUSOR_REDIS_PASSWORD is used, so that it stays out of process listings and config
// files. AUTH is sent with the user when there is one (Redis 6 ACLs), SELECT when db is not 0.
// Names: <namespace><engine version>:<the first 32 hex digits of SHA-256 of the key bytes>,
// namespace "fusor:" by default. The key bytes (KernelKey::serialize(): the spec, backend,
// target and compiler version) are inside the entry too and compared in full.
//
// Trust: native code read from a shared server is code execution for whoever can write to
// that server. So each entry carries an HMAC-SHA256 tag under the operator's key (Note
// [Store key file], Note [Remote store entry]), and an entry whose tag is missing or wrong
// is never loaded: it is counted (StoreStats::rejected), warned about once, and rebuilt
// by the caller. Without a key the store is refused (disabled, with the reason) unless the
// operator chose RemoteTrust::Unauthenticated: then entries are written and read without
// a tag, and anyone who can write to the server can run code in every process that reads it.
//
// Failure is never an outage (Note [Remote store failures]).
//
// Note [Remote store entry]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// A value is one entry of Note [Store entry] with the magic "FUSORRMT" and format
// kEntryFormatVersion, then a trailer: the tag kind u32 (0: none, 1: HMAC-SHA256) and, for
// kind 1, the 32-byte tag of every byte before it (the header, the key, the payload and the
// kind). A store with a key accepts only kind 1 with a valid tag: an unsigned entry and one
// whose tag does not verify are rejected, as are the entry faults of Note [Store entry]. A
// value longer than RemoteStoreOptions::max_entry_bytes is never read past that bound
// (GETRANGE) nor loaded, and a larger put is refused.
//
// Note [Remote store failures]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every operation waits at most the operation timeout (and a connect at most the connect
// timeout): tens of ms by default. A connection that fails (refused, reset, timed out, AUTH
// refused) is dropped and the store goes *down*: every get is a miss and every put a no-op
// at once, without touching the network, until a reconnect is due. Reconnects back off
// exponentially from retry_min_ms to retry_max_ms, and a success resets the backoff. A
// server that answers with an error (OOM under maxmemory, READONLY from a replica, LOADING)
// keeps the connection: a get that fails is a miss, a put that fails is counted in
// write_failures. The store warns once per change of state (down, up again, writes refused,
// writes accepted again), never per operation. One connection is shared by all threads
// under a mutex; a thread that waits for it waits at most one operation's timeout before it
// sees the store down. Warnings are sent once that mutex is released, so a sink may call
// back into the store (stats()).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cache/kernel_store.h"

namespace fusor {

/// A parsed redis:// URL (Note [Remote store]).
struct RedisUrl {
  std::string host;
  int port = 6379;
  int db = 0;
  std::string user, password;
  /// The URL without the password (for messages and listings).
  std::string redacted() const;
};

/// Parses `url`; throws Error(InvalidArgument) naming what is wrong (scheme, host, port,
/// db, a bad percent escape). rediss:// (TLS) is Error(Unsupported).
RedisUrl parse_redis_url(std::string_view url);

/// Whether entries of the remote store must carry a valid tag (Note [Remote store]).
enum class RemoteTrust {
  Authenticated,    ///< entries are signed and checked with the key of Note [Store key file]
  Unauthenticated,  ///< no key: entries are neither signed nor checked (trust the server)
};

/// "authenticated" / "unauthenticated".
std::string_view remote_trust_name(RemoteTrust trust);
/// Parses a trust name; throws Error(InvalidArgument) listing the choices.
RemoteTrust parse_remote_trust(std::string_view name);

/// How a remote store is reached and trusted (EngineOptions::remote).
struct RemoteStoreOptions {
  std::string key_namespace = "fusor:";  ///< prefix of every name the store writes
  RemoteTrust trust = RemoteTrust::Authenticated;
  std::string key_file;                  ///< the HMAC key; empty: $FUSOR_STORE_KEY_FILE
  int connect_timeout_ms = 50;           ///< the most a connect waits
  int timeout_ms = 50;                   ///< the most one operation waits
  uint64_t max_entry_bytes = uint64_t(64) << 20;  ///< larger values are refused, never read
  int retry_min_ms = 100;                ///< the first reconnect's delay after a failure
  int retry_max_ms = 5000;               ///< the backoff's cap
};

/// The kernel store on a Redis server (Note [Remote store]). Thread-safe.
class RedisStore final : public KernelStore {
 public:
  /// Version of the value layout (Note [Remote store entry]).
  static constexpr uint32_t kEntryFormatVersion = 1;

  struct Options {
    std::string url;                 ///< redis://[user:password@]host[:port][/db]
    RemoteStoreOptions remote;
    std::string engine_version;      ///< empty: kFusorVersion
    /// Receives each warning (a full sentence). Unset: stderr.
    std::function<void(const std::string&)> warn;
  };

  /// A store for `options`. Throws Error(InvalidArgument) for a malformed URL or options.
  /// Does not connect (the first operation does). A key that cannot be used, or no key with
  /// RemoteTrust::Authenticated, gives a disabled store, with the reason and a warning.
  static std::unique_ptr<RedisStore> open(Options options);
  ~RedisStore() override;

  bool enabled() const;
  /// Why the store is disabled, naming the fix ("" when enabled).
  std::string reason_disabled() const;
  /// The URL without its password.
  std::string location() const;
  /// The prefix of this engine version's names: <namespace><engine version>:
  std::string name_prefix() const;

  std::optional<std::vector<uint8_t>> get(std::string_view key) override;
  bool put(std::string_view key, std::span<const uint8_t> payload) override;
  /// Counters; entries and bytes are not counted here (that takes a scan: list()).
  StoreStats stats() const override;

  /// One value under the namespace.
  struct Listed {
    std::string name;
    uint64_t bytes = 0;
  };
  /// Every value under the namespace, every engine version's (SCAN, then STRLEN). Throws
  /// Error(Io) when the server cannot be reached or refuses.
  std::vector<Listed> list();
  /// What one value under the namespace is: "valid", "stale", "foreign", "truncated",
  /// "corrupt", "unsigned", "forged" or "oversized" (Note [Remote store entry]); "missing"
  /// when it is gone. Throws Error(Io) like list().
  std::string check(const std::string& name);
  /// Deletes the named values; returns how many existed. Throws Error(Io) like list().
  uint64_t remove(const std::vector<std::string>& names);

 private:
  struct State;
  explicit RedisStore(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace fusor
