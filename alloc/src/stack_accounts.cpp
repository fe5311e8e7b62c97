#include "stack_accounts.hpp"

#include <stdexcept>

#include "arenastat/arena_resource.hpp"
#include "arenastat/test_resource.hpp"
#include "arenastat/tracking_resource.hpp"
#include "quoted.hpp"

namespace arenastat::detail {

namespace {

// The upstream of the standard library's own layers, which name theirs
// (upstream_resource()): null for any other resource.
const std::pmr::memory_resource* std_pool_upstream(const std::pmr::memory_resource* r) noexcept {
  if (const auto* p = dynamic_cast<const std::pmr::synchronized_pool_resource*>(r)) return p->upstream_resource();
  if (const auto* p = dynamic_cast<const std::pmr::unsynchronized_pool_resource*>(r)) return p->upstream_resource();
  if (const auto* p = dynamic_cast<const std::pmr::monotonic_buffer_resource*>(r)) return p->upstream_resource();
  return nullptr;
}

}  // namespace

std::string charger_below(const std::pmr::memory_resource* upstream, std::string_view name) {
  // A stack is a few layers; the bound only guards against a cycle built by hand.
  for (int depth = 0; upstream != nullptr && depth < 256; ++depth) {
    if (const auto* t = dynamic_cast<const tracking_resource*>(upstream)) {
      if (t->tracked_account().name() == name) return "a tracking_resource " + quoted(name);
      upstream = t->upstream();
    } else if (const auto* r = dynamic_cast<const test_resource*>(upstream)) {
      if (r->tracked_account().name() == name) return "a test_resource " + quoted(name);
      upstream = r->upstream();
    } else if (const auto* a = dynamic_cast<const arena_resource*>(upstream)) {
      if (a->charged_account() != nullptr && a->charged_account()->name() == name)
        return "an arena_resource with account " + quoted(name);
      upstream = a->upstream();
    } else if (const std::pmr::memory_resource* below = std_pool_upstream(upstream)) {
      upstream = below;  // a std::pmr pool or monotonic buffer between two of ours
    } else {
      break;
    }
  }
  return {};
}

void refuse_double_charge(std::string_view who, const std::pmr::memory_resource* upstream, std::string_view name) {
  const std::string charger = charger_below(upstream, name);
  if (charger.empty()) return;
  throw std::invalid_argument(std::string(who) + ": its upstream stack holds " + charger +
                              ", which already charges account " + quoted(name) +
                              " for every byte taken through it: they would count twice there; give one of the two "
                              "layers another account");
}

}  // namespace arenastat::detail
