// Socket naming shared by the control server and the CLI (socket_naming.hpp).
#include "socket_naming.hpp"

#include <dirent.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <vector>

#include "env.hpp"

namespace arenastat::naming {
namespace {

// A pid as the server writes it in a name (std::to_string): digits only, 1
// to 9 of them, no leading zero, value > 0. "00001.sock" is not pid 1's
// socket (the CLI would list a process it then cannot reach at "1.sock", and
// the sweep would remove a live process's file on a dead pid's account).
std::optional<long> parse_pid(std::string_view digits) {
  if (digits.empty() || digits.size() > 9 || digits.front() == '0') return std::nullopt;
  long pid = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    pid = pid * 10 + (c - '0');
  }
  return pid > 0 ? std::optional<long>(pid) : std::nullopt;
}

// The state letter in a "pid (comm) S ..." stat file, nullopt when unreadable.
std::optional<char> state_in_stat_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[512];  // "pid (comm) S ...": comm is at most 15 bytes, the state follows it
  const ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  const std::string_view stat(buf, static_cast<std::size_t>(n));
  const std::size_t paren = stat.rfind(')');  // comm may hold ')' itself: the last one ends it
  if (paren == std::string_view::npos || paren + 2 >= stat.size()) return std::nullopt;
  return stat[paren + 2];
}

}  // namespace

std::string without_trailing_slashes(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

std::string socket_dir(uid_t uid) {
  const char* env = detail::env_value("ARENASTAT_SOCKET_DIR");
  if (env != nullptr && *env != '\0') return without_trailing_slashes(env);
  return default_socket_dir(uid);
}

std::string default_socket_dir(uid_t uid) { return "/tmp/arenastat-" + std::to_string(uid); }

std::string socket_dir_problem(std::string_view dir) {
  if (dir.empty() || dir.front() != '/') {
    return "it is a relative path; it must be absolute (the program and the arenastat CLI would each resolve it "
           "from their own working directory)";
  }
  // "." and ".." would be resolved through whatever precedes them: with
  // "/x/link/." the check that the directory is no symbolic link (O_NOFOLLOW
  // acts on the last part only) would look at "." instead of "link".
  for (std::size_t at = 0; at < dir.size();) {
    const std::size_t end = std::min(dir.find('/', at), dir.size());
    const std::string_view part = dir.substr(at, end - at);
    if (part == "." || part == "..") return "it has a '" + std::string(part) + "' part; give the directory's own path";
    at = end + 1;
  }
  return {};
}

std::string socket_dir_origin() {
  const char* env = detail::env_value("ARENASTAT_SOCKET_DIR");
  return env != nullptr && *env != '\0' ? " (ARENASTAT_SOCKET_DIR)" : "";
}

std::string socket_name(long pid) { return std::to_string(pid) + ".sock"; }

std::string socket_path(std::string_view dir, long pid) {
  std::string path(dir);
  path += '/';
  path += socket_name(pid);
  return path;
}

std::string temporary_name(long pid) {
  std::string name = ".";  // appended piece by piece: "." + std::string trips GCC 12's -Wrestrict
  name += std::to_string(pid);
  name += ".tmp";
  return name;
}

std::optional<long> pid_of_socket_name(std::string_view name) {
  if (!name.ends_with(".sock")) return std::nullopt;
  name.remove_suffix(5);
  return parse_pid(name);
}

std::optional<long> pid_of_temporary_name(std::string_view name) {
  if (!name.starts_with(".") || !name.ends_with(".tmp")) return std::nullopt;
  name.remove_prefix(1);
  name.remove_suffix(4);
  return parse_pid(name);
}

std::string program_of(long pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/comm";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "?";
  char buf[64];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n <= 0) return "?";
  std::string name(buf, static_cast<std::size_t>(n));
  if (!name.empty() && name.back() == '\n') name.pop_back();
  return name.empty() ? "?" : name;
}

std::optional<char> process_state(long pid) {
  return state_in_stat_file("/proc/" + std::to_string(pid) + "/stat");
}

namespace {

bool exited_state(std::optional<char> state) { return state == 'Z' || state == 'X'; }

// True when some thread of `pid` has not exited: a /proc/<pid>/task/<tid>/stat
// whose state is neither Z nor X. A main thread that called pthread_exit is Z
// in /proc/<pid>/stat while the other threads run (and serve); only when every
// thread is Z or X has the process exited. A task that vanishes while the
// directory is read has exited. An unreadable task directory: running unless
// /proc/<pid> itself is gone (ENOENT, ESRCH).
bool some_thread_runs(long pid) {
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(tasks.c_str());
  if (d == nullptr) return errno != ENOENT && errno != ESRCH;
  bool runs = false;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::optional<char> state = state_in_stat_file(tasks + "/" + e->d_name + "/stat");
    if (state && !exited_state(state)) {
      runs = true;
      break;
    }
  }
  ::closedir(d);
  return runs;
}

}  // namespace

bool process_gone(long pid) {
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;
  if (!exited_state(process_state(pid))) return false;  // the main thread runs: no need to read every task
  return !some_thread_runs(pid);
}

int open_node(int dirfd, const char* name) { return ::openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC); }

bool socket_address_of(int node_fd, sockaddr_un& address) {
  const std::string path = "/proc/self/fd/" + std::to_string(node_fd);
  address = sockaddr_un{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) return false;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return true;
}

bool nobody_listens(int dirfd, const char* name) {
  const int node = open_node(dirfd, name);
  if (node < 0) return false;
  struct stat st {};
  sockaddr_un a{};
  bool refused = false;
  if (::fstat(node, &st) == 0 && S_ISSOCK(st.st_mode) && socket_address_of(node, a)) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
      refused = ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 && errno == ECONNREFUSED;
      ::close(fd);  // a listening server sees a client that sent nothing, and closes it
    }
  }
  ::close(node);
  return refused;
}

namespace {

// The decimal numbers of `line` separated by blanks, or nullopt when anything
// else is there or a number does not fit.
std::optional<std::vector<unsigned long long>> numbers_of(std::string_view line) {
  std::vector<unsigned long long> out;
  std::size_t at = 0;
  for (;;) {
    while (at < line.size() && (line[at] == ' ' || line[at] == '\t')) ++at;
    if (at == line.size()) return out;
    unsigned long long v = 0;
    const std::size_t start = at;
    for (; at < line.size() && line[at] >= '0' && line[at] <= '9'; ++at) {
      if (v > (~0ULL - 9) / 10) return std::nullopt;
      v = v * 10 + static_cast<unsigned>(line[at] - '0');
    }
    if (at == start || (at < line.size() && line[at] != ' ' && line[at] != '\t')) return std::nullopt;
    out.push_back(v);
  }
}

// status and uid_map are far smaller than this.
constexpr std::size_t small_proc_bytes = 65536;

}  // namespace

std::optional<std::string> read_proc_file(const std::string& path, std::size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string all;
  char buf[65536];
  ssize_t n = 0;
  while (all.size() < max_bytes && (n = ::read(fd, buf, sizeof buf)) > 0) all.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  if (n < 0) return std::nullopt;
  if (all.size() > max_bytes) all.resize(max_bytes);
  return all;
}

std::string live_proc_dir(long pid) {
  const std::string base = "/proc/" + std::to_string(pid);
  if (!exited_state(process_state(pid))) return base;
  DIR* d = ::opendir((base + "/task").c_str());
  if (d == nullptr) return base;
  std::string live = base;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    if (!exited_state(state_in_stat_file(base + "/task/" + e->d_name + "/stat"))) {
      live = base + "/task/" + e->d_name;
      break;
    }
  }
  ::closedir(d);
  return live;
}

std::optional<uid_t> user_namespace_owner(long pid) {
  const int fd = ::open((live_proc_dir(pid) + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  uid_t owner = 0;
  const int r = ::ioctl(fd, NS_GET_OWNER_UID, &owner);
  ::close(fd);
  if (r != 0) return std::nullopt;
  return owner;
}

std::optional<bool> same_namespace(long pid, const char* kind) {
  struct stat mine {}, theirs {};
  const std::string self = std::string("/proc/self/ns/") + kind;
  const std::string other = live_proc_dir(pid) + "/ns/" + kind;
  if (::stat(self.c_str(), &mine) != 0 || ::stat(other.c_str(), &theirs) != 0) return std::nullopt;
  return mine.st_dev == theirs.st_dev && mine.st_ino == theirs.st_ino;
}

std::optional<long> thread_group_of(long pid) {
  const std::optional<std::string> status = read_proc_file("/proc/" + std::to_string(pid) + "/status", small_proc_bytes);
  if (!status) return std::nullopt;
  const std::size_t at = status->find("\nTgid:");
  if (at == std::string::npos) return std::nullopt;
  const std::size_t from = at + 6, end = std::min(status->find('\n', from), status->size());
  const auto v = numbers_of(std::string_view(*status).substr(from, end - from));
  if (!v || v->size() != 1 || v->front() == 0 || v->front() > 0x7fffffffULL) return std::nullopt;
  return static_cast<long>(v->front());
}

std::optional<long> innermost_pid(long pid) {
  const std::optional<std::string> status = read_proc_file(live_proc_dir(pid) + "/status", small_proc_bytes);
  if (!status) return std::nullopt;
  // NStgid: the process's pid in each namespace (NSpid is the thread's, and
  // the status read may be a running thread's when the main one has exited).
  const std::size_t at = status->find("\nNStgid:");
  if (at == std::string::npos) return std::nullopt;
  const std::size_t from = at + 8, end = std::min(status->find('\n', from), status->size());
  const auto pids = numbers_of(std::string_view(*status).substr(from, end - from));
  if (!pids || pids->size() < 2 || pids->back() == 0 || pids->back() > 0x7fffffffULL) return std::nullopt;
  return static_cast<long>(pids->back());
}

std::optional<uid_t> uid_in_map(std::string_view map, uid_t uid) {
  for (std::size_t at = 0; at < map.size();) {
    const std::size_t end = std::min(map.find('\n', at), map.size());
    const auto v = numbers_of(map.substr(at, end - at));
    at = end + 1;
    if (!v || v->size() != 3) continue;
    const unsigned long long inside = (*v)[0], outside = (*v)[1], count = (*v)[2];
    if (uid >= outside && uid - outside < count && inside + (uid - outside) <= 0xfffffffeULL)
      return static_cast<uid_t>(inside + (uid - outside));
  }
  return std::nullopt;
}

std::optional<std::string> uid_map_of(long pid) {
  return read_proc_file(live_proc_dir(pid) + "/uid_map", small_proc_bytes);
}

std::optional<uid_t> uid_inside(long pid, uid_t uid) {
  if (same_namespace(pid, "user") == true) return uid;
  const std::optional<std::string> map = uid_map_of(pid);
  if (!map) return std::nullopt;
  return uid_in_map(*map, uid);
}

std::optional<uid_t> process_uid(long pid) {
  struct stat st {};
  const std::string path = "/proc/" + std::to_string(pid);
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  return st.st_uid;
}

std::size_t max_socket_path() { return sizeof(sockaddr_un::sun_path) - 1; }

}  // namespace arenastat::naming
