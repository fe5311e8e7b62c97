// A text rendered piece by piece: a coroutine that appends to its buffer and
// hands it over (co_yield) whenever it holds chunk_bytes or more, so an answer
// of any size needs one buffer, not the whole text. Not installed.
//
//   chunk_stream numbers(int n) {
//     std::string out;
//     for (int i = 0; i < n; ++i) {
//       out += std::to_string(i) + '\n';
//       if (out.size() >= chunk_bytes) co_yield out;  // the consumer takes it; out comes back empty
//     }
//     co_yield out;  // the rest (an empty chunk is skipped)
//   }
#pragma once
#include <coroutine>
#include <cstddef>
#include <exception>
#include <string>
#include <string_view>
#include <utility>

namespace arenastat::detail {

inline constexpr std::size_t chunk_bytes = 64 * 1024;

class chunk_stream {
 public:
  struct promise_type {
    std::string* chunk = nullptr;
    std::exception_ptr error;

    chunk_stream get_return_object() noexcept {
      return chunk_stream(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always initial_suspend() const noexcept { return {}; }
    std::suspend_always final_suspend() const noexcept { return {}; }
    std::suspend_always yield_value(std::string& c) noexcept {
      chunk = &c;
      return {};
    }
    void return_void() const noexcept {}
    void unhandled_exception() noexcept { error = std::current_exception(); }
  };

  chunk_stream() = default;
  chunk_stream(chunk_stream&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  chunk_stream& operator=(chunk_stream&& o) noexcept {
    if (this != &o) {
      destroy();
      h_ = std::exchange(o.h_, {});
    }
    return *this;
  }
  ~chunk_stream() { destroy(); }

  // The next non-empty chunk, valid until the next call; false at the end.
  // Rethrows what the renderer threw (the stream is then at its end).
  bool next(std::string_view& chunk) {
    for (;;) {
      if (!h_ || h_.done()) return false;
      promise_type& p = h_.promise();
      if (p.chunk != nullptr) p.chunk->clear();  // the previous chunk was taken
      p.chunk = nullptr;
      h_.resume();
      if (p.error) {
        const std::exception_ptr e = std::exchange(p.error, nullptr);
        destroy();
        std::rethrow_exception(e);
      }
      if (h_.done() || p.chunk == nullptr) return false;
      if (!p.chunk->empty()) {
        chunk = *p.chunk;
        return true;
      }
    }
  }

  // Every remaining chunk, concatenated.
  std::string rest() {
    std::string out;
    std::string_view c;
    while (next(c)) out += c;
    return out;
  }

 private:
  explicit chunk_stream(std::coroutine_handle<promise_type> h) noexcept : h_(h) {}
  void destroy() noexcept {
    if (h_) h_.destroy();
    h_ = {};
  }
  std::coroutine_handle<promise_type> h_;
};

}  // namespace arenastat::detail
