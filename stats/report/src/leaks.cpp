// Rendering leaks at exit: the report's `leaks` section (text and JSON) and
// the stderr lines printed when no report goes to stderr.
#include "leaks_section.hpp"

namespace arenastat::detail {

void append_leaks_text(std::string& out, const std::vector<leak>& leaks) {
  if (leaks.empty()) return;
  out += "\nLeaks (" + std::to_string(leaks.size()) + "):\n";
  for (const leak& l : leaks) out += "  " + describe_leak(l) + "\n";
}

void append_leaks_html(std::string& page, const std::vector<leak>& leaks) {
  if (leaks.empty()) return;
  std::string text;
  append_leaks_text(text, leaks);
  // Names are data: every character HTML gives a meaning is written as an
  // entity (a leaked scope named "<script>..." must not run in the page).
  std::string block = "<pre id=\"arenastat-leaks\">";
  for (const char c : text.substr(1)) {  // without the text section's leading blank line
    switch (c) {
      case '&': block += "&amp;"; break;
      case '<': block += "&lt;"; break;
      case '>': block += "&gt;"; break;
      case '"': block += "&quot;"; break;
      case '\'': block += "&#39;"; break;
      default: block += c;
    }
  }
  block += "</pre>\n";
  const std::size_t body_end = page.rfind("</body>");
  page.insert(body_end == std::string::npos ? page.size() : body_end, block);
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
