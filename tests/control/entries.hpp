// Hand-built table entries for the diff and dump tests.
#pragma once
#include <cstdint>
#include <string>

#include <arenastat/table.hpp>

namespace test_entries {

inline arenastat::entry account_entry(std::string name, std::int64_t live, std::uint64_t peak,
                                      std::uint64_t allocations, std::uint64_t frees) {
  arenastat::entry e;
  e.name = std::move(name);
  e.kind = arenastat::entry_kind::account;
  e.live_bytes = live;
  e.peak_bytes = peak;
  e.allocations = allocations;
  e.frees = frees;
  return e;
}

inline arenastat::entry scope_entry(std::string name, std::uint64_t peak, std::uint64_t runs) {
  arenastat::entry e;
  e.name = std::move(name);
  e.kind = arenastat::entry_kind::scope;
  e.peak_bytes = peak;
  e.count = runs;
  return e;
}

}  // namespace test_entries
