// Tests of what the remote store needs before it talks to a server: the store key file
// (cache/store_key.h, Note [Store key file]), redis:// URLs (cache/redis_store.h), the
// shared entry format (cache/store_entry.h) and the layered store (cache/layered_store.h,
// over two disk stores).
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "cache/layered_store.h"
#include "cache/redis_store.h"
#include "cache/store_entry.h"
#include "cache/store_key.h"
#include "ir/error.h"
#include "tests/support/disk_store_util.h"
#include "tests/support/temp_dir.h"

using namespace fusor;
using fusor::test::TempDir;

namespace {

std::string write_key(const TempDir& dir, const std::string& name, const std::string& bytes, mode_t mode) {
  const std::string path = dir.file(name);
  std::ofstream(path, std::ios::binary) << bytes;
  ::chmod(path.c_str(), mode);
  return path;
}

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace

TEST_SUITE("cache/store_key") {
  TEST_CASE("a private key file loads and its tags verify") {
    TempDir dir("store-key");
    std::string why;
    const std::string path = write_key(dir, "key", std::string(32, 'k'), 0600);
    std::optional<StoreKey> key = StoreKey::load(path, &why);
    REQUIRE(key.has_value());
    const std::string data = "an entry";
    const StoreKey::Tag t = key->tag(bytes_of(data));
    CHECK(key->verify(bytes_of(data), t));
    CHECK(!key->verify(bytes_of(std::string("an entrz")), t));
    StoreKey::Tag bad = t;
    bad[5] ^= 1;
    CHECK(!key->verify(bytes_of(data), bad));
    CHECK(!key->verify(bytes_of(data), std::span<const uint8_t>(t.data(), 31)));
    // Another key tags differently; the same key bytes tag the same.
    CHECK(StoreKey::from_bytes(std::string(32, 'j')).tag(bytes_of(data)) != t);
    CHECK(StoreKey::from_bytes(std::string(32, 'k')).tag(bytes_of(data)) == t);
    // RFC 4231, test case 1 (key: 20 bytes of 0x0b, data "Hi There") pins the primitive.
    const StoreKey::Tag rfc = StoreKey::from_bytes(std::string(20, '\x0b')).tag(bytes_of("Hi There"));
    char hex[65];
    for (size_t i = 0; i < 32; ++i) std::snprintf(hex + 2 * i, 3, "%02x", rfc[i]);
    CHECK(std::string(hex) == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  }

  TEST_CASE("a key file that is missing, shared, or of a bad size is refused with the fix") {
    TempDir dir("store-key");
    std::string why;
    CHECK(!StoreKey::load(dir.file("absent"), &why));
    CHECK(why.find("cannot be opened") != std::string::npos);
    CHECK(!StoreKey::load(write_key(dir, "shared", std::string(32, 'k'), 0644), &why));
    CHECK(why.find("chmod 600") != std::string::npos);
    CHECK(!StoreKey::load(write_key(dir, "group", std::string(32, 'k'), 0640), &why));
    CHECK(why.find("mode 0640") != std::string::npos);
    CHECK(!StoreKey::load(write_key(dir, "short", "tiny", 0600), &why));
    CHECK(why.find("holds 4 bytes") != std::string::npos);
    CHECK(!StoreKey::load(dir.path().string(), &why));
    CHECK(why.find("not a regular file") != std::string::npos);
    CHECK(!StoreKey::load("", &why));
    CHECK(why.find("FUSOR_STORE_KEY_FILE") != std::string::npos);
    CHECK(StoreKey::load(write_key(dir, "readonly", std::string(16, 'k'), 0400), &why).has_value());
    CHECK_THROWS_AS(StoreKey::from_bytes("short"), Error);
  }

  TEST_CASE("sha256_hex names data with the standard digest") {
    CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(sha256_hex("abc", 32) == "ba7816bf8f01cfea414140de5dae2223");
  }
}

TEST_SUITE("cache/redis_url") {
  TEST_CASE("redis URLs parse with their defaults and hide the password") {
    RedisUrl u = parse_redis_url("redis://cache.internal");
    CHECK(u.host == "cache.internal");
    CHECK(u.port == 6379);
    CHECK(u.db == 0);
    CHECK(u.password.empty());
    u = parse_redis_url("redis://fusor:s%40cr%3At@10.0.0.5:6380/3");
    CHECK(u.user == "fusor");
    CHECK(u.password == "s@cr:t");
    CHECK(u.host == "10.0.0.5");
    CHECK(u.port == 6380);
    CHECK(u.db == 3);
    CHECK(u.redacted() == "redis://fusor:***@10.0.0.5:6380/3");
    CHECK(u.redacted().find("s@cr") == std::string::npos);
    u = parse_redis_url("redis://:pw@[::1]:7000/");
    CHECK(u.host == "::1");
    CHECK(u.port == 7000);
    CHECK(u.password == "pw");
    CHECK(u.redacted() == "redis://:***@[::1]:7000/0");
  }

  TEST_CASE("a malformed redis URL is InvalidArgument naming the part, and TLS is Unsupported") {
    auto code_of = [](const std::string& url) {
      try {
        parse_redis_url(url);
      } catch (const Error& e) {
        CHECK_MESSAGE(std::string(e.what()).find("secret") == std::string::npos, e.what());
        return e.code();
      }
      return ErrorCode::Internal;
    };
    CHECK(code_of("http://host:6379") == ErrorCode::InvalidArgument);
    CHECK(code_of("redis://") == ErrorCode::InvalidArgument);
    CHECK(code_of("redis://:secret@host:notaport") == ErrorCode::InvalidArgument);
    CHECK(code_of("redis://host:70000") == ErrorCode::InvalidArgument);
    CHECK(code_of("redis://host:") == ErrorCode::InvalidArgument);
    CHECK(code_of("redis://host/x") == ErrorCode::InvalidArgument);
    CHECK(code_of("redis://[::1:6379") == ErrorCode::InvalidArgument);
    CHECK(code_of("redis://u:bad%zzsecret@host") == ErrorCode::InvalidArgument);
    CHECK(code_of("rediss://:secret@host") == ErrorCode::Unsupported);
    CHECK(parse_remote_trust("unauthenticated") == RemoteTrust::Unauthenticated);
    CHECK_THROWS_AS(parse_remote_trust("sometimes"), Error);
  }

  TEST_CASE("the remote store refuses to open without a key unless trust is unauthenticated") {
    TempDir dir("store-key");
    std::vector<std::string> warnings;
    RedisStore::Options o;
    o.url = "redis://127.0.0.1:1";
    o.remote.key_file = dir.file("absent");
    o.warn = [&](const std::string& w) { warnings.push_back(w); };
    std::unique_ptr<RedisStore> s = RedisStore::open(o);
    CHECK(!s->enabled());
    CHECK(s->reason_disabled().find("unauthenticated") != std::string::npos);
    CHECK(warnings.size() == 1);
    CHECK(!s->get("k"));  // disabled: a miss, no network
    CHECK(!s->put("k", bytes_of(std::string("v"))));
    o.remote.trust = RemoteTrust::Unauthenticated;
    CHECK(RedisStore::open(o)->enabled());
    o.remote.timeout_ms = 0;
    CHECK_THROWS_AS(RedisStore::open(o), Error);
  }
}

TEST_SUITE("cache/redis_store_offline") {
  TEST_CASE("a warning sink that reads the store's stats does not deadlock when it goes down") {
    // Nothing listens on port 1: the first read fails at connect, the store goes down and
    // warns; the sink asks for stats() (which takes the connection's lock) as an engine's
    // sink might ask for Engine::stats().
    RedisStore::Options o;
    o.url = "redis://127.0.0.1:1";
    o.remote.trust = RemoteTrust::Unauthenticated;
    std::unique_ptr<RedisStore> s;
    std::vector<std::string> states;
    o.warn = [&](const std::string&) { states.push_back(s->stats().state); };
    s = RedisStore::open(o);
    CHECK(!s->get("k"));
    REQUIRE(states.size() == 1);
    CHECK(states[0].rfind("unreachable", 0) == 0);
    CHECK(!s->put("k", bytes_of(std::string("v"))));  // down: no network, no second warning
    CHECK(states.size() == 1);
    CHECK(s->stats().unavailable == 2);
  }
}

TEST_SUITE("cache/store_entry") {
  TEST_CASE("an entry reads back, and each fault is named") {
    const EntryFormat f{"TESTENTR", 3};
    const std::string payload = "payload bytes";
    std::string e = encode_entry_header(f, "v1", "the key", bytes_of(payload)) + payload;
    DecodedEntry d = decode_entry(bytes_of(e), f, "v1");
    REQUIRE(d.fault == EntryFault::None);
    CHECK(d.key == "the key");
    CHECK(std::string(d.payload.begin(), d.payload.end()) == payload);
    CHECK(d.end == e.size());
    CHECK(decode_entry(bytes_of(e), f, "v2").fault == EntryFault::Stale);
    CHECK(decode_entry(bytes_of(e), EntryFormat{"TESTENTR", 4}, "v1").fault == EntryFault::Stale);
    CHECK(decode_entry(bytes_of(e), EntryFormat{"OTHERMAG", 3}, "v1").fault == EntryFault::Foreign);
    for (size_t cut : {size_t(0), size_t(5), size_t(20), e.size() - 1})
      CHECK(decode_entry(bytes_of(e.substr(0, cut)), f, "v1").fault == EntryFault::Truncated);
    std::string flipped = e;
    flipped[flipped.size() - 3] ^= 0x20;
    CHECK(decode_entry(bytes_of(flipped), f, "v1").fault == EntryFault::Corrupt);
    std::string key_flipped = e;
    key_flipped[e.find("the key")] = 'T';  // the checksum covers the header and key too
    CHECK(decode_entry(bytes_of(key_flipped), f, "v1").fault == EntryFault::Corrupt);
    CHECK(decode_entry(bytes_of(e + "tail"), f, "v1").end == e.size());
  }
}

TEST_SUITE("cache/layered_store") {
  TEST_CASE("a layered store reads nearest first, fills nearer layers and writes through") {
    TempDir dir("layered");
    auto w = std::make_shared<fusor::test::Warnings>();
    auto near = std::make_unique<DiskStore>(DiskStore::open(fusor::test::store_options(dir.file("near"), w)));
    auto far = std::make_unique<DiskStore>(DiskStore::open(fusor::test::store_options(dir.file("far"), w)));
    DiskStore* n = near.get();
    DiskStore* f = far.get();
    const std::string a = "kernel a", b = "kernel b";
    REQUIRE(f->put("key-a", bytes_of(a)));
    std::vector<std::unique_ptr<KernelStore>> layers;
    layers.push_back(std::move(near));
    layers.push_back(std::move(far));
    LayeredStore s(std::move(layers));
    CHECK(!n->get("key-a"));
    std::optional<std::vector<uint8_t>> got = s.get("key-a");
    REQUIRE(got);
    CHECK(std::string(got->begin(), got->end()) == a);
    CHECK(n->get("key-a"));  // filled from the far layer
    CHECK(s.put("key-b", bytes_of(b)));
    CHECK(n->get("key-b"));
    CHECK(f->get("key-b"));
    CHECK(!s.get("key-c"));
    const StoreStats st = s.stats();
    CHECK(st.loads == 2);
    CHECK(st.hits == 1);
    CHECK(st.misses == 1);
    CHECK(st.writes == 1);
    CHECK(st.location.find(" → ") != std::string::npos);
    CHECK(st.entries == 2);  // the nearest layer's
    CHECK_THROWS_AS(LayeredStore({}), Error);
  }
}
