// ViewMap: keys and values viewed where they were read (an admitted object's labels or
// annotations), each key once, sorted by key, in one vector. JsonView::Members() lists an
// object's members so already, so reading them costs one allocation and no per-entry tree
// node; lookups are binary searches, with std::map's names.
//
//   ViewMap labels;
//   for (const auto& [key, value] : metadata["labels"].Members()) labels.Append(key, ...);
//   auto it = labels.find("team");
//   if (it != labels.end()) use(it->second);
//
//   ViewMap literal = {{"tier", "gold"}, {"team", "search"}};  // any order: sorted here
//
// Thread safety: a value type. What the views point at must outlive it.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuadmit {

class ViewMap {
 public:
  using value_type = std::pair<std::string_view, std::string_view>;
  using const_iterator = std::vector<value_type>::const_iterator;

  ViewMap() = default;
  // Entries in any order; of a repeated key, the last value stays (as in a JSON object).
  ViewMap(std::initializer_list<value_type> entries) {
    for (const value_type& e : entries) {
      auto it = std::lower_bound(entries_.begin(), entries_.end(), e.first, KeyLess{});
      if (it != entries_.end() && it->first == e.first) {
        it->second = e.second;
      } else {
        entries_.insert(it, e);
      }
    }
  }

  void reserve(size_t n) { entries_.reserve(n); }
  // Adds an entry whose key sorts after every key already here (members read in key order).
  void Append(std::string_view key, std::string_view value) { entries_.emplace_back(key, value); }

  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }

  // The first entry whose key is not less than `key`.
  const_iterator lower_bound(std::string_view key) const {
    return std::lower_bound(entries_.begin(), entries_.end(), key, KeyLess{});
  }
  // The entry of `key`, or end().
  const_iterator find(std::string_view key) const {
    auto it = lower_bound(key);
    return it != end() && it->first == key ? it : end();
  }

 private:
  struct KeyLess {
    bool operator()(const value_type& e, std::string_view key) const { return e.first < key; }
  };

  std::vector<value_type> entries_;
};

}  // namespace gpuadmit
