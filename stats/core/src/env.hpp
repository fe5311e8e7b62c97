// The one way the library reads its environment (every ARENASTAT_*
// variable), so that a privileged process ignores them all. Not installed;
// inline, so that the CLI's shared parts use it without the library.
#pragma once
#include <cstdlib>

namespace arenastat::detail {

// The value of `name`, or null when it is unset or when the process runs in
// glibc's secure mode (AT_SECURE: a setuid or setgid program, one with file
// capabilities, or one a security module marks): the user who starts a
// privileged program linked with arenastat must not choose which files it
// writes (ARENASTAT_AT_EXIT_FILE, ARENASTAT_DUMP_DIR), which address it
// listens on (ARENASTAT_METRICS) or where it makes its socket directory
// (ARENASTAT_SOCKET_DIR). Such a process behaves as if none were set.
inline const char* env_value(const char* name) noexcept { return ::secure_getenv(name); }

}  // namespace arenastat::detail
