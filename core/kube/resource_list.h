// ResourceList: resource name -> whole units, for the few extended resources gpuadmit manages. A
// container asks one or two, a node offers a handful, so the entries are kept in one vector
// sorted by name rather than in a std::map: one allocation per list instead of one per entry,
// lookups a short scan, and no tree code on a review's path. The interface is the subset of
// std::map's that gpuadmit uses, with the same semantics (sorted iteration, emplace keeps an
// existing entry, operator[] inserts 0).
//
//   ResourceList asks{{"nvidia.com/gpu", 1}};
//   asks["nvidia.com/mig-1g.10gb"] += 2;
//   for (const auto& [resource, count] : asks) ...   // by name
//   int64_t n = Get(asks, "nvidia.com/gpu");          // 0 when absent
//
// Thread safety: a value type; const methods may be called concurrently.
#pragma once

#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuadmit {

class ResourceList {
 public:
  using key_type = std::string;
  using mapped_type = int64_t;
  using value_type = std::pair<std::string, int64_t>;
  using iterator = std::vector<value_type>::iterator;
  using const_iterator = std::vector<value_type>::const_iterator;
  using size_type = size_t;

  ResourceList() = default;
  // Copies and destruction out of line, for the same reason as Index below.
  ResourceList(const ResourceList& other);
  ResourceList(ResourceList&& other) noexcept = default;
  ResourceList& operator=(const ResourceList& other);
  ResourceList& operator=(ResourceList&& other) noexcept = default;
  ~ResourceList();
  // As std::map's: sorted, the first of duplicate names kept.
  ResourceList(std::initializer_list<value_type> entries) {
    for (const value_type& e : entries) try_emplace(e.first, e.second);
  }

  iterator begin() { return entries_.begin(); }
  iterator end() { return entries_.end(); }
  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  void clear() { entries_.clear(); }

  // The entry named `resource`, or end().
  iterator find(std::string_view resource) { return begin() + Index(resource); }
  const_iterator find(std::string_view resource) const { return begin() + Index(resource); }
  bool contains(std::string_view resource) const { return Index(resource) < entries_.size(); }
  size_t count(std::string_view resource) const { return contains(resource) ? 1 : 0; }

  // The count of `resource`, inserted as 0 when absent.
  int64_t& operator[](std::string_view resource) { return try_emplace(resource).first->second; }

  // Inserts {resource, n} unless `resource` is present; the entry, and whether it was inserted.
  std::pair<iterator, bool> try_emplace(std::string_view resource, int64_t n = 0);
  std::pair<iterator, bool> emplace(std::string_view resource, int64_t n) {
    return try_emplace(resource, n);
  }
  std::pair<iterator, bool> insert(const value_type& entry) {
    return try_emplace(entry.first, entry.second);
  }
  std::pair<iterator, bool> insert_or_assign(std::string_view resource, int64_t n) {
    auto [at, inserted] = try_emplace(resource, n);
    at->second = n;
    return {at, inserted};
  }

  iterator erase(const_iterator at) { return entries_.erase(at); }
  size_t erase(std::string_view resource);
  // Removes the entries `remove` holds true for; how many went.
  template <typename Pred>
  friend size_t erase_if(ResourceList& list, Pred remove) {
    return std::erase_if(list.entries_, remove);
  }

  friend bool operator==(const ResourceList&, const ResourceList&) = default;
  friend auto operator<=>(const ResourceList&, const ResourceList&) = default;

 private:
  // Where `resource` is, or size() when absent. Out of line, as are the inserts: one copy of
  // the code for every caller keeps a review's code small.
  size_t Index(std::string_view resource) const;

  std::vector<value_type> entries_;  // sorted by name, names unique
};

// The count of `resource` in `list`; 0 when absent.
int64_t Get(const ResourceList& list, std::string_view resource);

}  // namespace gpuadmit
