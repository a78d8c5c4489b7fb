// TempDir: a fresh folder under the system temp directory for one test, removed when the test
// ends. Names carry a random suffix so parallel test processes never share a folder.
#pragma once

#include <filesystem>
#include <random>
#include <string>
#include <system_error>

namespace fusor::test {

/// A unique, empty temporary folder that is deleted (with its contents) on destruction.
class TempDir {
 public:
  /// Creates <temp>/fusor-<label>-<random>.
  explicit TempDir(const std::string& label) {
    std::random_device rd;
    for (;;) {
      path_ = std::filesystem::temp_directory_path() /
              ("fusor-" + label + "-" + std::to_string(rd()) + std::to_string(rd()));
      if (std::filesystem::create_directories(path_)) break;  // false: it existed; try another
    }
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  /// The folder.
  const std::filesystem::path& path() const { return path_; }
  /// The path of a file in the folder, as a string.
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace fusor::test
