#include "core/admission/patch_path.h"

#include <cstdint>

#include "core/text/append.h"

namespace gpuadmit {

PatchPath PatchPath::operator/(std::string_view token) const {
  PatchPath out;
  out.text_.reserve(text_.size() + 1 + token.size());
  AppendAll(out.text_, {text_, "/"});
  size_t plain = 0;  // the start of the run of characters that need no escape
  for (size_t i = 0; i < token.size(); ++i) {
    if (token[i] != '~' && token[i] != '/') continue;
    AppendAll(out.text_, {token.substr(plain, i - plain), token[i] == '~' ? "~0" : "~1"});
    plain = i + 1;
  }
  out.text_.append(token.substr(plain));
  return out;
}

PatchPath PatchPath::operator/(size_t index) const {
  return *this / std::string_view(Digits(static_cast<int64_t>(index)));
}

}  // namespace gpuadmit
