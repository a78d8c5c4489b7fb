// RedisServer: a redis-server of a test's own, on loopback, on a free port, with a password,
// that the test can kill, restart, stall and reconfigure; and raw commands to it (to plant
// tampered values). Where redis-server is not installed the test is skipped with the reason,
// unless FUSOR_REQUIRE_REDIS=1 (set by .ci/run, which installs it): then it fails.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace fusor::test {

class RedisServer {
 public:
  /// The server's password (also what url() carries).
  static constexpr const char* kPassword = "fusor-test-password";

  /// A running server with `extra` arguments (e.g. {"--maxmemory", "1mb"}), or null after
  /// a MESSAGE "skipped: ..." when redis-server is missing (a failed CHECK under
  /// FUSOR_REQUIRE_REDIS=1).
  static std::unique_ptr<RedisServer> start_or_skip(std::vector<std::string> extra = {});
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  /// redis://:<password>@127.0.0.1:<port>/0
  std::string url() const;
  /// The same URL without the password (for FUSOR_REDIS_PASSWORD tests).
  std::string url_without_password() const;

  /// Kills the server (SIGKILL, no shutdown) and waits for it.
  void kill();
  /// Starts it again on the same port, empty; true when it accepts connections.
  bool restart();

  /// Runs one command on a new connection and returns the reply as text: a string's bytes,
  /// an integer's digits, a status ("OK"), "(nil)", "(array N)", or "ERR: <message>";
  /// "IO: <why>" when the server cannot be reached.
  std::string command(const std::vector<std::string>& args) const;
  /// The names matching `pattern` (KEYS), sorted.
  std::vector<std::string> keys(const std::string& pattern) const;

 private:
  RedisServer() : dir_("redis") {}
  bool launch();
  TempDir dir_;
  std::vector<std::string> extra_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace fusor::test
