#include "jit/arena.h"

#include <algorithm>
#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "ir/error.h"
#include "ir/tensor.h"

namespace fusor {

int64_t layout_arena(const std::vector<ArenaItem>& items, std::vector<int64_t>* offsets) {
  auto align = [](int64_t b) { return (b + int64_t(kTensorAlignment) - 1) / int64_t(kTensorAlignment) * int64_t(kTensorAlignment); };
  offsets->assign(items.size(), -1);
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return items[a].bytes > items[b].bytes; });
  std::vector<size_t> placed;
  int64_t total = 0;
  for (size_t i : order) {
    const ArenaItem& it = items[i];
    int64_t size = align(std::max<int64_t>(it.bytes, 1));
    // Blocks of items alive at the same time, by offset; take the first gap that fits.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t j : placed)
      if (items[j].first <= it.last && it.first <= items[j].last)
        busy.emplace_back((*offsets)[j], (*offsets)[j] + align(std::max<int64_t>(items[j].bytes, 1)));
    std::sort(busy.begin(), busy.end());
    int64_t at = 0;
    for (auto [b, e] : busy) {
      if (at + size <= b) break;
      at = std::max(at, e);
    }
    (*offsets)[i] = at;
    total = std::max(total, at + size);
    placed.push_back(i);
  }
  return total;
}

// Note [Arena blocks]
// ~~~~~~~~~~~~~~~~~~~
// A run's intermediates live in one block from the engine's pool, recycled across runs, so a
// steady state touches no fresh page. A block is given back with the capacity it has, not the
// bytes its run asked for: the smallest block in stock that is large enough serves a smaller
// arena, and must still serve a larger one after it.
//
// A never-seen shape (a new sequence length, usually a little longer than the last) needs a
// larger arena than any in stock, and a fresh block costs a page fault per 4 KiB page on its
// first run: the BERT layer's 1.8 MB at 128 tokens is ~450 faults, 1.5-2 ms in a VM guest,
// a fifth of the run. So a new block is
//  - sized by class, four per octave (2^k x 1, 1.25, 1.5, 1.75: at most 25% over), from
//    64 KiB: the next few lengths fit in it;
//  - from 2 MiB, a whole number of 2 MiB huge pages, aligned to one and advised as
//    transparent huge pages (madvise(MADV_HUGEPAGE); Linux's default THP mode "madvise"
//    honours it): one fault per 2 MiB instead of 512, and fewer TLB misses in every run.
// The stock counts blocks by their capacity; the plan budget charges a plan its layout's
// bytes (arena_bytes), at most a fifth less. On the BERT layer served at lengths 100-139 in
// turn (one thread), each new length's first run took 2.2-2.5 ms longer than its second
// before, 0.5 ms after.

namespace {

constexpr int64_t kHugePage = int64_t(2) << 20;

void advise_huge_pages([[maybe_unused]] void* p, [[maybe_unused]] size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  (void)madvise(p, bytes, MADV_HUGEPAGE);  // advice: a kernel without THP keeps 4 KiB pages
#endif
}

}  // namespace

int64_t arena_block_capacity(int64_t bytes) {
  const int64_t align = int64_t(kTensorAlignment);
  int64_t b = (std::max<int64_t>(bytes, 1) + align - 1) / align * align;
  if (b < (int64_t(64) << 10)) return b;
  int64_t octave = int64_t(1) << (63 - __builtin_clzll(uint64_t(b)));  // the power of two at or below b
  int64_t cap = octave;
  for (int quarter = 1; cap < b; ++quarter) cap = octave + octave / 4 * quarter;
  if (cap >= kHugePage) cap = (cap + kHugePage - 1) / kHugePage * kHugePage;
  return cap;
}

ArenaBlock ArenaPool::acquire(int64_t bytes) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    size_t best = spare_.size();
    for (size_t i = 0; i < spare_.size(); ++i)
      if (spare_[i].bytes >= bytes && (best == spare_.size() || spare_[i].bytes < spare_[best].bytes)) best = i;
    if (best < spare_.size()) {
      ArenaBlock b = std::move(spare_[best]);
      spare_bytes_ -= uint64_t(b.bytes);
      spare_.erase(spare_.begin() + std::ptrdiff_t(best));
      return b;
    }
  }
  const int64_t cap = arena_block_capacity(bytes);
  const bool huge = cap >= kHugePage;
  void* p = std::aligned_alloc(huge ? size_t(kHugePage) : kTensorAlignment, size_t(cap));
  if (!p) fail(ErrorCode::OutOfMemory, "cannot allocate a ", bytes, "-byte arena for intermediates");
  if (huge) advise_huge_pages(p, size_t(cap));
  return ArenaBlock{std::shared_ptr<void>(p, [](void* q) { std::free(q); }), cap};
}

void ArenaPool::release(ArenaBlock block) {
  std::lock_guard<std::mutex> lk(mu_);
  const uint64_t b = uint64_t(block.bytes);
  if (max_spare_bytes_ != 0 && b > max_spare_bytes_) return;  // freed: larger than the whole stock may be
  // Make room by dropping the smallest blocks (large ones are the expensive ones to fault
  // in again), unless the new block is the smallest.
  auto over = [&] { return spare_.size() >= kMaxSpare || (max_spare_bytes_ != 0 && spare_bytes_ + b > max_spare_bytes_); };
  while (!spare_.empty() && over()) {
    auto smallest = std::min_element(spare_.begin(), spare_.end(), [](auto& x, auto& y) { return x.bytes < y.bytes; });
    if (smallest->bytes >= block.bytes) return;
    spare_bytes_ -= uint64_t(smallest->bytes);
    spare_.erase(smallest);
  }
  spare_bytes_ += b;
  spare_.push_back(std::move(block));
}

uint64_t ArenaPool::spare_bytes() const {
  std::lock_guard<std::mutex> lk(mu_);
  return spare_bytes_;
}

}  // namespace fusor
