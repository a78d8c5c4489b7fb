#include "tests/support/redis_server.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

extern char** environ;

namespace fusor::test {

namespace {

// The path of redis-server, or "" when it is not installed.
std::string find_redis_server() {
  for (const char* p : {"/usr/bin/redis-server", "/usr/local/bin/redis-server", "/usr/sbin/redis-server"})
    if (::access(p, X_OK) == 0) return p;
  return "";
}

// A port the kernel calls free now (bound to 0, read back, released).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

}  // namespace

std::unique_ptr<RedisServer> RedisServer::start_or_skip(std::vector<std::string> extra) {
  const char* require = std::getenv("FUSOR_REQUIRE_REDIS");
  const bool required = require && std::string(require) == "1";
  if (find_redis_server().empty()) {
    if (required) FAIL_CHECK("redis-server is not installed, and FUSOR_REQUIRE_REDIS=1 (scripts/install-deps.sh installs it)");
    else MESSAGE("skipped: redis-server is not installed (Debian: redis-server; scripts/install-deps.sh)");
    return nullptr;
  }
  std::unique_ptr<RedisServer> s(new RedisServer());
  s->extra_ = std::move(extra);
  for (int attempt = 0; attempt < 5; ++attempt) {
    s->port_ = free_port();
    if (s->port_ && s->launch()) return s;
  }
  FAIL_CHECK("redis-server did not start on a free loopback port (5 attempts)");
  return nullptr;
}

RedisServer::~RedisServer() { kill(); }

std::string RedisServer::url() const {
  return std::string("redis://:") + kPassword + "@127.0.0.1:" + std::to_string(port_) + "/0";
}
std::string RedisServer::url_without_password() const { return "redis://127.0.0.1:" + std::to_string(port_) + "/0"; }

bool RedisServer::launch() {
  const std::string bin = find_redis_server();
  std::vector<std::string> args{bin,
                                "--port", std::to_string(port_),
                                "--bind", "127.0.0.1",
                                "--requirepass", kPassword,
                                "--save", "",
                                "--appendonly", "no",
                                "--daemonize", "no",
                                "--enable-debug-command", "local",
                                "--dir", dir_.path().string(),
                                "--logfile", dir_.file("redis.log")};
  args.insert(args.end(), extra_.begin(), extra_.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (::posix_spawn(&pid_, bin.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
    pid_ = -1;
    return false;
  }
  // Ready when it answers; gone when it exited (the port was taken meanwhile).
  for (int i = 0; i < 500; ++i) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    if (command({"PING"}) == "PONG") return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill();
  return false;
}

void RedisServer::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

bool RedisServer::restart() {
  kill();
  for (int i = 0; i < 50; ++i) {  // the port may linger a moment after the kill
    if (launch()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

namespace {

redisReply* run(redisContext* c, const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const std::string& s : args) {
    argv.push_back(s.data());
    lens.push_back(s.size());
  }
  return static_cast<redisReply*>(redisCommandArgv(c, int(argv.size()), argv.data(), lens.data()));
}

// A connection that has sent AUTH, or null with *why.
redisContext* connect(int port, std::string* why) {
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port, timeval{2, 0});
  if (!c || c->err) {
    *why = c ? c->errstr : "out of memory";
    if (c) redisFree(c);
    return nullptr;
  }
  redisSetTimeout(c, timeval{30, 0});
  if (redisReply* auth = run(c, {"AUTH", RedisServer::kPassword})) freeReplyObject(auth);
  return c;
}

}  // namespace

std::vector<std::string> RedisServer::keys(const std::string& pattern) const {
  std::vector<std::string> out;
  std::string why;
  redisContext* c = connect(port_, &why);
  if (!c) return out;
  if (redisReply* r = run(c, {"KEYS", pattern})) {
    if (r->type == REDIS_REPLY_ARRAY)
      for (size_t i = 0; i < r->elements; ++i) out.emplace_back(r->element[i]->str, r->element[i]->len);
    freeReplyObject(r);
  }
  redisFree(c);
  std::sort(out.begin(), out.end());
  return out;
}

std::string RedisServer::command(const std::vector<std::string>& args) const {
  std::string why;
  redisContext* c = connect(port_, &why);
  if (!c) return "IO: " + why;
  std::string out;
  redisReply* r = run(c, args);
  if (!r) {
    out = std::string("IO: ") + c->errstr;
  } else {
    switch (r->type) {
      case REDIS_REPLY_STRING:
      case REDIS_REPLY_STATUS: out.assign(r->str, r->len); break;
      case REDIS_REPLY_ERROR: out = "ERR: " + std::string(r->str, r->len); break;
      case REDIS_REPLY_INTEGER: out = std::to_string(r->integer); break;
      case REDIS_REPLY_NIL: out = "(nil)"; break;
      default: out = "(array " + std::to_string(r->elements) + ")"; break;
    }
    freeReplyObject(r);
  }
  redisFree(c);
  return out;
}

}  // namespace fusor::test
