// The control server's `dump [PATH]` command (control_internal.hpp).
#include <stdexcept>
#include <string>

#include "arenastat/dump.hpp"
#include "control_internal.hpp"
#include "control_request.hpp"
#include "quoted.hpp"

namespace arenastat::control {

std::string dump_body(std::string_view path) {
  if (!path.empty() && path.front() != '/') {
    throw std::invalid_argument("dump: PATH must be absolute, got " + detail::quoted(path) +
                                " (the arenastat CLI makes a relative path absolute)");
  }
  return write_dump(path) + "\n";
}

}  // namespace arenastat::control
