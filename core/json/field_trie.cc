#include "core/json/field_trie.h"

namespace gpuadmit {
namespace {

// Splits "a.b.c" at dots; an empty pattern has no parts.
template <typename F>
void ForEachPart(std::string_view path, F&& f) {
  while (!path.empty()) {
    size_t dot = path.find('.');
    f(path.substr(0, dot));
    if (dot == std::string_view::npos) break;
    path.remove_prefix(dot + 1);
  }
}

}  // namespace

FieldTrie FieldTrie::FromPatterns(std::initializer_list<std::string_view> patterns) {
  FieldTrie root;
  for (std::string_view pattern : patterns) {
    FieldTrie* node = &root;
    ForEachPart(pattern, [&](std::string_view part) {
      if (node->keep_all_) return;
      if (part == "**") {
        node->keep_all_ = true;
        return;
      }
      node = node->Descend(part);
    });
  }
  return root;
}

FieldTrie* FieldTrie::Descend(std::string_view key) {
  auto it = children_.find(key);
  if (it == children_.end()) {
    it = children_.emplace(std::string(key), std::make_unique<FieldTrie>()).first;
    Index();
  }
  return it->second.get();
}

void FieldTrie::Attach(std::string_view path, const FieldTrie* subtree) {
  FieldTrie* node = this;
  std::string_view last;
  ForEachPart(path, [&](std::string_view part) {
    if (!last.empty()) node = node->Descend(last);
    last = part;
  });
  node->attached_[std::string(last)] = subtree;
  node->Index();
}

void FieldTrie::Index() {
  named_.clear();
  for (const auto& [key, subtree] : attached_) {
    if (key != "*") named_.emplace_back(key, subtree);
  }
  for (const auto& [key, child] : children_) {
    if (key != "*" && !attached_.contains(key)) named_.emplace_back(key, child.get());
  }
  any_ = nullptr;
  if (auto it = attached_.find("*"); it != attached_.end()) {
    any_ = it->second;
  } else if (auto child = children_.find("*"); child != children_.end()) {
    any_ = child->second.get();
  }
}

const FieldTrie* FieldTrie::Child(std::string_view key) const {
  if (keep_all_) return this;
  for (const auto& [name, subtree] : named_) {
    if (name == key) return subtree;
  }
  return any_;
}

}  // namespace gpuadmit
