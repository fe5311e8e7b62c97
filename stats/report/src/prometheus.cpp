// Prometheus exposition of the table (prometheus.hpp): one renderer for the
// text format 0.0.4 and OpenMetrics 1.0.0, the scope grouping, atomic files.
#include "arenastat/prometheus.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <deque>
#include <cstdlib>
#include <algorithm>
#include <map>
#include <optional>
#include <system_error>

#include "env.hpp"
#include "report_internal.hpp"
#include "sys.hpp"
#include "quoted.hpp"
#include "text_escape.hpp"
#include "write_open.hpp"

namespace arenastat {

namespace {

enum class family_type { gauge, counter };

struct sample {
  std::string labels;  // "" or {a="x",b="y"}, values escaped
  std::string value;
};

// One metric family. `name` is the base name: counters get "_total" on their
// samples (and in the text format's HELP/TYPE lines, where the family is
// named after its samples).
struct family {
  std::string_view name;
  family_type type;
  std::string_view unit;  // "bytes", "seconds" or "" (OpenMetrics UNIT line)
  std::string_view help;
  std::vector<sample> samples;
};

std::string label(std::string_view name, std::string_view value) {
  std::string out(name);
  out += "=\"";
  out += escape_label_value(value);
  out += '"';
  return out;
}

std::string labels(std::initializer_list<std::string> parts) {
  std::string out = "{";
  bool first = true;
  for (const std::string& p : parts) {
    if (!first) out += ',';
    out += p;
    first = false;
  }
  out += '}';
  return out;
}

std::string number(std::uint64_t v) { return std::to_string(v); }
std::string number(std::int64_t v) { return std::to_string(v); }
std::string number(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// HELP text: '\' and LF escaped (and '"' in OpenMetrics).
std::string escape_help(std::string_view help, bool openmetrics) {
  std::string out;
  for (char c : help) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"' && openmetrics) out += "\\\"";
    else out += c;
  }
  return out;
}

// A sample's labels with `first` ("" or a="x") put before its own.
void append_labels(std::string& out, std::string_view first, std::string_view own) {
  if (first.empty()) {
    out += own;
    return;
  }
  out += '{';
  out += first;
  if (!own.empty()) {
    out += ',';
    out += own.substr(1);  // own is {...}
  } else {
    out += '}';
  }
}

void render_family(std::string& out, const family& f, metrics_format format, std::string_view first_label) {
  const bool om = format == metrics_format::openmetrics;
  const std::string_view type = f.type == family_type::counter ? "counter" : "gauge";
  std::string sample_name(f.name);
  if (f.type == family_type::counter) sample_name += "_total";
  // The text format names the family after its samples; OpenMetrics after its base.
  const std::string_view family_name = om ? f.name : std::string_view(sample_name);
  out += "# HELP ";
  out += family_name;
  out += ' ';
  out += escape_help(f.help, om);
  out += "\n# TYPE ";
  out += family_name;
  out += ' ';
  out += type;
  out += '\n';
  if (om && !f.unit.empty()) {
    out += "# UNIT ";
    out += family_name;
    out += ' ';
    out += f.unit;
    out += '\n';
  }
  for (const sample& s : f.samples) {
    out += sample_name;
    append_labels(out, first_label, s.labels);
    out += ' ';
    out += s.value;
    out += '\n';
  }
}

// What a scope group adds up: sums of the additive figures, the largest peak
// and the breakdown of the entry that reached it.
struct scope_group_figures {
  std::uint64_t names = 0;
  std::uint64_t runs = 0;
  std::uint64_t limit_hits = 0;
  std::uint64_t errors = 0;
  double seconds = 0;
  std::uint64_t peak = 0;
  std::vector<tag_bytes> peak_tags;  // at the largest peak of the group
  bool has_peak = false;
};

}  // namespace

std::optional<unsigned> parse_metrics_depth(std::string_view text) noexcept {
  unsigned depth = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), depth);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || depth < 1 || depth > max_metrics_depth)
    return std::nullopt;
  return depth;
}

unsigned metrics_depth_from_env() noexcept {
  const char* v = detail::env_value("ARENASTAT_METRICS_DEPTH");
  if (v == nullptr || *v == '\0') return 1;
  return parse_metrics_depth(v).value_or(1);
}

std::string scope_group(std::string_view name, unsigned depth) {
  std::string out;
  unsigned kept = 0;
  std::size_t pos = 0;
  while (pos < name.size() && kept < depth) {
    std::size_t end = name.find('/', pos);
    if (end == std::string_view::npos) end = name.size();
    if (end > pos) {
      if (kept > 0) out += '/';
      out.append(name.substr(pos, end - pos));
      ++kept;
    }
    pos = end + 1;
  }
  return out;
}

namespace {

// The three escapes of the exposition formats, for one ASCII byte.
void append_label_byte(std::string& out, char c) {
  if (c == '\\') out += "\\\\";
  else if (c == '"') out += "\\\"";
  else if (c == '\n') out += "\\n";
  else out += c;
}

}  // namespace

std::string escape_label_value(std::string_view value) {
  using detail::replacement_character;
  const bool marked = detail::needs_utf8_marking(value);
  std::string out;
  out.reserve(value.size());
  for (std::size_t i = 0; i < value.size();) {
    const std::size_t n = detail::utf8_sequence(value.substr(i));
    if (n == 0) {
      detail::append_marked_byte(out, static_cast<unsigned char>(value[i]));
      ++i;
      continue;
    }
    const std::string_view seq = value.substr(i, n);
    if (n == 1) {
      append_label_byte(out, seq[0]);
    } else if (marked && seq == replacement_character) {
      out += replacement_character;  // a literal U+FFFD is written twice
      out += replacement_character;
    } else {
      out.append(seq);
    }
    i += n;
  }
  return out;
}

table_figures read_table_figures(const std::vector<entry>& entries) {
  table_figures t;
  for (const entry& e : entries) {
    if (e.kind == entry_kind::scope) ++t.scope_entries;
    else if (e.kind == entry_kind::account) ++t.account_entries;
    else ++t.folded_rows;
  }
  const table_status status = table_status_now();
  t.lost_folds = status.lost_folds;
  t.table_max = status.max;
  t.folded_entries = status.folded_entries;
  return t;
}

namespace detail {

table_figures table_figures_of(const table_copy& c) {
  table_figures t;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const entry_kind k = c.kind(i);
    if (k == entry_kind::scope) ++t.scope_entries;
    else if (k == entry_kind::account) ++t.account_entries;
    else ++t.folded_rows;
  }
  t.scope_entries += c.scopes_below_min() + c.scopes_beyond_top();
  t.lost_folds = c.status().lost_folds;
  t.table_max = c.status().max;
  t.folded_entries = c.status().folded_entries;
  return t;
}

// Entries are read from the copy one at a time: what is kept is one group's
// figures per label value, never the entries.
std::string render_metrics(const table_copy& c, const process_info& proc, const table_figures& table,
                           const metrics_options& options) {
  const unsigned depth = options.depth == 0 ? 1 : options.depth;
  std::deque<family> fams;  // add() hands out references: they must survive later additions
  const auto add = [&fams](std::string_view name, family_type type, std::string_view unit,
                           std::string_view help) -> std::vector<sample>& {
    fams.push_back(family{name, type, unit, help, {}});
    return fams.back().samples;
  };
  using enum family_type;

  // Process.
  add("arenastat_process_rss_bytes", gauge, "bytes", "Resident set size of the process (VmRSS).")
      .push_back({"", number(proc.rss_bytes)});
  add("arenastat_process_rss_peak_bytes", gauge, "bytes", "Peak resident set size of the process (VmHWM).")
      .push_back({"", number(proc.hwm_bytes)});
  add("arenastat_process_rss_anon_bytes", gauge, "bytes", "Anonymous resident memory of the process (RssAnon).")
      .push_back({"", number(proc.rss_anon_bytes)});
  if (proc.jemalloc) {
    add("arenastat_jemalloc_allocated_bytes", gauge, "bytes", "jemalloc stats.allocated.")
        .push_back({"", number(proc.je_allocated)});
    add("arenastat_jemalloc_active_bytes", gauge, "bytes", "jemalloc stats.active.")
        .push_back({"", number(proc.je_active)});
    add("arenastat_jemalloc_resident_bytes", gauge, "bytes", "jemalloc stats.resident.")
        .push_back({"", number(proc.je_resident)});
    add("arenastat_jemalloc_mapped_bytes", gauge, "bytes", "jemalloc stats.mapped.")
        .push_back({"", number(proc.je_mapped)});
  }

  // The table itself.
  auto& sizes = add("arenastat_table_entries", gauge, "", "Entries in the statistics table, by kind.");
  sizes.push_back({labels({label("kind", "scope")}), number(table.scope_entries)});
  sizes.push_back({labels({label("kind", "account")}), number(table.account_entries)});
  sizes.push_back({labels({label("kind", "folded")}), number(table.folded_rows)});
  add("arenastat_table_max_entries", gauge, "",
      "The cap on scope entries (ARENASTAT_TABLE_MAX); 0 means none.")
      .push_back({"", number(table.table_max)});
  add("arenastat_table_folded_entries", counter, "",
      "Scope entries folded into overflow rows because the table was at its cap.")
      .push_back({"", number(table.folded_entries)});
  add("arenastat_table_lost_folds", counter, "", "Scope runs that could not be stored in the table (out of memory).")
      .push_back({"", number(table.lost_folds)});

  // Scopes, grouped by name prefix; an overflow row ("request/", "(other)")
  // joins its prefix's group with the runs folded into it, but no names: it
  // counts folds, and a name folded, run again and folded again is counted
  // twice there, so only the names the table holds are counted.
  std::map<std::string, scope_group_figures> groups;
  entry e;
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (c.kind(i) == entry_kind::account) continue;
    c.read(i, e);
    scope_group_figures& g = groups[scope_group(e.name, depth)];
    if (e.kind != entry_kind::folded) ++g.names;
    g.runs += e.count;
    g.limit_hits += e.oom_count;
    g.errors += e.err_count;
    g.seconds += e.time_s;
    if (!g.has_peak || e.peak_bytes > g.peak) {
      g.peak = e.peak_bytes;
      g.peak_tags = e.at_peak;
      g.has_peak = true;
    }
  }
  auto& names = add("arenastat_scope_names", gauge, "",
                    "Scope names of the group in the table (not those folded into an overflow row).");
  auto& peak = add("arenastat_scope_peak_bytes", gauge, "bytes",
                   "Largest peak of any run of any scope in the group since start or the last reset.");
  auto& peak_tag = add("arenastat_scope_peak_tag_bytes", gauge, "bytes",
                       "Bytes of each arena tag at the moment of the group's largest peak.");
  auto& runs = add("arenastat_scope_runs", counter, "", "Scope runs folded into the table.");
  auto& hits = add("arenastat_scope_limit_hits", counter, "", "Scope runs that hit their memory limit.");
  auto& errors = add("arenastat_scope_errors", counter, "", "Scope runs left by an exception other than their limit.");
  auto& seconds = add("arenastat_scope_run_seconds", counter, "seconds", "Total duration of the scope runs.");
  for (const auto& [name, g] : groups) {
    const std::string l = label("scope", name);
    const std::string one = labels({l});
    names.push_back({one, number(g.names)});
    peak.push_back({one, number(g.peak)});
    for (const tag_bytes& t : g.peak_tags) {
      peak_tag.push_back({labels({l, label("tag", t.tag)}), number(t.bytes)});
    }
    runs.push_back({one, number(g.runs)});
    hits.push_back({one, number(g.limit_hits)});
    errors.push_back({one, number(g.errors)});
    seconds.push_back({one, number(g.seconds)});
  }

  // Accounts, by name.
  auto& live = add("arenastat_account_live_bytes", gauge, "bytes", "Bytes an account holds now.");
  auto& apeak = add("arenastat_account_peak_bytes", gauge, "bytes",
                    "Peak live bytes of an account since start or the last reset.");
  auto& tag_live = add("arenastat_account_tag_live_bytes", gauge, "bytes", "Bytes an account holds now, by arena tag.");
  auto& allocated = add("arenastat_account_allocated_bytes", counter, "bytes", "Bytes ever allocated by an account.");
  auto& allocs = add("arenastat_account_allocations", counter, "", "Allocations made by an account.");
  auto& frees = add("arenastat_account_frees", counter, "", "Frees made by an account.");
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (c.kind(i) != entry_kind::account) continue;
    c.read(i, e);
    const std::string l = label("account", e.name);
    const std::string one = labels({l});
    live.push_back({one, number(e.live_bytes)});
    apeak.push_back({one, number(e.peak_bytes)});
    // Every tag declared for the account has a sample, 0 while it holds no
    // bytes, so that its series does not vanish and come back; then
    // any tag with bytes the entry does not list as used (an entry made by
    // hand, without tags_used).
    const auto bytes_of = [&](const std::string& tag) -> std::optional<std::int64_t> {
      for (const tag_bytes& t : e.live_by_tag)
        if (t.tag == tag) return t.bytes;
      return std::nullopt;
    };
    for (const std::string& tag : e.tags_used)
      tag_live.push_back({labels({l, label("tag", tag)}), number(bytes_of(tag).value_or(std::int64_t{0}))});
    for (const tag_bytes& t : e.live_by_tag)
      if (std::find(e.tags_used.begin(), e.tags_used.end(), t.tag) == e.tags_used.end())
        tag_live.push_back({labels({l, label("tag", t.tag)}), number(t.bytes)});
    allocated.push_back({one, number(e.allocated_bytes)});
    allocs.push_back({one, number(e.allocations)});
    frees.push_back({one, number(e.frees)});
  }

  std::string first = options.pid_label ? label("pid", std::to_string(*options.pid_label)) : std::string();
  if (options.program_label) {
    if (!first.empty()) first += ',';
    first += label("program", *options.program_label);
  }
  std::string out;
  for (const family& f : fams) render_family(out, f, options.format, first);
  if (options.format == metrics_format::openmetrics) out += "# EOF\n";
  return out;
}

}  // namespace detail

std::string detail::render_metrics_from_env(const table_copy& copy, const process_info& proc,
                                            std::optional<std::string> program_label) {
  metrics_options mo;
  mo.depth = metrics_depth_from_env();
  mo.program_label = std::move(program_label);
  return render_metrics(copy, proc, table_figures_of(copy), mo);
}

std::string render_metrics(const std::vector<entry>& entries, const process_info& proc,
                           const table_figures& table, const metrics_options& options) {
  return detail::render_metrics(table_copy::of(entries), proc, table, options);
}

std::string metrics(const metrics_options& options) {
  const table_copy c = table_copy::take();
  return detail::render_metrics(c, read_process_info(), detail::table_figures_of(c), options);
}

std::string_view metrics_content_type(metrics_format format) noexcept {
  return format == metrics_format::openmetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                               : "text/plain; version=0.0.4; charset=utf-8";
}

namespace {

// Media types, parameter names and these values are case-insensitive (RFC 9110).
bool same_text(std::string_view a, std::string_view lower) {
  return a.size() == lower.size() && std::equal(a.begin(), a.end(), lower.begin(), [](char x, char y) {
           return (x >= 'A' && x <= 'Z' ? x + 32 : x) == y;
         });
}

// A qvalue as RFC 9110 12.4.2 writes it: "0" or "1", or either with up to
// three decimals, none above 1; in thousandths, or -1 when malformed.
int qvalue_thousandths(std::string_view v) {
  if (v.empty() || (v[0] != '0' && v[0] != '1')) return -1;
  int q = (v[0] - '0') * 1000;
  if (v.size() == 1) return q;
  if (v[1] != '.' || v.size() > 5) return -1;
  int scale = 100;
  for (std::size_t i = 2; i < v.size(); ++i, scale /= 10) {
    if (v[i] < '0' || v[i] > '9') return -1;
    q += (v[i] - '0') * scale;
  }
  return q > 1000 ? -1 : q;
}

// One format the endpoint can answer: its media type and parameters.
struct offer {
  std::string_view type, subtype, version;  // charset: always utf-8
};
constexpr offer text_offer{"text", "plain", "0.0.4"};
constexpr offer openmetrics_offer{"application", "openmetrics-text", "1.0.0"};

// One media range of an Accept header (RFC 9110 12.5.1).
struct media_range {
  std::string_view type, subtype;
  std::string version, charset;  // "" when absent (a quoted value unescaped)
  bool has_version = false, has_charset = false;
  int q = 1000;
};

// Reads an Accept header's media ranges by RFC 9110's grammar: quoted
// strings may hold ',' and ';', the weight is exactly "q=" and a qvalue
// (not quoted, no blanks around '='), and a malformed element is left out
// (the reading goes on at the next ',' outside quotes).
class accept_reader {
 public:
  explicit accept_reader(std::string_view text) : t_(text) {}
  // The next well-formed range, or false at the end.
  bool next(media_range& r) {
    while (i_ < t_.size()) {
      r = media_range{};
      if (read_range(r)) return true;
      skip_element();
    }
    return false;
  }

 private:
  static bool tchar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  }
  void blanks() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t')) ++i_;
  }
  std::string_view token() {
    const std::size_t from = i_;
    while (i_ < t_.size() && tchar(t_[i_])) ++i_;
    return t_.substr(from, i_ - from);
  }
  // A quoted string at i_ (its opening quote), unescaped into `out`.
  bool quoted(std::string& out) {
    ++i_;
    while (i_ < t_.size()) {
      const char c = t_[i_++];
      if (c == '"') return true;
      if (c == '\\') {
        if (i_ == t_.size()) return false;
        out += t_[i_++];
      } else {
        out += c;
      }
    }
    return false;  // unterminated
  }
  // Past the rest of a malformed element: to just after the next ',' outside quotes.
  void skip_element() {
    bool in_quotes = false;
    while (i_ < t_.size()) {
      const char c = t_[i_++];
      if (in_quotes && c == '\\' && i_ < t_.size()) ++i_;
      else if (c == '"') in_quotes = !in_quotes;
      else if (c == ',' && !in_quotes) return;
    }
  }
  bool read_range(media_range& r) {
    blanks();
    while (i_ < t_.size() && t_[i_] == ',') {  // empty elements: "a, , b"
      ++i_;
      blanks();
    }
    if (i_ == t_.size()) return false;
    r.type = token();
    if (r.type.empty() || i_ == t_.size() || t_[i_] != '/') return false;
    ++i_;
    r.subtype = token();
    if (r.subtype.empty() || (r.type == "*" && r.subtype != "*")) return false;
    for (;;) {
      blanks();
      if (i_ == t_.size() || t_[i_] == ',') {
        if (i_ < t_.size()) ++i_;
        return true;
      }
      if (t_[i_] != ';') return false;
      ++i_;
      blanks();
      const std::string_view name = token();
      if (name.empty() || i_ == t_.size() || t_[i_] != '=') return false;
      ++i_;
      std::string value;
      bool was_quoted = false;
      if (i_ < t_.size() && t_[i_] == '"') {
        if (!quoted(value)) return false;
        was_quoted = true;
      } else {
        value = token();
        if (value.empty()) return false;
      }
      if (same_text(name, "q")) {
        r.q = was_quoted ? -1 : qvalue_thousandths(value);
        if (r.q < 0) return false;
      } else if (same_text(name, "version")) {
        r.version = std::move(value);
        r.has_version = true;
      } else if (same_text(name, "charset")) {
        r.charset = std::move(value);
        r.has_charset = true;
      }  // other parameters (escaping=...) neither match nor differ
    }
  }

  std::string_view t_;
  std::size_t i_ = 0;
};

// How a media range matches an offer: 0 not at all, 1 "*/*", 2 "type/*",
// 3 the type, plus one for each of its parameters that the offer has (version,
// charset=utf-8); a range naming another version or charset does not match.
// The most specific range that matches decides (RFC 9110 12.5.1).
int specificity(const media_range& r, const offer& o) {
  if (r.type == "*" && r.subtype == "*") return 1;
  if (!same_text(r.type, o.type)) return 0;
  if (r.subtype == "*") return 2;
  if (!same_text(r.subtype, o.subtype)) return 0;
  int s = 3;
  if (r.has_version) {
    if (r.version != o.version) return 0;
    ++s;
  }
  if (r.has_charset) {
    if (!same_text(r.charset, "utf-8")) return 0;
    ++s;
  }
  return s;
}

}  // namespace

metrics_format metrics_format_for_accept(std::string_view accept) {
  // Per offer: the specificity and quality (thousandths) of the range that decides.
  struct verdict {
    int specificity = 0, q = 0;
  } text, om;
  accept_reader reader(accept);
  for (media_range r; reader.next(r);) {
    for (auto [o, v] : {std::pair{&text_offer, &text}, std::pair{&openmetrics_offer, &om}}) {
      const int s = specificity(r, *o);
      if (s > v->specificity || (s == v->specificity && s > 0 && r.q > v->q)) *v = {s, r.q};
    }
  }
  // OpenMetrics only when its type is named ("application/openmetrics-text"
  // or "application/*": "*/*" alone, as curl sends, keeps the text format),
  // accepted (q above 0), and at least as wanted as the text format.
  const bool named = om.specificity >= 2;
  return named && om.q > 0 && (text.specificity == 0 || om.q >= text.q) ? metrics_format::openmetrics
                                                                         : metrics_format::text;
}

namespace {

// 64 bits for a temporary's name: getrandom(2), or when that fails the clock
// mixed with a per-process serial (the name also holds the pid).
std::uint64_t temporary_suffix() noexcept {
  static std::atomic<std::uint64_t> serial{0};
  std::uint64_t r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) == static_cast<ssize_t>(sizeof r)) return r;
  const auto ns = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return ns ^ (serial.fetch_add(1, std::memory_order_relaxed) * 0x9e3779b97f4a7c15ULL);
}

std::string hex64(std::uint64_t v) {
  constexpr char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[static_cast<std::size_t>(i)] = digits[v & 15];
  return out;
}

// The directory a file is written in, opened through trusted links only
// (write_open.hpp, docs/cli.md trust rule 9), and the file's name in it.
struct file_place {
  int dir;           // O_PATH descriptor of the directory (closed by the owner)
  std::string base;  // the file's name in it
  std::string dir_path;  // the directory as given ("." for a bare name), for messages
};

file_place place_of(const std::string& path, const std::string& shown) {
  const std::size_t slash = path.rfind('/');
  file_place p;
  p.dir_path = slash == std::string::npos ? std::string(".") : path.substr(0, slash == 0 ? 1 : slash);
  p.base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (p.base.empty() || p.base == "." || p.base == "..")
    throw std::system_error(EISDIR, std::generic_category(), "metrics: cannot write " + shown);
  // A NUL would cut the name at openat and renameat (possible only from code): refused.
  if (path.find('\0') != std::string::npos)
    throw std::system_error(EINVAL, std::generic_category(), "metrics: cannot write " + shown);
  const files::write_open dir = files::open_directory(p.dir_path);
  if (dir.refused_link_owner) {
    throw std::system_error(ELOOP, std::generic_category(),
                            "metrics: refusing to write " + shown + ": " + files::refused_link_reason(dir));
  }
  if (dir.fd < 0) throw std::system_error(dir.error, std::generic_category(), "metrics: cannot write " + shown);
  p.dir = dir.fd;
  return p;
}

// Creates a new file in `place` beside its file (same directory, so the rename
// is atomic), named .<name>.tmp.<pid>.<16 hex digits>: not ending in .prom, so
// the textfile collector never reads it, and never one that exists (O_EXCL, no
// symlink followed), so a temporary left by a killed run, even one with the
// same pid (PID 1 in a container), cannot block the write. Not mkostemp(3): it
// creates mode 0600, and the file is meant to be 0666 minus the umask like any
// other. Returns the descriptor and sets `temp` to the temporary's name.
// Failures name the file as `shown` (the path quoted, with where it came from).
int create_temporary_beside(const file_place& place, const std::string& shown, std::string& temp) {
  const std::string prefix = "." + place.base + ".tmp." + std::to_string(::getpid()) + ".";
  constexpr int attempts = 8;  // a name taken 8 times in a row out of 2^64 is someone's doing
  for (int i = 0; i < attempts; ++i) {
    temp = prefix + hex64(temporary_suffix());
    const int fd = ::openat(place.dir, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0) return fd;
    if (errno != EEXIST) throw std::system_error(errno, std::generic_category(), "metrics: cannot write " + shown);
  }
  throw std::system_error(EEXIST, std::generic_category(),
                          "metrics: cannot write " + shown + " (" + std::to_string(attempts) +
                              " random names for its temporary taken, the last " +
                              detail::quoted(place.dir_path + "/" + temp) + ")");
}

// Whether `name` is a temporary create_temporary_beside made for the file
// `base`: ".<base>.tmp.<digits>.<16 lowercase hex digits>".
bool is_temporary_of(std::string_view name, std::string_view base) {
  if (!name.starts_with('.') || !name.substr(1).starts_with(base) || !name.substr(1 + base.size()).starts_with(".tmp."))
    return false;
  name.remove_prefix(1 + base.size() + 5);
  const std::size_t dot = name.find('.');
  if (dot == 0 || dot == std::string_view::npos || name.size() - dot - 1 != 16) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = i < dot ? (c >= '0' && c <= '9') : i == dot || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    if (!ok) return false;
  }
  return true;
}

// Removes the temporaries of the file in `place` that writers killed
// mid-write left: named as this writer names its own, regular files of this
// effective uid, last changed over stale_temporary_age ago (a live writer's
// temporary is seconds old, in any pid namespace). Best effort: errors are
// ignored.
constexpr std::chrono::seconds stale_temporary_age{600};
void remove_stale_temporaries(const file_place& place) noexcept {
  try {
    const int dfd = ::openat(place.dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);  // readable: for readdir
    if (dfd < 0) return;
    DIR* d = ::fdopendir(dfd);
    if (d == nullptr) {
      ::close(dfd);
      return;
    }
    const auto now = std::chrono::system_clock::now();
    while (const dirent* e = ::readdir(d)) {
      if (!is_temporary_of(e->d_name, place.base)) continue;
      struct stat st {};
      if (::fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid())
        continue;
      const auto changed = std::chrono::system_clock::from_time_t(st.st_mtim.tv_sec);
      if (now - changed > stale_temporary_age) ::unlinkat(dfd, e->d_name, 0);
    }
    ::closedir(d);  // closes dfd
  } catch (...) {
  }
}

void write_file_atomically(const std::string& path, const std::string& shown, std::string_view text) {
  const file_place place = place_of(path, shown);
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } dir_guard{place.dir};
  std::string temp;
  const int fd = create_temporary_beside(place, shown, temp);
  const auto fail = [&](int err, const std::string& what) {
    ::unlinkat(place.dir, temp.c_str(), 0);
    throw std::system_error(err, std::generic_category(), what);
  };
  if (const int err = detail::write_all(fd, text); err != 0) {
    ::close(fd);
    fail(err, "metrics: cannot write " + shown);
  }
  if (::close(fd) != 0) fail(errno, "metrics: cannot write " + shown);
  if (::renameat(place.dir, temp.c_str(), place.dir, place.base.c_str()) != 0)
    fail(errno, "metrics: cannot write " + shown + " (renaming its temporary " +
                    detail::quoted(place.dir_path + "/" + temp) + " into place)");
  remove_stale_temporaries(place);
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view text) {
  write_file_atomically(path, detail::quoted(path), text);
}

std::optional<bool> parse_dump_format(std::string_view value) noexcept {
  if (value.empty() || value == "text") return false;
  if (value == "prometheus") return true;
  return std::nullopt;
}

bool prometheus_dump_from_env() noexcept {
  const char* v = detail::env_value("ARENASTAT_DUMP_FORMAT");
  return parse_dump_format(v == nullptr ? std::string_view{} : std::string_view(v)).value_or(false);
}

std::string write_metrics_file(std::string_view path) {
  std::string target, shown;
  if (!path.empty()) {
    target = detail::absolute_path(std::string(path), "metrics");
    shown = detail::quoted(target);
  } else {
    const char* dir_env = detail::env_value("ARENASTAT_DUMP_DIR");
    const bool from_env = dir_env != nullptr && *dir_env != '\0';
    const std::string dir = from_env ? std::string(dir_env) : std::string(".");
    target = detail::absolute_path(dir, "metrics") + "/arenastat." + std::to_string(::getpid()) + ".prom";
    shown = detail::quoted(target) + (from_env ? " (in ARENASTAT_DUMP_DIR)" : "");
  }
  write_file_atomically(target, shown,
                        metrics({.depth = metrics_depth_from_env(), .pid_label = static_cast<std::uint64_t>(::getpid())}));
  return target;
}

}  // namespace arenastat
