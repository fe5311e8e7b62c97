// Opening a file to write through trusted symbolic links only (write_open.hpp).
#include "write_open.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <utility>
#include <vector>

#include "quoted.hpp"

namespace arenastat::files {
namespace {

// The links a path may pass through, as the kernel's limit (MAXSYMLINKS).
constexpr int max_links = 40;
// procfs (PROC_SUPER_MAGIC): its links (/proc/self, /proc/self/fd/N) may name
// no path at all ("pipe:[123]"), so a trusted one is followed by the kernel.
constexpr long procfs_magic = 0x9fa0;

// The rule: a link made by root or by the writer.
bool trusted_link_owner(uid_t owner) { return owner == 0 || owner == ::geteuid(); }

write_open failed(int err) { return {.fd = -1, .error = err, .refused_link_owner = std::nullopt, .refused_link = {}}; }
write_open opened(int fd) { return {.fd = fd, .error = 0, .refused_link_owner = std::nullopt, .refused_link = {}}; }

// An fd closed when it goes out of scope (or handed over by release()).
class owned_fd {
 public:
  explicit owned_fd(int fd = -1) noexcept : fd_(fd) {}
  owned_fd(const owned_fd&) = delete;
  owned_fd& operator=(const owned_fd&) = delete;
  ~owned_fd() { reset(-1); }
  int get() const noexcept { return fd_; }
  void reset(int fd) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  int release() noexcept { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// The path's components in reverse order (the next one last), so that a
// link's target can be pushed in front of what remains.
void push_components(std::vector<std::string>& rest, const std::string& path) {
  std::vector<std::string> parts;
  std::size_t i = 0;
  while (i < path.size()) {
    const std::size_t slash = path.find('/', i);
    const std::size_t end = slash == std::string::npos ? path.size() : slash;
    if (end > i) parts.emplace_back(path, i, end - i);
    i = end + 1;
  }
  rest.insert(rest.end(), parts.rbegin(), parts.rend());
}

// The walk from the starting directory to the file: every component opened
// with O_NOFOLLOW from the directory before it, and each symbolic link met
// (in a directory's place or the file's) checked before it is followed, by
// reading the link itself through an O_PATH descriptor.
class walk {
 public:
  // directory: walk to the directory `path` names (every component a
  // directory) and return it opened with O_PATH, instead of opening a file.
  walk(const std::string& path, int flags, mode_t mode, bool directory = false)
      : flags_(flags), mode_(mode), directory_(directory) {
    shown_ = path.front() == '/' ? "" : ".";
    dir_.reset(::open(path.front() == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
    push_components(rest_, path);
  }

  write_open run() {
    if (dir_.get() < 0) return failed(errno);
    if (rest_.empty() && !directory_) return failed(EISDIR);  // "/", or only slashes
    while (!rest_.empty()) {
      const std::string name = std::move(rest_.back());
      rest_.pop_back();
      const bool last = rest_.empty() && !directory_;
      if (name == "." && !last) continue;
      int open_error = 0;  // why the last component could not be opened as a file
      if (last && name != "." && name != "..") {
        bool created = false;
        const int fd = open_last(name, created);
        if (fd >= 0) return created ? opened(fd) : checked_file(fd);
        // ELOOP: a link. Other errors may hide one too: in a sticky directory
        // the kernel refuses (EACCES) to create through another user's link
        // before O_NOFOLLOW is looked at. ENOENT and EEXIST say what they say.
        if (errno == ENOENT || errno == EEXIST) return failed(errno);
        open_error = errno;
      }
      owned_fd here(::openat(dir_.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
      if (here.get() < 0) return failed(open_error != 0 ? open_error : errno);
      struct stat st {};
      if (::fstat(here.get(), &st) != 0) return failed(errno);
      if (open_error != 0 && !S_ISLNK(st.st_mode)) return failed(open_error);
      const std::string at = shown_ + "/" + name;
      if (S_ISLNK(st.st_mode)) {
        if (!trusted_link_owner(st.st_uid)) {
          // No path to name but the one given when it is the file itself that is the link.
          const bool named = last && links_ == 0;
          return {.fd = -1, .error = ELOOP, .refused_link_owner = st.st_uid, .refused_link = named ? std::string() : at};
        }
        if (++links_ > max_links) return failed(ELOOP);
        if (on_procfs()) {
          if (last) return open_through_kernel(name);
          dir_.reset(::openat(dir_.get(), name.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
          if (dir_.get() < 0) return failed(errno);
          shown_ = at;
          continue;
        }
        if (const int err = follow(here.get(), last)) return failed(err);
        continue;
      }
      if (last) return failed(S_ISDIR(st.st_mode) ? EISDIR : EACCES);  // "." or ".." last: a directory
      if (!S_ISDIR(st.st_mode)) return failed(ENOTDIR);
      dir_.reset(here.release());
      shown_ = at;
    }
    if (directory_) return opened(dir_.release());
    return failed(ENOENT);  // not reached: the last component returns
  }

 private:
  // Continues with a trusted link's target (read from the link `link_fd`
  // itself, so it is the link that was checked): an absolute one from the
  // root, a relative one from the link's directory.
  int follow(int link_fd, bool last) {
    char target[PATH_MAX];
    const ssize_t n = ::readlinkat(link_fd, "", target, sizeof target);
    if (n < 0) return errno;
    if (n == 0 || static_cast<std::size_t>(n) >= sizeof target) return ENAMETOOLONG;
    const std::string text(target, static_cast<std::size_t>(n));
    if (text.front() == '/') {
      dir_.reset(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (dir_.get() < 0) return errno;
      shown_.clear();
    }
    const std::size_t before = rest_.size();
    push_components(rest_, text);
    // A link to "/" (no components) or one whose target ends in '/': a directory.
    if (last && (rest_.size() == before || text.back() == '/')) return EISDIR;
    return 0;
  }

  // Opens the file `name` in dir_ (O_NOFOLLOW): an existing one without
  // O_CREAT first (with O_CREAT the kernel's fs.protected_regular, when on,
  // refuses another user's file in a sticky directory with a bare EACCES
  // before checked_file could name it), then, when there is none and O_CREAT
  // was asked, a new one with O_EXCL (`created`: ours, nothing to check or
  // truncate). A file made meanwhile by someone else is opened as existing.
  // -1 with errno as openat sets it.
  int open_last(const std::string& name, bool& created) {
    const int plain = (flags_ & ~(O_TRUNC | O_CREAT | O_EXCL)) | O_NOFOLLOW | O_CLOEXEC;
    if ((flags_ & O_EXCL) != 0) {  // a new file or nothing
      const int fd = ::openat(dir_.get(), name.c_str(), plain | O_CREAT | O_EXCL, mode_);
      created = fd >= 0;
      return fd;
    }
    for (int attempt = 0; attempt < 2; ++attempt) {
      const int fd = ::openat(dir_.get(), name.c_str(), plain, mode_);
      if (fd >= 0 || errno != ENOENT || (flags_ & O_CREAT) == 0) return fd;
      const int made = ::openat(dir_.get(), name.c_str(), plain | O_CREAT | O_EXCL, mode_);
      if (made >= 0 || errno != EEXIST) {
        created = made >= 0;
        return made;
      }
    }
    errno = EEXIST;
    return -1;
  }

  // The file opened by the walk, without O_TRUNC: refused when it is another
  // user's regular file in a sticky directory that others may write to (as
  // fs.protected_regular does, whether or not the kernel has it on), else
  // truncated when asked and returned.
  write_open checked_file(int fd) {
    struct stat file {};
    struct stat dir {};
    if (::fstat(fd, &file) != 0 || ::fstat(dir_.get(), &dir) != 0) {
      const int err = errno;
      ::close(fd);
      return failed(err);
    }
    const bool shared_sticky = (dir.st_mode & S_ISVTX) != 0 && (dir.st_mode & (S_IWOTH | S_IWGRP)) != 0;
    if (S_ISREG(file.st_mode) && shared_sticky && file.st_uid != ::geteuid() && file.st_uid != dir.st_uid) {
      ::close(fd);
      return {.fd = -1, .error = EACCES, .refused_link_owner = file.st_uid, .refused_link = {}, .refused_file = true};
    }
    // Another user may put a hard link to any file (root's, where
    // fs.protected_hardlinks is off) in a directory that user may write to:
    // one owned by someone else than the writer, or open to group or others.
    const bool others_may_write = dir.st_uid != ::geteuid() || (dir.st_mode & (S_IWOTH | S_IWGRP)) != 0;
    if (S_ISREG(file.st_mode) && others_may_write && file.st_nlink > 1) {
      ::close(fd);
      return {.fd = -1, .error = EACCES, .refused_link_owner = file.st_uid, .refused_link = {}, .refused_file = true,
              .refused_hard_links = file.st_nlink};
    }
    if ((flags_ & O_TRUNC) != 0 && S_ISREG(file.st_mode) && ::ftruncate(fd, 0) != 0) {
      const int err = errno;
      ::close(fd);
      return failed(err);
    }
    return opened(fd);
  }

  bool on_procfs() const {
    struct statfs fs {};
    return ::fstatfs(dir_.get(), &fs) == 0 && fs.f_type == procfs_magic;
  }

  // A trusted procfs link as the file: opened by the kernel, which goes
  // straight to what it names. O_TRUNC is applied to a regular file only, as
  // a shell's '>' does (a pipe or terminal is written as it is).
  write_open open_through_kernel(const std::string& name) {
    const int fd = ::openat(dir_.get(), name.c_str(), (flags_ & ~O_TRUNC) | O_CLOEXEC, mode_);
    if (fd < 0) return failed(errno);
    struct stat file {};
    if ((flags_ & O_TRUNC) != 0 && ::fstat(fd, &file) == 0 && S_ISREG(file.st_mode) && ::ftruncate(fd, 0) != 0) {
      const int err = errno;
      ::close(fd);
      return failed(err);
    }
    return opened(fd);
  }

  int flags_;
  mode_t mode_;
  bool directory_;
  owned_fd dir_;
  std::vector<std::string> rest_;
  std::string shown_;
  int links_ = 0;
};

}  // namespace

write_open open_to_write(const std::string& path, int flags, mode_t mode) {
  if (path.empty()) return failed(ENOENT);
  // A NUL would end the path for open(2) but not for the walk: refused.
  if (path.find('\0') != std::string::npos) return failed(EINVAL);
  // "file/" names a directory: as the kernel, EISDIR when it is one or would
  // be created, ENOTDIR when it is something else.
  if (path.back() == '/') {
    write_open dir = walk(path, 0, 0, /*directory=*/true).run();
    if (dir.fd >= 0) {
      ::close(dir.fd);
      return failed(EISDIR);
    }
    if (dir.error == ENOENT && (flags & O_CREAT) != 0) return failed(EISDIR);
    return dir;
  }
  return walk(path, flags, mode).run();
}

write_open open_directory(const std::string& path) {
  if (path.empty()) return failed(ENOENT);
  if (path.find('\0') != std::string::npos) return failed(EINVAL);
  return walk(path, 0, 0, /*directory=*/true).run();
}

int settle_nonblocking_open(int fd, bool refuse_pipes) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return errno;
  if (refuse_pipes && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) return ESPIPE;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) return errno;
  return 0;
}

bool names_fifo(const std::string& path) noexcept {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

std::string refused_link_reason(const write_open& opened) {
  const std::string owner = std::to_string(opened.refused_link_owner.value_or(0));
  if (opened.refused_hard_links > 1)
    return "it is a file with " + std::to_string(opened.refused_hard_links) +
           " hard links in a directory another user may write to (who may have linked a file from elsewhere "
           "under this name), and only files with one name are written there";
  if (opened.refused_file)
    return "it is a file of uid " + owner + " in a sticky directory others may write to, and only files of the "
           "user writing (uid " + std::to_string(::geteuid()) + ") or of the directory's owner are written there";
  const std::string rule =
      ", and only links owned by root or by uid " + std::to_string(::geteuid()) + " (the user writing) are followed";
  if (opened.refused_link.empty()) return "it is a symbolic link owned by uid " + owner + rule;
  return "its path leads through the symbolic link " + detail::quoted(opened.refused_link) + ", owned by uid " + owner + rule;
}

}  // namespace arenastat::files
