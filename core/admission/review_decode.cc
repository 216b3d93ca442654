#include "core/admission/review_decode.h"

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "core/json/field_trie.h"
#include "core/kube/workload.h"

namespace gpuadmit {
namespace {

using nlohmann::json;
namespace dom = simdjson::dom;

// Larger bodies take DecodeAdmissionReview: a parser keeps the memory of the largest document it
// has read (about 10 bytes per byte of JSON), and a parser per worker thread would hold tens of
// MiB after one 7 MiB review.
constexpr size_t kLargestTapeBody = 256 * 1024;

// What decisions read of a container, a pod spec and metadata (see review_decode.h).
const FieldTrie& ContainerFields() {
  static const FieldTrie trie =
      FieldTrie::FromPatterns({"name", "image", "resources.**", "restartPolicy", "command.**",
                               "args.**", "volumeMounts.*.mountPath"});
  return trie;
}

const FieldTrie& PodSpecFields() {
  static const FieldTrie trie = [] {
    FieldTrie t =
        FieldTrie::FromPatterns({"overhead.**", "nodeSelector.**", "affinity.**", "tolerations.**",
                                 "volumes.*.name", "nodeName", "schedulingGates.*.name"});
    t.Attach("containers.*", &ContainerFields());
    t.Attach("initContainers.*", &ContainerFields());
    return t;
  }();
  return trie;
}

const FieldTrie& MetadataFields() {
  static const FieldTrie trie =
      FieldTrie::FromPatterns({"name", "generateName", "namespace", "labels.**", "annotations.**"});
  return trie;
}

// An object of a built-in kind whose pod template sits at `template_path` (dotted; "" for a Pod).
FieldTrie BuiltInObjectFields(std::string_view template_path) {
  FieldTrie t = FieldTrie::FromPatterns({"apiVersion", "kind"});
  t.Attach("metadata", &MetadataFields());
  if (template_path.empty()) {
    t.Attach("spec", &PodSpecFields());
  } else {
    t.Attach(std::string(template_path) + ".metadata", &MetadataFields());
    t.Attach(std::string(template_path) + ".spec", &PodSpecFields());
  }
  return t;
}

// The whole review's trie around the object trie: the request's own fields, and the object's
// for both object and oldObject.
FieldTrie ReviewFields(const FieldTrie* object) {
  FieldTrie t = FieldTrie::FromPatterns(
      {"apiVersion", "kind", "request.uid", "request.kind.**", "request.resource.**",
       "request.subResource", "request.name", "request.namespace", "request.operation",
       "request.dryRun", "request.userInfo.**", "request.options.**"});
  t.Attach("request.object", object);
  t.Attach("request.oldObject", object);
  return t;
}

// The review tries, built once: one per place a built-in kind keeps its pod template, one for
// kinds gpuadmit does not know (only the object's metadata, for its name), and one keeping the
// object whole (custom workloads).
struct ReviewTries {
  FieldTrie pod_object = BuiltInObjectFields("");
  FieldTrie template_object = BuiltInObjectFields("spec.template");
  FieldTrie cron_job_object = BuiltInObjectFields("spec.jobTemplate.spec.template");
  FieldTrie other_object = [] {
    FieldTrie t = FieldTrie::FromPatterns({"apiVersion", "kind"});
    t.Attach("metadata", &MetadataFields());
    return t;
  }();
  FieldTrie whole_object = FieldTrie::FromPatterns({"**"});

  FieldTrie pod = ReviewFields(&pod_object);
  FieldTrie templated = ReviewFields(&template_object);
  FieldTrie cron_job = ReviewFields(&cron_job_object);
  FieldTrie other = ReviewFields(&other_object);
  FieldTrie whole = ReviewFields(&whole_object);
};

const FieldTrie& FieldsFor(const GroupVersionKind& kind, std::span<const CustomWorkload> custom) {
  static const ReviewTries tries;
  if (auto path = BuiltInTemplatePath(kind)) {
    if (path->empty()) return tries.pod;
    return *path == "/spec/template" ? tries.templated : tries.cron_job;
  }
  return CustomWorkloadOf(kind, custom) != nullptr ? tries.whole : tries.other;
}

// The last value under `key` in `object` (a duplicate key's last value wins, as in the DOM);
// nullopt when `object` is not there, is not an object, or has no such key.
std::optional<dom::element> LastField(std::optional<dom::element> object, std::string_view key) {
  std::optional<dom::element> found;
  dom::object fields;
  if (!object || object->get_object().get(fields) != simdjson::SUCCESS) return found;
  for (dom::key_value_pair field : fields) {
    if (field.key == key) found = field.value;
  }
  return found;
}

std::string StringField(std::optional<dom::element> object, std::string_view key) {
  std::string_view s;
  std::optional<dom::element> value = LastField(object, key);
  return value && value->get_string().get(s) == simdjson::SUCCESS ? std::string(s) : std::string();
}

// request.kind, read off the tape before the DOM is built; empty when it is not there (decoding
// then refuses the review for it).
GroupVersionKind KindOf(dom::element root) {
  std::optional<dom::element> kind = LastField(LastField(root, "request"), "kind");
  return {StringField(kind, "group"), StringField(kind, "version"), StringField(kind, "kind")};
}

// Builds `e` into `out`, keeping what `trie` names below it. simdjson's DOM has been validated
// whole and nests no deeper than the parser's limit, so this cannot fail.
void Build(dom::element e, const FieldTrie& trie, json& out) {
  switch (e.type()) {
    case dom::element_type::OBJECT: {
      out = json::object();
      auto& object = out.get_ref<json::object_t&>();
      for (dom::key_value_pair field : dom::object(e)) {
        const FieldTrie* child = trie.Child(field.key);
        if (child == nullptr) continue;
        // A duplicate key keeps the last value; keys mostly come sorted, so the hint holds.
        auto it = object.try_emplace(object.end(), std::string(field.key));
        Build(field.value, *child, it->second);
      }
      return;
    }
    case dom::element_type::ARRAY: {
      out = json::array();
      const FieldTrie* child = trie.Child("");
      if (child == nullptr) return;
      auto& array = out.get_ref<json::array_t&>();
      dom::array elements(e);
      array.reserve(elements.size());
      for (dom::element element : elements) Build(element, *child, array.emplace_back());
      return;
    }
    case dom::element_type::STRING:
      out = std::string(e.get_string().value_unsafe());
      return;
    case dom::element_type::INT64: {
      // Non-negative integers are unsigned, as DecodeAdmissionReview's parser makes them.
      int64_t n = e.get_int64().value_unsafe();
      if (n >= 0) {
        out = static_cast<uint64_t>(n);
      } else {
        out = n;
      }
      return;
    }
    case dom::element_type::UINT64:
      out = e.get_uint64().value_unsafe();
      return;
    case dom::element_type::DOUBLE:
      out = e.get_double().value_unsafe();
      return;
    case dom::element_type::BOOL:
      out = e.get_bool().value_unsafe();
      return;
    case dom::element_type::NULL_VALUE:
      out = nullptr;
      return;
  }
}

// A DOM parser per thread, and the padded copy of the text that simdjson reads past its end.
struct TapeParser {
  TapeParser() {
    // The capacity grows with the largest body read; the depth is fixed here.
    if (parser.allocate(64 * 1024, kMaxJsonDepth) != simdjson::SUCCESS) broken = true;
  }
  dom::parser parser;
  std::string scratch;
  bool broken = false;
};

}  // namespace

Result<AdmissionRequest> DecodeForDecisions(std::string_view body,
                                            std::span<const CustomWorkload> custom) {
  thread_local TapeParser tape;
  if (body.size() > kLargestTapeBody || tape.broken) return DecodeAdmissionReview(body);
  tape.scratch.assign(body);
  tape.scratch.append(simdjson::SIMDJSON_PADDING, '\0');
  dom::element root;
  if (tape.parser.parse(tape.scratch.data(), body.size(), false).get(root) != simdjson::SUCCESS) {
    return DecodeAdmissionReview(body);  // says why, or reads what simdjson cannot hold
  }
  json doc;
  Build(root, FieldsFor(KindOf(root), custom), doc);
  return AdmissionRequestFrom(std::move(doc));
}

}  // namespace gpuadmit
