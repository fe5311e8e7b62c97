// Reports over the table: the option grammar, then text, tree and JSON
// renderings of a list of entries. docs/report.md describes every column.
#include "arenastat/report.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>

#include "arenastat/html.hpp"
#include "arenastat/size.hpp"
#include "arenastat/prometheus.hpp"
#include "json_writer.hpp"
#include "report_internal.hpp"
#include "text_escape.hpp"

namespace arenastat {

// ---------------------------------------------------------------- options

namespace {

constexpr std::string_view grammar =
    "-s=SIZE, -H, --sort=peak|count|name|live, --top=N, --json, --tree, --prometheus, --html";

[[noreturn]] void bad_option(std::string_view option, std::string_view why) {
  throw std::invalid_argument("arenastat: bad option '" + std::string(option) + "': " +
                              std::string(why));
}

bool is_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Value after "name=" when `token` is that option; nullopt when it is not.
std::optional<std::string_view> value_of(std::string_view token, std::string_view name) {
  if (token.size() < name.size() || token.substr(0, name.size()) != name) return std::nullopt;
  if (token.size() == name.size()) return std::string_view{};  // missing "=VALUE"
  if (token[name.size()] != '=') return std::nullopt;
  return token.substr(name.size() + 1);
}

std::size_t parse_top(std::string_view token, std::string_view text) {
  if (text.empty()) bad_option(token, "expected --top=N with N a whole number of at least 1");
  std::size_t n = 0;
  for (const char c : text) {
    if (c < '0' || c > '9')
      bad_option(token, "expected --top=N with N a whole number of at least 1");
    const auto d = static_cast<std::size_t>(c - '0');
    if (n > (SIZE_MAX - d) / 10) bad_option(token, "N does not fit in 64 bits");
    n = n * 10 + d;
  }
  if (n == 0) bad_option(token, "N must be at least 1 (leave --top out to show every entry)");
  return n;
}

sort_key parse_sort(std::string_view token, std::string_view text) {
  if (text == "peak") return sort_key::peak;
  if (text == "count") return sort_key::count;
  if (text == "name") return sort_key::name;
  if (text == "live") return sort_key::live;
  bad_option(token, "expected --sort=peak, --sort=count, --sort=name or --sort=live");
}

void apply_option(report_options& o, std::string_view token, bool& json, bool& tree,
                  bool& html) {
  if (token == "-H") {
    o.human = true;
  } else if (token == "--json") {
    json = true;
  } else if (token == "--tree") {
    tree = true;
  } else if (token == "--prometheus") {
    o.format = report_format::prometheus;  // prometheus.cpp
  } else if (token == "--html") {
    html = true;
  } else if (auto v = value_of(token, "-s")) {
    if (v->empty()) bad_option(token, "expected -s=SIZE, e.g. -s=10m");
    try {
      o.min_size = parse_size(*v);
    } catch (const std::invalid_argument& e) {
      bad_option(token, e.what());
    }
  } else if (auto v = value_of(token, "--sort")) {
    o.sort = parse_sort(token, *v);
  } else if (auto v = value_of(token, "--top")) {
    o.top = parse_top(token, *v);
  } else {
    throw std::invalid_argument("arenastat: unknown option '" + std::string(token) +
                                "' (expected " + std::string(grammar) + ")");
  }
}

}  // namespace

report_options parse_report_options(std::string_view options) {
  report_options o;
  bool json = false, tree = false, html = false;
  std::size_t i = 0;
  while (i < options.size()) {
    if (is_space(options[i])) { ++i; continue; }
    std::size_t j = i;
    while (j < options.size() && !is_space(options[j])) ++j;
    apply_option(o, options.substr(i, j - i), json, tree, html);
    i = j;
  }
  if (json && tree)
    throw std::invalid_argument(
        "arenastat: bad option '--json' with '--tree': choose one output format");
  if (o.format == report_format::prometheus && (json || tree || html))
    throw std::invalid_argument(std::string("arenastat: bad option '--prometheus' with '") +
                                (json ? "--json" : tree ? "--tree" : "--html") + "': choose one output format");
  if (html && (json || tree))
    throw std::invalid_argument(std::string("arenastat: bad option '--html' with '") +
                                (json ? "--json" : "--tree") + "': choose one output format");
  if (o.format != report_format::prometheus)
    o.format = html   ? report_format::html
               : json ? report_format::json
               : tree ? report_format::tree
                      : report_format::text;
  return o;
}

// ---------------------------------------------------------------- shared

namespace {

std::string fmt_size(std::uint64_t bytes, bool human) {
  return human ? human_size(bytes) : std::to_string(bytes);
}

std::string fmt_signed(std::int64_t bytes, bool human) {
  if (bytes >= 0) return fmt_size(static_cast<std::uint64_t>(bytes), human);
  return "-" + fmt_size(static_cast<std::uint64_t>(0) - static_cast<std::uint64_t>(bytes), human);
}

std::string fmt_fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

const char* sort_name(sort_key k) {
  switch (k) {
    case sort_key::peak: return "peak";
    case sort_key::count: return "count";
    case sort_key::name: return "name";
    case sort_key::live: return "live";
  }
  return "peak";
}

std::uint64_t count_of(const entry& e) { return figures_of(e).count; }
std::int64_t live_of(const entry& e) { return figures_of(e).live; }

// Strict weak order: the sort key, then peak (largest first), name, kind.
bool comes_before(const entry& a, const entry& b, sort_key key) {
  switch (key) {
    case sort_key::count:
      if (count_of(a) != count_of(b)) return count_of(a) > count_of(b);
      break;
    case sort_key::live:
      if (live_of(a) != live_of(b)) return live_of(a) > live_of(b);
      break;
    case sort_key::name:
      if (a.name != b.name) return a.name < b.name;
      break;
    case sort_key::peak:
      break;
  }
  if (a.peak_bytes != b.peak_bytes) return a.peak_bytes > b.peak_bytes;
  if (a.name != b.name) return a.name < b.name;
  return a.kind == entry_kind::scope && b.kind == entry_kind::account;
}

// The entries a report shows: -s filter, sort, then --top. Folded rows are
// not entries to choose from: they are always shown, in their own section.
struct selection {
  std::vector<const entry*> shown;
  std::vector<const entry*> folded;
  std::size_t omitted_small = 0;  // peak below -s
  std::size_t omitted_top = 0;    // cut by --top
  std::size_t scopes = 0, accounts = 0;  // in the table, before -s and --top
};

selection select(const std::vector<entry>& entries, const report_options& o) {
  selection s;
  for (const entry& e : entries) {
    if (e.kind == entry_kind::folded) {
      s.folded.push_back(&e);
      continue;
    }
    ++(e.kind == entry_kind::scope ? s.scopes : s.accounts);
    if (e.peak_bytes < o.min_size) ++s.omitted_small;
    else s.shown.push_back(&e);
  }
  std::stable_sort(s.shown.begin(), s.shown.end(),
                   [&](const entry* a, const entry* b) { return comes_before(*a, *b, o.sort); });
  if (o.top && s.shown.size() > *o.top) {
    s.omitted_top = s.shown.size() - *o.top;
    s.shown.resize(*o.top);
  }
  return s;
}

std::vector<const entry*> of_kind(const std::vector<const entry*>& v, entry_kind k) {
  std::vector<const entry*> out;
  for (const entry* e : v)
    if (e->kind == k) out.push_back(e);
  return out;
}

// Tags present (non-zero at the peak) in any of the entries, in name order.
std::vector<std::string> tags_at_peak(const std::vector<const entry*>& v) {
  std::vector<std::string> tags;
  for (const entry* e : v)
    for (const tag_bytes& t : e->at_peak)
      if (t.bytes != 0 && std::find(tags.begin(), tags.end(), t.tag) == tags.end())
        tags.push_back(t.tag);
  std::sort(tags.begin(), tags.end());
  return tags;
}

std::int64_t tag_at_peak(const entry& e, const std::string& tag) {
  for (const tag_bytes& t : e.at_peak)
    if (t.tag == tag) return t.bytes;
  return 0;
}

std::string plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + ' ' + (n == 1 ? one : many);
}

void append_process_lines(std::string& out, const process_info& p, bool human) {
  out += "Process: pid " + std::to_string(p.pid) + "  VmRSS " + fmt_size(p.rss_bytes, human) +
         "  VmHWM " + fmt_size(p.hwm_bytes, human) + "  RssAnon " +
         fmt_size(p.rss_anon_bytes, human) + '\n';
  if (p.jemalloc)
    out += "jemalloc: allocated " + fmt_size(p.je_allocated, human) + "  active " +
           fmt_size(p.je_active, human) + "  resident " + fmt_size(p.je_resident, human) +
           "  mapped " + fmt_size(p.je_mapped, human) + '\n';
}

void append_omitted(std::string& out, const selection& s, const report_options& o) {
  if (s.omitted_small)
    out += '(' + plural(s.omitted_small, "entry", "entries") + " smaller than " +
           fmt_size(o.min_size, o.human) + " omitted)\n";
  if (s.omitted_top)
    out += '(' + plural(s.omitted_top, "entry", "entries") + " beyond --top=" +
           std::to_string(*o.top) + " omitted)\n";
}

// ---------------------------------------------------------------- text

// Column-aligned rows: every column but the last is padded to its widest cell
// (numbers right-aligned); the last column (the name) is never padded.
class text_table {
 public:
  void column(std::string header, bool right) {
    headers_.push_back(std::move(header));
    right_.push_back(right);
  }
  void row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }

  void render(std::string& out) const {
    std::vector<std::size_t> width(headers_.size());
    for (std::size_t c = 0; c < headers_.size(); ++c) {
      width[c] = headers_[c].size();
      for (const auto& r : rows_) width[c] = std::max(width[c], r[c].size());
    }
    line(out, headers_, width);
    for (const auto& r : rows_) line(out, r, width);
  }

 private:
  void line(std::string& out, const std::vector<std::string>& cells,
            const std::vector<std::size_t>& width) const {
    const std::size_t last = cells.size() - 1;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::size_t pad = c == last ? 0 : width[c] - cells[c].size();
      if (right_[c]) out.append(pad, ' ');
      out += cells[c];
      if (!right_[c]) out.append(pad, ' ');
      if (c != last) out += "  ";
    }
    out += '\n';
  }

  std::vector<std::string> headers_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

constexpr std::string_view legend =
    "Legend:\n"
    "  peak        largest net bytes: scopes, the largest peak of any run; accounts, peak live bytes\n"
    "  <tag>       bytes of that arena tag at the peak (one column per tag shown)\n"
    "  counters    user counters (name=value): the value at the peak, or the last value set\n"
    "              when the counter was first set after the peak\n"
    "  count       runs of the scope folded into the table\n"
    "  time        total seconds of all runs\n"
    "  result      latest run: ok, oom (memory limit hit) or err (left by an exception);\n"
    "              then, in parentheses, how many of all runs hit their limit or failed\n"
    "  thread      OS thread id of the latest run\n"
    "  live        bytes an account holds now\n"
    "  allocated   bytes an account ever allocated; allocations, frees: number of calls\n";

std::string counters_cell(const entry& e) {
  if (e.counters.empty()) return "-";
  std::string s;
  for (const counter_value& c : e.counters) {
    if (!s.empty()) s += ',';
    detail::append_escaped(s, c.name);
    s += '=' + std::to_string(c.shown());
  }
  return s;
}

// "ok", or the latest result followed by the counts of failed runs over all
// runs: "ok (2 oom)", "oom (3 oom, 1 err)".
std::string result_cell(const entry& e) {
  std::string s = e.result.empty() ? "-" : e.result;
  std::string failures;
  if (e.oom_count != 0) failures = std::to_string(e.oom_count) + " oom";
  if (e.err_count != 0) failures += (failures.empty() ? "" : ", ") + std::to_string(e.err_count) + " err";
  if (!failures.empty()) s += " (" + failures + ")";
  return s;
}

// "Scopes (3):" or, when some are hidden, "Scopes (3 of 48):".
std::string section_head(const char* title, std::size_t shown, std::size_t in_table) {
  std::string n = std::to_string(shown);
  if (shown != in_table) n += " of " + std::to_string(in_table);
  return std::string(title) + " (" + n + "):\n";
}

void append_scopes(std::string& out, const std::vector<const entry*>& scopes, std::size_t in_table, bool human) {
  if (scopes.empty()) {
    out += in_table == 0 ? std::string("Scopes: none shown\n")
                         : "Scopes: none shown of " + std::to_string(in_table) + "\n";
    return;
  }
  out += section_head("Scopes", scopes.size(), in_table);
  const auto tags = tags_at_peak(scopes);
  text_table t;
  t.column("peak", true);
  for (const auto& tag : tags) t.column(tag, true);
  t.column("counters", false);
  t.column("count", true);
  t.column("time", true);
  t.column("result", false);
  t.column("thread", true);
  t.column("name", false);
  for (const entry* e : scopes) {
    std::vector<std::string> r{fmt_size(e->peak_bytes, human)};
    for (const auto& tag : tags) r.push_back(fmt_signed(tag_at_peak(*e, tag), human));
    r.push_back(counters_cell(*e));
    r.push_back(std::to_string(e->count));
    r.push_back(fmt_fixed(e->time_s, 3));
    r.push_back(result_cell(*e));
    r.push_back(std::to_string(e->thread));
    r.push_back(detail::escape_text(e->name));
    t.row(std::move(r));
  }
  t.render(out);
}

void append_accounts(std::string& out, const std::vector<const entry*>& accounts, std::size_t in_table,
                     bool human) {
  if (accounts.empty()) {
    out += in_table == 0 ? std::string("Accounts: none shown\n")
                         : "Accounts: none shown of " + std::to_string(in_table) + "\n";
    return;
  }
  out += section_head("Accounts", accounts.size(), in_table);
  const auto tags = tags_at_peak(accounts);
  text_table t;
  t.column("peak", true);
  t.column("live", true);
  t.column("allocated", true);
  t.column("allocations", true);
  t.column("frees", true);
  for (const auto& tag : tags) t.column(tag, true);
  t.column("name", false);
  for (const entry* e : accounts) {
    std::vector<std::string> r{fmt_size(e->peak_bytes, human), fmt_signed(e->live_bytes, human),
                               fmt_size(e->allocated_bytes, human),
                               std::to_string(e->allocations), std::to_string(e->frees)};
    for (const auto& tag : tags) r.push_back(fmt_signed(tag_at_peak(*e, tag), human));
    r.push_back(detail::escape_text(e->name));
    t.row(std::move(r));
  }
  t.render(out);
}

// The table's own state: said only when the cap folded entries or runs were lost.
void append_table(std::string& out, const selection& s, const table_status& table, bool human) {
  if (!s.folded.empty()) {
    std::uint64_t folded = 0;
    for (const entry* e : s.folded) folded += e->folded_entries;
    out += "\nFolded: " + plural(folded, "scope entry", "scope entries") + " past the table cap" +
           (table.max != 0 ? " of " + std::to_string(table.max) : std::string()) +
           " (ARENASTAT_TABLE_MAX), by name prefix:\n";
    text_table t;
    t.column("entries", true);
    t.column("runs", true);
    t.column("peak sum", true);
    t.column("peak max", true);
    t.column("name", false);
    for (const entry* e : s.folded)
      t.row({std::to_string(e->folded_entries), std::to_string(e->count), fmt_size(e->peak_sum_bytes, human),
             fmt_size(e->peak_bytes, human), detail::escape_text(e->name)});
    t.render(out);
  }
  if (table.lost_folds != 0)
    out += "(" + plural(table.lost_folds, "scope run", "scope runs") +
           " lost: out of memory while folding into the table)\n";
}

void append_totals(std::string& out, const std::vector<const entry*>& scopes,
                   const std::vector<const entry*>& accounts, bool human) {
  std::uint64_t scope_peaks = 0, account_peaks = 0;
  std::int64_t account_live = 0;
  for (const entry* e : scopes) scope_peaks += e->peak_bytes;
  for (const entry* e : accounts) {
    account_peaks += e->peak_bytes;
    account_live += e->live_bytes;
  }
  out += "Total: " + plural(scopes.size() + accounts.size(), "entry", "entries") +
         " shown; scope peaks sum to " + fmt_size(scope_peaks, human) +
         "; account peaks sum to " + fmt_size(account_peaks, human) + ", live " +
         fmt_signed(account_live, human) + '\n';
}

std::string render_text(const selection& s, const process_info& p, const report_options& o,
                        const table_status& table) {
  std::string out = "arenastat report\n";
  out += legend;
  out += '\n';
  append_process_lines(out, p, o.human);
  out += '\n';
  const auto scopes = of_kind(s.shown, entry_kind::scope);
  const auto accounts = of_kind(s.shown, entry_kind::account);
  append_scopes(out, scopes, s.scopes, o.human);
  out += '\n';
  append_accounts(out, accounts, s.accounts, o.human);
  out += '\n';
  append_totals(out, scopes, accounts, o.human);
  append_omitted(out, s, o);
  append_table(out, s, table, o.human);
  return out;
}

// ---------------------------------------------------------------- tree

struct tree_node {
  std::string label;
  std::uint64_t own = 0;       // peaks of entries named exactly by this path
  bool has_entry = false;
  std::uint64_t size = 0;      // own + children's sizes
  std::map<std::string, std::unique_ptr<tree_node>> children;
};

void insert_path(tree_node& root, const entry& e) {
  tree_node* n = &root;
  std::string_view rest = e.name;
  while (!rest.empty()) {
    const std::size_t slash = rest.find('/');
    const std::string_view part = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
    if (part.empty()) continue;  // "a//b" and a leading '/' add no level
    auto& child = n->children[std::string(part)];
    if (!child) {
      child = std::make_unique<tree_node>();
      child->label = detail::escape_text(part);
    }
    n = child.get();
  }
  n->own += e.peak_bytes;
  n->has_entry = true;
}

std::uint64_t compute_sizes(tree_node& n) {
  n.size = n.own;
  for (auto& [_, c] : n.children) n.size += compute_sizes(*c);
  return n.size;
}

std::string percent(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0) return "-";
  return fmt_fixed(100.0 * static_cast<double>(part) / static_cast<double>(whole), 1) + '%';
}

// Rows in depth-first order, children largest first (then by name). A node that
// is both an entry and a prefix of others gets a "(self)" child for its own bytes
// so that the children of every node add up to it.
void tree_rows(text_table& t, const tree_node& n, std::uint64_t parent, std::uint64_t root,
               std::size_t depth, bool human) {
  t.row({fmt_size(n.size, human), percent(n.size, parent), percent(n.size, root),
         std::string(2 * depth, ' ') + n.label});
  std::vector<const tree_node*> kids;
  for (const auto& [_, c] : n.children) kids.push_back(c.get());
  std::stable_sort(kids.begin(), kids.end(),
                   [](const tree_node* a, const tree_node* b) { return a->size > b->size; });
  tree_node self;
  if (n.has_entry && !n.children.empty()) {
    self.label = "(self)";
    self.size = n.own;
    const auto at = std::find_if(kids.begin(), kids.end(),
                                 [&](const tree_node* k) { return k->size < self.size; });
    kids.insert(at, &self);
  }
  for (const tree_node* k : kids) tree_rows(t, *k, n.size, root, depth + 1, human);
}

void append_tree(std::string& out, const std::vector<const entry*>& v, const char* root_label,
                 bool human) {
  tree_node root;
  root.label = root_label;
  for (const entry* e : v) insert_path(root, *e);
  compute_sizes(root);
  out += std::string(root_label) + " tree (" + plural(v.size(), "entry", "entries") + "):\n";
  text_table t;
  t.column("size", true);
  t.column("parent", true);
  t.column("root", true);
  t.column("name", false);
  tree_rows(t, root, root.size, root.size, 0, human);
  t.render(out);
}

std::string render_tree(const selection& s, const process_info& p, const report_options& o,
                        const table_status& table) {
  std::string out = "arenastat report (tree)\n";
  out +=
      "Names split on '/' form the tree; size is the sum of the peaks of the entries at and\n"
      "below a node; parent and root are its share of its parent and of the tree's root.\n\n";
  append_process_lines(out, p, o.human);
  out += '\n';
  const auto scopes = of_kind(s.shown, entry_kind::scope);
  const auto accounts = of_kind(s.shown, entry_kind::account);
  append_tree(out, scopes, "scopes", o.human);
  out += '\n';
  append_tree(out, accounts, "accounts", o.human);
  out += '\n';
  append_totals(out, scopes, accounts, o.human);
  append_omitted(out, s, o);
  append_table(out, s, table, o.human);
  return out;
}

// ---------------------------------------------------------------- json

void tag_object(detail::json_writer& w, const std::vector<tag_bytes>& tags) {
  w.begin_object();
  for (const tag_bytes& t : tags) w.field(t.tag, t.bytes);
  w.end_object();
}

void entry_json(detail::json_writer& w, const entry& e) {
  w.begin_object();
  w.field("name", e.name);
  w.field("kind", kind_name(e.kind));
  w.field("peak_bytes", e.peak_bytes);
  w.key("at_peak");
  tag_object(w, e.at_peak);
  if (e.kind == entry_kind::scope) {
    w.field("count", e.count);
    w.field("last_peak_bytes", e.last_peak_bytes);
    w.key("counters").begin_object();
    for (const counter_value& c : e.counters) w.field(c.name, c.shown());
    w.end_object();
    w.key("counters_at_peak").begin_object();
    for (const counter_value& c : e.counters)
      if (c.at_peak) w.field(c.name, c.value);
    w.end_object();
    w.key("counters_last").begin_object();
    for (const counter_value& c : e.counters) w.field(c.name, c.last);
    w.end_object();
    w.field("time_s", e.time_s);
    w.field("last_time_s", e.last_time_s);
    w.field("result", e.result);
    w.field("oom_count", e.oom_count);
    w.field("err_count", e.err_count);
    w.field("thread", e.thread);
  } else if (e.kind == entry_kind::account) {
    w.field("live_bytes", e.live_bytes);
    w.field("allocated_bytes", e.allocated_bytes);
    w.field("allocations", e.allocations);
    w.field("frees", e.frees);
    w.key("live_by_tag");
    tag_object(w, e.live_by_tag);
  } else {
    w.field("folded_entries", e.folded_entries);
    w.field("count", e.count);
    w.field("peak_sum_bytes", e.peak_sum_bytes);
    w.field("time_s", e.time_s);
    w.field("oom_count", e.oom_count);
    w.field("err_count", e.err_count);
  }
  w.end_object();
}

std::string render_json(const selection& s, const process_info& p, const report_options& o,
                        const table_status& table) {
  std::string out;
  detail::json_writer w(out);
  w.begin_object();
  w.field("version", 1);
  w.field("pid", p.pid);
  w.key("process");
  detail::write_process_json(w, p, /*with_pid=*/false);
  w.key("options").begin_object();
  w.field("min_size_bytes", o.min_size);
  w.field("sort", sort_name(o.sort));
  w.key("top");
  if (o.top) w.value(std::uint64_t{*o.top});
  else w.null();
  w.end_object();
  w.field("omitted_smaller", std::uint64_t{s.omitted_small});
  w.field("omitted_beyond_top", std::uint64_t{s.omitted_top});
  w.key("table").begin_object();
  w.field("max", std::uint64_t{table.max});
  w.field("scope_entries", std::uint64_t{s.scopes});
  w.field("account_entries", std::uint64_t{s.accounts});
  w.field("folded_entries", table.folded_entries);
  w.field("lost_folds", table.lost_folds);
  w.end_object();
  w.key("entries").begin_array();
  for (const entry* e : s.shown) entry_json(w, *e);
  w.end_array();
  w.key("folded").begin_array();
  for (const entry* e : s.folded) entry_json(w, *e);
  w.end_array();
  w.end_object();
  out += '\n';
  return out;
}

}  // namespace

entry_figures figures_of(const entry& e) noexcept {
  entry_figures f;
  f.name = e.name;
  f.kind = e.kind;
  f.peak = e.peak_bytes;
  f.tags = &e.at_peak;
  switch (e.kind) {
    case entry_kind::account:
      f.live = e.live_bytes;
      f.count = e.allocations;
      f.blocks = static_cast<std::int64_t>(e.allocations - e.frees);
      break;
    case entry_kind::scope:
      f.count = e.count;
      f.counters = &e.counters;
      f.result = e.result;
      break;
    case entry_kind::folded:
      f.count = e.count;
      break;
  }
  return f;
}

std::string render_report(const std::vector<entry>& entries, const process_info& proc,
                          const report_options& options, const table_status& table) {
  if (options.format == report_format::prometheus) {  // every entry: -s, --sort, --top do not apply
    return render_metrics(entries, proc, read_table_figures(entries), {.depth = metrics_depth_from_env()});
  }
  if (options.format == report_format::html) return render_html(entries, proc, options, table);
  const selection s = select(entries, options);
  switch (options.format) {
    case report_format::json: return render_json(s, proc, options, table);
    case report_format::tree: return render_tree(s, proc, options, table);
    case report_format::text:
    case report_format::html:
    case report_format::prometheus: break;
  }
  return render_text(s, proc, options, table);
}

std::string report(std::string_view options) {
  const report_options o = parse_report_options(options);
  return render_report(snapshot(), read_process_info(), o, table_status_now());
}

}  // namespace arenastat
