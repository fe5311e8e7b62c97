// Rendering leaks at exit: the report's `leaks` section (text and JSON) and
// the stderr lines printed when no report goes to stderr.
#include "leaks_section.hpp"

namespace arenastat::detail {

void append_leaks_text(std::string& out, const std::vector<leak>& leaks) {
  if (leaks.empty()) return;
  out += "\nLeaks (" + std::to_string(leaks.size()) + "):\n";
  for (const leak& l : leaks) out += "  " + describe_leak(l) + "\n";
}

void leaks_json(json_writer& w, const std::vector<leak>& leaks) {
  w.begin_array();
  for (const leak& l : leaks) {
    w.begin_object();
    if (l.kind == leak::source::account) {
      w.field("kind", "account");
      w.field("name", l.name);
      w.field("live_bytes", l.live_bytes);
      w.field("blocks", l.blocks);
      w.field("peak_bytes", l.peak_bytes);
      w.key("live_by_tag").begin_object();
      for (const tag_bytes& t : l.live_by_tag) w.field(t.tag, t.bytes);
      w.end_object();
    } else {
      w.field("kind", "arena_chunks");
      w.field("tag", l.tag);
      w.key("scope");
      if (l.name.empty()) w.null();
      else w.value(l.name);
      w.field("live_bytes", l.live_bytes);
      w.field("chunks", l.blocks);
    }
    w.end_object();
  }
  w.end_array();
}

std::string leak_lines_at_exit(const std::vector<leak>& leaks) {
  std::string out;
  for (const leak& l : leaks) out += "arenastat: leak at exit: " + describe_leak(l) + "\n";
  return out;
}

}  // namespace arenastat::detail
