#include "core/text/append.h"

#include <charconv>

namespace gpuadmit {

void AppendAll(std::string& out, std::initializer_list<std::string_view> parts) {
  size_t size = out.size();
  for (std::string_view part : parts) size += part.size();
  out.reserve(size);
  for (std::string_view part : parts) out.append(part);
}

std::string Joined(std::initializer_list<std::string_view> parts) {
  std::string out;
  AppendAll(out, parts);
  return out;
}

Digits::Digits(int64_t value)
    : size_(static_cast<size_t>(std::to_chars(text_, text_ + sizeof text_, value).ptr - text_)) {}

}  // namespace gpuadmit
