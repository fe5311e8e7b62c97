// arena_resource: a chunked bump arena as a std::pmr::memory_resource.
//
// Allocation bumps a pointer inside the current chunk (inline, no lock, no
// atomic). When a request does not fit, a new chunk is taken from upstream
// (the slow path) and reported through the grow hook, whose admit() is asked
// first (a scope's limit refuses a chunk before upstream is asked); the
// upstream is called under an upstream_call, so tracked resources below do
// not charge the thread's scopes again (context.hpp); deallocate is a no-op;
// release() and the destructor give every chunk back, each reported too.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <string_view>

#include "arenastat/account.hpp"
#include "arenastat/grow_hook.hpp"
#include "arenastat/tags.hpp"

namespace arenastat {

// Growth policy as data. Chunk sizes are what is taken from upstream,
// header included: initial, initial*factor, ... capped at max_chunk.
struct arena_options {
  std::size_t initial_chunk = 4096;
  double growth_factor = 2.0;
  std::size_t max_chunk = std::size_t{1} << 20;
  std::string_view account = {};   // charge this account too ("" = none)
  grow_hook* hook = nullptr;       // nullptr: tracking_hook()
};

class arena_resource final : public std::pmr::memory_resource {
 public:
  // Bytes of bookkeeping at the start of every chunk.
  static constexpr std::size_t chunk_header_size = 64;
  static constexpr std::size_t chunk_alignment = alignof(std::max_align_t);

  // Throws std::invalid_argument naming the field for a bad tag or policy, or
  // when options.account is already charged by a resource of the upstream
  // stack (its bytes would count twice there: docs/concepts.md).
  explicit arena_resource(std::string_view tag,
                          std::pmr::memory_resource* upstream = std::pmr::get_default_resource());
  arena_resource(std::string_view tag, const arena_options& options,
                 std::pmr::memory_resource* upstream = std::pmr::get_default_resource());
  ~arena_resource() override {
    release();
    if (account_) account_->detach_resource();  // the last one checks for leaks (leaks.hpp)
  }
  arena_resource(const arena_resource&) = delete;
  arena_resource& operator=(const arena_resource&) = delete;

  // Gives every chunk back upstream; the next chunk has the initial size again.
  void release() noexcept;

  // Called through arena_resource (a final class) these are the bump path
  // itself, inlined: memory_resource::allocate reaches do_allocate through the
  // vtable, and GCC 12 does not devirtualise that through an arena_resource&
  // (it loads the vtable entry and compares it with do_allocate on every
  // request). Through memory_resource* the same code runs, virtually.
  [[nodiscard]] void* allocate(std::size_t bytes, std::size_t alignment = alignof(std::max_align_t)) {
    return arena_resource::do_allocate(bytes, alignment);
  }
  void deallocate(void*, std::size_t, std::size_t = alignof(std::max_align_t)) noexcept {}

  std::size_t bytes_reserved() const noexcept { return reserved_; }    // chunks held
  // Asked of allocate: what was asked before `mark_` plus what the fast path
  // bumped since (it adds no padding), so the fast path keeps no count.
  std::size_t bytes_requested() const noexcept {
    return requested_before_ + static_cast<std::size_t>(cur_ - mark_);
  }
  std::size_t chunk_count() const noexcept { return chunks_; }
  std::size_t next_chunk_size() const noexcept { return next_size_; }
  tag_id tag() const noexcept { return tag_; }
  std::pmr::memory_resource* upstream() const noexcept { return upstream_; }
  // The account its chunks are charged to (arena_options::account), or null.
  account* charged_account() const noexcept { return account_; }

 protected:
  // Fast path: the bump pointer is already aligned and `bytes` fit in what is
  // left (compared as a difference: no overflow for any size). One test covers
  // both the alignment and the bump pointer: ((alignment | cur) & (alignment - 1))
  // is zero only for a power-of-two alignment (0 gives a mask of all ones and
  // a non-zero pointer) that the pointer already meets, as it does whenever
  // request sizes are multiples of their alignment. Everything else, including
  // padding to a larger alignment inside the current chunk, is allocate_slow's:
  // it throws std::invalid_argument for a bad alignment, so every path behaves
  // the same. The path is kept to a few instructions on purpose (it stores
  // cur_ and nothing else: bytes_requested() is derived from it): through
  // memory_resource* each one more costs about a cycle per request
  // (docs/concepts.md, "Round two goals"). The two tests are combined with a
  // non-short-circuit `&`, the size test written first: GCC then tests the
  // size first when it inlines the path into a loop: 0.78 to 1.26x the inline
  // bump pointer in 15 processes, against 0.88 to 1.68x (6 of 15 above 1.5)
  // with the alignment test first (AMD EPYC; docs/concepts.md, "Session 14").
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    const auto cur = reinterpret_cast<std::uintptr_t>(cur_);
    const auto left = reinterpret_cast<std::uintptr_t>(end_) - cur;
    if ((bytes <= left) & (((alignment | cur) & (alignment - 1)) == 0)) [[likely]] {
      cur_ = reinterpret_cast<char*>(cur + bytes);
      return reinterpret_cast<void*>(cur);
    }
    return allocate_slow(bytes, alignment);
  }
  void do_deallocate(void*, std::size_t, std::size_t) noexcept override {}
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }

 private:
  struct chunk;
  void* allocate_slow(std::size_t bytes, std::size_t alignment);
  // Places a request of `bytes` at p (after padding, or in a new chunk): the
  // bump since mark_ is folded into requested_before_, mark_ = p, cur_ = p + bytes.
  void restart_bump(char* p, std::size_t bytes) noexcept;
  chunk* take_chunk(std::size_t size);

  // Before the first chunk both point at a shared empty sentinel, so the fast
  // path needs no null check and a zero-byte request still gets a valid pointer.
  alignas(chunk_alignment) static inline char empty_[1] = {};
  char* cur_ = empty_;
  char* end_ = empty_;
  // bytes_requested() = requested_before_ + (cur_ - mark_): the slow path
  // folds the bump since mark_ in and moves mark_ to where it placed a request.
  char* mark_ = empty_;
  std::size_t requested_before_ = 0;
  std::size_t reserved_ = 0;
  std::size_t chunks_ = 0;
  std::size_t next_size_;
  chunk* head_ = nullptr;
  std::pmr::memory_resource* upstream_;
  grow_hook* hook_;
  account* account_ = nullptr;
  arena_options policy_;
  tag_id tag_;
};

}  // namespace arenastat
