// The files an ONNX model is read from: the model file itself and its external data, opened
// as untrusted input (Note [Reading model files] in model_files.cpp). Layer: onnx (internal;
// std, POSIX and ir only).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace fusor::onnx_import {

/// The largest model file the loader reads (protobuf parses at most 2 GiB; larger models
/// keep their weights in external data).
inline constexpr uint64_t kMaxModelBytes = (uint64_t(1) << 31) - 1;

/// Reads a whole file of at most `max_bytes` bytes: opened without blocking, refused unless
/// it is a regular file (Io naming `what` and the path), Unsupported when larger.
std::string read_regular_file(const std::string& path, uint64_t max_bytes, const std::string& what);

/// The external data files of one model, found under one folder. Each file is opened once
/// (the descriptors close with this object).
class ExternalFiles {
 public:
  /// `base_dir` is the model's folder (empty: every read is refused); `source` names the
  /// model in messages.
  ExternalFiles(std::string base_dir, std::string source);
  ~ExternalFiles();
  ExternalFiles(const ExternalFiles&) = delete;
  ExternalFiles& operator=(const ExternalFiles&) = delete;

  /// Checks, before the caller allocates, that `location` opens as a regular file holding
  /// `nbytes` bytes at `offset` (and that `length`, -1 when the model gives none, equals
  /// nbytes). Throws what read() throws.
  void check(const std::string& location, int64_t offset, int64_t length, uint64_t nbytes, const std::string& what);

  /// Reads `nbytes` bytes at `offset` of the file `location` (relative to the folder) into
  /// dst, for tensor `tensor`. `length` (-1 when the model gives none) must equal nbytes.
  /// Throws Io (missing, unreadable, not a regular file, a symbolic link, shorter than
  /// offset + nbytes) or ParseError (a location that is absolute or leaves the folder, a
  /// length that does not match the shape).
  void read(const std::string& location, int64_t offset, int64_t length, void* dst, uint64_t nbytes,
            const std::string& what);

 private:
  struct File {
    int fd = -1;
    uint64_t size = 0;
  };
  const File& open_file(const std::string& location, const std::string& what);

  std::string base_dir_;
  std::string source_;
  std::map<std::string, File> files_;
};

}  // namespace fusor::onnx_import
