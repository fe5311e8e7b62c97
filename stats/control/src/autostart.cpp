// Runs the environment-driven start-up hooks in every program that links the
// library, with no code change. The anchor symbol is named in the library's
// link options (--undefined) so a static archive never drops this file.
#include "autostart.hpp"

extern "C" {
// Referenced by the linker option on arenastat's interface.
__attribute__((used)) int arenastat_autostart_anchor = 0;
}

namespace {
struct autostart {
  autostart() noexcept {
    arenastat::detail::start_at_exit_from_env();
    arenastat::detail::start_control_from_env();
    arenastat::detail::start_metrics_from_env();
  }
};
// Constructed during static initialisation of the library.
const autostart run_at_start;
}  // namespace
