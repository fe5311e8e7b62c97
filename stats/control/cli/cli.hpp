// Shared by the files of the `arenastat` CLI (arenastat_cli.cpp, html.cpp, top.cpp).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "cli_failure.hpp"  // exit statuses, failure
#include "options.hpp"


namespace arenastat::cli {

// Sends one request line to the target and returns the body of its "ok"
// answer; throws failure otherwise.
using ask_fn = std::function<std::string(const std::string& line)>;

// The options of html and top (their tables: html.cpp, top.cpp), for the usage.
const opt::grammar& html_grammar() noexcept;
const opt::grammar& top_grammar() noexcept;

// opt::parse for the CLI: a bad option is a usage error (exit 2).
opt::parsed parse_options(const opt::grammar& g, const std::vector<std::string>& args,
                          opt::operands rest = opt::operands::none);

// `arenastat <pid> html [-o FILE] [report options]`: the --html report.
int run_html(const std::vector<std::string>& args, const ask_fn& ask);

// `arenastat <pid> top [-d SECONDS] [--sort=live|peak|growth] [--batch] [-n N] [--top=N] [-H]`.
int run_top(long pid, const std::vector<std::string>& args, const ask_fn& ask);

}  // namespace arenastat::cli
