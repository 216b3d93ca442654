#include "core/json/json_trie_reader.h"

#include <simdjson.h>

#include <string>

namespace gpuadmit {
namespace {

using nlohmann::json;
namespace od = simdjson::ondemand;

// What went wrong, and where when simdjson can say.
struct Failure {
  simdjson::error_code code = simdjson::SUCCESS;
  bool too_deep = false;
};

// Reads a scalar of `type` into `out` from `source`: a value, or the document itself when its
// root is a scalar (both have the same getters).
template <typename Source>
simdjson::error_code ReadScalar(Source& source, od::json_type type, json& out) {
  switch (type) {
    case od::json_type::string: {
      std::string_view s;
      if (auto e = source.get_string().get(s)) return e;
      out = std::string(s);
      return simdjson::SUCCESS;
    }
    case od::json_type::number: {
      od::number n;
      if (auto e = source.get_number().get(n)) return e;
      switch (n.get_number_type()) {
        case od::number_type::signed_integer:
          out = n.get_int64();
          break;
        case od::number_type::unsigned_integer:
          out = n.get_uint64();
          break;
        case od::number_type::floating_point_number:
          out = n.get_double();
          break;
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::boolean: {
      bool b = false;
      if (auto e = source.get_bool().get(b)) return e;
      out = b;
      return simdjson::SUCCESS;
    }
    case od::json_type::null: {
      bool null = false;
      if (auto e = source.is_null().get(null)) return e;
      if (!null) return simdjson::INCORRECT_TYPE;
      out = nullptr;
      return simdjson::SUCCESS;
    }
    default:
      return simdjson::INCORRECT_TYPE;
  }
}

class Builder {
 public:
  Builder(int max_depth, Failure& failure) : max_depth_(max_depth), failure_(failure) {}

  // Builds `v` into `out`, keeping what `trie` names below it.
  bool Value(od::value v, const FieldTrie& trie, int depth, json& out) {
    od::json_type type;
    if (!Ok(v.type().get(type))) return false;
    switch (type) {
      case od::json_type::object: {
        od::object object;
        return Ok(v.get_object().get(object)) && Object(object, trie, depth + 1, out);
      }
      case od::json_type::array: {
        od::array array;
        return Ok(v.get_array().get(array)) && Array(array, trie, depth + 1, out);
      }
      default:
        return Ok(ReadScalar(v, type, out));
    }
  }

  bool Object(od::object object, const FieldTrie& trie, int depth, json& out) {
    if (!Deep(depth)) return false;
    out = json::object();
    for (auto field_result : object) {
      od::field field;
      if (!Ok(std::move(field_result).get(field))) return false;
      std::string_view key;
      if (!Ok(field.unescaped_key().get(key))) return false;
      const FieldTrie* child = trie.keeps_all() ? &trie : trie.Child(key);
      if (child == nullptr) continue;      // On-Demand skips the value when the loop moves on
      json& slot = out[std::string(key)];  // a duplicate key: the last value wins
      if (!Value(field.value(), *child, depth, slot)) return false;
    }
    return true;
  }

  bool Array(od::array array, const FieldTrie& trie, int depth, json& out) {
    if (!Deep(depth)) return false;
    out = json::array();
    const FieldTrie* child = trie.keeps_all() ? &trie : trie.Child("");
    for (auto element : array) {
      od::value v;
      if (!Ok(std::move(element).get(v))) return false;
      if (child == nullptr) continue;
      if (!Value(v, *child, depth, out.emplace_back())) return false;
    }
    return true;
  }

 private:
  bool Deep(int depth) {
    if (depth <= max_depth_) return true;
    failure_.too_deep = true;
    return false;
  }

  bool Ok(simdjson::error_code code) {
    if (code == simdjson::SUCCESS) return true;
    failure_.code = code;
    return false;
  }

  int max_depth_;
  Failure& failure_;
};

}  // namespace

Result<json> ParseJsonKeeping(std::string_view text, const FieldTrie& keep, int max_depth) {
  // simdjson reads up to SIMDJSON_PADDING bytes past the end: parse a padded copy kept per thread
  // (watch events and list pages come one after another on a reflector's thread).
  thread_local od::parser parser;
  thread_local std::string scratch;
  scratch.assign(text);
  scratch.append(simdjson::SIMDJSON_PADDING, '\0');
  simdjson::padded_string_view input(scratch.data(), text.size(), scratch.size());

  Failure failure;
  json root;
  od::document doc;
  failure.code = parser.iterate(input).get(doc);
  const bool iterated = failure.code == simdjson::SUCCESS;
  // " at byte N" when simdjson can still say where it stopped.
  auto where = [&]() -> std::string {
    const char* at = nullptr;
    if (iterated && doc.is_alive() && doc.current_location().get(at) == simdjson::SUCCESS &&
        at != nullptr) {
      return " at byte " + std::to_string(at - scratch.data());
    }
    return "";
  };
  if (iterated) {
    od::json_type type;
    failure.code = doc.type().get(type);
    Builder builder(max_depth, failure);
    if (failure.code != simdjson::SUCCESS) {
      // reported below
    } else if (type == od::json_type::object) {
      od::object object;
      failure.code = doc.get_object().get(object);
      if (failure.code == simdjson::SUCCESS) builder.Object(object, keep, 1, root);
    } else if (type == od::json_type::array) {
      od::array array;
      failure.code = doc.get_array().get(array);
      if (failure.code == simdjson::SUCCESS) builder.Array(array, keep, 1, root);
    } else {
      failure.code = ReadScalar(doc, type, root);
    }
    // Anything after the root value: a location still in bounds.
    const char* rest = nullptr;
    if (failure.code == simdjson::SUCCESS && !failure.too_deep &&
        doc.current_location().get(rest) == simdjson::SUCCESS) {
      failure.code = simdjson::TRAILING_CONTENT;
    }
  }
  if (failure.too_deep) {
    return Error{"JSON nests deeper than " + std::to_string(max_depth) + " levels"};
  }
  if (failure.code != simdjson::SUCCESS) {
    return Error{"invalid JSON" + where() + ": " + simdjson::error_message(failure.code)};
  }
  return root;
}

}  // namespace gpuadmit
