// Tests of RedisStore (cache/redis_store.h) against a real redis-server of each test's own
// (tests/support/redis_server.h): round trips between stores, entries that are tampered,
// truncated, foreign, unsigned or signed with another key, a server killed, restarted,
// stalled, refusing writes or evicting, threads racing on the same names, and the size
// bound. Skipped with the reason where redis-server is not installed (not in CI).
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cache/redis_store.h"
#include "cache/store_key.h"
#include "ir/error.h"
#include "tests/support/disk_store_util.h"
#include "tests/support/redis_server.h"
#include "tests/support/temp_dir.h"

using namespace fusor;
using fusor::test::RedisServer;
using fusor::test::TempDir;

namespace {

// A store on `server`, signed with the key `key_bytes` (written to a private file in
// `dir`), or unauthenticated when key_bytes is empty.
struct Client {
  std::shared_ptr<fusor::test::Warnings> warnings = std::make_shared<fusor::test::Warnings>();
  std::unique_ptr<RedisStore> store;
};

Client client(const RedisServer& server, const TempDir& dir, const std::string& key_bytes,
              std::string version = "test-version", RemoteStoreOptions remote = {}) {
  Client c;
  RedisStore::Options o;
  o.url = server.url();
  o.engine_version = std::move(version);
  o.remote = remote;
  o.remote.retry_min_ms = o.remote.retry_max_ms = 20;  // the tests wait for reconnects
  if (key_bytes.empty()) {
    o.remote.trust = RemoteTrust::Unauthenticated;
  } else {
    o.remote.key_file = dir.file("key-" + std::to_string(std::hash<std::string>{}(key_bytes)));
    std::ofstream(o.remote.key_file, std::ios::binary) << key_bytes;
    ::chmod(o.remote.key_file.c_str(), 0600);
  }
  o.warn = c.warnings->sink();
  c.store = RedisStore::open(o);
  return c;
}

const std::string kKey(32, 'K');

std::span<const uint8_t> bytes_of(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

std::string text(const std::optional<std::vector<uint8_t>>& v) { return v ? std::string(v->begin(), v->end()) : "<miss>"; }

// The single name the store wrote (there is one entry in these tests' servers).
std::string only_name(RedisStore& s) {
  std::vector<RedisStore::Listed> l = s.list();
  REQUIRE(l.size() == 1);
  return l[0].name;
}

}  // namespace

TEST_SUITE("cache/redis_store") {
  TEST_CASE("two stores share entries through one server, signed and checked") {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir("redis");
    Client a = client(*server, dir, kKey), b = client(*server, dir, kKey);
    REQUIRE(a.store->enabled());
    CHECK(!a.store->get("kernel-1"));
    const std::string payload(100000, 'p');
    REQUIRE(a.store->put("kernel-1", bytes_of(payload)));
    CHECK(text(b.store->get("kernel-1")) == payload);
    CHECK(!b.store->get("kernel-2"));
    const StoreStats st = b.store->stats();
    CHECK(st.loads == 2);
    CHECK(st.hits == 1);
    CHECK(st.misses == 1);
    CHECK(st.bytes_read == payload.size());
    CHECK(st.state.empty());
    CHECK(st.location.find(RedisServer::kPassword) == std::string::npos);
    // The name carries the namespace and the engine version; the key bytes do not show.
    const std::string name = only_name(*a.store);
    CHECK(name.rfind("fusor:test-version:", 0) == 0);
    CHECK(name.find("kernel-1") == std::string::npos);
    CHECK(a.store->check(name) == "valid");
    // Another engine version does not read it.
    Client other = client(*server, dir, kKey, "other-version");
    CHECK(!other.store->get("kernel-1"));
  }

  TEST_CASE("the password may come from FUSOR_REDIS_PASSWORD") {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    RedisStore::Options o;
    o.url = server->url_without_password();
    o.remote.trust = RemoteTrust::Unauthenticated;
    o.warn = [](const std::string&) {};
    ::setenv("FUSOR_REDIS_PASSWORD", RedisServer::kPassword, 1);
    std::unique_ptr<RedisStore> s = RedisStore::open(o);
    ::unsetenv("FUSOR_REDIS_PASSWORD");
    CHECK(s->put("k", bytes_of(std::string("v"))));
    CHECK(text(s->get("k")) == "v");
    // A wrong password: the store is down (not an error), reads miss, the state says why.
    o.url = "redis://:wrong@127.0.0.1:" + std::to_string(server->port());
    std::unique_ptr<RedisStore> wrong = RedisStore::open(o);
    CHECK(!wrong->get("k"));
    CHECK(wrong->stats().state.find("authentication refused") != std::string::npos);
    CHECK(wrong->stats().unavailable == 1);
  }

  TEST_CASE("tampered truncated foreign-version and unsigned entries are rejected and rebuilt") {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir("redis");
    Client c = client(*server, dir, kKey);
    const std::string payload = "genuine kernel object";
    REQUIRE(c.store->put("k", bytes_of(payload)));
    const std::string name = only_name(*c.store);
    const std::string good = server->command({"GET", name});
    REQUIRE(good.size() > payload.size() + 32);
    auto plant = [&](const std::string& value) { REQUIRE(server->command({"SET", name, value}) == "OK"); };

    // A payload byte flipped: the checksum fails.
    std::string flipped = good;
    flipped[good.find(payload) + 3] ^= 1;
    plant(flipped);
    CHECK(!c.store->get("k"));
    CHECK(c.store->check(name) == "corrupt");
    // Cut short, at several places.
    for (size_t cut : {size_t(3), size_t(30), good.size() - 40, good.size() - 1}) {
      plant(good.substr(0, cut));
      CHECK(!c.store->get("k"));
    }
    // Written by another fusor version (its bytes under this version's name).
    Client old = client(*server, dir, kKey, "older-version");
    REQUIRE(old.store->put("k", bytes_of(payload)));
    std::string old_value;
    for (const RedisStore::Listed& l : c.store->list())
      if (l.name.find("older-version") != std::string::npos) old_value = server->command({"GET", l.name});
    plant(old_value);
    CHECK(!c.store->get("k"));
    CHECK(c.store->check(name) == "stale");
    // Unsigned: a writer without a key.
    Client unsigned_writer = client(*server, dir, "");
    REQUIRE(unsigned_writer.store->put("k", bytes_of(std::string("planted code"))));
    CHECK(!c.store->get("k"));
    CHECK(c.store->check(name) == "unsigned");
    // The tag replaced with a tag under another key over the same bytes: forged.
    std::string forged = good;
    const StoreKey::Tag t = StoreKey::from_bytes(std::string(32, 'X'))
                                .tag(bytes_of(good.substr(0, good.size() - StoreKey::kTagBytes)));
    forged.replace(good.size() - StoreKey::kTagBytes, StoreKey::kTagBytes, reinterpret_cast<const char*>(t.data()),
                   t.size());
    plant(forged);
    CHECK(!c.store->get("k"));
    CHECK(c.store->check(name) == "forged");

    const StoreStats st = c.store->stats();
    CHECK(st.hits == 0);
    CHECK(st.corrupt == 6);   // flipped, four cuts, stale
    CHECK(st.rejected == 2);  // unsigned, forged
    // Warned once per kind, not per read.
    CHECK(c.warnings->count("ignoring a corrupt entry") == 1);
    CHECK(c.warnings->count("unsigned entry") == 1);
    CHECK(c.warnings->count("forged entry") == 1);
    // Rebuilt: the next put replaces it, and it reads back.
    REQUIRE(c.store->put("k", bytes_of(payload)));
    CHECK(text(c.store->get("k")) == payload);
  }

  TEST_CASE("a store with another key rejects every entry, and unauthenticated trust reads signed ones") {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir("redis");
    Client writer = client(*server, dir, kKey);
    REQUIRE(writer.store->put("k", bytes_of(std::string("kernel"))));
    Client wrong = client(*server, dir, std::string(32, 'W'));
    CHECK(!wrong.store->get("k"));
    CHECK(!wrong.store->get("k"));
    CHECK(wrong.store->stats().rejected == 2);
    CHECK(wrong.warnings->count("forged") == 1);
    Client trusting = client(*server, dir, "");
    CHECK(text(trusting.store->get("k")) == "kernel");
  }

  TEST_CASE("values past the size bound are refused, never loaded") {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir("redis");
    RemoteStoreOptions r;
    r.max_entry_bytes = 4096;
    Client c = client(*server, dir, kKey, "test-version", r);
    CHECK(!c.store->put("big", bytes_of(std::string(8192, 'b'))));
    CHECK(c.store->stats().write_failures == 1);
    CHECK(c.warnings->count("at most 4096 bytes") == 1);
    REQUIRE(c.store->put("small", bytes_of(std::string(100, 's'))));
    const std::string name = only_name(*c.store);
    REQUIRE(server->command({"SET", name, std::string(1 << 20, 'x')}) == "OK");
    CHECK(!c.store->get("small"));
    CHECK(c.store->check(name) == "oversized");
    CHECK(c.warnings->count("oversized") == 1);
  }

  TEST_CASE("a killed server is a miss within the timeout, and a restarted one is used again") {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir("redis");
    Client c = client(*server, dir, kKey);
    REQUIRE(c.store->put("k", bytes_of(std::string("kernel"))));
    server->kill();
    CHECK(!c.store->get("k"));
    CHECK(!c.store->put("k2", bytes_of(std::string("v"))));
    for (int i = 0; i < 20; ++i) CHECK(!c.store->get("k"));
    StoreStats st = c.store->stats();
    CHECK(st.unavailable == 22);
    CHECK(st.state.rfind("unreachable", 0) == 0);
    CHECK(c.warnings->count("cannot be reached") == 1);  // once per change of state
    REQUIRE(server->restart());
    // Reconnects back off (20 ms here): within a second the store is back.
    bool back = false;
    for (int i = 0; i < 100 && !back; ++i) {
      back = c.store->put("k", bytes_of(std::string("kernel")));
      if (!back) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(back);
    CHECK(text(c.store->get("k")) == "kernel");
    CHECK(c.store->stats().state.empty());
    CHECK(c.warnings->count("reachable again") == 1);
  }

  TEST_CASE("a stalled server costs one timeout, not the stall") {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir("redis");
    Client c = client(*server, dir, kKey);
    REQUIRE(c.store->put("k", bytes_of(std::string("kernel"))));
    // DEBUG SLEEP blocks the server for 3 s; our operations time out at 50 ms.
    std::thread sleeper([&] { server->command({"DEBUG", "SLEEP", "3"}); });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> readers;
    for (int i = 0; i < 4; ++i) readers.emplace_back([&] { CHECK(!c.store->get("k")); });
    for (std::thread& t : readers) t.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // Not a speed check: the four reads must return long before the stall ends (2.8 s away).
    CHECK_MESSAGE(s < 1.5, "reads took " << s << " s against a 3 s stall");
    CHECK(c.store->stats().state.find("no reply within 50 ms") != std::string::npos);
    sleeper.join();
  }

  TEST_CASE("a server that refuses writes (maxmemory, noeviction) keeps reads, and writes come back") {
    auto server = RedisServer::start_or_skip({"--maxmemory", "2mb", "--maxmemory-policy", "noeviction"});
    if (!server) return;
    TempDir dir("redis");
    Client c = client(*server, dir, kKey);
    const std::string chunk(256 << 10, 'c');
    int stored = 0;
    for (int i = 0; i < 40; ++i) stored += c.store->put("k" + std::to_string(i), bytes_of(chunk));
    CHECK(stored > 0);
    CHECK(stored < 40);
    StoreStats st = c.store->stats();
    CHECK(st.write_failures == uint64_t(40 - stored));
    CHECK(st.state.find("OOM") != std::string::npos);
    CHECK(c.warnings->count("refuses writes") == 1);
    CHECK(text(c.store->get("k0")) == chunk);  // reads go on
    REQUIRE(server->command({"FLUSHALL"}) == "OK");
    CHECK(c.store->put("again", bytes_of(std::string("v"))));
    CHECK(c.store->stats().state.empty());
    CHECK(c.warnings->count("accepts writes again") == 1);
  }

  TEST_CASE("entries evicted by the server are misses, and the store stays healthy") {
    auto server = RedisServer::start_or_skip({"--maxmemory", "2mb", "--maxmemory-policy", "allkeys-lru"});
    if (!server) return;
    TempDir dir("redis");
    Client c = client(*server, dir, kKey);
    const std::string chunk(256 << 10, 'e');
    for (int i = 0; i < 40; ++i) CHECK(c.store->put("k" + std::to_string(i), bytes_of(chunk)));
    int present = 0;
    for (int i = 0; i < 40; ++i) present += c.store->get("k" + std::to_string(i)).has_value();
    CHECK(present > 0);
    CHECK(present < 40);
    CHECK(text(c.store->get("k39")) == chunk);  // the newest survived
    const StoreStats st = c.store->stats();
    CHECK(st.corrupt == 0);
    CHECK(st.rejected == 0);
    CHECK(st.state.empty());
  }

  TEST_CASE("eight threads racing on the same names read only whole valid entries") {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir("redis");
    Client c = client(*server, dir, kKey);
    Client d = client(*server, dir, kKey);
    std::atomic<int> wrong{0}, hits{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&, t] {
        RedisStore& s = t % 2 ? *c.store : *d.store;
        for (int i = 0; i < 50; ++i) {
          const std::string key = "shared-" + std::to_string(i % 4);
          const std::string payload = key + std::string(size_t(1000 + 97 * (i % 4)), char('a' + i % 4));
          if (std::optional<std::vector<uint8_t>> got = s.get(key)) {
            hits.fetch_add(1);
            if (std::string(got->begin(), got->end()) != payload) wrong.fetch_add(1);
          } else {
            s.put(key, bytes_of(payload));
          }
        }
      });
    for (std::thread& t : threads) t.join();
    CHECK(wrong.load() == 0);
    CHECK(hits.load() > 0);
    CHECK(c.store->stats().corrupt + d.store->stats().corrupt == 0);
    CHECK(c.store->stats().rejected + d.store->stats().rejected == 0);
  }

  TEST_CASE("list check and remove cover the namespace only") {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir("redis");
    Client c = client(*server, dir, kKey);
    REQUIRE(c.store->put("a", bytes_of(std::string("1"))));
    REQUIRE(c.store->put("b", bytes_of(std::string("2"))));
    REQUIRE(server->command({"SET", "someone-else:key", "x"}) == "OK");
    REQUIRE(server->command({"SET", "fusor:test-version:junk", "x"}) == "OK");
    REQUIRE(server->command({"HSET", "fusor:test-version:hash", "f", "v"}) == "1");
    std::vector<RedisStore::Listed> l = c.store->list();
    CHECK(l.size() == 4);
    std::vector<std::string> bad;
    for (const RedisStore::Listed& e : l)
      if (c.store->check(e.name) != "valid") bad.push_back(e.name);
    CHECK(bad.size() == 2);
    CHECK(c.store->remove(bad) == 2);
    CHECK(c.store->list().size() == 2);
    CHECK(server->command({"GET", "someone-else:key"}) == "x");
    CHECK(c.store->check("fusor:test-version:gone") == "missing");
    server->kill();
    CHECK_THROWS_AS(c.store->list(), Error);
  }
}
