#pragma once
// The mirror border of the definition: reflection without repeating the edge,
// ... c b | a b c d | c b ..., repeated as often as needed; a dimension of size 1 maps to 0.

#include <cstdint>
#include <vector>

namespace ctd::detail {

inline std::int64_t mirror(std::int64_t i, std::int64_t n) noexcept {
  if (n == 1) return 0;
  const std::int64_t period = 2 * (n - 1);
  std::int64_t m = i % period;
  if (m < 0) m += period;
  return m < n ? m : period - m;
}

// mirror(i, n) for i in [-pad, n + pad), looked up as table[i + pad].
class MirrorTable {
 public:
  MirrorTable(std::int64_t n, std::int64_t pad) : pad_(pad), table_(static_cast<std::size_t>(n + 2 * pad)) {
    for (std::int64_t i = -pad; i < n + pad; ++i) table_[static_cast<std::size_t>(i + pad)] = mirror(i, n);
  }
  std::int64_t operator[](std::int64_t i) const noexcept {
    return table_[static_cast<std::size_t>(i + pad_)];
  }

 private:
  std::int64_t pad_;
  std::vector<std::int64_t> table_;
};

}  // namespace ctd::detail
