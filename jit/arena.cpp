#include "jit/arena.h"

#include <algorithm>
#include <cstdlib>

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

std::shared_ptr<void> ArenaPool::acquire(int64_t bytes) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    size_t best = spare_.size();
    for (size_t i = 0; i < spare_.size(); ++i)
      if (spare_[i].first >= bytes && (best == spare_.size() || spare_[i].first < spare_[best].first)) best = i;
    if (best < spare_.size()) {
      std::shared_ptr<void> b = std::move(spare_[best].second);
      spare_bytes_ -= uint64_t(spare_[best].first);
      spare_.erase(spare_.begin() + std::ptrdiff_t(best));
      return b;
    }
  }
  size_t rounded = size_t(std::max<int64_t>(bytes, 1) + int64_t(kTensorAlignment) - 1) / kTensorAlignment * kTensorAlignment;
  void* p = std::aligned_alloc(kTensorAlignment, rounded);
  if (!p) fail(ErrorCode::OutOfMemory, "cannot allocate a ", bytes, "-byte arena for intermediates");
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

void ArenaPool::release(std::shared_ptr<void> block, int64_t bytes) {
  std::lock_guard<std::mutex> lk(mu_);
  const uint64_t b = uint64_t(bytes);
  if (max_spare_bytes_ != 0 && b > max_spare_bytes_) return;  // freed: larger than the whole stock may be
  // Make room by dropping the smallest blocks (large ones are the expensive ones to fault
  // in again), unless the new block is the smallest.
  auto over = [&] { return spare_.size() >= kMaxSpare || (max_spare_bytes_ != 0 && spare_bytes_ + b > max_spare_bytes_); };
  while (!spare_.empty() && over()) {
    auto smallest = std::min_element(spare_.begin(), spare_.end(), [](auto& x, auto& y) { return x.first < y.first; });
    if (smallest->first >= bytes) return;
    spare_bytes_ -= uint64_t(smallest->first);
    spare_.erase(smallest);
  }
  spare_bytes_ += b;
  spare_.emplace_back(bytes, std::move(block));
}

uint64_t ArenaPool::spare_bytes() const {
  std::lock_guard<std::mutex> lk(mu_);
  return spare_bytes_;
}

}  // namespace fusor
