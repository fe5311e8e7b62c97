// docs/testing.md's example: a user's pmr container, name_list, whose copy
// constructor is proven exception-safe with arenastat::exception_test.
// Built twice by tests/testing/CMakeLists.txt and run by ctest: as is (prints
// that the copy is exception-safe, exits 0) and with -DNAME_LIST_BROKEN (the
// copy without its try block: prints exception_test's failure, exits 1).
#include <arenastat/test_resource.hpp>
#include <cstdio>
#include <memory_resource>
#include <stdexcept>
#include <string>
#include <string_view>

// A growable list of strings, all allocated from one memory resource.
class name_list {
 public:
  using allocator_type = std::pmr::polymorphic_allocator<std::pmr::string>;

  explicit name_list(allocator_type alloc = {}) : alloc_(alloc) {}

  name_list(const name_list& other, allocator_type alloc = {}) : alloc_(alloc) {
    if (other.size_ == 0) return;
    data_ = alloc_.allocate(other.size_);
    capacity_ = other.size_;
#ifdef NAME_LIST_BROKEN
    // Broken: when a string's copy throws, the constructor exits without the
    // destructor running, and the array and the strings copied so far leak.
    for (; size_ < other.size_; ++size_) alloc_.construct(data_ + size_, other.data_[size_]);
#else
    try {
      for (; size_ < other.size_; ++size_) alloc_.construct(data_ + size_, other.data_[size_]);
    } catch (...) {
      destroy();
      throw;
    }
#endif
  }

  ~name_list() { destroy(); }
  name_list& operator=(const name_list&) = delete;

  void add(std::string_view name) {
    if (size_ == capacity_) grow();
    alloc_.construct(data_ + size_, name);  // the allocator is passed down to the string
    ++size_;
  }
  std::size_t size() const { return size_; }
  const std::pmr::string& operator[](std::size_t i) const { return data_[i]; }

 private:
  void grow() {
    const std::size_t cap = capacity_ ? capacity_ * 2 : 4;
    std::pmr::string* fresh = alloc_.allocate(cap);
    for (std::size_t i = 0; i < size_; ++i) {  // moves between strings of one resource do not allocate
      alloc_.construct(fresh + i, std::move(data_[i]));
      std::destroy_at(data_ + i);
    }
    if (data_) alloc_.deallocate(data_, capacity_);
    data_ = fresh;
    capacity_ = cap;
  }
  void destroy() noexcept {
    for (std::size_t i = 0; i < size_; ++i) std::destroy_at(data_ + i);
    if (data_) alloc_.deallocate(data_, capacity_);
    data_ = nullptr;
    size_ = capacity_ = 0;
  }

  allocator_type alloc_;
  std::pmr::string* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

int main() {
  arenastat::test_resource mem{"example/name_list", {.quiet = true}};
  name_list names{&mem};
  names.add("a name long enough to allocate: one");
  names.add("a name long enough to allocate: two");
  names.add("a name long enough to allocate: three");
  try {
    // Each run copies the list; run k fails at its k-th allocation. A leak
    // after any failure ends the test with exception_test_failure.
    const std::int64_t runs = arenastat::exception_test(mem, [&] {
      name_list copy{names, &mem};
      if (copy.size() != 3 || copy[2] != names[2]) throw std::logic_error("the copy differs");
    });
    std::printf("name_list's copy is exception-safe: %lld runs threw, none leaked\n", static_cast<long long>(runs));
    return 0;
  } catch (const arenastat::exception_test_failure& e) {
    std::printf("%s\n", e.what());
    return 1;
  }
}
