#include "core/kube/resource_list.h"

namespace gpuadmit {

ResourceList::ResourceList(const ResourceList& other) = default;
ResourceList& ResourceList::operator=(const ResourceList& other) = default;
ResourceList::~ResourceList() = default;

std::pair<ResourceList::iterator, bool> ResourceList::try_emplace(std::string_view resource,
                                                                  int64_t n) {
  auto at = std::lower_bound(entries_.begin(), entries_.end(), resource,
                             [](const value_type& e, std::string_view r) { return e.first < r; });
  if (at != entries_.end() && at->first == resource) return {at, false};
  return {entries_.emplace(at, std::string(resource), n), true};
}

size_t ResourceList::erase(std::string_view resource) {
  size_t i = Index(resource);
  if (i == entries_.size()) return 0;
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
  return 1;
}

size_t ResourceList::Index(std::string_view resource) const {
  size_t i = 0;
  while (i < entries_.size() && entries_[i].first != resource) ++i;
  return i;
}

int64_t Get(const ResourceList& list, std::string_view resource) {
  auto at = list.find(resource);
  return at == list.end() ? 0 : at->second;
}

}  // namespace gpuadmit
