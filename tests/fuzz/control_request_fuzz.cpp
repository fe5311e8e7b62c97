// libFuzzer target for the control socket's request grammar and line framing
// (stats/control/src/control_request.cpp). Built and run by scripts/fuzz.sh.
// Checks invariants, not just absence of crashes: a parsed request names a
// known command and carries no control bytes; a refused one has a message;
// error messages are single lines; the reader never keeps more than the limit.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "control_request.hpp"

using namespace arenastat::wire;

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

bool single_line_text(std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  // The parser on the raw bytes, as one line.
  const parse_result r = parse_request(input);
  if (r.value) {
    require(r.error.empty());
    const command_info* info = nullptr;
    for (const command_info& c : commands()) {
      if (c.cmd == r.value->cmd) info = &c;
    }
    require(info != nullptr);
    require(info->takes_arguments || r.value->arguments.empty());
    require(r.value->arguments.size() < max_request_bytes);
    for (unsigned char c : r.value->arguments) require(c == '\t' || (c >= 0x20 && c != 0x7f));
  } else {
    require(!r.error.empty());
    require(single_line_text(single_line(r.error)));
  }

  // The framing: feed the input in pieces whose sizes come from the input.
  request_reader reader;
  std::size_t pos = 0;
  while (pos < size && reader.current() == request_reader::state::incomplete) {
    const std::size_t piece = 1 + data[pos] % 97;
    reader.feed(input.substr(pos, piece));
    pos += piece;
  }
  require(reader.line().size() < max_request_bytes);
  if (reader.current() == request_reader::state::complete) {
    require(reader.line().find('\n') == std::string_view::npos);
    parse_request(reader.line());
  }
  return 0;
}
