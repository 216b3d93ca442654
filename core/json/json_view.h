// JsonView: a read-only view of one JSON value, over an nlohmann value or over simdjson's tape
// (JsonTape), so that what reads Kubernetes objects is written once for both: reviews, List
// pages and watch events are read off the tape they were parsed into, with no DOM built; the
// cluster file, the simulator and the tests read nlohmann values.
//
//   JsonView spec = object["spec"];                       // absent when missing or not an object
//   for (JsonView c : spec["containers"].Elements()) ...  // nothing when not an array
//   std::string_view image = c["image"].string();         // "" when absent or not a string
//
// A missing key, an index past the end, or a value of the wrong type on the way reads as absent,
// and an absent value reads as null: no exceptions. A view holds no copy: the value it views
// must outlive it.
//
// Both read alike where they could differ: an object with a duplicate key keeps every occurrence
// on the tape, in document order, and only the last in nlohmann's DOM, in key order. operator[]
// reads the last occurrence on both, and Members() lists each key once, the last, in key order.
//
// Thread safety: a view is a value; reading through views from many threads is safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace simdjson::dom {
class element;
}  // namespace simdjson::dom

namespace gpuadmit {

// Whether `text` is an RFC 6901 pointer: "" (the whole value), or "/"-led tokens in which every
// "~" is "~0" or "~1". What AtPointer reads and PatchPath writes; checked without parsing.
bool IsJsonPointer(std::string_view text);

class JsonView {
 public:
  class ElementIterator;
  struct Member;
  template <typename Iterator>
  struct Range {
    Iterator b;
    Iterator e;
    Iterator begin() const { return b; }
    Iterator end() const { return e; }
  };

  JsonView() = default;  // absent
  // Implicit, so that readers taking a JsonView accept an nlohmann value as they did before.
  JsonView(const nlohmann::json& value) : kind_(Kind::kDom), dom_(&value) {}  // NOLINT
  // nullptr is absent.
  JsonView(const nlohmann::json* value)  // NOLINT
      : kind_(value == nullptr ? Kind::kNone : Kind::kDom), dom_(value) {}
  // A value on simdjson's tape (a named function, not a constructor: nlohmann's converting
  // operator would make a constructor ambiguous).
  static JsonView FromTape(const simdjson::dom::element& value);

  bool present() const { return kind_ != Kind::kNone; }
  bool is_null() const;  // absent, or JSON null
  bool is_object() const;
  bool is_array() const;
  bool is_string() const;
  bool is_boolean() const;
  bool is_number_integer() const;  // signed or unsigned, as nlohmann says
  bool is_number() const;

  // The value under `key` (the last, for a duplicate key); absent when this is not an object or
  // has no such key.
  JsonView operator[](std::string_view key) const;
  // The values under each of `keys`, as operator[] reads them, in one pass over the object: for a
  // reader of several fields of one object.
  //   auto [uid, kind] = request.Fields({"uid", "kind"});
  template <size_t N>
  std::array<JsonView, N> Fields(const std::string_view (&keys)[N]) const {
    std::array<JsonView, N> values;
    FieldsInto(keys, values.data(), N);
    return values;
  }
  // The value at `path` of object keys; absent as soon as one is missing.
  JsonView At(std::initializer_list<std::string_view> path) const;
  // Element `index` of an array; absent past the end or when this is not an array.
  JsonView operator[](size_t index) const;
  // The value at an RFC 6901 pointer ("/spec/template"; "" is this value), descending objects by
  // key and arrays by index; absent when nothing is there.
  // A text that is not a pointer (not "" and not starting with "/") finds nothing.
  JsonView AtPointer(std::string_view pointer) const;

  // The text of a string, "" for anything else.
  std::string_view string() const;
  // An integer's value (an unsigned one past INT64_MAX wraps, as nlohmann's get<int64_t>); 0
  // for anything else.
  int64_t integer() const;
  // A number's value as a double (an integer converted); 0 for anything else.
  double number() const;
  bool boolean() const;  // false unless `true`
  // Elements of an array; 0 for anything else.
  size_t size() const;

  // The value as nlohmann::json (a copy; duplicate keys keep the last value, as nlohmann's
  // parser does), and as nlohmann's dump() writes it.
  nlohmann::json ToJson() const;
  std::string Dump() const;

  Range<ElementIterator> Elements() const;  // an array's elements; empty for anything else
  // An object's members, each key once with its last value, in key order (as nlohmann iterates
  // them); empty for anything else.
  std::vector<Member> Members() const;

 private:
  enum class Kind : uint8_t { kNone, kDom, kTape };
  friend class ElementIterator;

  simdjson::dom::element tape() const;
  void FieldsInto(const std::string_view* keys, JsonView* values, size_t n) const;

  Kind kind_ = Kind::kNone;
  const nlohmann::json* dom_ = nullptr;
  // A simdjson::dom::element (a document pointer and a tape index), kept as bytes so that this
  // header does not pull in simdjson's (json_view.cc checks the size).
  alignas(8) unsigned char tape_[16] = {};
};

struct JsonView::Member {
  std::string_view key;
  JsonView value;
};

// Iterates an array's elements. An iterator over the tape keeps its place as simdjson's does.
class JsonView::ElementIterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = JsonView;
  using difference_type = std::ptrdiff_t;
  using pointer = void;
  using reference = JsonView;

  JsonView operator*() const;
  ElementIterator& operator++();
  ElementIterator operator++(int) {
    ElementIterator before = *this;
    ++*this;
    return before;
  }
  bool operator==(const ElementIterator& other) const;

 private:
  friend class JsonView;
  JsonView::Kind kind_ = JsonView::Kind::kNone;
  const nlohmann::json* dom_ = nullptr;  // the element, in nlohmann's contiguous array
  alignas(8) unsigned char tape_[16] = {};
};

}  // namespace gpuadmit
