// PatchPath: the path of an RFC 6902 operation, an RFC 6901 JSON pointer built as text one token
// at a time ("~" written "~0", "/" written "~1", so "nvidia.com/gpu" is "nvidia.com~1gpu").
// json_pointer keeps a vector of tokens, copied at every `/` and escaped again by to_string();
// a patch's paths are built and written once, so text is all they need.
//
//   PatchPath at = PatchPath(location.spec) / "containers" / 0 / "resources";
//   patch.Remove(at / "limits" / "nvidia.com/gpu");  // core/admission/json_patch.h
//
// Thread safety: a value type.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpuadmit {

class PatchPath {
 public:
  PatchPath() = default;  // the whole document: ""
  // From the text of an RFC 6901 pointer, tokens already escaped ("/spec/template/spec").
  explicit PatchPath(std::string_view pointer) : text_(pointer) {}

  // This path with one more object key (escaped) or array index. Out of line: a patch's
  // dozen paths share one copy of the escaping.
  PatchPath operator/(std::string_view token) const;
  PatchPath operator/(size_t index) const;

  const std::string& str() const { return text_; }

 private:
  std::string text_;
};

}  // namespace gpuadmit
