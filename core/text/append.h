// Text built from parts: one reservation and one out-of-line loop for a line of many parts.
//
//   std::string line;
//   AppendAll(line, {"placement (", strategy, "): ", node, " for ", Digits(count)});
//
// Why out of line: a review runs each of its lines once, so every inlined append is code the
// review fetches once from beyond the instruction cache. One loop shared by all of them stays
// in it.
//
// Thread safety: pure functions; a Digits is a value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace gpuadmit {

// Appends `parts` to `out` in order, growing it once.
void AppendAll(std::string& out, std::initializer_list<std::string_view> parts);

// `parts` joined, as a new string.
std::string Joined(std::initializer_list<std::string_view> parts);

// A whole number as decimal text, held on the stack: a part for AppendAll and Joined.
class Digits {
 public:
  explicit Digits(int64_t value);
  operator std::string_view() const { return {text_, size_}; }

 private:
  char text_[20];  // "-9223372036854775808"
  size_t size_;
};

}  // namespace gpuadmit
