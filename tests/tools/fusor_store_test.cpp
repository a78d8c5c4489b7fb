// Tests of the remote store through the `fusor` tool: `fusor warmup --remote` from two
// processes racing on the same kernels, a fresh replica that then compiles nothing,
// `fusor store stats|ls|verify|prune` over the disk and the remote store, and the errors
// (a server that is down, no key, a bad URL). Each test runs its own redis-server
// (tests/support/redis_server.h) and is skipped with the reason where it is not installed.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <fstream>
#include <iterator>
#include <string>

#include "tests/support/redis_server.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"

namespace {

using fusor::test::CommandResult;
using fusor::test::RedisServer;
using fusor::test::TempDir;

const char* const kGraph =
    "graph fleet\n"
    "input x: f32[T, 16]\n"
    "const w: f32[16, 24] = randn(seed=3, std=0.1)\n"
    "const b: f32[24] = fill(0.25)\n"
    "h = MatMul(x, w)\n"
    "y = Add(h, b)\n"
    "z = Tanh(y)\n"
    "output z\n";

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

long long json_int(const std::string& out, const std::string& key) {
  auto at = out.find("\"" + key + "\": ");
  if (at == std::string::npos) return -1;
  return std::stoll(out.substr(at + key.size() + 4));
}

// The environment and paths one test's commands share.
struct Fleet {
  TempDir dir{"fleet"};
  std::string graph, key;
  const RedisServer& server;
  explicit Fleet(const RedisServer& s) : server(s) {
    graph = dir.file("fleet.graph");
    std::ofstream(graph) << kGraph;
    key = dir.file("store.key");
    std::ofstream(key, std::ios::binary) << std::string(32, 'f');
    ::chmod(key.c_str(), 0600);
  }
  // `fusor ARGS` with the key in the environment and the server's URL as --remote.
  CommandResult fusor(const std::string& args, const std::string& env = "") const {
    return fusor::test::run_command("FUSOR_STORE_KEY_FILE=" + key + " " + env + " " + std::string(FUSOR_BINARY_DIR) +
                                    "/tools/fusor/fusor " + args + " --remote '" + server.url() + "'");
  }
  std::string warmup(const std::string& disk, const std::string& dims = "T=1..12") const {
    return "warmup " + graph + " --dim " + dims + " --backend llvm --jobs 2 --quiet --json --cache-dir " + dir.file(disk);
  }
};

bool llvm_or_skip(const CommandResult& r) {
  if (r.code == 4 && has(r.out, "llvm")) {
    MESSAGE("skipped: " << r.out);
    return false;
  }
  return true;
}

}  // namespace

TEST_SUITE("tools/fusor_store") {
  TEST_CASE("two warmups racing fill Redis and a fresh replica then compiles nothing") {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    Fleet f(*server);
    // Two processes warm the same shapes at once, each with its own disk.
    auto background = [&](const std::string& name) {
      return "(FUSOR_STORE_KEY_FILE=" + f.key + " " + FUSOR_BINARY_DIR + "/tools/fusor/fusor " + f.warmup("disk-" + name) +
             " --remote '" + server->url() + "' > " + f.dir.file(name + ".out") + " 2>&1; echo rc=$? >> " +
             f.dir.file(name + ".out") + ") &";
    };
    fusor::test::run_command(background("a") + " " + background("b") + " wait");
    for (const char* name : {"a", "b"}) {
      std::ifstream in(f.dir.file(std::string(name) + ".out"));
      const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (!llvm_or_skip({has(out, "rc=4") ? 4 : 0, out})) return;
      CHECK_MESSAGE(has(out, "rc=0"), out);
    }
    // A third replica with an empty disk: every kernel comes from Redis.
    CommandResult c = f.fusor(f.warmup("disk-c"));
    REQUIRE_MESSAGE(c.code == 0, c.out);
    CHECK(json_int(c.out, "kernels_compiled") == 0);
    CHECK(json_int(c.out, "disk_hits") > 0);
    CHECK(has(c.out, "\"remote\": {\"url\": \"redis://:***@127.0.0.1:"));
    CHECK(!has(c.out, RedisServer::kPassword));
    // And its runs agree with a run that compiled.
    CommandResult run_c = f.fusor("run " + f.graph + " --dim T=7 --backend llvm --cache-dir " + f.dir.file("disk-c") + " --stats");
    CommandResult run_fresh =
        fusor::test::run_command(std::string(FUSOR_BINARY_DIR) + "/tools/fusor/fusor run " + f.graph +
                                 " --dim T=7 --backend llvm --no-disk-cache");
    REQUIRE(run_c.code == 0);
    REQUIRE(run_fresh.code == 0);
    CHECK(has(run_c.out, "0 compiled"));
    const auto sums = [](const std::string& out) { return out.substr(out.find("output z"), out.find('\n', out.find("output z")) - out.find("output z")); };
    CHECK(sums(run_c.out) == sums(run_fresh.out));
  }

  TEST_CASE("a replica with an empty disk serves a warmed BERT layer's shapes with no compile") {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    Fleet f(*server);
    const std::string bert = std::string(FUSOR_SOURCE_DIR) + "/examples/graphs/bert_layer";
    const std::string dims = " --dim B=1 --dim T=4..5 --backend llvm --quiet --json --cache-dir ";
    CommandResult first = f.fusor("warmup " + bert + dims + f.dir.file("disk-a"));
    if (!llvm_or_skip(first)) return;
    REQUIRE_MESSAGE(first.code == 0, first.out);
    CHECK(json_int(first.out, "kernels_compiled") > 0);
    CommandResult second = f.fusor("warmup " + bert + dims + f.dir.file("disk-b"));
    REQUIRE_MESSAGE(second.code == 0, second.out);
    CHECK(json_int(second.out, "kernels_compiled") == 0);
    CHECK(json_int(second.out, "disk_hits") == json_int(first.out, "kernels_compiled"));
  }

  TEST_CASE("fusor store stats ls verify and prune cover the disk and the remote store") {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    Fleet f(*server);
    CommandResult w = f.fusor(f.warmup("disk", "T=3..4"));
    if (!llvm_or_skip(w)) return;
    REQUIRE_MESSAGE(w.code == 0, w.out);
    const std::string disk = " --cache-dir " + f.dir.file("disk");
    CommandResult stats = f.fusor("store stats --json" + disk);
    REQUIRE_MESSAGE(stats.code == 0, stats.out);
    const long long n = json_int(stats.out, "this_version_entries");
    CHECK(n > 0);
    CHECK(json_int(stats.out, "entries") == n);  // the disk's count comes first in the object
    CommandResult ls = f.fusor("store ls" + disk);
    CHECK(ls.code == 0);
    CHECK(has(ls.out, "fusor:"));
    CommandResult ok = f.fusor("store verify" + disk);
    CHECK_MESSAGE(ok.code == 0, ok.out);
    CHECK(has(ok.out, std::to_string(n) + " valid"));
    // A tampered value and an old version's entry are found, then pruned.
    const std::vector<std::string> names = server->keys("fusor:*");
    REQUIRE(!names.empty());
    std::string v = server->command({"GET", names[0]});
    v[v.size() / 2] ^= 1;
    REQUIRE(server->command({"SET", names[0], v}) == "OK");
    REQUIRE(server->command({"SET", "fusor:0.0.1:0123", "old"}) == "OK");
    CommandResult bad = f.fusor("store verify --no-disk-cache");
    CHECK(bad.code == 3);
    CHECK(has(bad.out, names[0] + "  corrupt"));
    CHECK(has(bad.out, "fusor:0.0.1:0123"));
    CommandResult pruned = f.fusor("store prune --no-disk-cache");
    CHECK(pruned.code == 0);
    CHECK(has(pruned.out, "removed 2 entries"));
    CHECK(f.fusor("store verify --no-disk-cache").code == 0);
    CHECK(server->keys("fusor:*").size() == names.size() - 1);
    CHECK(f.fusor("store prune --all --no-disk-cache").code == 0);
    CHECK(server->keys("fusor:*").empty());
    // Usage errors.
    CHECK(f.fusor("store frobnicate").code == 2);
    CHECK(f.fusor("store stats --all").code == 2);
  }

  TEST_CASE("warmup --remote fails clearly when the store cannot be filled") {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    Fleet f(*server);
    // No key, authenticated trust: refused, naming the fix.
    CommandResult nokey = fusor::test::run_command(std::string("FUSOR_STORE_KEY_FILE= ") + FUSOR_BINARY_DIR +
                                                   "/tools/fusor/fusor " + f.warmup("disk") + " --remote '" +
                                                   server->url() + "'");
    if (!llvm_or_skip(nokey)) return;
    CHECK(nokey.code == 3);
    CHECK(has(nokey.out, "FUSOR_STORE_KEY_FILE"));
    // The server down: the kernels land on disk, and warmup says the remote store was not filled.
    server->kill();
    CommandResult down = f.fusor(f.warmup("disk", "T=2"));
    CHECK(down.code == 3);
    CHECK(has(down.out, "was not filled"));
    CHECK(has(down.out, "Connection refused"));
    // A run never fails for it.
    CommandResult run = f.fusor("run " + f.graph + " --dim T=2 --backend llvm --no-disk-cache");
    CHECK_MESSAGE(run.code == 0, run.out);
    // A malformed URL is a usage-level error with the part named.
    CommandResult url = fusor::test::run_command(std::string(FUSOR_BINARY_DIR) + "/tools/fusor/fusor run " + f.graph +
                                                 " --dim T=2 --remote redis://host:port");
    CHECK(url.code == 3);
    CHECK(has(url.out, "port"));
  }
}
