// Tests of DiskStore's directory handling (cache/disk_store.h): the default directory, a
// missing one created private, and unusable ones (cannot be created, read-only, writable by
// others, another user's) disabling the store with a warning and a reason, never a throw.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "cache/disk_store.h"
#include "tests/support/disk_store_util.h"
#include "tests/support/temp_dir.h"

using namespace fusor;
using namespace fusor::test;
namespace fs = std::filesystem;

TEST_SUITE("cache/disk_store_dir") {
  TEST_CASE("a missing directory is created private") {
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    std::string dir = tmp.file("deep/er/store");
    DiskStore s = DiskStore::open(store_options(dir, w));
    REQUIRE(s.enabled());
    struct stat st;
    REQUIRE(::stat(dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    CHECK(s.put("k", bytes("v")));
    CHECK(s.get("k") == bytes("v"));
  }

  TEST_CASE("a directory that cannot be created disables the store with a warning") {
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    write_file(tmp.file("a-file"), "x");
    std::string dir = tmp.file("a-file") + "/store";
    DiskStore s = DiskStore::open(store_options(dir, w));
    CHECK(!s.enabled());
    CHECK(s.reason_disabled().find("cannot create") != std::string::npos);
    CHECK(s.reason_disabled().find(dir) != std::string::npos);
    CHECK(w->count("memory only") == 1);
    CHECK(!s.get("k"));
    CHECK(!s.put("k", bytes("v")));
    CHECK(s.entries().empty());
    CHECK(s.trim(0) == 0);
    CHECK(s.stats().loads == 0);
  }

  TEST_CASE("a directory others can write is refused") {
    test::TempDir tmp("disk-store");
    for (mode_t mode : {mode_t(0777), mode_t(0770), mode_t(0702)}) {
      auto w = std::make_shared<Warnings>();
      std::string name = "shared";
      name += std::to_string(int(mode));
      std::string dir = tmp.file(name);
      fs::create_directory(dir);
      ::chmod(dir.c_str(), mode);
      DiskStore s = DiskStore::open(store_options(dir, w));
      INFO("mode ", mode);
      CHECK(!s.enabled());
      CHECK(s.reason_disabled().find("writable by group or others") != std::string::npos);
      CHECK(s.reason_disabled().find("chmod go-w " + dir) != std::string::npos);
      CHECK(w->count(dir) == 1);
      CHECK(!s.put("k", bytes("v")));
      CHECK(!fs::exists(dir + "/entries"));  // nothing written into it
    }
    // The same check holds for the entries folder inside.
    auto w = std::make_shared<Warnings>();
    std::string dir = tmp.file("inner");
    { CHECK(DiskStore::open(store_options(dir, w)).enabled()); }
    ::chmod((dir + "/entries").c_str(), 0777);
    CHECK(!DiskStore::open(store_options(dir, w)).enabled());
  }

  TEST_CASE("a sticky directory others may write is refused too") {
    // (issue 19: others could plant a FIFO at the names the store opens)
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    std::string dir = tmp.file("sticky");
    fs::create_directory(dir);
    ::chmod(dir.c_str(), 01777);
    DiskStore s = DiskStore::open(store_options(dir, w));
    CHECK_FALSE(s.enabled());
    CHECK(s.reason_disabled().find("writable by group or others") != std::string::npos);
    CHECK_FALSE(s.put("k", bytes("v")));
  }

  TEST_CASE("a directory of another user is refused") {
    if (::geteuid() != 0) {
      MESSAGE("skipped: needs root to give a folder to another user");
      return;
    }
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    std::string dir = tmp.file("theirs");
    fs::create_directory(dir);
    ::chmod(dir.c_str(), 0755);
    REQUIRE(::chown(dir.c_str(), 65534, 65534) == 0);
    DiskStore s = DiskStore::open(store_options(dir, w));
    CHECK(!s.enabled());
    CHECK(s.reason_disabled().find("belongs to uid 65534") != std::string::npos);
  }

  TEST_CASE("a read-only directory disables the store with a warning") {
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    std::string dir = tmp.file("store");
    {
      DiskStore s = DiskStore::open(store_options(dir, w));
      REQUIRE(s.put("k", bytes("v")));
    }
    ::chmod((dir + "/entries").c_str(), 0500);
    ::chmod(dir.c_str(), 0500);
    if (::geteuid() != 0) {
      DiskStore s = DiskStore::open(store_options(dir, w));
      CHECK(!s.enabled());
      CHECK(s.reason_disabled().find("not writable") != std::string::npos);
      CHECK(s.reason_disabled().find(dir) != std::string::npos);
      CHECK(w->count("memory only") == 1);
      CHECK(!s.get("k"));
      CHECK(!s.put("k", bytes("v")));
    } else {
      // Root ignores permission bits: hand the store to an unprivileged user and open it as
      // that user in a child process.
      REQUIRE(::chown(dir.c_str(), 65534, 65534) == 0);
      for (const auto& e : fs::recursive_directory_iterator(dir)) REQUIRE(::chown(e.path().c_str(), 65534, 65534) == 0);
      std::fflush(nullptr);  // a child must not print what the parent had buffered
      pid_t pid = ::fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
        auto cw = std::make_shared<Warnings>();
        DiskStore s = DiskStore::open(store_options(dir, cw));
        bool ok = !s.enabled() && s.reason_disabled().find("not writable") != std::string::npos &&
                  s.reason_disabled().find(dir) != std::string::npos && cw->count("memory only") == 1 &&
                  !s.get("k") && !s.put("k", bytes("v"));
        ::_exit(ok ? 0 : 1);
      }
      int status = 0;
      REQUIRE(::waitpid(pid, &status, 0) == pid);
      CHECK(WIFEXITED(status));
      CHECK(WEXITSTATUS(status) == 0);
    }
  }

  TEST_CASE("the default directory follows FUSOR_CACHE_DIR then XDG_CACHE_HOME then HOME") {
    auto saved = [](const char* name) -> std::optional<std::string> {
      const char* v = std::getenv(name);
      return v ? std::optional<std::string>(v) : std::nullopt;
    };
    auto f = saved("FUSOR_CACHE_DIR"), x = saved("XDG_CACHE_HOME"), h = saved("HOME");
    ::setenv("FUSOR_CACHE_DIR", "/some/where", 1);
    ::setenv("XDG_CACHE_HOME", "/xdg", 1);
    ::setenv("HOME", "/home/me", 1);
    CHECK(DiskStore::default_dir() == "/some/where");
    ::unsetenv("FUSOR_CACHE_DIR");
    CHECK(DiskStore::default_dir() == "/xdg/fusor");
    ::setenv("XDG_CACHE_HOME", "relative/is/ignored", 1);
    CHECK(DiskStore::default_dir() == "/home/me/.cache/fusor");
    ::unsetenv("XDG_CACHE_HOME");
    CHECK(DiskStore::default_dir() == "/home/me/.cache/fusor");
    test::TempDir tmp("disk-store");
    ::setenv("FUSOR_CACHE_DIR", tmp.file("from-env").c_str(), 1);
    DiskStore::Options o;
    o.warn = [](const std::string&) {};
    DiskStore s = DiskStore::open(o);
    CHECK(s.dir() == tmp.file("from-env"));
    CHECK(s.enabled());
    auto restore = [](const char* name, const std::optional<std::string>& v) {
      if (v)
        ::setenv(name, v->c_str(), 1);
      else
        ::unsetenv(name);
    };
    restore("FUSOR_CACHE_DIR", f);
    restore("XDG_CACHE_HOME", x);
    restore("HOME", h);
  }

  TEST_CASE("a moved-from store is disabled and safe to use") {
    test::TempDir tmp("disk-store");
    auto w = std::make_shared<Warnings>();
    DiskStore a = DiskStore::open(store_options(tmp.file("store"), w));
    DiskStore b = std::move(a);
    CHECK(b.enabled());
    CHECK(!a.enabled());  // NOLINT(bugprone-use-after-move): moved-from is specified
    CHECK(!a.get("k"));
    CHECK(!a.put("k", bytes("v")));
  }
}
