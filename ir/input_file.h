// Opening a file the user named for reading (a graph, an npy input). Layer: ir.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

namespace fusor {

struct InputFileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using InputFile = std::unique_ptr<std::FILE, InputFileCloser>;

/// `path` opened for reading, after checking that it is a regular file: it is opened without
/// blocking, so a FIFO or a device (which would block, or never end) is refused, as is a
/// folder. Throws Error(Io) "cannot open <what> '<path>': <reason>" or "<what> '<path>' is
/// not a regular file". *size (if given) receives the file's size.
InputFile open_input_file(const std::string& path, std::string_view what, uint64_t* size = nullptr);

}  // namespace fusor
