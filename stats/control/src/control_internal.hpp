// Helpers of the control layer's service threads (control server, dump
// signal thread). Not installed.
#pragma once
#include <atomic>
#include <chrono>
#include <string>
#include <string_view>
#include <thread>

#include "sys.hpp"

namespace arenastat::detail {

// Stops waiting for a service thread that set `finished` when it returned:
// joins it when it finished within `limit`, detaches it otherwise (exit must
// never hang on it), and detaches it when called from the thread itself.
void join_or_detach(std::thread& t, const std::atomic<bool>& finished,
                    std::chrono::milliseconds limit) noexcept;

}  // namespace arenastat::detail

namespace arenastat::control {

// The `dump [PATH]` command: PATH must be absolute (a relative one would be
// taken relative to the target's working directory, not the caller's).
// Returns the written file's path and a newline; throws on any error.
std::string dump_body(std::string_view path);

}  // namespace arenastat::control
