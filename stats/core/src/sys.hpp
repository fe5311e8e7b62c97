// Small system helpers shared by the reports (dumps) and the control layer
// (server, commands, start-up). Not installed.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>

namespace arenastat::detail {

// This process's name (/proc/self/comm), "?" when unreadable.
std::string program_name();
// The name of this process's executable file (the last part of
// /proc/self/exe: not cut to 15 bytes as comm is, nor changed by
// prctl(PR_SET_NAME)); program_name() when unreadable.
std::string executable_name();

// "2026-11-22 02:30:00 UTC".
std::string utc_time_string(std::time_t t);

// Writes all of `text` to stderr with one write(2) per call; never throws.
void warn(std::string_view text) noexcept;

// Names an errno value ("No such file or directory").
std::string error_text(int err);

// Writes all of `text` to `fd`, retrying on EINTR, and on a non-blocking `fd`
// that is full waiting (poll) up to write_stall_ms each time for room. Returns
// 0, or the errno of the failure (EIO when write(2) wrote nothing; EAGAIN when
// a full descriptor took nothing for write_stall_ms). Never throws.
inline constexpr int write_stall_ms = 10'000;
int write_all(int fd, std::string_view text) noexcept;

// As write_all, for writers a reader must not hold (a dump into a terminal,
// on the control server's thread): a full non-blocking `fd` is waited for at
// most `stall` at a time (a reader taking bytes starts a new wait) and not
// past `deadline`; EAGAIN when either is reached.
int write_all_bounded(int fd, std::string_view text, std::chrono::milliseconds stall,
                      std::chrono::steady_clock::time_point deadline) noexcept;

// `path` made absolute against the working directory ("" and "." are the
// directory itself; a leading "./" is dropped). Throws std::system_error,
// "<who>: cannot read the working directory", when getcwd fails.
std::string absolute_path(std::string path, std::string_view who);

// Reads up to `cap` bytes of a small file (/proc) with read(2) (no stdio,
// usable at exit). Returns the number of bytes read, 0 when it cannot be read.
std::size_t read_small_file(const char* path, char* buf, std::size_t cap) noexcept;

// The value of a "Key:   1234 kB" line of a /proc file's text
// (/proc/self/status, /proc/meminfo), `key` without its colon, in bytes; 0
// when absent.
std::uint64_t kb_field(std::string_view text, std::string_view key) noexcept;

}  // namespace arenastat::detail
