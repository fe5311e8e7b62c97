// Opening a file to write through trusted symbolic links only (write_open.hpp).
#include "write_open.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace arenastat::files {
namespace {

// The rule of fs.protected_symlinks: a link made by root or by the writer.
bool trusted_link_owner(uid_t owner) { return owner == 0 || owner == ::geteuid(); }

bool same_file(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

write_open failed(int err) { return {.fd = -1, .error = err, .refused_link_owner = std::nullopt}; }

write_open refused(uid_t owner) { return {.fd = -1, .error = ELOOP, .refused_link_owner = owner}; }

// Opens through `link` (lstat'ed as a trusted link): without O_TRUNC first,
// then checks that `path` is still that link, then truncates a regular file.
write_open open_through(const std::string& path, const struct stat& link, int flags, mode_t mode) {
  const int fd = ::open(path.c_str(), (flags & ~O_TRUNC) | O_CLOEXEC, mode);
  if (fd < 0) return failed(errno);
  struct stat again {};
  if (::lstat(path.c_str(), &again) != 0 || !S_ISLNK(again.st_mode) || !same_file(again, link)) {
    ::close(fd);
    if (S_ISLNK(again.st_mode) && !trusted_link_owner(again.st_uid)) return refused(again.st_uid);
    return failed(EAGAIN);  // replaced while it was opened: try again
  }
  struct stat file {};
  if ((flags & O_TRUNC) != 0 && ::fstat(fd, &file) == 0 && S_ISREG(file.st_mode) && ::ftruncate(fd, 0) != 0) {
    const int err = errno;
    ::close(fd);
    return failed(err);
  }
  return {.fd = fd, .error = 0, .refused_link_owner = std::nullopt};
}

}  // namespace

write_open open_to_write(const std::string& path, int flags, mode_t mode) {
  const int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd >= 0) return {.fd = fd, .error = 0, .refused_link_owner = std::nullopt};
  const int err = errno;
  struct stat link {};
  if (err != ELOOP || ::lstat(path.c_str(), &link) != 0 || !S_ISLNK(link.st_mode)) return failed(err);
  if (!trusted_link_owner(link.st_uid)) return refused(link.st_uid);
  return open_through(path, link, flags, mode);
}

int settle_nonblocking_open(int fd, bool refuse_pipes) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return errno;
  if (refuse_pipes && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) return ESPIPE;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) return errno;
  return 0;
}

std::string refused_link_reason(uid_t owner) {
  return "it is a symbolic link owned by uid " + std::to_string(owner) + ", and only links owned by root or by uid " +
         std::to_string(::geteuid()) + " (the user writing) are followed";
}

}  // namespace arenastat::files
