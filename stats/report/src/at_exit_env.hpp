// The at-exit report's start-up hook, run by the control layer's autostart
// (stats/control/src/autostart.cpp). Not installed.
#pragma once

namespace arenastat::detail {

// ARENASTAT_AT_EXIT, ARENASTAT_AT_EXIT_FILE (at_exit.cpp). Never throws: a bad
// value is reported on stderr.
void start_at_exit_from_env() noexcept;

}  // namespace arenastat::detail
