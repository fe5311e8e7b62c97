// The control server: lets `arenastat <pid> <command>` query a running process
// over a Unix domain socket, the way `jcmd` queries a JVM.
//
// Started by ARENASTAT_CONTROL=1 in the environment or by control::start();
// stopped at exit. The socket is <dir>/<pid>.sock where <dir> is
// $ARENASTAT_SOCKET_DIR or /tmp/arenastat-<uid>; the directory must be owned
// by the process's user with mode 0700 (created so if missing), the socket is
// 0600, and only peers with the same effective uid (or root) are answered.
// One thread serves every client with poll(); answers are rendered from a
// snapshot of the table. Wire protocol and commands: docs/cli.md.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace arenastat::control {

struct options {
  std::string socket_dir;                                 // "": $ARENASTAT_SOCKET_DIR or /tmp/arenastat-<uid>
  std::chrono::milliseconds request_timeout{2000};        // accept -> full request line
  std::chrono::milliseconds response_timeout{10000};      // request -> response fully sent
  std::chrono::milliseconds stall_timeout{2000};          // a client taking none of its answer this long is dropped
  std::size_t max_clients = 128;                          // at once; then idle ones make room (docs/cli.md)
  std::size_t max_answer_backlog = std::size_t{64} << 20;  // answer bytes held for clients; the stalest goes first
};

// Starts the server and returns the socket path; when it already runs, returns
// its path and changes nothing. Throws std::runtime_error saying what is wrong
// (insecure or unusable directory, path too long, bind/listen failure).
std::string start(const options& opts = {});

// Stops the server, joins its thread and removes the socket. No-op when not
// running. Also run at exit.
void stop() noexcept;

bool running() noexcept;
std::string socket_path();  // "" when not running

// $ARENASTAT_SOCKET_DIR, else /tmp/arenastat-<euid>.
std::string default_socket_dir();

// Connection counters since the process started.
struct counters {
  std::uint64_t served = 0;        // requests answered (ok or error)
  std::uint64_t refused = 0;       // peers of another uid, closed without an answer
  std::uint64_t timed_out = 0;     // clients that missed a deadline
  std::uint64_t bad_requests = 0;  // malformed, over-long or unterminated request lines
  std::uint64_t busy = 0;          // turned away: every slot was answering a request
  std::uint64_t dropped = 0;       // idle clients closed to make room, clients not reading their answers
};
counters connection_counters() noexcept;

// Executes one request line (without its LF) as the server would and returns
// the whole response: "ok\n<body>" or "error <message>\n". Thread-safe.
std::string handle_request(std::string_view line);

}  // namespace arenastat::control

namespace arenastat {

// Dumps on a signal (the dump itself: dump.hpp, write_dump).
// Makes `signal_number` (SIGUSR1 or SIGUSR2) write a dump with an empty path.
// One dump signal at a time: installing another restores the first one's
// previous action (so SIGUSR1 then SIGUSR2 leaves SIGUSR1 at its default,
// which ends the process); ARENASTAT_DUMP_SIGNAL installs one too.
// Starts the dump thread on first use; stopped at exit. Throws
// std::invalid_argument for any other signal, std::system_error if the pipe,
// thread or handler cannot be set up.
void install_dump_signal(int signal_number);

// Restores the signal's previous action and stops the dump thread.
void remove_dump_signal() noexcept;

}  // namespace arenastat
