// JsonPatch: an RFC 6902 patch, written as JSON text as its operations are added. The text is
// byte for byte what dumping an array of {"op", "path", "value"} objects wrote before (keys in
// that order, compact), without building those objects: a review's patch is written once.
//
//   JsonPatch patch;
//   patch.Remove(at / "limits" / "nvidia.com/mig-3g.40gb");
//   patch.AddString(at / "limits" / "nvidia.com/mig-2g.20gb", "1");
//   patch.Add(spec_at / "tolerations", json::array({toleration}));
//   const std::string& text = patch.Text();  // [{"op":"remove","path":...},...]
//
// Thread safety: a value type.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/admission/patch_path.h"

namespace gpuadmit {

class JsonPatch {
 public:
  // "add" of `value` at `path`.
  void Add(const PatchPath& path, const nlohmann::json& value);
  // "add" of a string, written without building a JSON value for it.
  void AddString(const PatchPath& path, std::string_view value);
  // "add" of a value already written as JSON text (with AppendString for its strings).
  void AddText(const PatchPath& path, std::string_view json_text);
  void Remove(const PatchPath& path);
  // The operations of `after`, applied after these.
  void Append(const JsonPatch& after);

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // The operations as a JSON array, "[]" when there are none.
  const std::string& Text() const;
  // The same, parsed: for tests, and callers that read the operations back.
  nlohmann::json ToJson() const;

  // Appends `s` as a JSON string, as the patch writes its strings (a byte that is not UTF-8
  // becomes U+FFFD).
  static void AppendString(std::string_view s, std::string& out);

 private:
  // Starts an operation: `{"op":"<op>","path":"<path>"`, after a comma when it is not the first.
  void Begin(std::string_view op, const PatchPath& path);

  // The operations as a JSON array, kept closed: each one replaces the closing bracket (with a
  // comma after the first) and closes the array again. "" until the first.
  std::string operations_;
  size_t size_ = 0;
};

}  // namespace gpuadmit
