// Helpers of the control layer's service threads (control server, dump
// signal thread). Not installed.
#pragma once
#include <atomic>
#include <chrono>
#include <string>
#include <string_view>
#include <optional>
#include <thread>

#include "arenastat/report.hpp"

#include "sys.hpp"

namespace arenastat::detail {

// Stops waiting for a service thread that set `finished` when it returned:
// joins it when it finished within `limit`, detaches it otherwise (exit must
// never hang on it), and detaches it when called from the thread itself.
void join_or_detach(std::thread& t, const std::atomic<bool>& finished,
                    std::chrono::milliseconds limit) noexcept;

}  // namespace arenastat::detail

namespace arenastat::control {

// A request's answer: `head` ("ok\n", or the whole answer), then, for the
// commands whose answer is streamed (stats), the rest a chunk at a time.
struct answer {
  std::string head;
  std::optional<report_stream> rest;
};
answer answer_request(std::string_view line);

// What ends an answer whose stream failed after "ok" was sent:
// "\narenastat: answer truncated: <why>\n".
std::string truncated_line(std::string_view why);

// The `dump [PATH]` command: PATH must be absolute (a relative one would be
// taken relative to the target's working directory, not the caller's).
// Returns the written file's path and a newline; throws on any error.
std::string dump_body(std::string_view path);

}  // namespace arenastat::control
