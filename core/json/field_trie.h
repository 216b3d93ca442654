// FieldTrie: which fields of a JSON document to keep, as a tree of keys. A parser that walks it
// alongside the document decides each value with one lookup, and skips whole subtrees it does
// not need (a 4 KB Pod keeps about 300 bytes of what the inventory reads).
//
//   FieldTrie pod = FieldTrie::FromPatterns({"metadata.name", "spec.containers.*.resources.**"});
//
// Patterns are dotted key paths; "*" matches any key or any array element at its level, "**" as
// the last part keeps the whole subtree. Thread safety: immutable after construction.
#pragma once

#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuadmit {

class FieldTrie {
 public:
  static FieldTrie FromPatterns(std::initializer_list<std::string_view> patterns);

  // The subtree for `key` (an object key, or "" for an array element), or nullptr to skip it.
  const FieldTrie* Child(std::string_view key) const;
  // True when everything below is kept.
  bool keeps_all() const { return keep_all_; }

  // Places `subtree` under `path` (dotted), so tries compose: a List page's "items.*" holds the
  // Pod trie. The subtree must outlive this trie.
  void Attach(std::string_view path, const FieldTrie* subtree);

 private:
  FieldTrie* Descend(std::string_view key);
  void Index();

  bool keep_all_ = false;
  std::map<std::string, std::unique_ptr<FieldTrie>, std::less<>> children_;
  std::map<std::string, const FieldTrie*, std::less<>> attached_;
  // What Child reads, rebuilt after each change: every named key with the subtree it leads to
  // (an attached one before an own child), and the subtree for any other key ("*"), or nullptr.
  // A scan of a few keys (compared by length first) beats a map: most keys of a document miss.
  std::vector<std::pair<std::string, const FieldTrie*>> named_;
  const FieldTrie* any_ = nullptr;
};

}  // namespace gpuadmit
