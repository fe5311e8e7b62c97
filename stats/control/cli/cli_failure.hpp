// The CLI's exit statuses and the failure that carries one (docs/cli.md,
// "Exit status").
#pragma once
#include <string>

namespace arenastat::cli {

inline constexpr int exit_ok = 0;             // done; the answer is on stdout
inline constexpr int exit_target_error = 1;   // the process answered with an error
inline constexpr int exit_usage = 2;          // usage error, found before connecting
inline constexpr int exit_unreachable = 3;    // no process, no socket (yet), nobody listening, time-out
inline constexpr int exit_refused = 4;        // a trust check failed: directory, socket, peer or answer
inline constexpr int exit_busy = 5;           // the process's server is busy; retry later
inline constexpr int exit_output = 6;         // the answer could not be written to stdout

// Carries an exit status and the message printed for it ("arenastat: <message>").
struct failure {
  int status;
  std::string message;
};

// Names an errno value ("No such file or directory").
std::string error_text(int err);

// "0755".
std::string octal_mode(unsigned mode);

// The failure for a process that did not answer within the CLI's --timeout
// (exit 3), whether it was connecting or answering that took too long.
inline failure no_answer_within(long pid, int timeout_ms) {
  return {exit_unreachable, "process " + std::to_string(pid) + " did not answer within " + std::to_string(timeout_ms) +
                                " ms (is it stopped or overloaded?); retry or raise --timeout=MS"};
}

}  // namespace arenastat::cli
