// Opening a file to write without following a symbolic link planted by
// another user: the one rule for `dump PATH` (dump.cpp, in the target) and
// `html -o FILE` (the CLI). Standard C and C++ libraries only, so the CLI,
// not linked with the library, shares this copy (docs/cli.md, trust rule 9).
//
// The last component is opened with O_NOFOLLOW. When it is a symbolic link
// (ELOOP), the link is followed only when it is owned by root or by the
// effective uid writing, the rule of Linux's fs.protected_symlinks: such a
// link was made by someone the writer trusts already (/dev/stdout,
// /dev/stderr, /dev/fd/N are root's). A link owned by anyone else is refused,
// and what it points at is never opened.
#pragma once
#include <sys/types.h>

#include <optional>
#include <string>

namespace arenastat::files {

struct write_open {
  int fd = -1;     // the open file (the caller closes it), or -1
  int error = 0;   // errno when fd is -1 and no link was refused
  std::optional<uid_t> refused_link_owner;  // the owner of a refused symbolic link
};

// Opens `path` with `flags` (O_WRONLY | O_CREAT ... ; O_NOFOLLOW and
// O_CLOEXEC are added) and `mode`, following a last-component symbolic link
// only when it is owned by root or geteuid(). When a followed link leads to
// a regular file and `flags` has O_TRUNC, the file is truncated only after
// the link has been checked again (the same link, not one swapped in since);
// a pipe or terminal is not truncated, as a shell's '>' does not.
write_open open_to_write(const std::string& path, int flags, mode_t mode);

// For a writer that must never wait for a reader (the target's dumps and its
// at-exit report): open with O_NONBLOCK, so that a FIFO with no reader fails
// at once (ENXIO) instead of waiting for one, then settle the fd with this.
// Returns 0 with O_NONBLOCK cleared again (writes to a terminal or device then
// behave as usual); ESPIPE, leaving the fd open, when it is a FIFO or socket
// and `refuse_pipes` (a reader that stops reading would then stop the writer);
// or the errno of a failed fstat or fcntl.
int settle_nonblocking_open(int fd, bool refuse_pipes);

// Why a link was refused, for a message after the path:
// "it is a symbolic link owned by uid 65534, and only links owned by root or
// by uid 0 (the user writing) are followed".
std::string refused_link_reason(uid_t owner);

}  // namespace arenastat::files
