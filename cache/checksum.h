// checksum64: the 64-bit checksum of disk-store entries and the hash that names them: XXH64,
// fast on large payloads and identical on every machine (it reads bytes little-endian).
// Layer: cache (std only).
#pragma once

#include <cstddef>
#include <cstdint>

namespace fusor {

/// The XXH64 hash of [data, data + size) with seed. Not cryptographic.
uint64_t checksum64(const void* data, size_t size, uint64_t seed = 0);

}  // namespace fusor
