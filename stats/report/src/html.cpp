// The HTML report (html.hpp): the report's (or the diff's) --json text, escaped,
// inside the page whose markup, style and script are the project's own files
// under stats/report/html/, embedded at build time (html_assets.cpp, generated
// by html/embed.cmake).
#include "arenastat/html.hpp"

#include <unistd.h>

#include "json_writer.hpp"
#include "report_internal.hpp"
#include "sys.hpp"

namespace arenastat {

namespace html_assets {
extern const char page_html[];
extern const char page_css[];
extern const char page_js[];
}  // namespace html_assets

namespace {

std::string page(std::string_view title, const std::string& json) {
  std::string out;
  out.reserve(json.size() + 32768);
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>";
  out += title;  // fixed text, never a name
  out += "</title>\n<style>\n";
  out += html_assets::page_css;
  out += "</style>\n</head>\n<body>\n";
  out += html_assets::page_html;
  out += "<script type=\"application/json\" id=\"arenastat-data\">";
  out += json_for_script(json);
  out += "</script>\n<script>\n";
  out += html_assets::page_js;
  out += "</script>\n</body>\n</html>\n";
  return out;
}

// {"mode": MODE, "pid", "program"?, "process", "report": REPORT}: the page's
// data, where REPORT is the --json text of the report or of the diff.
std::string page_data(std::string_view mode, const process_info& proc, std::string report) {
  std::string out;
  detail::json_writer w(out);
  w.begin_object();
  w.field("mode", mode);
  w.field("pid", proc.pid);
  if (proc.pid == ::getpid()) w.field("program", detail::program_name());
  w.key("process");
  detail::write_process_json(w, proc, /*with_pid=*/false);
  w.end_object();
  out.pop_back();  // reopen the object for the report, whose JSON is already written
  while (!report.empty() && (report.back() == '\n' || report.back() == ' ')) report.pop_back();
  out += ",\"report\":";
  out += report;
  out += '}';
  return out;
}

}  // namespace

std::string json_for_script(std::string_view json) {
  std::string out;
  out.reserve(json.size() + json.size() / 16);
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else if (c == '\xE2' && i + 2 < json.size() && json[i + 1] == '\x80' &&
             (json[i + 2] == '\xA8' || json[i + 2] == '\xA9')) {
      out += json[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string render_html(const std::vector<entry>& entries, const process_info& proc,
                        const report_options& options, const table_status& table) {
  report_options json = options;
  json.format = report_format::json;  // the same entries and figures as --json
  return page("arenastat memory map", page_data("report", proc, render_report(entries, proc, json, table)));
}

std::string render_diff_html(const std::vector<diff_entry>& diff, const report_options& options,
                             const diff_source& source) {
  report_options json = options;
  json.format = report_format::json;
  return page("arenastat diff", page_data("diff", read_process_info(), render_diff(diff, json, source)));
}

}  // namespace arenastat
