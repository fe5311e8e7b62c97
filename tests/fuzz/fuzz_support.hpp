// What the libFuzzer targets share: an upstream that counts what it holds
// (and can fail a chosen allocation), and a reader of the fuzz input's bytes
// (0 once the input is used up, so every input drives a whole run).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <new>

namespace fuzz {

// new/delete underneath; `held`: the bytes given out and not yet returned;
// `fail_in` > 0 makes the fail_in-th allocation from now throw std::bad_alloc.
class counting_upstream : public std::pmr::memory_resource {
 public:
  std::int64_t held = 0;
  int fail_in = 0;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    if (fail_in > 0 && --fail_in == 0) throw std::bad_alloc();
    void* p = std::pmr::new_delete_resource()->allocate(bytes, alignment);
    held += static_cast<std::int64_t>(bytes);
    return p;
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    held -= static_cast<std::int64_t>(bytes);
    std::pmr::new_delete_resource()->deallocate(p, bytes, alignment);
  }
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }
};

struct reader {
  const std::uint8_t* p;
  std::size_t n;
  bool empty() const { return n == 0; }
  std::uint8_t byte() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  std::uint64_t u64() {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = v << 8 | byte();
    return v;
  }
};

}  // namespace fuzz
