// jemalloc_resource: an arena of its own plus one explicit thread cache per
// (thread, resource). See the header for the contract.
#include "arenastat/jemalloc_resource.hpp"

#include <jemalloc/jemalloc.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdio>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace arenastat {

jemalloc_error::jemalloc_error(std::string mallctl_name, int error_number)
    : std::system_error(error_number, std::generic_category(),
                        "arenastat::jemalloc_resource: mallctl(\"" + mallctl_name +
                            "\") failed with errno " + std::to_string(error_number)),
      name_(std::move(mallctl_name)) {}

namespace {

// ---- mallctl helpers -------------------------------------------------------

template <class T>
T ctl_read(const std::string& name) {
  T value{};
  std::size_t size = sizeof value;
  if (int rc = mallctl(name.c_str(), &value, &size, nullptr, 0); rc != 0) throw jemalloc_error(name, rc);
  return value;
}

void refresh_epoch() {
  std::uint64_t epoch = 1;
  std::size_t size = sizeof epoch;
  if (int rc = mallctl("epoch", &epoch, &size, &epoch, size); rc != 0) throw jemalloc_error("epoch", rc);
}

std::string arena_ctl(unsigned arena, const char* leaf) {
  return "stats.arenas." + std::to_string(arena) + "." + leaf;
}

// Destroying a cache only fails on a jemalloc bug or a foreign destroy; the
// callers are noexcept (thread exit, destructor), so say so on stderr.
void destroy_tcache(unsigned tcache) noexcept {
  if (int rc = mallctl("tcache.destroy", nullptr, nullptr, &tcache, sizeof tcache); rc != 0)
    std::fprintf(stderr, "arenastat: jemalloc_resource: mallctl(\"tcache.destroy\") of cache %u failed with errno %d\n",
                 tcache, rc);
}

// jemalloc's quantum: every size class of at least this size is aligned to it.
// Set by the first constructor (a resource exists before any allocation).
std::atomic<std::size_t> g_quantum{0};

// MALLOCX_LG_ALIGN flag a request needs, 0 when the size class is aligned
// enough anyway: tiny classes (below the quantum) are powers of two aligned to
// their size, larger classes are aligned to the quantum.
inline int align_flags(std::size_t bytes, std::size_t alignment) noexcept {
  if (alignment <= 8 || (alignment <= g_quantum.load(std::memory_order_relaxed) && bytes >= alignment))
    return 0;
  return MALLOCX_LG_ALIGN(std::countr_zero(alignment));
}

inline std::size_t nonzero(std::size_t bytes) noexcept { return bytes == 0 ? 1 : bytes; }

// std::has_single_bit becomes a libgcc popcount call without -mpopcnt.
inline bool power_of_two(std::size_t n) noexcept { return n != 0 && (n & (n - 1)) == 0; }

[[noreturn]] void bad_alignment(std::size_t alignment) {
  throw std::invalid_argument("arenastat::jemalloc_resource: alignment " + std::to_string(alignment) +
                              " is not a power of two");
}

// ---- thread cache registry -------------------------------------------------

constexpr unsigned no_tcache = ~0u;

// One thread's view of one resource slot. Valid while owner == resource id.
struct cache_entry {
  std::uint64_t owner = 0;
  int flags = 0;                 // MALLOCX_ARENA | MALLOCX_TCACHE(tc) or _NONE
  unsigned tcache = no_tcache;
};

// Plain, constant-initialised so the hot path pays one TLS load.
struct thread_table {
  cache_entry* data = nullptr;
  std::uint32_t size = 0;
  bool dead = false;  // thread-locals torn down: no new caches on this thread
};
thread_local constinit thread_table tls_table{};

struct cache_ref {
  thread_table* table;
  unsigned tcache;
};

struct slot_record {
  std::uint64_t id = 0;  // 0: free
  std::vector<cache_ref> caches;
  std::size_t fallbacks = 0;
};

// Eternal: used by thread exits that may run during static destruction.
struct registry {
  std::mutex mu;
  std::vector<slot_record> slots;
  std::vector<std::uint32_t> free_slots;
  std::uint64_t next_id = 1;
};
registry& reg() {
  static registry* r = new registry;
  return *r;
}

// Destroys the exiting thread's caches of the resources still alive.
struct thread_reaper {
  void arm() noexcept {}
  ~thread_reaper() {
    thread_table& t = tls_table;
    registry& r = reg();
    std::lock_guard lock(r.mu);
    for (std::uint32_t i = 0; i < t.size; ++i) {
      const cache_entry& e = t.data[i];
      if (e.owner == 0 || e.tcache == no_tcache || i >= r.slots.size() || r.slots[i].id != e.owner) continue;
      auto& caches = r.slots[i].caches;
      auto it = std::find_if(caches.begin(), caches.end(), [&](const cache_ref& c) { return c.table == &t; });
      if (it == caches.end()) continue;
      destroy_tcache(it->tcache);
      caches.erase(it);
    }
    delete[] t.data;
    t.data = nullptr;
    t.size = 0;
    t.dead = true;
  }
};
thread_local thread_reaper tls_reaper;

}  // namespace

// ---- the resource ----------------------------------------------------------

jemalloc_resource::jemalloc_resource() : jemalloc_resource(jemalloc_options{}) {}

jemalloc_resource::jemalloc_resource(const jemalloc_options& options) : thread_cache_(options.thread_cache) {
  g_quantum.store(ctl_read<std::size_t>("arenas.quantum"), std::memory_order_relaxed);
  arena_ = ctl_read<unsigned>("arenas.create");
  arena_flags_ = MALLOCX_ARENA(arena_);
  registry& r = reg();
  std::lock_guard lock(r.mu);
  if (r.free_slots.empty()) {
    try {
      r.slots.emplace_back();
    } catch (...) {  // no slot: give the fresh, empty arena back
      const std::string name = "arena." + std::to_string(arena_) + ".destroy";
      mallctl(name.c_str(), nullptr, nullptr, nullptr, 0);
      throw;
    }
    slot_ = static_cast<std::uint32_t>(r.slots.size() - 1);
  } else {
    slot_ = r.free_slots.back();
    r.free_slots.pop_back();
  }
  id_ = r.next_id++;
  r.slots[slot_].id = id_;
}

jemalloc_resource::~jemalloc_resource() {
  {
    registry& r = reg();
    std::lock_guard lock(r.mu);
    slot_record& s = r.slots[slot_];
    for (const cache_ref& c : s.caches) destroy_tcache(c.tcache);  // flushes into the arena
    s.caches.clear();
    s.fallbacks = 0;
    s.id = 0;
    r.free_slots.push_back(slot_);
  }
  std::size_t live = 1;
  try {
    live = read_jemalloc_arena_stats(arena_).allocated_bytes();
  } catch (const jemalloc_error& e) {
    std::fprintf(stderr, "arenastat: jemalloc_resource: keeping arena %u: %s\n", arena_, e.what());
    return;
  }
  if (live != 0) return;  // blocks still live: keep the arena so they stay valid
  const std::string name = "arena." + std::to_string(arena_) + ".destroy";
  if (int rc = mallctl(name.c_str(), nullptr, nullptr, nullptr, 0); rc != 0)
    std::fprintf(stderr, "arenastat: jemalloc_resource: mallctl(\"%s\") failed with errno %d; arena kept\n",
                 name.c_str(), rc);
}

inline int jemalloc_resource::cache_flags() const noexcept {
  if (!thread_cache_) return arena_flags_ | MALLOCX_TCACHE_NONE;
  const thread_table& t = tls_table;
  if (slot_ < t.size) [[likely]] {
    const cache_entry& e = t.data[slot_];
    if (e.owner == id_) [[likely]] return e.flags;
  }
  return cache_flags_slow();
}

int jemalloc_resource::cache_flags_slow() const noexcept {
  thread_table& t = tls_table;
  if (t.dead) return arena_flags_ | MALLOCX_TCACHE_NONE;
  tls_reaper.arm();  // registers the thread-exit clean-up
  registry& r = reg();
  std::lock_guard lock(r.mu);
  slot_record& s = r.slots[slot_];
  if (slot_ >= t.size) {
    const std::uint32_t size = std::max({slot_ + 1, 2 * t.size, std::uint32_t{8}});
    auto* data = new (std::nothrow) cache_entry[size];
    if (data == nullptr) {
      ++s.fallbacks;
      return arena_flags_ | MALLOCX_TCACHE_NONE;
    }
    std::copy(t.data, t.data + t.size, data);
    delete[] t.data;
    t.data = data;
    t.size = size;
  }
  cache_entry& e = t.data[slot_];
  unsigned tcache = 0;
  std::size_t len = sizeof tcache;
  bool recorded = false;
  if (mallctl("tcache.create", &tcache, &len, nullptr, 0) == 0) {
    try {
      s.caches.push_back({&t, tcache});
      recorded = true;
    } catch (const std::bad_alloc&) {
      destroy_tcache(tcache);
    }
  }
  if (recorded) {
    e = {id_, arena_flags_ | MALLOCX_TCACHE(tcache), tcache};
  } else {
    e = {id_, arena_flags_ | MALLOCX_TCACHE_NONE, no_tcache};
    ++s.fallbacks;
  }
  return e.flags;
}

void* jemalloc_resource::do_allocate(std::size_t bytes, std::size_t alignment) {
  if (!power_of_two(alignment)) [[unlikely]] bad_alignment(alignment);
  void* p = mallocx(nonzero(bytes), cache_flags() | align_flags(bytes, alignment));
  if (p == nullptr) [[unlikely]] throw std::bad_alloc();
  return p;
}

void jemalloc_resource::do_deallocate(void* p, std::size_t bytes, std::size_t alignment) {
  if (p == nullptr) return;
  sdallocx(p, nonzero(bytes), cache_flags() | align_flags(bytes, alignment));
}

void jemalloc_resource::flush_thread_cache() const {
  const thread_table& t = tls_table;
  if (slot_ >= t.size) return;
  const cache_entry& e = t.data[slot_];
  if (e.owner != id_ || e.tcache == no_tcache) return;
  unsigned tcache = e.tcache;
  if (int rc = mallctl("tcache.flush", nullptr, nullptr, &tcache, sizeof tcache); rc != 0)
    throw jemalloc_error("tcache.flush", rc);
}

std::size_t jemalloc_resource::thread_cache_count() const {
  registry& r = reg();
  std::lock_guard lock(r.mu);
  return r.slots[slot_].caches.size();
}

std::size_t jemalloc_resource::thread_cache_fallbacks() const {
  registry& r = reg();
  std::lock_guard lock(r.mu);
  return r.slots[slot_].fallbacks;
}

std::size_t jemalloc_resource::allocation_size(std::size_t bytes, std::size_t alignment) {
  if (!power_of_two(alignment)) bad_alignment(alignment);
  if (g_quantum.load(std::memory_order_relaxed) == 0)
    g_quantum.store(ctl_read<std::size_t>("arenas.quantum"), std::memory_order_relaxed);
  const std::size_t n = nallocx(nonzero(bytes), align_flags(bytes, alignment));
  if (n == 0) throw std::length_error("arenastat::jemalloc_resource: no jemalloc size class for " +
                                      std::to_string(bytes) + " bytes aligned to " + std::to_string(alignment));
  return n;
}

jemalloc_arena_stats jemalloc_resource::arena_stats() const { return read_jemalloc_arena_stats(arena_); }

jemalloc_arena_stats read_jemalloc_arena_stats(unsigned arena) {
  refresh_epoch();
  jemalloc_arena_stats s;
  s.arena_index = arena;
  s.small_allocated = ctl_read<std::size_t>(arena_ctl(arena, "small.allocated"));
  s.large_allocated = ctl_read<std::size_t>(arena_ctl(arena, "large.allocated"));
  s.small_nmalloc = ctl_read<std::uint64_t>(arena_ctl(arena, "small.nmalloc"));
  s.small_ndalloc = ctl_read<std::uint64_t>(arena_ctl(arena, "small.ndalloc"));
  s.large_nmalloc = ctl_read<std::uint64_t>(arena_ctl(arena, "large.nmalloc"));
  s.large_ndalloc = ctl_read<std::uint64_t>(arena_ctl(arena, "large.ndalloc"));
  s.active_pages = ctl_read<std::size_t>(arena_ctl(arena, "pactive"));
  s.dirty_pages = ctl_read<std::size_t>(arena_ctl(arena, "pdirty"));
  s.muzzy_pages = ctl_read<std::size_t>(arena_ctl(arena, "pmuzzy"));
  s.mapped_bytes = ctl_read<std::size_t>(arena_ctl(arena, "mapped"));
  s.resident_bytes = ctl_read<std::size_t>(arena_ctl(arena, "resident"));
  s.page_size = ctl_read<std::size_t>("arenas.page");
  return s;
}

}  // namespace arenastat
