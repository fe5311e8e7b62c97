// Leak checking's hooks (not installed): the chunk ledger, fed by
// charge_chunk / credit_chunk (scope.cpp), and the at-exit entry point (report/).
#pragma once
#include <cstddef>
#include <vector>

#include "arenastat/context.hpp"
#include "arenastat/leaks.hpp"

namespace arenastat::detail {

// Arena chunks held, by (thread, stamped scope, tag), recorded while
// ARENASTAT_LEAKS is on. Called by charge_chunk once the chunk is charged and
// by credit_chunk before it credits.
void ledger_chunk_taken(const charge_stamp& stamp, std::size_t bytes) noexcept;
void ledger_chunk_given_back(const charge_stamp& stamp, std::size_t bytes) noexcept;

// The at-exit check: returns what is outstanding (empty when off, or in a
// fork()ed copy) and silences every later check, so nothing is reported twice
// (statics destroyed after the exit handler, threads still running).
std::vector<leak> leaks_at_exit() noexcept;

// Ends the process after leaks were reported in abort mode: a line on stderr,
// stdio flushed, std::abort().
[[noreturn]] void abort_for_leaks(std::size_t count) noexcept;

}  // namespace arenastat::detail
