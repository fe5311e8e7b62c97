// Test doubles shared by the core tests.
#pragma once
#include <cstddef>
#include <memory_resource>
#include <new>
#include <string>
#include <vector>

#include <arenastat/arenastat.hpp>

namespace test {

// The upstream of the resources under test: counts what it hands out and
// can be told to refuse an allocation. Scopes are left to the resources above.
inline arenastat::test_resource_options upstream_options() { return {.charge_scopes = false}; }

// A grow hook that records chunk sizes and chains to the tracking hook.
class recording_hook : public arenastat::forwarding_hook {
 public:
  std::vector<std::size_t> acquired;
  std::vector<std::size_t> released;
  void on_acquire(arenastat::charge_stamp& stamp, arenastat::tag_id tag, std::size_t bytes,
                  arenastat::account* acct) override {
    forwarding_hook::on_acquire(stamp, tag, bytes, acct);
    acquired.push_back(bytes);
  }
  void on_release(const arenastat::charge_stamp& stamp, std::size_t bytes) noexcept override {
    forwarding_hook::on_release(stamp, bytes);
    released.push_back(bytes);
  }
};

// The table entry of a given name and kind (fails the test when absent).
inline arenastat::entry find_entry(const std::string& name, arenastat::entry_kind kind) {
  for (arenastat::entry& e : arenastat::snapshot())
    if (e.name == name && e.kind == kind) return e;
  throw std::runtime_error("no table entry named " + name);
}

inline std::int64_t tag_of(const std::vector<arenastat::tag_bytes>& v, const std::string& tag) {
  for (const auto& t : v)
    if (t.tag == tag) return t.bytes;
  return 0;
}

}  // namespace test
