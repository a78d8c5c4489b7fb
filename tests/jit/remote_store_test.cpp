// The remote kernel store end to end (EngineOptions::remote_store, Note [Remote store],
// Note [Layered store]): engines with separate disk stores share kernels through a real
// redis-server, tampered or foreign-signed entries are never executed, and a server that is
// killed, restarted or stalled never fails a run. Skipped with the reason where
// redis-server is not installed (not in CI) or LLVM is missing.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>

#include "ir/text_format.h"
#include "jit/engine.h"
#include "tests/support/disk_store_util.h"
#include "tests/support/redis_server.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

using namespace fusor;
using fusor::test::RedisServer;
using fusor::test::TempDir;

namespace {

// Three JIT kernels at each T: a matmul with bias and GELU, a softmax, a pointwise tail.
const char* kGraph = R"(graph shared
input x: f32[T, 20]
const w: f32[20, 36] = randn(seed=7, std=0.2)
const b: f32[36] = randn(seed=8, std=0.1)
m = MatMul(x, w)
h = Add(m, b)
g = Gelu(h)
s = Softmax(g) {axis=-1}
t = Sigmoid(s)
y = Mul(t, g)
output y
)";

using Recorder = fusor::test::Warnings;

std::string key_file(const TempDir& dir, const std::string& name, char fill) {
  const std::string path = dir.file(name);
  std::ofstream(path, std::ios::binary) << std::string(32, fill);
  ::chmod(path.c_str(), 0600);
  return path;
}

// An llvm engine with its disk store in `disk_dir` ("": none) and the remote store of
// `server`, signed with `key`; null after saying why where LLVM is missing.
std::unique_ptr<Engine> engine(const RedisServer& server, const std::string& disk_dir, const std::string& key,
                               Recorder* rec = nullptr) {
  EngineOptions o;
  o.backend = BackendKind::Llvm;
  o.num_threads = 2;
  o.disk_cache = !disk_dir.empty();
  o.cache_dir = disk_dir;
  o.remote_store = server.url();
  o.remote.key_file = key;
  o.remote.retry_min_ms = o.remote.retry_max_ms = 20;
  o.warn = rec ? rec->sink() : [](const std::string&) {};
  try {
    return std::make_unique<Engine>(o);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::DeviceUnavailable && e.code() != ErrorCode::Unsupported) throw;
    MESSAGE("skipped: " << e.what());
    return nullptr;
  }
}

TensorMap input(int64_t t) { return {{"x", test::randn({t, 20}, uint64_t(t) + 100)}}; }

TensorMap reference(const Graph& g, int64_t t) {
  Engine e(EngineOptions{.num_threads = 2, .fuse = false});
  return e.run(g, input(t));
}

void check_equal(const TensorMap& got, const TensorMap& want) {
  for (const auto& [name, tensor] : want) FUSOR_CHECK_CLOSE(got.at(name), tensor, 0, 0);
}

void check_close(const TensorMap& got, const TensorMap& want) {
  for (const auto& [name, tensor] : want) FUSOR_CHECK_CLOSE(got.at(name), tensor, 1e-4, 1e-4);
}

}  // namespace

TEST_SUITE("jit/remote_store") {
  TEST_CASE("two engines with separate disk stores share kernels through Redis and the second compiles nothing") {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir("remote-share");
    const std::string key = key_file(dir, "key", 'k');
    const Graph g = parse_graph(kGraph);
    TensorMap first;
    uint64_t kernels = 0;
    {
      auto a = engine(*server, dir.file("disk-a"), key);
      if (!a) return;
      first = a->run(g, input(17));
      const EngineStats s = a->stats();
      kernels = s.kernels_compiled;
      CHECK(kernels >= 2);
      CHECK(s.remote_enabled);
      CHECK(s.remote_writes == kernels);
      CHECK(s.remote_hits == 0);
      CHECK(s.remote_state.empty());
    }
    auto b = engine(*server, dir.file("disk-b"), key);  // another replica: its own empty disk
    const TensorMap again = b->run(g, input(17));
    EngineStats s = b->stats();
    CHECK(s.kernels_compiled == 0);
    CHECK(s.disk_hits == kernels);
    CHECK(s.remote_hits == kernels);
    CHECK(s.disk_entries == kernels);  // filled from Redis
    check_equal(again, first);
    check_close(again, reference(g, 17));
    // Its disk now serves a restart even with the server gone.
    server->kill();
    auto c = engine(*server, dir.file("disk-b"), key);
    check_equal(c->run(g, input(17)), first);
    CHECK(c->stats().kernels_compiled == 0);
    CHECK(c->stats().remote_hits == 0);
  }

  TEST_CASE("entries signed with another key or tampered are never executed: rejected and rebuilt") {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir("remote-forged");
    const std::string key = key_file(dir, "key", 'k'), other = key_file(dir, "other", 'o');
    const Graph g = parse_graph(kGraph);
    // A writer with another key fills the server (as an attacker who can write to it would).
    auto w = engine(*server, "", other);
    if (!w) return;
    w->run(g, input(11));
    const uint64_t kernels = w->stats().kernels_compiled;
    Recorder rec;
    auto e = engine(*server, "", key, &rec);
    check_close(e->run(g, input(11)), reference(g, 11));
    EngineStats s = e->stats();
    CHECK(s.kernels_compiled == kernels);  // nothing loaded: every kernel compiled here
    CHECK(s.remote_rejected == kernels);
    CHECK(s.remote_hits == 0);
    CHECK(s.remote_writes == kernels);  // rebuilt, signed with our key
    CHECK(rec.count("forged") == 1);    // warned once
    // The rebuilt entries serve the next replica with the right key.
    auto f = engine(*server, "", key);
    check_close(f->run(g, input(11)), reference(g, 11));
    CHECK(f->stats().kernels_compiled == 0);
    CHECK(f->stats().remote_hits == kernels);
    // Tampered in place: a byte of every value flipped. Rejected (checksum), rebuilt.
    const std::vector<std::string> names = server->keys("fusor:*");
    REQUIRE(names.size() == kernels);
    for (const std::string& n : names) {
      std::string v = server->command({"GET", n});
      v[v.size() / 2] ^= 0x10;
      REQUIRE(server->command({"SET", n, v}) == "OK");
    }
    auto h = engine(*server, "", key);
    check_close(h->run(g, input(11)), reference(g, 11));
    CHECK(h->stats().kernels_compiled == kernels);
    CHECK(h->stats().remote_corrupt + h->stats().remote_rejected == kernels);
  }

  TEST_CASE("with Redis killed mid-run every run succeeds, and a restarted Redis is filled again") {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir("remote-killed");
    const std::string key = key_file(dir, "key", 'k');
    const Graph g = parse_graph(kGraph);
    Recorder rec;
    auto e = engine(*server, dir.file("disk"), key, &rec);
    if (!e) return;
    e->run(g, input(5));
    const uint64_t per_shape = e->stats().remote_writes;
    server->kill();
    check_close(e->run(g, input(6)), reference(g, 6));
    EngineStats s = e->stats();
    CHECK(s.remote_writes == per_shape);
    CHECK(s.remote_unavailable > 0);
    CHECK(s.remote_state.rfind("unreachable", 0) == 0);
    CHECK(s.disk_writes == 2 * per_shape);  // the local store still took them
    CHECK(rec.count("cannot be reached") == 1);
    REQUIRE(server->restart());
    std::this_thread::sleep_for(std::chrono::milliseconds(60));  // past the 20 ms backoff
    check_close(e->run(g, input(7)), reference(g, 7));
    s = e->stats();
    CHECK(s.remote_writes == 2 * per_shape);
    CHECK(s.remote_state.empty());
    CHECK(rec.count("reachable again") == 1);
  }

  TEST_CASE("a stalled Redis does not hold a run past its timeout") {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir("remote-stalled");
    const std::string key = key_file(dir, "key", 'k');
    const Graph g = parse_graph(kGraph);
    auto e = engine(*server, "", key);
    if (!e) return;
    std::atomic<bool> stall_over{false};
    std::thread sleeper([&] {
      server->command({"DEBUG", "SLEEP", "20"});
      stall_over = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    // Not a speed check: the run (its compiles included) must end while the 20 s stall lasts.
    check_close(e->run(g, input(13)), reference(g, 13));
    CHECK(!stall_over.load());
    CHECK(e->stats().remote_state.find("no reply within") != std::string::npos);
    server->kill();  // ends the stall
    sleeper.join();
  }

  TEST_CASE("a malformed remote store URL fails the engine's construction") {
    EngineOptions o;
    o.remote_store = "redis://host:notaport";
    CHECK_THROWS_AS(Engine{o}, Error);
    o.remote_store = "memcached://host";
    try {
      Engine e(o);
      FAIL("expected an error");
    } catch (const Error& err) {
      CHECK(err.code() == ErrorCode::InvalidArgument);
      CHECK(std::string(err.what()).find("redis://") != std::string::npos);
    }
  }
}
