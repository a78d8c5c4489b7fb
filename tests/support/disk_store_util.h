// Helpers for the disk store tests: a warning collector, store options pointing at a test
// folder, and whole-file read/write.
#pragma once

#include <algorithm>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cache/disk_store.h"

namespace fusor::test {

/// Collects a store's warnings (from any thread).
struct Warnings {
  std::mutex mu;
  std::vector<std::string> list;
  /// How many warnings contain needle.
  size_t count(const std::string& needle) {
    std::lock_guard<std::mutex> lk(mu);
    return size_t(std::count_if(list.begin(), list.end(),
                                [&](const std::string& w) { return w.find(needle) != std::string::npos; }));
  }
  /// How many warnings.
  size_t size() {
    std::lock_guard<std::mutex> lk(mu);
    return list.size();
  }
  /// A sink that appends to this (which must outlive it).
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& m) {
      std::lock_guard<std::mutex> lk(mu);
      list.push_back(m);
    };
  }
};

/// Options for a store in dir whose warnings go to w.
inline DiskStore::Options store_options(const std::string& dir, const std::shared_ptr<Warnings>& w,
                                        std::string version = "") {
  DiskStore::Options o;
  o.dir = dir;
  o.engine_version = std::move(version);
  o.warn = [w](const std::string& m) {
    std::lock_guard<std::mutex> lk(w->mu);
    w->list.push_back(m);
  };
  return o;
}

/// The bytes of a string.
inline std::vector<uint8_t> bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

/// A whole file's contents (empty when missing).
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Replaces a file's contents.
inline void write_file(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), std::streamsize(data.size()));
}

}  // namespace fusor::test
