// The CLI's trust rules (docs/cli.md, "Trust rules"), the rules of jcmd: talk
// only to a socket directory and a socket owned by the uid that owns the
// target (root included, and for root too), open to nobody else, reached
// without following a symbolic link, and to a server whose SO_PEERCRED pid
// and uid are the target's. Every refusal throws a failure with exit_refused.
#pragma once
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>

#include "cli_failure.hpp"

namespace arenastat::cli {

// Closes a descriptor (if any, >= 0) when it goes out of scope.
struct fd_guard {
  explicit fd_guard(int f) noexcept : fd(f) {}
  int fd;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
  fd_guard(const fd_guard&) = delete;
  fd_guard& operator=(const fd_guard&) = delete;
};

// Whose directory and socket we expect: a uid and how messages name it
// ("uid 1000 (the owner of process 4242)", "uid 1000 (you)").
struct expected_owner {
  uid_t uid;
  std::string described;
};

// How a message names the socket directory `dir`: quoted (escaped, at most
// 200 bytes: detail::quoted), then " (ARENASTAT_SOCKET_DIR)" when that
// variable set it.
std::string shown_dir(const std::string& dir);

// How a message names a path (a socket in the directory): quoted.
std::string shown_path(const std::string& path);

// A socket directory opened with O_NOFOLLOW and checked through its descriptor:
// a directory, owned by the expected uid, mode without group/other bits.
class trusted_dir {
 public:
  // nullopt when `path` does not exist; throws failure for any other problem.
  static std::optional<trusted_dir> open(const std::string& path, const expected_owner& owner);
  // The same for the directory `inside` (absolute) as seen from the root
  // directory `root_fd` of another mount namespace (/proc/<pid>/root, shown
  // as `root_shown`): resolved with every symbolic link on the way confined
  // to that root (openat2 RESOLVE_IN_ROOT), so a link planted in a container
  // cannot lead to this namespace's files. `origin` follows the directory in
  // messages (" (its ARENASTAT_SOCKET_DIR)" or "").
  static std::optional<trusted_dir> open_in_root(int root_fd, const std::string& root_shown, const std::string& inside,
                                                 const std::string& origin, const expected_owner& owner);

  trusted_dir(trusted_dir&& other) noexcept;
  trusted_dir& operator=(trusted_dir&& other) noexcept;
  trusted_dir(const trusted_dir&) = delete;
  ~trusted_dir();

  int fd() const noexcept { return fd_; }
  const std::string& path() const noexcept { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  std::string shown() const { return origin_ ? shown_path(path_) + *origin_ : shown_dir(path_); }
  std::string shown_file(const std::string& name) const { return shown_path(file(name)); }

 private:
  trusted_dir(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  // Checks the opened directory (fd, owned by the result from here on).
  static trusted_dir checked(int fd, std::string path, std::optional<std::string> origin, const expected_owner& owner);
  int fd_;
  std::string path_;
  std::optional<std::string> origin_;  // set by open_in_root: messages name the directory with it
};

// Checks the socket `name` in `dir` without following a link: false when it
// does not exist; throws failure when it is not a socket, belongs to another
// uid or is open to group or others.
bool check_socket(const trusted_dir& dir, const std::string& name, const expected_owner& owner);

// How long a full connection queue is retried before the target is called
// busy (exit 5): long enough for a burst of clients to be accepted, short
// enough that a stopped target is reported promptly.
inline constexpr std::chrono::milliseconds busy_queue_grace{200};

// Connects to `name` inside the checked directory (through its descriptor, so
// a directory renamed or replaced since the check is never reached) without
// blocking past `deadline` (the exchange's: --timeout, `timeout_ms`); returns
// the connected descriptor, non-blocking. Throws failure for refused, denied
// and timed-out connections, and for a connection queue still full after
// busy_queue_grace (busy, exit 5).
// The socket is opened as a path without following a link, checked again
// (check_socket's rules) and connected to through that descriptor, so a name
// replaced by a link since the check never leads elsewhere.
int connect_in(const trusted_dir& dir, const std::string& name, const expected_owner& owner, long pid,
               std::chrono::steady_clock::time_point deadline, int timeout_ms);

// Checks the connected server's SO_PEERCRED against the target's pid and uid;
// `socket` is the socket as messages name it (shown_path).
void check_peer(int fd, const std::string& socket, long pid, const expected_owner& owner);

}  // namespace arenastat::cli
