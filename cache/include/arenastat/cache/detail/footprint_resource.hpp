// footprint_resource: what an untracked sharded_cache holds, with its exact
// peak. The shards allocate under their own locks, concurrently; summing
// each shard's own peak counted bytes that were never held at once (one shard
// full, cleared, then another filled). Every block of the cache goes through
// this one resource, so the total is one counter and its peak the largest
// value that counter took. The caches allocate rarely (their table at the
// first insertion, a page of entries per 4096), so two relaxed atomic
// operations per allocation cost nothing measurable.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory_resource>

namespace arenastat::detail {

class footprint_resource final : public std::pmr::memory_resource {
 public:
  explicit footprint_resource(std::pmr::memory_resource* upstream) noexcept : upstream_(upstream) {}
  footprint_resource(const footprint_resource&) = delete;
  footprint_resource& operator=(const footprint_resource&) = delete;

  std::uint64_t bytes() const noexcept { return bytes_.load(std::memory_order_relaxed); }
  std::uint64_t peak() const noexcept { return peak_.load(std::memory_order_relaxed); }

 private:
  void* do_allocate(std::size_t n, std::size_t align) override {
    void* p = upstream_->allocate(n, align);
    const std::uint64_t now = bytes_.fetch_add(n, std::memory_order_relaxed) + n;
    std::uint64_t seen = peak_.load(std::memory_order_relaxed);
    while (now > seen && !peak_.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
    }
    return p;
  }
  // Counted before the block goes back (and after it came): the count never
  // exceeds what the cache holds, so neither does its peak.
  void do_deallocate(void* p, std::size_t n, std::size_t align) override {
    bytes_.fetch_sub(n, std::memory_order_relaxed);
    upstream_->deallocate(p, n, align);
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }

  std::pmr::memory_resource* upstream_;
  std::atomic<std::uint64_t> bytes_{0};
  std::atomic<std::uint64_t> peak_{0};
};

}  // namespace arenastat::detail
