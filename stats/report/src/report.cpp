// Reports over the table: text, tree and JSON renderings of a list of entries
// (the option grammar: report_options.cpp). docs/report.md describes every column.
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
#include "chunk_stream.hpp"
#include "json_writer.hpp"
#include "leaks_section.hpp"
#include "report_internal.hpp"
#include "text_escape.hpp"

namespace arenastat {

using detail::chunk_stream;

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

// What ordering and filtering need of an entry, read once.
struct row_key {
  std::size_t index = 0;  // in the table copy
  entry_kind kind = entry_kind::scope;
  std::uint64_t peak = 0, count = 0;
  std::int64_t live = 0;
  std::string_view name;
};

// Strict weak order: the sort key, then peak (largest first), name, kind.
bool comes_before(const row_key& a, const row_key& b, sort_key key) {
  switch (key) {
    case sort_key::count:
      if (a.count != b.count) return a.count > b.count;
      break;
    case sort_key::live:
      if (a.live != b.live) return a.live > b.live;
      break;
    case sort_key::name:
      if (const int c = a.name.compare(b.name); c != 0) return c < 0;
      break;
    case sort_key::peak:
      break;
  }
  if (a.peak != b.peak) return a.peak > b.peak;
  if (const int c = a.name.compare(b.name); c != 0) return c < 0;
  if (a.kind != b.kind) return a.kind == entry_kind::scope && b.kind == entry_kind::account;
  return a.index < b.index;
}

// The entries a report shows, as indices into the table copy: -s filter, sort,
// then --top. Folded rows are not entries to choose from: they are always
// shown, in their own section.
struct selection {
  std::vector<std::size_t> shown;
  std::vector<std::size_t> folded;
  std::size_t omitted_small = 0;  // peak below -s
  std::size_t omitted_top = 0;    // cut by --top
  std::size_t scopes = 0, accounts = 0;  // in the table, before -s and --top
};

// Reads each entry once (into one reused entry); with --top=N only the N
// first keys are sorted (partial sort).
selection select(const table_copy& c, const report_options& o) {
  selection s;
  std::vector<row_key> keys;
  entry e;
  for (std::size_t i = 0; i < c.size(); ++i) {
    c.read(i, e);
    if (e.kind == entry_kind::folded) {
      s.folded.push_back(i);
      continue;
    }
    ++(e.kind == entry_kind::scope ? s.scopes : s.accounts);
    if (e.peak_bytes < o.min_size) {
      ++s.omitted_small;
      continue;
    }
    const entry_figures f = figures_of(e);
    keys.push_back({i, e.kind, f.peak, f.count, f.live, c.name(i)});
  }
  // What a bounded copy left out (table_copy::take(copy_bound)) still counts.
  s.scopes += c.scopes_below_min() + c.scopes_beyond_top();
  s.omitted_small += c.scopes_below_min();
  s.omitted_top = c.scopes_beyond_top();
  const auto before = [&](const row_key& a, const row_key& b) { return comes_before(a, b, o.sort); };
  std::size_t n = keys.size();
  if (o.top && n > *o.top) {
    s.omitted_top += n - *o.top;
    n = *o.top;
    std::partial_sort(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(n), keys.end(), before);
  } else {
    std::sort(keys.begin(), keys.end(), before);
  }
  s.shown.reserve(n);
  for (std::size_t k = 0; k < n; ++k) s.shown.push_back(keys[k].index);
  return s;
}

// A scope entry's key as the table holds it: the figures figures_of() gives a
// scope (count = runs, live 0).
bool scope_before(const scope_key& a, const scope_key& b, const void* sort) {
  const row_key ka{0, entry_kind::scope, a.peak, a.runs, 0, a.name};
  const row_key kb{0, entry_kind::scope, b.peak, b.runs, 0, b.name};
  return comes_before(ka, kb, *static_cast<const sort_key*>(sort));
}

std::vector<std::size_t> of_kind(const table_copy& c, const std::vector<std::size_t>& v, entry_kind k) {
  std::vector<std::size_t> out;
  for (const std::size_t i : v)
    if (c.kind(i) == k) out.push_back(i);
  return out;
}

// Tags present (non-zero at the peak) in any of the entries, in name order.
std::vector<std::string> tags_at_peak(const table_copy& c, const std::vector<std::size_t>& v) {
  std::vector<std::string> tags;
  entry e;
  for (const std::size_t i : v) {
    c.read(i, e);
    for (const tag_bytes& t : e.at_peak)
      if (t.bytes != 0 && std::find(tags.begin(), tags.end(), t.tag) == tags.end()) tags.push_back(t.tag);
  }
  std::sort(tags.begin(), tags.end());
  return tags;
}

std::int64_t tag_at_peak(const entry& e, const std::string& tag) {
  for (const tag_bytes& t : e.at_peak)
    if (t.tag == tag) return t.bytes;
  return 0;
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
    out += '(' + detail::plural(s.omitted_small, "entry", "entries") + " smaller than " +
           fmt_size(o.min_size, o.human) + " omitted)\n";
  if (s.omitted_top)
    out += '(' + detail::plural(s.omitted_top, "entry", "entries") + " beyond --top=" +
           std::to_string(*o.top) + " omitted)\n";
}

// ---------------------------------------------------------------- text

// Column-aligned lines: every column but the last is padded to its widest cell
// (numbers right-aligned); the last column (the name) is never padded. Widths
// are measured in a first pass over the rows, so the rows can be printed in a
// second pass as they are made (a report of N rows holds one row).
class text_columns {
 public:
  void column(std::string header, bool right) {
    width_.push_back(header.size());
    headers_.push_back(std::move(header));
    right_.push_back(right);
  }
  void measure(const std::vector<std::string>& cells) {
    for (std::size_t c = 0; c < cells.size(); ++c) width_[c] = std::max(width_[c], cells[c].size());
  }
  void header(std::string& out) const { line(out, headers_); }
  void line(std::string& out, const std::vector<std::string>& cells) const {
    const std::size_t last = cells.size() - 1;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::size_t pad = c == last ? 0 : width_[c] - cells[c].size();
      if (right_[c]) out.append(pad, ' ');
      out += cells[c];
      if (!right_[c]) out.append(pad, ' ');
      if (c != last) out += "  ";
    }
    out += '\n';
  }

 private:
  std::vector<std::string> headers_;
  std::vector<bool> right_;
  std::vector<std::size_t> width_;
};

// A small table kept whole (the folded rows, the tree).
class text_table {
 public:
  void column(std::string header, bool right) { columns_.column(std::move(header), right); }
  void row(std::vector<std::string> cells) {
    columns_.measure(cells);
    rows_.push_back(std::move(cells));
  }
  void render(std::string& out) const {
    columns_.header(out);
    for (const auto& r : rows_) columns_.line(out, r);
  }

 private:
  text_columns columns_;
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

// One section of rows (scopes or accounts): columns measured over every row
// first, then the rows printed a chunk at a time.
struct row_section {
  using cells_fn = void (*)(const entry&, const std::vector<std::string>& tags, bool human,
                            std::vector<std::string>& cells);
  const table_copy* copy = nullptr;
  std::vector<std::size_t> rows;
  std::vector<std::string> tags;
  text_columns columns;
  cells_fn cells = nullptr;
  bool human = false;

  void measure() {
    entry e;
    std::vector<std::string> r;
    for (const std::size_t i : rows) {
      copy->read(i, e);
      cells(e, tags, human, r);
      columns.measure(r);
    }
  }
  // Prints rows from k on until `out` holds a chunk; returns the next row.
  std::size_t print(std::string& out, std::size_t k) const {
    entry e;
    std::vector<std::string> r;
    for (; k < rows.size() && out.size() < detail::chunk_bytes; ++k) {
      copy->read(rows[k], e);
      cells(e, tags, human, r);
      columns.line(out, r);
    }
    return k;
  }
};

void scope_cells(const entry& e, const std::vector<std::string>& tags, bool human, std::vector<std::string>& r) {
  r.clear();
  r.push_back(fmt_size(e.peak_bytes, human));
  for (const auto& tag : tags) r.push_back(fmt_signed(tag_at_peak(e, tag), human));
  r.push_back(counters_cell(e));
  r.push_back(std::to_string(e.count));
  r.push_back(fmt_fixed(e.time_s, 3));
  r.push_back(result_cell(e));
  r.push_back(std::to_string(e.thread));
  r.push_back(detail::escape_text(e.name));
}

void account_cells(const entry& e, const std::vector<std::string>& tags, bool human, std::vector<std::string>& r) {
  r.clear();
  r.push_back(fmt_size(e.peak_bytes, human));
  r.push_back(fmt_signed(e.live_bytes, human));
  r.push_back(fmt_size(e.allocated_bytes, human));
  r.push_back(std::to_string(e.allocations));
  r.push_back(std::to_string(e.frees));
  for (const auto& tag : tags) r.push_back(fmt_signed(tag_at_peak(e, tag), human));
  r.push_back(detail::escape_text(e.name));
}

// A section of `rows` with the tags they show; its columns are added next.
row_section section_of(const table_copy& c, std::vector<std::size_t> rows, row_section::cells_fn cells, bool human) {
  row_section s;
  s.copy = &c;
  s.rows = std::move(rows);
  s.cells = cells;
  s.human = human;
  s.tags = tags_at_peak(c, s.rows);
  return s;
}

row_section scope_section(const table_copy& c, std::vector<std::size_t> rows, bool human) {
  row_section s = section_of(c, std::move(rows), scope_cells, human);
  s.columns.column("peak", true);
  for (const auto& tag : s.tags) s.columns.column(detail::escape_text(tag), true);
  s.columns.column("counters", false);
  s.columns.column("count", true);
  s.columns.column("time", true);
  s.columns.column("result", false);
  s.columns.column("thread", true);
  s.columns.column("name", false);
  s.measure();
  return s;
}

row_section account_section(const table_copy& c, std::vector<std::size_t> rows, bool human) {
  row_section s = section_of(c, std::move(rows), account_cells, human);
  s.columns.column("peak", true);
  s.columns.column("live", true);
  s.columns.column("allocated", true);
  s.columns.column("allocations", true);
  s.columns.column("frees", true);
  for (const auto& tag : s.tags) s.columns.column(detail::escape_text(tag), true);
  s.columns.column("name", false);
  s.measure();
  return s;
}

// "Scopes (3):" (or "Scopes: none shown") and the column headers.
void section_start(std::string& out, const char* title, const row_section& s, std::size_t in_table) {
  if (s.rows.empty()) {
    out += std::string(title) + ": none shown" + (in_table == 0 ? "" : " of " + std::to_string(in_table)) + "\n";
    return;
  }
  out += section_head(title, s.rows.size(), in_table);
  s.columns.header(out);
}

// The table's own state: said only when the cap folded entries or runs were lost.
void append_table(std::string& out, const table_copy& c, const selection& s, const table_status& table,
                  bool human) {
  if (!s.folded.empty()) {
    std::uint64_t folded = 0;
    entry e;
    text_table t;
    t.column("entries", true);
    t.column("runs", true);
    t.column("peak sum", true);
    t.column("peak max", true);
    t.column("name", false);
    for (const std::size_t i : s.folded) {
      c.read(i, e);
      folded += e.folded_entries;
      t.row({std::to_string(e.folded_entries), std::to_string(e.count), fmt_size(e.peak_sum_bytes, human),
             fmt_size(e.peak_bytes, human), detail::escape_text(e.name)});
    }
    out += "\nFolded: " + detail::plural(folded, "scope entry", "scope entries") + " past the table cap" +
           (table.max != 0 ? " of " + std::to_string(table.max) : std::string()) +
           " (ARENASTAT_TABLE_MAX), by name prefix:\n";
    t.render(out);
  }
  if (table.lost_folds != 0)
    out += "(" + detail::plural(table.lost_folds, "scope run", "scope runs") +
           " lost: out of memory while folding into the table)\n";
}

void append_totals(std::string& out, const table_copy& c, const std::vector<std::size_t>& scopes,
                   const std::vector<std::size_t>& accounts, bool human) {
  std::uint64_t scope_peaks = 0, account_peaks = 0;
  std::int64_t account_live = 0;
  entry e;
  for (const std::size_t i : scopes) {
    c.read(i, e);
    scope_peaks += e.peak_bytes;
  }
  for (const std::size_t i : accounts) {
    c.read(i, e);
    account_peaks += e.peak_bytes;
    account_live += e.live_bytes;
  }
  out += "Total: " + detail::plural(scopes.size() + accounts.size(), "entry", "entries") +
         " shown; scope peaks sum to " + fmt_size(scope_peaks, human) +
         "; account peaks sum to " + fmt_size(account_peaks, human) + ", live " +
         fmt_signed(account_live, human) + '\n';
}

// What the stream renders: the copy, its selection and everything around it.
struct report_input {
  std::shared_ptr<const table_copy> copy;
  selection chosen;
  process_info process;
  report_options options;
  table_status table;
  std::vector<leak> leaks;  // the at-exit report's leaks section (empty: none)
};

chunk_stream text_stream(report_input in) {
  const table_copy& c = *in.copy;
  const bool human = in.options.human;
  std::string out = "arenastat report\n";
  out += legend;
  out += '\n';
  append_process_lines(out, in.process, human);
  out += '\n';
  const row_section scopes = scope_section(c, of_kind(c, in.chosen.shown, entry_kind::scope), human);
  section_start(out, "Scopes", scopes, in.chosen.scopes);
  for (std::size_t k = 0; k < scopes.rows.size();) {
    k = scopes.print(out, k);
    if (out.size() >= detail::chunk_bytes) co_yield out;
  }
  out += '\n';
  const row_section accounts = account_section(c, of_kind(c, in.chosen.shown, entry_kind::account), human);
  section_start(out, "Accounts", accounts, in.chosen.accounts);
  for (std::size_t k = 0; k < accounts.rows.size();) {
    k = accounts.print(out, k);
    if (out.size() >= detail::chunk_bytes) co_yield out;
  }
  out += '\n';
  append_totals(out, c, scopes.rows, accounts.rows, human);
  append_omitted(out, in.chosen, in.options);
  append_table(out, c, in.chosen, in.table, human);
  detail::append_leaks_text(out, in.leaks);
  co_yield out;
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

void append_tree(std::string& out, const table_copy& c, const std::vector<std::size_t>& v,
                 const char* root_label, bool human) {
  tree_node root;
  root.label = root_label;
  entry e;
  for (const std::size_t i : v) {
    c.read(i, e);
    insert_path(root, e);
  }
  compute_sizes(root);
  out += std::string(root_label) + " tree (" + detail::plural(v.size(), "entry", "entries") + "):\n";
  text_table t;
  t.column("size", true);
  t.column("parent", true);
  t.column("root", true);
  t.column("name", false);
  tree_rows(t, root, root.size, root.size, 0, human);
  t.render(out);
}

chunk_stream tree_stream(report_input in) {
  const table_copy& c = *in.copy;
  const bool human = in.options.human;
  std::string out = "arenastat report (tree)\n";
  out +=
      "Names split on '/' form the tree; size is the sum of the peaks of the entries at and\n"
      "below a node; parent and root are its share of its parent and of the tree's root.\n\n";
  append_process_lines(out, in.process, human);
  out += '\n';
  const auto scopes = of_kind(c, in.chosen.shown, entry_kind::scope);
  const auto accounts = of_kind(c, in.chosen.shown, entry_kind::account);
  append_tree(out, c, scopes, "scopes", human);
  co_yield out;
  out += '\n';
  append_tree(out, c, accounts, "accounts", human);
  out += '\n';
  append_totals(out, c, scopes, accounts, human);
  append_omitted(out, in.chosen, in.options);
  append_table(out, c, in.chosen, in.table, human);
  detail::append_leaks_text(out, in.leaks);
  co_yield out;
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

chunk_stream json_stream(report_input in) {
  const table_copy& c = *in.copy;
  const report_options& o = in.options;
  std::string out;
  detail::json_writer w(out);
  w.begin_object();
  w.field("version", 1);
  w.field("pid", in.process.pid);
  w.key("process");
  detail::write_process_json(w, in.process, /*with_pid=*/false);
  w.key("options").begin_object();
  w.field("min_size_bytes", o.min_size);
  w.field("sort", sort_name(o.sort));
  w.key("top");
  if (o.top) w.value(std::uint64_t{*o.top});
  else w.null();
  w.end_object();
  w.field("omitted_smaller", std::uint64_t{in.chosen.omitted_small});
  w.field("omitted_beyond_top", std::uint64_t{in.chosen.omitted_top});
  w.key("table").begin_object();
  w.field("max", std::uint64_t{in.table.max});
  w.field("scope_entries", std::uint64_t{in.chosen.scopes});
  w.field("account_entries", std::uint64_t{in.chosen.accounts});
  w.field("folded_entries", in.table.folded_entries);
  w.field("lost_folds", in.table.lost_folds);
  w.end_object();
  entry e;
  w.key("entries").begin_array();
  for (const std::size_t i : in.chosen.shown) {
    c.read(i, e);
    entry_json(w, e);
    if (out.size() >= detail::chunk_bytes) co_yield out;  // the writer only appends: out may be emptied
  }
  w.end_array();
  w.key("folded").begin_array();
  for (const std::size_t i : in.chosen.folded) {
    c.read(i, e);
    entry_json(w, e);
  }
  w.end_array();
  if (!in.leaks.empty()) {
    w.key("leaks");
    detail::leaks_json(w, in.leaks);
  }
  w.end_object();
  out += '\n';
  co_yield out;
}

// Whether a format's stream renders as it goes (text, JSON: a chunk at a
// time from the copy) or needs the whole text first (the others).
bool streams_piecewise(report_format f) noexcept { return f == report_format::text || f == report_format::json; }

// A text made whole elsewhere, handed over in chunks.
chunk_stream whole_text(std::string text) {
  std::string out;
  for (std::size_t at = 0; at < text.size(); at += detail::chunk_bytes) {
    out.assign(text, at, detail::chunk_bytes);
    co_yield out;
  }
}

chunk_stream stream_of(report_input in) {
  switch (in.options.format) {
    case report_format::prometheus: {  // every entry: -s, --sort, --top do not apply
      return whole_text(detail::render_metrics_from_env(*in.copy, in.process));
    }
    case report_format::html: {
      std::vector<entry> entries(in.copy->size());
      for (std::size_t i = 0; i < entries.size(); ++i) in.copy->read(i, entries[i]);
      std::string page = render_html(entries, in.process, in.options, in.table);
      detail::append_leaks_html(page, in.leaks);
      return whole_text(std::move(page));
    }
    case report_format::json:
      in.chosen = select(*in.copy, in.options);
      return json_stream(std::move(in));
    case report_format::tree:
      in.chosen = select(*in.copy, in.options);
      return tree_stream(std::move(in));
    case report_format::text: break;
  }
  in.chosen = select(*in.copy, in.options);
  return text_stream(std::move(in));
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
  if (options.format == report_format::prometheus) {  // the figures of the live table, as read_table_figures says
    metrics_options mo;
    mo.depth = metrics_depth_from_env();
    return render_metrics(entries, proc, read_table_figures(entries), mo);
  }
  report_input in;
  in.copy = std::make_shared<const table_copy>(table_copy::of(entries));
  in.process = proc;
  in.options = options;
  in.table = table;
  return stream_of(std::move(in)).rest();
}

struct report_stream::state {
  chunk_stream chunks;
  std::size_t held = 0;
};

report_stream::report_stream(std::unique_ptr<state> s) noexcept : s_(std::move(s)) {}
report_stream::report_stream(report_stream&&) noexcept = default;
report_stream& report_stream::operator=(report_stream&&) noexcept = default;
report_stream::~report_stream() = default;

bool report_stream::next(std::string_view& chunk) {
  if (!s_) return false;
  if (s_->chunks.next(chunk)) return true;
  s_.reset();  // the copy goes as soon as the last chunk was taken
  return false;
}

std::size_t report_stream::bytes_held() const noexcept { return s_ ? s_->held + detail::chunk_bytes : 0; }

report_stream stream_report(std::string_view options) {
  const report_options o = parse_report_options(options);  // a bad option throws before the copy
  return detail::stream_report(std::make_shared<const table_copy>(detail::copy_for(o)), read_process_info(), o, {});
}

std::string report(std::string_view options) {
  report_stream s = stream_report(options);
  std::string out;
  std::string_view chunk;
  while (s.next(chunk)) out += chunk;
  return out;
}

namespace detail {

// The copy a report of these options needs: the scope entries -s and --top
// let through, chosen on the locked table (every entry for the formats that
// show them all).
table_copy copy_for(const report_options& o) {
  if (o.format == report_format::prometheus || o.format == report_format::html) return table_copy::take();
  copy_bound bound;
  bound.min_peak = o.min_size;
  if (o.top) {
    bound.top = *o.top;
    bound.before = scope_before;
    bound.context = &o.sort;
  }
  return table_copy::take(bound);
}

report_stream stream_report(std::shared_ptr<const table_copy> copy, const process_info& proc,
                            const report_options& options, std::vector<leak> leaks) {
  auto s = std::make_unique<report_stream::state>();
  s->held = copy->bytes_held();
  const table_status table = copy->status();
  report_input in;
  in.copy = std::move(copy);
  in.process = proc;
  in.options = options;
  in.table = table;
  in.leaks = std::move(leaks);
  s->chunks = stream_of(std::move(in));
  if (!streams_piecewise(options.format)) {
    // Made whole before its first chunk (the page, the exposition, the tree
    // whose columns need every row): rendered now, so that bytes_held()
    // counts the whole text a client has yet to take (the control server's
    // bound on held answers adds it up), and the copy is freed at once.
    std::string text = s->chunks.rest();
    s->held = text.size();
    s->chunks = whole_text(std::move(text));
  }
  return report_stream(std::move(s));
}

}  // namespace detail

}  // namespace arenastat

std::string arenastat::detail::plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + ' ' + (n == 1 ? one : many);
}
