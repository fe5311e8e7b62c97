// Helpers of the control layer's service threads (control server, dump
// signal thread). Not installed.
#pragma once
#include <atomic>
#include <chrono>
#include <thread>

#include "sys.hpp"

namespace arenastat::detail {

// Stops waiting for a service thread that set `finished` when it returned:
// joins it when it finished within `limit`, detaches it otherwise (exit must
// never hang on it), and detaches it when called from the thread itself.
void join_or_detach(std::thread& t, const std::atomic<bool>& finished,
                    std::chrono::milliseconds limit) noexcept;

}  // namespace arenastat::detail
