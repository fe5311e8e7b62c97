// Start-up hook (autostart.hpp): ARENASTAT_CONTROL, ARENASTAT_DUMP_SIGNAL,
// ARENASTAT_DUMP_SORT and ARENASTAT_DUMP_FORMAT. A bad value prints one warning naming the variable and
// what it accepts; nothing here throws or ends the program.
#include <signal.h>

#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

#include "arenastat/control.hpp"
#include "arenastat/dump.hpp"
#include "arenastat/prometheus.hpp"
#include "autostart.hpp"
#include "control_internal.hpp"
#include "env.hpp"
#include "quoted.hpp"

namespace arenastat::detail {
namespace {

std::string_view env(const char* name) {
  const char* v = detail::env_value(name);
  return v == nullptr ? std::string_view{} : std::string_view{v};
}

void start_server(std::string_view value) {
  if (value.empty() || value == "0") return;
  if (value != "1") {
    warn("arenastat: ignoring ARENASTAT_CONTROL=" + quoted(value) + ": expected 1 (on) or 0 (off)\n");
    return;
  }
  try {
    control::start();
  } catch (const std::exception& e) {
    warn(std::string(e.what()) + "; the control server is off\n");
  }
}

int signal_named(std::string_view name) {
  if (name.starts_with("SIG")) name.remove_prefix(3);
  if (name == "USR1") return SIGUSR1;
  if (name == "USR2") return SIGUSR2;
  return 0;
}

void install_dump(std::string_view value) {
  if (value.empty()) return;
  const int signo = signal_named(value);
  if (signo == 0) {
    warn("arenastat: ignoring ARENASTAT_DUMP_SIGNAL=" + quoted(value) +
         ": expected USR1 or USR2; no dump signal installed\n");
    return;
  }
  try {
    install_dump_signal(signo);
  } catch (const std::exception& e) {
    warn(std::string("arenastat: ARENASTAT_DUMP_SIGNAL: ") + e.what() + "\n");
  }
}

void check_dump_sort(std::string_view value) {
  if (value.empty()) return;
  try {
    (void)parse_dump_sort(value);
  } catch (const std::invalid_argument&) {
    warn("arenastat: ignoring ARENASTAT_DUMP_SORT=" + quoted(value) + ": expected " +
         std::string(dump_sort_choices) + "; dumps are sorted by size\n");
  }
}

// Read where the signal's dump is written (prometheus_dump_from_env).
void check_dump_format(std::string_view value) {
  if (parse_dump_format(value)) return;
  warn("arenastat: ignoring ARENASTAT_DUMP_FORMAT=" + quoted(value) +
       ": expected text or prometheus; dumps are text\n");
}

}  // namespace

void start_control_from_env() noexcept {
  try {
    check_dump_sort(env("ARENASTAT_DUMP_SORT"));
    check_dump_format(env("ARENASTAT_DUMP_FORMAT"));
    install_dump(env("ARENASTAT_DUMP_SIGNAL"));
    start_server(env("ARENASTAT_CONTROL"));
  } catch (...) {
    warn("arenastat: the control start-up hook failed unexpectedly; control and dumps are off\n");
  }
}

}  // namespace arenastat::detail
