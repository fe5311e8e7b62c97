#include "arenastat/tags.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>

#include "quoted.hpp"

namespace arenastat {
namespace {

struct tag_registry {
  std::mutex mutex;
  std::atomic<std::size_t> count{0};
  char names[max_tags][max_tag_name + 1] = {};
};

// Never destroyed: tags are named during static destruction too.
tag_registry& registry() {
  static tag_registry* const r = new tag_registry();
  return *r;
}

std::size_t find(const tag_registry& r, std::size_t n, std::string_view name) {
  for (std::size_t i = 0; i < n; ++i)
    if (name == r.names[i]) return i;
  return n;
}

}  // namespace

void check_tag_name(std::string_view name) {
  if (name.empty()) throw std::invalid_argument("arenastat: empty tag name");
  if (name.size() > max_tag_name)
    throw std::invalid_argument("arenastat: tag name " + detail::quoted(name) + " is longer than " +
                                std::to_string(max_tag_name) + " characters");
  // Stored NUL-terminated and printed as a column header: a NUL would cut it
  // (and register it again on every call), a control byte would break lines.
  if (std::any_of(name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
    throw std::invalid_argument("arenastat: tag name " + detail::quoted(name) +
                                " has a control byte (0x00-0x1f or 0x7f)");
}

tag_id register_tag(std::string_view name) {
  check_tag_name(name);
  tag_registry& r = registry();
  std::size_t n = r.count.load(std::memory_order_acquire);
  if (std::size_t i = find(r, n, name); i < n) return static_cast<tag_id>(i);

  std::lock_guard lock(r.mutex);
  n = r.count.load(std::memory_order_relaxed);
  if (std::size_t i = find(r, n, name); i < n) return static_cast<tag_id>(i);
  if (n == max_tags)
    throw std::length_error("arenastat: cannot register tag " + detail::quoted(name) + ": all " +
                            std::to_string(max_tags) + " tags are in use");
  std::copy(name.begin(), name.end(), r.names[n]);
  r.count.store(n + 1, std::memory_order_release);
  return static_cast<tag_id>(n);
}

std::string_view tag_name(tag_id id) noexcept {
  const tag_registry& r = registry();
  return id < r.count.load(std::memory_order_acquire) ? std::string_view(r.names[id]) : std::string_view();
}

std::size_t tag_count() noexcept { return registry().count.load(std::memory_order_acquire); }

}  // namespace arenastat
