// PatchPath: the path of an RFC 6902 operation, an RFC 6901 JSON pointer built as text one token
// at a time ("~" written "~0", "/" written "~1", so "nvidia.com/gpu" is "nvidia.com~1gpu").
// json_pointer keeps a vector of tokens, copied at every `/` and escaped again by to_string();
// a patch's paths are built and written once, so text is all they need.
//
//   PatchPath at = PatchPath(location.spec) / "containers" / 0 / "resources";
//   ops.push_back(PatchOperation("remove", at / "limits" / "nvidia.com/gpu"));
//
// Thread safety: a value type.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>

namespace gpuadmit {

class PatchPath {
 public:
  PatchPath() = default;  // the whole document: ""
  explicit PatchPath(const nlohmann::json::json_pointer& pointer) : text_(pointer.to_string()) {}

  // This path with one more object key (escaped) or array index.
  PatchPath operator/(std::string_view token) const {
    PatchPath out;
    out.text_.reserve(text_.size() + 1 + token.size());
    out.text_ = text_;
    out.text_ += '/';
    for (char c : token) {
      if (c == '~') {
        out.text_ += "~0";
      } else if (c == '/') {
        out.text_ += "~1";
      } else {
        out.text_ += c;
      }
    }
    return out;
  }
  PatchPath operator/(size_t index) const {
    return *this / std::string_view(std::to_string(index));
  }

  const std::string& str() const { return text_; }

 private:
  std::string text_;
};

// One RFC 6902 operation: "op" and "path", and "value" unless `op` is "remove". Built key by key
// (an initializer list would copy every value once more).
inline nlohmann::json PatchOperation(std::string_view op, const PatchPath& path,
                                     nlohmann::json value = nullptr) {
  nlohmann::json o(nlohmann::json::value_t::object);
  o["op"] = op;
  o["path"] = path.str();
  if (op != "remove") o["value"] = std::move(value);
  return o;
}

}  // namespace gpuadmit
