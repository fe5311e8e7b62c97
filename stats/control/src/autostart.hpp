// Start-up hooks run by autostart.cpp's static initializer in every program
// that links arenastat. Each reads its environment variables and does nothing
// when they are unset. None may throw: a bad value is reported on stderr.
#pragma once
#include "at_exit_env.hpp"  // start_at_exit_from_env (report layer)

namespace arenastat::detail {

// ARENASTAT_CONTROL, ARENASTAT_SOCKET_DIR, ARENASTAT_DUMP_SIGNAL, ... (control/dump).
void start_control_from_env() noexcept;

// ARENASTAT_METRICS, ARENASTAT_METRICS_DEPTH: the /metrics endpoint (metrics_http.cpp).
void start_metrics_from_env() noexcept;

}  // namespace arenastat::detail
