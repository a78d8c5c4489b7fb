// run_command: runs a shell command line and returns its exit code and its output (stdout
// and stderr together), for tests of the command-line tools and the examples.
#pragma once

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace fusor::test {

/// The outcome of a command: its exit code (-1 when it did not exit normally) and its
/// output, standard error included.
struct CommandResult {
  int code = -1;
  std::string out;
};

/// Runs `command` through the shell with `2>&1` appended (quote arguments as the shell
/// needs). Standard error is therefore not a terminal: tools print plain progress lines.
inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace fusor::test
