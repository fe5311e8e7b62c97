// jemalloc_resource: a std::pmr::memory_resource backed by a jemalloc arena of
// its own, so a component's memory can be cross-checked against jemalloc's
// per-arena statistics (stats.arenas.<i>.*).
//
// Separate library target: link arenastat::jemalloc (not part of the core
// arenastat target). Debian's jemalloc is unprefixed, so linking it makes
// jemalloc the malloc of the whole program; that is why it is opt-in. This
// header does not include <jemalloc/jemalloc.h>: every jemalloc call lives in
// the library's .cpp.
//
// It does not charge any account itself. Stack a tracking_resource on top to
// get an account (and scope charging) and jemalloc's figures side by side:
//
//   arenastat::jemalloc_resource je;                      // arena of its own
//   arenastat::tracking_resource cache{"cache", &je};     // account "cache"
//   std::pmr::vector<int> v{&cache};
//   ...
//   je.flush_thread_cache();                              // see "Thread caches"
//   auto js = je.arena_stats();   // js.allocated_bytes() vs
//   auto at = arenastat::account::get("cache").totals();  // at.live_bytes
//
// Thread caches. jemalloc's default thread cache holds objects of whatever
// arena they came from, so MALLOCX_ARENA with the default cache may hand out
// another arena's memory. This resource instead gives every (thread, resource)
// pair an explicit cache of its own (mallctl "tcache.create", used through
// MALLOCX_TCACHE), found through a thread-local table indexed by the
// resource's slot: one TLS load, a bounds check and a compare on the hot path.
// Every object in those caches belongs to this resource's arena, so attribution
// is never lost. A thread's caches are destroyed ("tcache.destroy", which
// returns the cached objects to the arena) when the thread exits; the
// resource's destructor destroys the caches of every thread still alive.
// Where no cache can be had (jemalloc's limit of explicit caches is reached,
// or the thread is already tearing down its thread-locals) the call uses
// MALLOCX_TCACHE_NONE: correct, only slower; thread_cache_fallbacks() counts
// the threads whose "tcache.create" failed (threads past their thread-local
// teardown are not counted).
//
// Exactness. jemalloc counts objects sitting in a thread cache as allocated.
// arena_stats() is therefore exact (allocated bytes == sum of nallocx of the
// live blocks) once the caches of the threads that used the resource are
// flushed: call flush_thread_cache() on each such thread, or let them exit.
// With options.thread_cache = false there are no caches and every figure is
// exact at any time.
//
// Destruction. The destructor destroys the resource's thread caches, then
// asks jemalloc whether the arena still holds allocated bytes. If it is empty
// the arena is destroyed ("arena.<i>.destroy") and its index becomes reusable
// by a later arenas.create. If blocks are still live (the user did not free
// everything) the arena is kept, neither destroyed nor reset, so those blocks
// stay valid and can still be freed (dallocx/sdallocx, or free() where
// jemalloc is the process's malloc); its memory is then retained
// for the life of the process. The destructor never throws.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <string>
#include <system_error>

namespace arenastat {

// A failing mallctl: what() names the mallctl and the errno value.
class jemalloc_error : public std::system_error {
 public:
  jemalloc_error(std::string mallctl_name, int error_number);
  const std::string& mallctl_name() const noexcept { return name_; }

 private:
  std::string name_;
};

// jemalloc's own figures for one arena, read after refreshing "epoch".
// Each field names the mallctl it comes from (stats.arenas.<i>.<field>).
struct jemalloc_arena_stats {
  unsigned arena_index = 0;
  std::size_t small_allocated = 0;    // small.allocated (bytes, size classes)
  std::size_t large_allocated = 0;    // large.allocated
  std::uint64_t small_nmalloc = 0;    // small.nmalloc (counted per cache fill)
  std::uint64_t small_ndalloc = 0;    // small.ndalloc
  std::uint64_t large_nmalloc = 0;    // large.nmalloc
  std::uint64_t large_ndalloc = 0;    // large.ndalloc
  std::size_t active_pages = 0;       // pactive
  std::size_t dirty_pages = 0;        // pdirty
  std::size_t muzzy_pages = 0;        // pmuzzy
  std::size_t mapped_bytes = 0;       // mapped
  std::size_t resident_bytes = 0;     // resident
  std::size_t page_size = 0;          // arenas.page

  std::size_t allocated_bytes() const noexcept { return small_allocated + large_allocated; }
  std::size_t active_bytes() const noexcept { return active_pages * page_size; }
};

struct jemalloc_options {
  // true: an explicit jemalloc thread cache per (thread, resource) (fast).
  // false: MALLOCX_TCACHE_NONE on every call (slower; stats exact at any time).
  bool thread_cache = true;
};

class jemalloc_resource final : public std::pmr::memory_resource {
 public:
  // Creates the arena ("arenas.create"). Throws jemalloc_error on failure,
  // e.g. when jemalloc's arena limit is reached.
  jemalloc_resource();
  explicit jemalloc_resource(const jemalloc_options& options);
  ~jemalloc_resource() override;  // see "Destruction" above
  jemalloc_resource(const jemalloc_resource&) = delete;
  jemalloc_resource& operator=(const jemalloc_resource&) = delete;

  // jemalloc's index of the arena (the <i> of stats.arenas.<i>).
  unsigned arena_index() const noexcept { return arena_; }
  bool uses_thread_cache() const noexcept { return thread_cache_; }

  // jemalloc's figures for this arena (refreshes "epoch" first).
  jemalloc_arena_stats arena_stats() const;

  // Returns the objects cached by the calling thread for this resource to the
  // arena ("tcache.flush"). No effect without a cache.
  void flush_thread_cache() const;

  // Explicit thread caches currently alive for this resource (one per thread
  // that used it and has not exited).
  std::size_t thread_cache_count() const;
  // Threads whose cache for this resource could not be created (they use
  // MALLOCX_TCACHE_NONE); threads past their thread-local teardown not counted.
  std::size_t thread_cache_fallbacks() const;

  // Bytes jemalloc really reserves for allocate(bytes, alignment) through a
  // jemalloc_resource: nallocx with the flags the resource uses. What
  // stats.arenas.<i>.*.allocated rises by.
  static std::size_t allocation_size(std::size_t bytes,
                                     std::size_t alignment = alignof(std::max_align_t));

 protected:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override;
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }

 private:
  int cache_flags() const noexcept;
  int cache_flags_slow() const noexcept;

  unsigned arena_ = 0;
  bool thread_cache_ = true;
  int arena_flags_ = 0;        // MALLOCX_ARENA(arena_)
  std::uint32_t slot_ = 0;     // index into the thread-local cache tables
  std::uint64_t id_ = 0;       // unique for the life of the process
};

// jemalloc's figures for any arena index (refreshes "epoch" first).
// Throws jemalloc_error naming the mallctl for an index that does not exist.
jemalloc_arena_stats read_jemalloc_arena_stats(unsigned arena_index);

}  // namespace arenastat
