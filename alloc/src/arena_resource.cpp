// arena_resource: the slow path (chunk growth) and release.
#include "arenastat/arena_resource.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>

#include "stack_accounts.hpp"

namespace arenastat {

struct arena_resource::chunk {
  chunk* next;
  std::size_t size;  // bytes taken from upstream, header included
  charge_stamp stamp;
};

namespace {

void validate(const arena_options& o, const std::pmr::memory_resource* upstream) {
  const auto fail = [](const std::string& what) {
    throw std::invalid_argument("arenastat::arena_resource: " + what);
  };
  if (!upstream) fail("upstream resource is null");
  if (!o.account.empty()) {
    account::check_name(o.account);
    detail::refuse_double_charge("arenastat::arena_resource", upstream, o.account);
  }
  if (o.initial_chunk < arena_resource::chunk_header_size + arena_resource::chunk_alignment)
    fail("initial_chunk " + std::to_string(o.initial_chunk) + " is smaller than " +
         std::to_string(arena_resource::chunk_header_size + arena_resource::chunk_alignment));
  if (o.max_chunk < o.initial_chunk)
    fail("max_chunk " + std::to_string(o.max_chunk) + " is smaller than initial_chunk " +
         std::to_string(o.initial_chunk));
  if (!(o.growth_factor >= 1.0) || !std::isfinite(o.growth_factor))
    fail("growth_factor " + std::to_string(o.growth_factor) + " must be a finite number >= 1");
}

}  // namespace

arena_resource::arena_resource(std::string_view tag, std::pmr::memory_resource* upstream)
    : arena_resource(tag, arena_options{}, upstream) {}

arena_resource::arena_resource(std::string_view tag, const arena_options& options,
                               std::pmr::memory_resource* upstream)
    : next_size_((validate(options, upstream), check_tag_name(tag), options.initial_chunk)),
      upstream_(upstream),
      hook_(options.hook ? options.hook : &tracking_hook()),
      policy_(options),
      tag_(register_tag(tag)) {  // after every check: a refused arena registers nothing
  if (!options.account.empty()) {
    account_ = &account::get(options.account);
    account_->attach_resource();
    account_->use_tag(tag_);  // its tag's series from the start, as tracking_resource's (metrics.md)
  }
  policy_.account = {};  // the view may dangle; the account pointer is what we keep
}

// A chunk's stamp until on_acquire fills it (no tag has this id: max_tags < 255).
constexpr tag_id not_stamped = 0xFF;
static_assert(max_tags < not_stamped);

arena_resource::chunk* arena_resource::take_chunk(std::size_t size) {
  static_assert(sizeof(chunk) <= chunk_header_size);
  static_assert(chunk_header_size % chunk_alignment == 0);
  hook_->admit(tag_, size);  // may throw: then nothing was asked of upstream
  void* memory;
  {
    upstream_call below;
    memory = upstream_->allocate(size, chunk_alignment);
  }
  auto* c = ::new (memory) chunk{head_, size, {}};
  c->stamp.tag = not_stamped;
  try {
    hook_->on_acquire(c->stamp, tag_, size, account_);
  } catch (...) {
    // A hook that forwarded (forwarding_hook) and then threw has charged the
    // chunk: its stamp was filled, so the charge is taken back before the
    // chunk is given back. (The library's own charge is all or nothing: when
    // it throws, the stamp is untouched.)
    if (c->stamp.tag != not_stamped) hook_->on_release(c->stamp, size);
    upstream_call below;
    upstream_->deallocate(memory, size, chunk_alignment);
    throw;
  }
  head_ = c;
  reserved_ += size;
  ++chunks_;
  return c;
}

void arena_resource::restart_bump(char* p, std::size_t bytes) noexcept {
  requested_before_ += static_cast<std::size_t>(cur_ - mark_);
  mark_ = p;
  cur_ = p + bytes;
}

void* arena_resource::allocate_slow(std::size_t bytes, std::size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    throw std::invalid_argument("arenastat::arena_resource: alignment " + std::to_string(alignment) +
                                " is not a power of two");
  // Padding inside the current chunk (p >= cur: cur + alignment - 1 cannot
  // wrap for a user-space pointer; p <= end is checked before the difference).
  {
    const auto cur = reinterpret_cast<std::uintptr_t>(cur_);
    const auto end = reinterpret_cast<std::uintptr_t>(end_);
    const std::uintptr_t p = (cur + alignment - 1) & ~(std::uintptr_t{alignment} - 1);
    if (p <= end && bytes <= end - p) {
      restart_bump(reinterpret_cast<char*>(p), bytes);
      return reinterpret_cast<void*>(p);
    }
  }
  // Worst-case padding to reach `alignment` after a header that starts chunk-aligned.
  const std::size_t pad = alignment > chunk_alignment ? alignment - chunk_alignment : 0;
  // Larger than any object (PTRDIFF_MAX) with its header: refused before upstream is asked.
  // (pad first: at alignment 2^63 the pad alone exceeds what is left.)
  // An active scope's limit speaks first: a request larger than it is
  // limit_exceeded (the run's result oom), as a smaller one would be.
  if (pad > static_cast<std::size_t>(PTRDIFF_MAX) - chunk_header_size ||
      bytes > static_cast<std::size_t>(PTRDIFF_MAX) - chunk_header_size - pad) {
    if (scopes_charged()) check_scope_limits(bytes);
    throw std::bad_alloc();
  }
  const std::size_t need = chunk_header_size + pad + bytes;

  const auto place = [&](chunk* c) {
    const auto data = reinterpret_cast<std::uintptr_t>(c) + chunk_header_size;
    return (data + alignment - 1) & ~(std::uintptr_t{alignment} - 1);
  };

  if (need > next_size_) {
    // Larger than a regular chunk: a chunk of its own; the current chunk stays current.
    const std::uintptr_t p = place(take_chunk(need));
    requested_before_ += bytes;
    return reinterpret_cast<void*>(p);
  }
  chunk* c = take_chunk(next_size_);
  const double grown = static_cast<double>(next_size_) * policy_.growth_factor;
  next_size_ = grown >= static_cast<double>(policy_.max_chunk) ? policy_.max_chunk
                                                               : static_cast<std::size_t>(grown);
  const std::uintptr_t p = place(c);
  restart_bump(reinterpret_cast<char*>(p), bytes);
  end_ = reinterpret_cast<char*>(c) + c->size;
  return reinterpret_cast<void*>(p);
}

void arena_resource::release() noexcept {
  upstream_call below;
  for (chunk* c = head_; c;) {
    chunk* next = c->next;
    const std::size_t size = c->size;
    hook_->on_release(c->stamp, size);
    upstream_->deallocate(c, size, chunk_alignment);
    c = next;
  }
  head_ = nullptr;
  cur_ = end_ = mark_ = empty_;
  requested_before_ = reserved_ = chunks_ = 0;
  next_size_ = policy_.initial_chunk;
}

}  // namespace arenastat
