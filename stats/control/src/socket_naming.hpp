// Where a process's control socket lives, shared by the server and the CLI
// (one copy of the rule; docs/cli.md). Depends on the C and C++ standard
// libraries only, like control_request.hpp, so the CLI links it without the
// library.
//
//   directory  $ARENASTAT_SOCKET_DIR, else /tmp/arenastat-<uid>
//   socket     <directory>/<pid>.sock
//   temporary  <directory>/.<pid>.tmp (bound, chmod 0600, then renamed)
#pragma once
#include <sys/types.h>
#include <sys/un.h>

#include <optional>
#include <string>
#include <string_view>

namespace arenastat::naming {

// `dir` without its trailing slashes ("/" stays "/"): how both sides write a
// directory taken from a variable or an option.
std::string without_trailing_slashes(std::string dir);

// $ARENASTAT_SOCKET_DIR without trailing slashes when set and not empty,
// else /tmp/arenastat-<uid>. The server passes its effective uid; the CLI
// the uid that owns the target process.
std::string socket_dir(uid_t uid);

// /tmp/arenastat-<uid>: the directory of a process started without the variable.
std::string default_socket_dir(uid_t uid);

// Why a socket directory cannot be used, or "" when it can: a relative path
// (the program and the CLI would each take it from their own working
// directory, so the CLI would look elsewhere). Both sides refuse it.
std::string socket_dir_problem(std::string_view dir);

// " (ARENASTAT_SOCKET_DIR)" when socket_dir() takes the directory from that
// variable, else "": a message naming the directory says where it came from.
std::string socket_dir_origin();

// "<pid>.sock" and "<dir>/<pid>.sock".
std::string socket_name(long pid);
std::string socket_path(std::string_view dir, long pid);

// ".<pid>.tmp", the name the server binds before renaming it into place.
std::string temporary_name(long pid);

// The pid named by "<digits>.sock" (1 to 9 digits, no leading zero: as
// socket_name writes it), else nullopt.
std::optional<long> pid_of_socket_name(std::string_view name);

// The pid named by ".<digits>.tmp" (digits as above), else nullopt.
std::optional<long> pid_of_temporary_name(std::string_view name);

// The program name of `pid` (/proc/<pid>/comm, without its newline), "?" when
// unreadable. Raw bytes: escape them before printing them to a terminal.
std::string program_of(long pid);

// True only when `pid` certainly does not run: kill(pid, 0) fails with ESRCH,
// or every thread has exited and it waits to be reaped (state Z or X in each
// /proc/<pid>/task/<tid>/stat: kill() still succeeds on such a zombie, but it
// serves nothing). A main thread that called pthread_exit is Z in
// /proc/<pid>/stat while the other threads run: that process is not gone.
bool process_gone(long pid);

// The file `name` in the directory `dirfd` opened as a path (O_PATH), not
// following a symbolic link: a link is opened as itself. Connecting through
// it (socket_address_of) reaches the inode that was inspected (fstat), even if
// the name is replaced by a link in between. -1 with errno on failure.
int open_node(int dirfd, const char* name);

// "/proc/self/fd/<node_fd>" as a Unix socket address (false when it does not fit).
bool socket_address_of(int node_fd, sockaddr_un& address);

// True only when connecting to the socket `name` in the directory `dirfd` is
// refused (ECONNREFUSED): nothing listens on it. A process in another pid
// namespace has other pids, so "its pid is gone here" does not make its
// socket stale; a socket removed as stale must be both (process_gone and
// this). Any other outcome (a connection, a full backlog, no permission, a
// path too long) keeps the socket.
bool nobody_listens(int dirfd, const char* name);

// The state letter of `pid` in /proc/<pid>/stat ('R', 'S', 'Z', ...), nullopt
// when unreadable.
std::optional<char> process_state(long pid);

// The uid owning /proc/<pid> (the process's effective uid, dumpable or not:
// only the files in it belong to root then), or nullopt when the process does
// not exist.
std::optional<uid_t> process_uid(long pid);

// Where to read `pid`'s per-process files (root, environ, ns/*, status,
// uid_map): /proc/<pid>, or /proc/<pid>/task/<tid> of a thread still running
// when its main thread has exited (pthread_exit: those files are gone from
// /proc/<pid> but the process still serves).
std::string live_proc_dir(long pid);

// The thread group (process) that `pid` belongs to, from the Tgid line of
// /proc/<pid>/status: another number for a thread id; nullopt when unreadable.
std::optional<long> thread_group_of(long pid);

// A process in a pid namespace below this one's (a container, `unshare
// --pid`): its pid in its own namespace, the last of the NStgid values in
// /proc/<pid>/status, which names its socket there. nullopt for a process of
// this namespace (one value), and when the file is unreadable or malformed.
std::optional<long> innermost_pid(long pid);

// What `uid` (a uid as this process sees it) is inside the user namespace of
// `pid`: the same uid when `pid` is in this process's user namespace, else
// from /proc/<pid>/uid_map (whose second field is then relative to this
// namespace); nullopt when the map has no line for it or cannot be read.
std::optional<uid_t> uid_inside(long pid, uid_t uid);

// The text of /proc/<pid>/uid_map (a running thread's, live_proc_dir), nullopt
// when unreadable.
std::optional<std::string> uid_map_of(long pid);

// The uid that `uid` maps to through the text of a uid_map ("inside outside
// count" per line: outside + k is inside + k for k < count); nullopt when no
// line covers it. Malformed lines are skipped.
std::optional<uid_t> uid_in_map(std::string_view map, uid_t uid);

// The uid (as this process sees it) that owns the user namespace of `pid`
// (ioctl NS_GET_OWNER_UID), nullopt when it cannot be read.
std::optional<uid_t> user_namespace_owner(long pid);

// Whether `pid` is in this process's namespace of `kind` ("mnt", "user",
// "pid"): /proc/self/ns/<kind> and /proc/<pid>/ns/<kind> are the same file.
// nullopt when either cannot be inspected (another user's process, unless root).
std::optional<bool> same_namespace(long pid, const char* kind);

// The first `max_bytes` of a file under /proc (environ, status, uid_map),
// read whole; nullopt when it cannot be opened or read.
std::optional<std::string> read_proc_file(const std::string& path, std::size_t max_bytes);

// Longest path a sockaddr_un holds (107 on Linux).
std::size_t max_socket_path();

}  // namespace arenastat::naming
