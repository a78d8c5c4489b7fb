// Tests of DiskStore entries (cache/disk_store.h): round trips and restarts; stale,
// foreign, truncated and corrupt entries ignored with a warning and rebuilt; hash
// collisions; concurrent writers (threads and processes); trim and the manifest.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cache/disk_store.h"
#include "cache/version.h"
#include "tests/support/disk_store_util.h"
#include "tests/support/temp_dir.h"

using namespace fusor;
using namespace fusor::test;
namespace fs = std::filesystem;

namespace {

// prefix + a (+ "-" + b): built by appending (GCC 12 warns falsely on "lit" + std::string).
std::string named(std::string prefix, int a, int b = -1) {
  prefix += std::to_string(a);
  if (b >= 0) {
    prefix += '-';
    prefix += std::to_string(b);
  }
  return prefix;
}
// A payload that says who wrote it and checks itself: [key index][writer] then a pattern
// whose length depends on both, so a reader can tell a whole entry from a mix of two.
std::vector<uint8_t> stamped(int index, int writer) {
  std::vector<uint8_t> p(size_t(500 + writer * 1500 + index * 7));
  p[0] = uint8_t(index);
  p[1] = uint8_t(writer);
  for (size_t j = 2; j < p.size(); ++j) p[j] = uint8_t(index * 31 + writer * 7 + int(j));
  return p;
}
bool valid_stamp(const std::vector<uint8_t>& p, int index) {
  return p.size() >= 2 && p[0] == uint8_t(index) && p == stamped(index, p[1]);
}


}  // namespace

TEST_SUITE("cache/disk_store") {
  TEST_CASE("a saved payload loads back and the manifest lists it") {
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    DiskStore s = DiskStore::open(store_options(tmp.file("store"), w));
    REQUIRE(s.enabled());
    CHECK(s.reason_disabled().empty());
    CHECK(s.dir() == tmp.file("store"));
    CHECK(!s.get("kernel-a"));
    CHECK(s.put("kernel-a", bytes("object code A")));
    CHECK(s.put("kernel-empty", {}));
    auto a = s.get("kernel-a");
    REQUIRE(a);
    CHECK(*a == bytes("object code A"));
    auto e = s.get("kernel-empty");
    REQUIRE(e);
    CHECK(e->empty());
    std::vector<uint8_t> big(3 << 20);
    for (size_t i = 0; i < big.size(); ++i) big[i] = uint8_t(i * 2654435761u >> 13);
    CHECK(s.put("kernel-big", big));
    CHECK(s.get("kernel-big") == big);

    DiskStore::Stats st = s.stats();
    CHECK(st.loads == 4);
    CHECK(st.hits == 3);
    CHECK(st.misses == 1);
    CHECK(st.corrupt == 0);
    CHECK(st.writes == 3);
    CHECK(st.bytes_written == 13 + big.size());
    CHECK(st.bytes_read == 13 + big.size());
    auto listed = s.entries();
    CHECK(listed.size() == 3);
    for (const auto& ent : listed) {
      bool known = ent.key_hash == DiskStore::key_hash("kernel-a") ||
                   ent.key_hash == DiskStore::key_hash("kernel-empty") ||
                   ent.key_hash == DiskStore::key_hash("kernel-big");
      CHECK(known);
    }
    CHECK(fs::file_size(s.entry_path("kernel-big")) > big.size());
    for (const auto& ent : listed)
      if (ent.key_hash == DiskStore::key_hash("kernel-big"))
        CHECK(ent.bytes == fs::file_size(s.entry_path("kernel-big")));
    CHECK(w->size() == 0);
  }

  TEST_CASE("saving a key again replaces its entry") {
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    DiskStore s = DiskStore::open(store_options(tmp.file("store"), w));
    CHECK(s.put("k", bytes("first")));
    CHECK(s.put("k", bytes("second, longer")));
    CHECK(s.get("k") == bytes("second, longer"));
    REQUIRE(s.entries().size() == 1);
    CHECK(s.entries()[0].bytes == fs::file_size(s.entry_path("k")));
  }

  TEST_CASE("entries survive a restart") {
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    {
      DiskStore s = DiskStore::open(store_options(tmp.file("store"), w));
      CHECK(s.put("plan-7", bytes("compiled")));
    }
    DiskStore again = DiskStore::open(store_options(tmp.file("store"), w));
    REQUIRE(again.enabled());
    CHECK(again.get("plan-7") == bytes("compiled"));
    CHECK(again.entries().size() == 1);
    CHECK(again.stats().writes == 0);
    CHECK(w->size() == 0);
  }

  TEST_CASE("a corrupt entry is ignored with a warning and rebuilt by the next save") {
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    DiskStore s = DiskStore::open(store_options(tmp.file("store"), w));
    CHECK(s.put("k", bytes("payload bytes")));
    std::string path = s.entry_path("k");
    std::string data = read_file(path);
    data[data.size() - 3] ^= 0x20;  // one bit of the payload
    write_file(path, data);
    CHECK(!s.get("k"));
    CHECK(w->count("corrupt") == 1);
    CHECK(w->count(path) == 1);
    CHECK(s.stats().corrupt == 1);
    CHECK(!fs::exists(path));  // removed
    CHECK(s.entries().empty());
    CHECK(s.put("k", bytes("payload bytes")));
    CHECK(s.get("k") == bytes("payload bytes"));
  }

  TEST_CASE("a truncated entry is ignored with a warning and rebuilt") {
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    DiskStore s = DiskStore::open(store_options(tmp.file("store"), w));
    CHECK(s.put("k", bytes("a payload long enough to cut")));
    std::string path = s.entry_path("k");
    std::string data = read_file(path);
    write_file(path, data.substr(0, data.size() - 5));
    CHECK(!s.get("k"));
    CHECK(w->count("truncated") == 1);
    CHECK(s.put("k", bytes("again")));
    write_file(path, data.substr(0, 4));  // cut inside the magic
    CHECK(!s.get("k"));
    CHECK(s.put("k", bytes("again")));
    CHECK(s.get("k") == bytes("again"));
    CHECK(s.stats().corrupt == 2);
  }

  TEST_CASE("a foreign file is ignored with a warning") {
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    DiskStore s = DiskStore::open(store_options(tmp.file("store"), w));
    std::string path = s.entry_path("k");
    write_file(path, "#!/bin/sh\necho this is not a fusor entry\n");
    ::chmod(path.c_str(), 0600);
    CHECK(!s.get("k"));
    CHECK(w->count("foreign") == 1);
    CHECK(w->count("bad magic") == 1);
    CHECK(s.put("k", bytes("mine")));
    CHECK(s.get("k") == bytes("mine"));
  }

  TEST_CASE("an entry others may write is not loaded") {
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    DiskStore s = DiskStore::open(store_options(tmp.file("store"), w));
    CHECK(s.put("k", bytes("code")));
    ::chmod(s.entry_path("k").c_str(), 0666);
    CHECK(!s.get("k"));
    CHECK(w->count("foreign") == 1);
  }

  TEST_CASE("an entry of another engine version is stale and rebuilt") {
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    {
      DiskStore old = DiskStore::open(store_options(tmp.file("store"), w, "0.0.1+codegen.0"));
      CHECK(old.put("k", bytes("old code")));
      CHECK(old.get("k") == bytes("old code"));
    }
    DiskStore s = DiskStore::open(store_options(tmp.file("store"), w));
    CHECK(!s.get("k"));
    CHECK(w->count("stale") == 1);
    CHECK(w->count("0.0.1+codegen.0") == 1);
    CHECK(w->count(std::string(kFusorVersion)) == 1);
    CHECK(s.put("k", bytes("new code")));
    CHECK(s.get("k") == bytes("new code"));
  }

  TEST_CASE("an entry of another format version is stale") {
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    DiskStore s = DiskStore::open(store_options(tmp.file("store"), w));
    CHECK(s.put("k", bytes("code")));
    std::string path = s.entry_path("k");
    std::string data = read_file(path);
    data[8] = char(DiskStore::kEntryFormatVersion + 1);  // the u32 after the magic
    write_file(path, data);
    CHECK(!s.get("k"));
    CHECK(w->count("stale") == 1);
    CHECK(w->count("entry format") == 1);
  }

  TEST_CASE("every cut and every flipped byte of an entry is a miss and never a crash") {
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    DiskStore s = DiskStore::open(store_options(tmp.file("store"), w));
    CHECK(s.put("key", bytes("0123456789abcdef")));
    std::string path = s.entry_path("key");
    const std::string good = read_file(path);
    for (size_t n = 0; n < good.size(); ++n) {
      write_file(path, good.substr(0, n));
      CHECK(!s.get("key"));
    }
    for (size_t i = 0; i < good.size(); ++i) {
      std::string bad = good;
      bad[i] = char(bad[i] ^ 0x01);
      write_file(path, bad);
      INFO("flipped byte ", i);
      CHECK(!s.get("key"));
    }
    write_file(path, good + "x");
    CHECK(!s.get("key"));
    write_file(path, good);
    CHECK(s.get("key") == bytes("0123456789abcdef"));
    CHECK(s.stats().hits == 1);
    CHECK(s.stats().corrupt == 2 * good.size() + 1);
  }

  TEST_CASE("each bad entry is warned about once") {
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    DiskStore s = DiskStore::open(store_options(tmp.file("store"), w));
    std::string path = s.entry_path("k");
    for (int i = 0; i < 3; ++i) {
      write_file(path, "garbage garbage garbage");
      CHECK(!s.get("k"));
    }
    CHECK(w->size() == 1);
    CHECK(s.stats().corrupt == 3);
  }

  TEST_CASE("a key whose hash collides with another's never loads the other's payload") {
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    DiskStore s = DiskStore::open(store_options(tmp.file("store"), w));
    CHECK(s.put("key A", bytes("payload of A")));
    // Make B's entry name hold A's entry: as if hash(B) == hash(A).
    fs::rename(s.entry_path("key A"), s.entry_path("key B"));
    CHECK(!s.get("key B"));
    CHECK(w->size() == 0);  // a valid entry of another key, not a bad one
    CHECK(s.stats().corrupt == 0);
    CHECK(fs::exists(s.entry_path("key B")));  // left alone
    CHECK(s.put("key B", bytes("payload of B")));
    CHECK(s.get("key B") == bytes("payload of B"));
  }

  TEST_CASE("8 threads writing the same and different keys while others read") {
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    DiskStore s = DiskStore::open(store_options(tmp.file("store"), w));
    constexpr int kThreads = 8, kShared = 16, kOwn = 16;
    std::atomic<int> invalid{0}, failed{0};
    std::atomic<bool> writing{true};
    std::latch start(kThreads + 2);
    std::vector<std::thread> readers, writers;
    for (int r = 0; r < 2; ++r)
      readers.emplace_back([&] {
        start.arrive_and_wait();
        while (writing.load())
          for (int i = 0; i < kShared; ++i)
            if (auto p = s.get(named("shared-", i)); p && !valid_stamp(*p, i)) invalid.fetch_add(1);
      });
    for (int t = 0; t < kThreads; ++t)
      writers.emplace_back([&, t] {
        start.arrive_and_wait();
        for (int round = 0; round < 3; ++round)
          for (int i = 0; i < kShared; ++i) {
            if (!s.put(named("shared-", i), stamped(i, t))) failed.fetch_add(1);
            if (round == 0 && !s.put(named("own-", t, i), stamped(i, t)))
              failed.fetch_add(1);
          }
      });
    for (auto& th : writers) th.join();
    writing = false;
    for (auto& th : readers) th.join();
    CHECK(invalid.load() == 0);
    CHECK(failed.load() == 0);
    CHECK(s.stats().corrupt == 0);
    CHECK(w->size() == 0);
    for (int i = 0; i < kShared; ++i) {
      auto p = s.get(named("shared-", i));
      REQUIRE(p);
      CHECK(valid_stamp(*p, i));
    }
    for (int t = 0; t < kThreads; ++t)
      for (int i = 0; i < kOwn; ++i) CHECK(s.get(named("own-", t, i)) == stamped(i, t));
    CHECK(s.entries().size() == size_t(kShared + kThreads * kOwn));
    for (const auto& e : fs::directory_iterator(tmp.file("store") + "/entries"))
      CHECK(e.path().filename().string().rfind(".tmp-", 0) != 0);  // no temp file left behind
  }

  TEST_CASE("2 processes writing the same and different keys while the parent reads") {
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    DiskStore s = DiskStore::open(store_options(tmp.file("store"), w));
    REQUIRE(s.enabled());
    constexpr int kKeys = 20;
    pid_t kids[2];
    for (int p = 0; p < 2; ++p) {
      std::fflush(nullptr);  // a child must not print what the parent had buffered
      pid_t pid = ::fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {  // the child: only plain code, then _exit (no doctest, no atexit)
        int bad = 0;
        DiskStore mine = DiskStore::open(store_options(tmp.file("store"), std::make_shared<Warnings>()));
        if (!mine.enabled()) ::_exit(2);
        for (int round = 0; round < 3; ++round)
          for (int i = 0; i < kKeys; ++i) {
            bad += !mine.put(named("shared-", i), stamped(i, p + 1));
            if (round == 0) bad += !mine.put(named("proc-", p, i), stamped(i, p));
            if (auto got = mine.get(named("shared-", i)); got && !valid_stamp(*got, i)) ++bad;
          }
        ::_exit(bad == 0 && mine.stats().corrupt == 0 ? 0 : 1);
      }
      kids[p] = pid;
    }
    int invalid = 0, running = 2, status[2] = {-1, -1};
    while (running > 0) {
      for (int i = 0; i < kKeys; ++i)
        if (auto got = s.get(named("shared-", i)); got && !valid_stamp(*got, i)) ++invalid;
      for (int p = 0; p < 2; ++p)
        if (status[p] == -1 && ::waitpid(kids[p], &status[p], WNOHANG) == kids[p]) --running;
    }
    for (int p = 0; p < 2; ++p) {
      INFO("child ", p);
      CHECK(WIFEXITED(status[p]));
      CHECK(WEXITSTATUS(status[p]) == 0);
    }
    CHECK(invalid == 0);
    CHECK(s.stats().corrupt == 0);
    CHECK(w->size() == 0);
    for (int i = 0; i < kKeys; ++i) {
      auto got = s.get(named("shared-", i));
      REQUIRE(got);
      CHECK(valid_stamp(*got, i));
      for (int p = 0; p < 2; ++p) CHECK(s.get(named("proc-", p, i)) == stamped(i, p));
    }
    CHECK(s.entries().size() == size_t(3 * kKeys));
  }

  TEST_CASE("trim removes the least recently used entries first") {
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    DiskStore s = DiskStore::open(store_options(tmp.file("store"), w));
    for (const char* k : {"a", "b", "c"}) CHECK(s.put(k, std::vector<uint8_t>(1000, uint8_t(k[0]))));
    int age = 3;
    for (const char* k : {"a", "b", "c"}) {  // a oldest, then b, then c
      struct timespec t[2] = {{1000000 * age, 0}, {1000000 * age, 0}};
      ::utimensat(AT_FDCWD, s.entry_path(k).c_str(), t, 0);
      age += 1;
    }
    CHECK(s.get("a"));  // a is used: now b is the least recently used
    uint64_t one = fs::file_size(s.entry_path("a"));
    CHECK(s.trim(2 * one) == 1);
    CHECK(!fs::exists(s.entry_path("b")));
    CHECK(s.get("a"));
    CHECK(s.get("c"));
    CHECK(s.entries().size() == 2);
    CHECK(s.trim(0) == 2);
    CHECK(s.entries().empty());
  }

  TEST_CASE("a folder at an entry's name is removed and the entry saved over it") {
    // (issue 20: it was warned about in every process and never healed)
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    DiskStore s = DiskStore::open(store_options(tmp.file("store"), w));
    const std::string at = s.entry_path("k");
    fs::create_directories(at + "/inside");
    std::ofstream(at + "/inside/file") << "x";
    CHECK_FALSE(s.get("k"));  // not an entry: warned, removed
    CHECK(w->count("not a regular file") == 1);
    CHECK_FALSE(fs::exists(at));
    fs::create_directories(at + "/again");  // and a save over a folder replaces it
    CHECK(s.put("k", bytes("payload")));
    CHECK(fs::is_regular_file(at));
    CHECK(s.get("k") == bytes("payload"));
  }

  TEST_CASE("saves past max_bytes trim the least recently used entries to 90% of it") {
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    DiskStore::Options o = store_options(tmp.file("store"), w);
    o.max_bytes = 20000;
    DiskStore s = DiskStore::open(o);
    for (int i = 0; i < 60; ++i) CHECK(s.put(named("k", i), std::vector<uint8_t>(1000, uint8_t(i))));
    uint64_t total = 0;
    for (const DiskStore::Entry& e : s.entries()) total += e.bytes;
    CHECK(total <= 20000);
    CHECK(total > 0);
    CHECK(s.get(named("k", 59)));  // the newest stay
    CHECK_FALSE(s.get(named("k", 0)));
    // Reopened, the bound still holds: it counts what the manifest lists.
    DiskStore again = DiskStore::open(o);
    for (int i = 60; i < 80; ++i) CHECK(again.put(named("k", i), std::vector<uint8_t>(1000, uint8_t(i))));
    total = 0;
    for (const DiskStore::Entry& e : again.entries()) total += e.bytes;
    CHECK(total <= 20000);
  }

  TEST_CASE("a folder with other files in it is not made into a store") {
    // (issue 20: `--cache-dir /` created entries/, manifest and lock in /)
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    fs::create_directories(tmp.file("home"));
    std::ofstream(tmp.file("home") + "/notes.txt") << "mine";
    DiskStore s = DiskStore::open(store_options(tmp.file("home"), w));
    CHECK_FALSE(s.enabled());
    CHECK(s.reason_disabled().find("already holds other files") != std::string::npos);
    CHECK_FALSE(fs::exists(tmp.file("home") + "/entries"));
    CHECK_FALSE(fs::exists(tmp.file("home") + "/manifest"));
    fs::create_directories(tmp.file("empty"));  // an empty folder, or a store, is fine
    CHECK(DiskStore::open(store_options(tmp.file("empty"), w)).enabled());
    CHECK(DiskStore::open(store_options(tmp.file("empty"), w)).enabled());
  }

  TEST_CASE("a FIFO at an entry's, the manifest's or the lock's name never blocks") {
    // (issue 19: the entry's blocking open hung every later run)
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    const std::string dir = tmp.file("store");
    {
      DiskStore s = DiskStore::open(store_options(dir, w));
      REQUIRE(::mkfifo(s.entry_path("k").c_str(), 0600) == 0);
      CHECK_FALSE(s.get("k"));
      CHECK(w->count("not a regular file") == 1);
      CHECK_FALSE(fs::exists(s.entry_path("k")));  // removed
      CHECK(s.put("k", bytes("v")));
      CHECK(s.get("k") == bytes("v"));
    }
    fs::remove(dir + "/manifest");
    fs::remove(dir + "/lock");
    REQUIRE(::mkfifo((dir + "/manifest").c_str(), 0600) == 0);
    REQUIRE(::mkfifo((dir + "/lock").c_str(), 0600) == 0);
    DiskStore again = DiskStore::open(store_options(dir, w));  // returns: no lock, no manifest
    CHECK(again.get("k") == bytes("v"));
  }

  TEST_CASE("a sparse giant at an entry's name is a bad entry, not bad_alloc") {
    // (issue 19: a 64 GiB sparse file was read st_size bytes at once)
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    DiskStore s = DiskStore::open(store_options(tmp.file("store"), w));
    REQUIRE(s.put("k", bytes("v")));
    REQUIRE(::truncate(s.entry_path("k").c_str(), off_t(64) << 30) == 0);
    CHECK_FALSE(s.get("k"));
    CHECK(w->count("more than any entry") == 1);
    CHECK_FALSE(fs::exists(s.entry_path("k")));
    CHECK(s.put("k", bytes("v")));
    CHECK(s.get("k") == bytes("v"));
  }

  TEST_CASE("a missing or unknown manifest is rebuilt from the entries") {
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    std::string dir = tmp.file("store");
    {
      DiskStore s = DiskStore::open(store_options(dir, w));
      CHECK(s.put("a", bytes("1")));
      CHECK(s.put("b", bytes("22")));
    }
    fs::remove(dir + "/manifest");
    CHECK(DiskStore::open(store_options(dir, w)).entries().size() == 2);
    write_file(dir + "/manifest", "fusor-disk-store-manifest 99\nput 0000000000000001 5\n");
    CHECK(DiskStore::open(store_options(dir, w)).entries().size() == 2);
    // A torn last record (a writer died mid-line) is ignored.
    {
      std::ofstream out(dir + "/manifest", std::ios::app);
      out << "put 00000000000";
    }
    DiskStore s = DiskStore::open(store_options(dir, w));
    CHECK(s.entries().size() == 2);
    CHECK(s.put("c", bytes("333")));
    CHECK(s.entries().size() == 3);
    fs::remove(s.entry_path("c"));  // removed behind the manifest's back
    s.rebuild_manifest();
    CHECK(s.entries().size() == 2);
    CHECK(w->size() == 0);
  }
}
