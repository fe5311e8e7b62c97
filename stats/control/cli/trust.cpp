// The CLI's trust rules (trust.hpp).
#include "trust.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>

namespace arenastat::cli {

std::string error_text(int err) { return std::error_code(err, std::generic_category()).message(); }

std::string octal_mode(unsigned mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", mode & 07777);
  return buf;
}

std::optional<trusted_dir> trusted_dir::open(const std::string& path, const expected_owner& owner) {
  const std::string what = "refusing socket directory " + path + ": ";
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return std::nullopt;
    struct stat st {};
    if (err == ELOOP || (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode))) {
      throw failure{exit_refused, what + "it is a symbolic link"};
    }
    if (err == ENOTDIR) throw failure{exit_refused, what + "it is not a directory"};
    if (err == EACCES) {
      throw failure{exit_unreachable, "permission denied opening the socket directory " + path + ": run arenastat as " +
                                          owner.described + " or as root"};
    }
    throw failure{exit_unreachable, "cannot open the socket directory " + path + ": " + error_text(err)};
  }
  trusted_dir dir(fd, path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw failure{exit_unreachable, "cannot inspect " + path + ": " + error_text(errno)};
  if (st.st_uid != owner.uid) {
    throw failure{exit_refused, what + "it is owned by uid " + std::to_string(st.st_uid) + ", not by " +
                                    owner.described + "; another user may have created it first: remove it, or "
                                    "use another ARENASTAT_SOCKET_DIR"};
  }
  if ((st.st_mode & 077) != 0) {
    throw failure{exit_refused, what + "mode " + octal_mode(st.st_mode) + " is open to group or others (expected 0700)"};
  }
  return dir;
}

trusted_dir::trusted_dir(trusted_dir&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

trusted_dir& trusted_dir::operator=(trusted_dir&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

trusted_dir::~trusted_dir() {
  if (fd_ >= 0) ::close(fd_);
}

bool check_socket(const trusted_dir& dir, const std::string& name, const expected_owner& owner) {
  const std::string path = dir.file(name);
  struct stat st {};
  if (::fstatat(dir.fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return false;
    throw failure{exit_unreachable, "cannot inspect " + path + ": " + error_text(errno)};
  }
  const std::string what = "refusing " + path + ": ";
  if (S_ISLNK(st.st_mode)) throw failure{exit_refused, what + "it is a symbolic link, not a socket"};
  if (!S_ISSOCK(st.st_mode)) throw failure{exit_refused, what + "it is not a socket"};
  if (st.st_uid != owner.uid) {
    throw failure{exit_refused,
                  what + "it is owned by uid " + std::to_string(st.st_uid) + ", not by " + owner.described};
  }
  if ((st.st_mode & 077) != 0) {
    throw failure{exit_refused,
                  what + "mode " + octal_mode(st.st_mode) + " is open to group or others (expected 0600); it is not secure"};
  }
  return true;
}

int connect_in(const trusted_dir& dir, const std::string& name, long pid) {
  const std::string shown = dir.file(name);
  const std::string via = "/proc/self/fd/" + std::to_string(dir.fd()) + "/" + name;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (via.size() >= sizeof a.sun_path) throw failure{exit_unreachable, "socket name " + name + " is too long"};
  std::memcpy(a.sun_path, via.c_str(), via.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw failure{exit_unreachable, "socket(): " + error_text(errno)};
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0) return fd;
  const int err = errno;
  ::close(fd);
  const std::string who = "process " + std::to_string(pid);
  if (err == ECONNREFUSED) {
    throw failure{exit_unreachable, "nobody listens at " + shown + ": " + who +
                                        " has stopped its control server (or the socket is stale); restart it "
                                        "with ARENASTAT_CONTROL=1"};
  }
  if (err == EAGAIN) {
    throw failure{exit_busy, who + " is busy: its connection queue is full; retry later"};
  }
  if (err == EACCES || err == EPERM) {
    throw failure{exit_unreachable, "permission denied connecting to " + shown + ": run arenastat as the user of " +
                                        who + " or as root"};
  }
  throw failure{exit_unreachable, "cannot connect to " + shown + ": " + error_text(err)};
}

void check_peer(int fd, const std::string& socket, long pid, const expected_owner& owner) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    throw failure{exit_refused, "refusing the server at " + socket + ": cannot read its credentials (" +
                                    error_text(errno) + ")"};
  }
  if (static_cast<long>(cred.pid) != pid) {
    throw failure{exit_refused, "refusing the server at " + socket + ": it is process " + std::to_string(cred.pid) +
                                    ", not process " + std::to_string(pid)};
  }
  if (cred.uid != owner.uid) {
    throw failure{exit_refused, "refusing the server at " + socket + ": it runs as uid " + std::to_string(cred.uid) +
                                    ", not as " + owner.described};
  }
}

}  // namespace arenastat::cli
