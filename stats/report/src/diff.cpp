// Baseline/diff (diff.hpp): matching two snapshots and rendering the changes.
#include "arenastat/diff.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "arenastat/html.hpp"
#include "arenastat/size.hpp"
#include "json_writer.hpp"
#include "text_escape.hpp"

namespace arenastat {
namespace {

std::int64_t as_signed(std::uint64_t v) noexcept { return static_cast<std::int64_t>(v); }

std::uint64_t magnitude(std::int64_t v) noexcept {
  return v < 0 ? std::uint64_t(0) - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
}

const char* status_name(diff_status s) noexcept {
  switch (s) {
    case diff_status::changed: return "changed";
    case diff_status::unchanged: return "unchanged";
    case diff_status::added: return "new";
    case diff_status::vanished: return "vanished";
  }
  return "changed";
}

// The larger of the live and peak changes: the default ordering and the -s filter.
std::uint64_t size_change(const diff_entry& d) noexcept {
  return std::max(magnitude(d.live.change()), magnitude(d.peak.change()));
}

std::string plain_or_human(std::int64_t v, bool human) {
  if (!human) return std::to_string(v);
  std::string out;  // appended, not "-" + string: GCC 12 -O3 warns falsely (-Wrestrict) on that
  if (v < 0) out = '-';
  out += human_size(magnitude(v));
  return out;
}

std::string signed_change(std::int64_t v, bool human) {
  if (v == 0) return "0";
  const std::string body = human ? human_size(magnitude(v)) : std::to_string(magnitude(v));
  return (v < 0 ? "-" : "+") + body;
}

// Counts are never scaled.
std::string signed_count(std::int64_t v) { return signed_change(v, false); }

void figure_json(detail::json_writer& w, std::string_view name, const diff_figure& f) {
  w.key(name).begin_object();
  w.field("before", f.before).field("after", f.after).field("change", f.change());
  w.end_object();
}

void figures_json(detail::json_writer& w, const diff_entry& d) {
  figure_json(w, "live", d.live);
  figure_json(w, "peak", d.peak);
  figure_json(w, "count", d.count);
  figure_json(w, "blocks", d.blocks);
}

diff_entry total_of(const std::vector<diff_entry>& diff) {
  diff_entry t;
  t.name = "TOTAL";
  for (const diff_entry& d : diff) {
    t.live.before += d.live.before;
    t.live.after += d.live.after;
    t.peak.before += d.peak.before;
    t.peak.after += d.peak.after;
    t.count.before += d.count.before;
    t.count.after += d.count.after;
    t.blocks.before += d.blocks.before;
    t.blocks.after += d.blocks.after;
  }
  return t;
}

void append_row(std::string& out, const diff_entry& d, bool human, std::string_view kind,
                std::string_view marker) {
  char line[256];
  std::snprintf(line, sizeof line, "%14s %11s %14s %11s %9s %8s %12s %10s  %-7.*s  ",
                plain_or_human(d.live.after, human).c_str(), signed_change(d.live.change(), human).c_str(),
                plain_or_human(d.peak.after, human).c_str(), signed_change(d.peak.change(), human).c_str(),
                std::to_string(d.count.after).c_str(), signed_count(d.count.change()).c_str(),
                std::to_string(d.blocks.after).c_str(), signed_count(d.blocks.change()).c_str(),
                static_cast<int>(kind.size()), kind.data());
  out += line;
  detail::append_escaped(out, d.name);
  out += marker;
  out += '\n';
}

}  // namespace

std::vector<diff_entry> diff_entries(const std::vector<entry>& baseline,
                                     const std::vector<entry>& current) {
  using key = std::pair<entry_kind, std::string_view>;
  std::map<key, std::pair<const entry*, const entry*>> matched;
  for (const entry& e : baseline) matched[{e.kind, e.name}].first = &e;
  for (const entry& e : current) matched[{e.kind, e.name}].second = &e;

  std::vector<diff_entry> out;
  out.reserve(matched.size());
  for (const auto& [k, pair] : matched) {
    const auto [before, after] = pair;
    diff_entry d;
    d.kind = k.first;
    d.name = std::string(k.second);
    if (before != nullptr) {
      const entry_figures f = figures_of(*before);
      d.live.before = f.live;
      d.peak.before = as_signed(f.peak);
      d.count.before = as_signed(f.count);
      d.blocks.before = f.blocks;
    }
    if (after != nullptr) {
      const entry_figures f = figures_of(*after);
      d.live.after = f.live;
      d.peak.after = as_signed(f.peak);
      d.count.after = as_signed(f.count);
      d.blocks.after = f.blocks;
    }
    if (before == nullptr) {
      d.status = diff_status::added;
    } else if (after == nullptr) {
      d.status = diff_status::vanished;
    } else if (d.live.change() == 0 && d.peak.change() == 0 && d.count.change() == 0 &&
               d.blocks.change() == 0) {
      d.status = diff_status::unchanged;
    } else {
      d.status = diff_status::changed;
    }
    out.push_back(std::move(d));
  }
  return out;
}

void check_diff_format(const report_options& options) {
  if (options.format == report_format::tree)
    throw std::invalid_argument("--tree: the diff has no tree view (use text, --json or --html)");
  if (options.format == report_format::prometheus)
    throw std::invalid_argument("--prometheus: the diff has no exposition (use 'metrics' for the current values)");
}

std::string render_diff(const std::vector<diff_entry>& diff, const report_options& options,
                        const diff_source& source) {
  check_diff_format(options);
  if (options.format == report_format::html) return render_diff_html(diff, options, source);
  std::vector<const diff_entry*> listed;
  std::size_t unchanged = 0, changed = 0, added = 0, vanished = 0, below = 0;
  for (const diff_entry& d : diff) {
    switch (d.status) {
      case diff_status::unchanged: ++unchanged; continue;
      case diff_status::changed: ++changed; break;
      case diff_status::added: ++added; break;
      case diff_status::vanished: ++vanished; break;
    }
    if (size_change(d) < options.min_size) {
      ++below;
      continue;
    }
    listed.push_back(&d);
  }

  auto by_name = [](const diff_entry* a, const diff_entry* b) {
    return std::tie(a->name, a->kind) < std::tie(b->name, b->kind);
  };
  auto larger_first = [&](auto measure) {
    return [=](const diff_entry* a, const diff_entry* b) {
      const std::uint64_t ma = measure(*a), mb = measure(*b);
      if (ma != mb) return ma > mb;
      return by_name(a, b);
    };
  };
  switch (options.sort) {
    case sort_key::peak:
      std::sort(listed.begin(), listed.end(), larger_first([](const diff_entry& d) { return size_change(d); }));
      break;
    case sort_key::live:
      std::sort(listed.begin(), listed.end(),
                larger_first([](const diff_entry& d) { return magnitude(d.live.change()); }));
      break;
    case sort_key::count:
      std::sort(listed.begin(), listed.end(),
                larger_first([](const diff_entry& d) { return magnitude(d.count.change()); }));
      break;
    case sort_key::name:
      std::sort(listed.begin(), listed.end(), by_name);
      break;
  }
  std::size_t beyond_top = 0;
  if (options.top && listed.size() > *options.top) {
    beyond_top = listed.size() - *options.top;
    listed.resize(*options.top);
  }
  const diff_entry total = total_of(diff);

  if (options.format == report_format::json) {
    std::string out;
    detail::json_writer w(out);
    w.begin_object();
    w.field("schema", "arenastat-diff").field("version", 1);
    w.key("baseline").begin_object();
    w.field("time", source.baseline_time).field("age_s", source.baseline_age_s);
    w.end_object();
    w.field("changed", std::uint64_t{changed}).field("new", std::uint64_t{added});
    w.field("vanished", std::uint64_t{vanished}).field("unchanged", std::uint64_t{unchanged});
    w.field("omitted", std::uint64_t{below + beyond_top});
    w.key("total").begin_object();
    figures_json(w, total);
    w.end_object();
    w.key("entries").begin_array();
    for (const diff_entry* d : listed) {
      w.begin_object();
      w.field("name", d->name).field("kind", kind_name(d->kind)).field("status", status_name(d->status));
      figures_json(w, *d);
      w.end_object();
    }
    w.end_array();
    w.end_object();
    out += '\n';
    return out;
  }

  const bool human = options.human;
  std::string out = "Diff since the baseline";
  if (!source.baseline_time.empty()) {
    char age[64];
    std::snprintf(age, sizeof age, " (%.1f s ago)", source.baseline_age_s);
    out += " of " + source.baseline_time + age;
  }
  out += ": " + std::to_string(changed) + " changed, " + std::to_string(added) + " new, " +
         std::to_string(vanished) + " vanished, " + std::to_string(unchanged) + " unchanged\n";
  char head[256];
  std::snprintf(head, sizeof head, "%14s %11s %14s %11s %9s %8s %12s %10s  %-7s  %s\n", "live", "change",
                "peak", "change", "count", "change", "blocks", "change", "kind", "name");
  out += head;
  append_row(out, total, human, "", "");
  for (const diff_entry* d : listed) {
    const char* marker = d->status == diff_status::added      ? "  (new)"
                         : d->status == diff_status::vanished ? "  (vanished)"
                                                              : "";
    append_row(out, *d, human, kind_name(d->kind), marker);
  }
  if (below != 0) {
    out += "(" + std::to_string(below) + " changed entries below " +
           (human ? human_size(options.min_size) : std::to_string(options.min_size)) + " omitted)\n";
  }
  if (beyond_top != 0) out += "(" + std::to_string(beyond_top) + " more entries beyond --top omitted)\n";
  return out;
}

}  // namespace arenastat
