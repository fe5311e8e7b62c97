// Opening a file (or the directory of a file) to write without following a
// symbolic link planted by another user: the one rule for `dump PATH`
// (dump.cpp, in the target), `html -o FILE` (the CLI), ARENASTAT_AT_EXIT_FILE
// (at_exit.cpp) and the directory of the .prom files (prometheus.cpp). Standard
// C and C++ libraries and quoted() (arenastat_text) only, so the CLI, not
// linked with the library, shares this copy (docs/cli.md, trust rule 9).
//
// The path is walked one component at a time, each opened with O_NOFOLLOW
// from the directory before it. A symbolic link met anywhere (a directory's
// place, the file's, or inside another link's target) is followed only when
// it is owned by root or by the effective uid writing (stricter than Linux's
// fs.protected_symlinks, which the kernel applies only in sticky
// world-writable directories): such a link was made by someone the writer
// trusts already (/dev/stdout, /dev/stderr, /dev/fd/N and /proc/self are
// root's). A link owned by anyone else is refused, and nothing it points at
// is opened. A link's target is read from the link checked (an O_PATH
// descriptor), so a link swapped in meanwhile is never followed; a trusted
// link on procfs (/proc/self/fd/N may name no path) is followed by the kernel.
#pragma once
#include <sys/types.h>

#include <optional>
#include <string>

namespace arenastat::files {

struct write_open {
  int fd = -1;     // the open file (the caller closes it), or -1
  int error = 0;   // errno when fd is -1 (ELOOP when a link was refused)
  std::optional<uid_t> refused_link_owner;  // the owner of a refused symbolic link (or file: refused_file)
  std::string refused_link;  // its path as walked; empty when it is the file named itself
  // The file itself was refused: an existing regular file of another user
  // (refused_link_owner) in a sticky directory others may write to, which
  // Linux's fs.protected_regular refuses to open too (when it is on): its
  // owner could read what is written (a root process's report) or have
  // planted it for that. Nothing was truncated.
  bool refused_file = false;
  // The file itself was refused for its hard links: an existing regular file
  // with this many names (more than 1) in a directory another user may write
  // to (owned by another user, or open to group or others). That user may have
  // linked a file of the user writing (root's /etc/shadow, with
  // fs.protected_hardlinks off) there under the name asked for; writing would
  // replace that file's contents. Nothing was truncated.
  nlink_t refused_hard_links = 0;
};

// Opens `path` with `flags` (O_WRONLY | O_CREAT ... ; O_NOFOLLOW and
// O_CLOEXEC are added) and `mode`, following symbolic links only when they
// are owned by root or geteuid() (at most 40, as the kernel). O_TRUNC
// truncates a regular file only (a pipe or terminal is written as it is, as
// by a shell's '>'), and only once it is known not to be another user's file
// in a sticky directory others may write to (refused_file), nor a file with
// several hard links in a directory another user may write to
// (refused_hard_links).
write_open open_to_write(const std::string& path, int flags, mode_t mode);

// The directory `path` opened with O_PATH (for the *at calls: openat,
// renameat), reached by the same walk and the same rule for links as
// open_to_write: a writer that creates a temporary beside its file and renames
// it into place (the .prom files) does so in this directory.
write_open open_directory(const std::string& path);

// For a writer that must never wait for a reader (the target's dumps and its
// at-exit report): open with O_NONBLOCK, so that a FIFO with no reader fails
// at once (ENXIO) instead of waiting for one, then settle the fd with this.
// Returns 0 with O_NONBLOCK cleared again (writes to a terminal or device then
// behave as usual); ESPIPE, leaving the fd open, when it is a FIFO or socket
// and `refuse_pipes` (a reader that stops reading would then stop the writer);
// or the errno of a failed fstat or fcntl.
int settle_nonblocking_open(int fd, bool refuse_pipes);

// Whether `path` names a FIFO (following links: for a message's hint only,
// as when an open failed with ENXIO, which a socket or a terminal give too).
bool names_fifo(const std::string& path) noexcept;

// Why a link was refused, for a message after the path:
// "it is a symbolic link owned by uid 65534, and only links owned by root or
// by uid 0 (the user writing) are followed", or for a link on the way "its
// path leads through the symbolic link '/tmp/shared/out', owned by uid
// 65534, and only ...".
std::string refused_link_reason(const write_open& opened);

}  // namespace arenastat::files
