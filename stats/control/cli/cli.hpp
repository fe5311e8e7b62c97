// Shared by the files of the `arenastat` CLI (arenastat_cli.cpp, html.cpp, top.cpp).
#pragma once
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cli_failure.hpp"  // exit statuses, failure
#include "options.hpp"


namespace arenastat::cli {

// What a request in progress also watches, for a view that must stay
// responsive while the target is slow (top: its keys and signals): when one
// of `fds` is readable, or a signal interrupts the wait, `stop()` is asked
// (it must consume what made the descriptor readable) and the request gives
// up with `interrupted` when it says so. Empty: nothing is watched.
// While nothing happens for `idle_every`, `idle()` is called (top: marks its
// screen as waiting), again after each further `idle_every`.
struct interruption {
  std::vector<int> fds;
  std::function<bool()> stop;
  std::function<void()> idle;
  std::chrono::milliseconds idle_every{1000};
};

// Thrown by a request that gave up because interruption::stop() said so.
struct interrupted {};

// Sends one request line to the target and returns the body of its "ok"
// answer; throws failure otherwise, `interrupted` when `watch` says so.
using ask_fn = std::function<std::string(const std::string& line, const interruption& watch)>;

// The options of html and top (their tables: html.cpp, top.cpp), for the usage.
const opt::grammar& html_grammar() noexcept;
const opt::grammar& top_grammar() noexcept;

// The commands the CLI makes itself (from the target's answers), in the form
// of a target's `help` entries: appended to `arenastat <pid> help`.
std::string cli_commands_help();

// opt::parse for the CLI: a bad option is a usage error (exit 2).
opt::parsed parse_options(const opt::grammar& g, const std::vector<std::string>& args,
                          opt::operands rest = opt::operands::none);

// Writes `text` (made by the CLI) to stdout and flushes it; a failed write is
// a failure with exit_output.
void write_stdout(std::string_view text);

// Writes bytes the target sent to stdout (trust rule 8): escaped when stdout
// is a terminal, unchanged into a pipe or file; a failed write is exit_output.
void print_answer(std::string_view body);

// `arenastat <pid> html [-o FILE] [report options]`: the --html report.
int run_html(const std::vector<std::string>& args, const ask_fn& ask);

// `arenastat <pid> top [-d SECONDS] [--sort=live|peak|growth] [--batch] [-n N] [--top=N] [-H]`.
int run_top(long pid, const std::vector<std::string>& args, const ask_fn& ask);

}  // namespace arenastat::cli
