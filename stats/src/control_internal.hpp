// Small helpers shared by the control server (control_server.cpp), its
// commands (control_commands.cpp) and the dumps (dump.cpp). Not installed.
#pragma once
#include <atomic>
#include <chrono>
#include <ctime>
#include <string>
#include <string_view>
#include <thread>

namespace arenastat::detail {

// This process's name (/proc/self/comm), "?" when unreadable.
std::string program_name();

// "2026-11-22 02:30:00 UTC".
std::string utc_time_string(std::time_t t);

// Stops waiting for a service thread that set `finished` when it returned:
// joins it when it finished within `limit`, detaches it otherwise (exit must
// never hang on it), and detaches it when called from the thread itself.
void join_or_detach(std::thread& t, const std::atomic<bool>& finished,
                    std::chrono::milliseconds limit) noexcept;

// Writes all of `text` to stderr with one write(2) per call; never throws.
void warn(std::string_view text) noexcept;

// Names an errno value ("No such file or directory").
std::string error_text(int err);

}  // namespace arenastat::detail
