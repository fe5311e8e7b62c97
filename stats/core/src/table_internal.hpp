// Internal: what the table keeps and how scopes and accounts reach it.
#pragma once
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "arenastat/account.hpp"
#include "arenastat/table.hpp"

namespace arenastat::detail {

enum class run_result : std::uint8_t { ok, oom, err };

// One finished scope run, as the fold needs it (views into the scope object).
struct scope_run {
  std::string_view name;
  std::uint64_t peak = 0;
  const std::int64_t* at_peak = nullptr;  // per tag
  std::uint32_t tags_high = 0;
  std::vector<counter_value> counters;    // at the peak
  double seconds = 0;
  run_result result = run_result::ok;
  std::uint64_t thread = 0;
};

// Folds a run into the table under its name. Never throws: a run that cannot
// be stored (out of memory) is counted and reported as lost.
void fold_scope(const scope_run& run) noexcept;

// Every account ever created, in creation order (the registry lives in account.cpp).
std::vector<account*> all_accounts();

std::uint64_t lost_folds() noexcept;

// Throws std::invalid_argument when `name` is empty or longer than
// max_name_bytes; `who` starts the message ("arenastat::scope").
void check_name(std::string_view name, std::string_view who);

}  // namespace arenastat::detail
