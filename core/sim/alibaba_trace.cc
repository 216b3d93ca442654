#include "core/sim/alibaba_trace.h"

#include <algorithm>
#include <charconv>
#include <random>

namespace gpuadmit {
namespace {

using nlohmann::json;

// The trace's files are plain comma-separated values without quoting (no field holds a comma;
// gpu_spec separates models with "|"), so a split is the whole parser.
std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    out.push_back(line.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    start = end + 1;
  }
  return out;
}

// A table: the header's column positions, then a reader per row.
class Table {
 public:
  static Result<Table> Parse(std::string_view csv) {
    Table t;
    t.lines_ = Lines(csv);
    if (t.lines_.empty()) return Error{"the file is empty: a header line is expected"};
    auto header = SplitFields(t.lines_[0]);
    for (size_t i = 0; i < header.size(); ++i) t.columns_[std::string(header[i])] = i;
    return t;
  }

  Result<size_t> Column(const std::string& name) const {
    auto it = columns_.find(name);
    if (it == columns_.end()) return Error{"the header has no \"" + name + "\" column"};
    return it->second;
  }
  std::optional<size_t> OptionalColumn(const std::string& name) const {
    auto it = columns_.find(name);
    if (it == columns_.end()) return std::nullopt;
    return it->second;
  }
  size_t rows() const { return lines_.size(); }
  std::string_view line(size_t i) const { return lines_[i]; }

 private:
  std::vector<std::string_view> lines_;
  std::map<std::string, size_t, std::less<>> columns_;
};

Result<int64_t> Number(const std::vector<std::string_view>& fields, size_t column, size_t line,
                       std::string_view name) {
  std::string where = "line " + std::to_string(line + 1) + ": ";
  if (column >= fields.size()) return Error{where + "no " + std::string(name) + " column"};
  std::string_view text = fields[column];
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) {
    return Error{where + std::string(name) + " \"" + std::string(text) +
                 "\" is not a whole number >= 0"};
  }
  return value;
}

std::string Field(const std::vector<std::string_view>& fields, std::optional<size_t> column) {
  if (!column || *column >= fields.size()) return "";
  return std::string(fields[*column]);
}

std::string Product(const std::string& model, const TraceMapping& mapping) {
  auto it = mapping.products.find(model);
  return it == mapping.products.end() ? model : it->second;
}

std::string Milli(int64_t milli) { return std::to_string(milli) + "m"; }
std::string Mebi(int64_t mib) { return std::to_string(mib) + "Mi"; }

}  // namespace

Result<std::vector<TraceNode>> ReadTraceNodes(std::string_view csv) {
  auto table = Table::Parse(csv);
  if (!table.ok()) return table.error();
  const Table& t = table.value();
  size_t col[5];
  const char* names[5] = {"sn", "cpu_milli", "memory_mib", "gpu", "model"};
  for (int i = 0; i < 5; ++i) {
    auto c = t.Column(names[i]);
    if (!c.ok()) return c.error();
    col[i] = c.value();
  }
  std::vector<TraceNode> out;
  for (size_t i = 1; i < t.rows(); ++i) {
    if (t.line(i).empty()) continue;
    auto fields = SplitFields(t.line(i));
    TraceNode node{Field(fields, col[0]), 0, 0, 0, Field(fields, col[4])};
    if (node.name.empty()) return Error{"line " + std::to_string(i + 1) + ": no node name (sn)"};
    int64_t* values[3] = {&node.cpu_milli, &node.memory_mib, &node.gpus};
    for (int k = 0; k < 3; ++k) {
      auto v = Number(fields, col[k + 1], i, names[k + 1]);
      if (!v.ok()) return v.error();
      *values[k] = v.value();
    }
    out.push_back(std::move(node));
  }
  return out;
}

Result<std::vector<TracePod>> ReadTracePods(std::string_view csv) {
  auto table = Table::Parse(csv);
  if (!table.ok()) return table.error();
  const Table& t = table.value();
  size_t col[5];
  const char* names[5] = {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"};
  for (int i = 0; i < 5; ++i) {
    auto c = t.Column(names[i]);
    if (!c.ok()) return c.error();
    col[i] = c.value();
  }
  std::optional<size_t> spec = t.OptionalColumn("gpu_spec");
  std::optional<size_t> qos = t.OptionalColumn("qos");
  const char* time_names[3] = {"creation_time", "scheduled_time", "deletion_time"};
  std::optional<size_t> time_col[3];
  for (int k = 0; k < 3; ++k) time_col[k] = t.OptionalColumn(time_names[k]);
  std::vector<TracePod> out;
  for (size_t i = 1; i < t.rows(); ++i) {
    if (t.line(i).empty()) continue;
    auto fields = SplitFields(t.line(i));
    TracePod pod{Field(fields, col[0])};
    if (pod.name.empty()) return Error{"line " + std::to_string(i + 1) + ": no pod name"};
    int64_t* values[4] = {&pod.cpu_milli, &pod.memory_mib, &pod.gpus, &pod.gpu_milli};
    for (int k = 0; k < 4; ++k) {
      auto v = Number(fields, col[k + 1], i, names[k + 1]);
      if (!v.ok()) return v.error();
      *values[k] = v.value();
    }
    pod.gpu_spec = Field(fields, spec);
    pod.qos = Field(fields, qos);
    std::optional<int64_t>* times[3] = {&pod.creation_time, &pod.scheduled_time,
                                        &pod.deletion_time};
    for (int k = 0; k < 3; ++k) {
      if (Field(fields, time_col[k]).empty()) continue;  // absent column or empty cell
      auto v = Number(fields, *time_col[k], i, time_names[k]);
      if (!v.ok()) return v.error();
      *times[k] = v.value();
    }
    out.push_back(std::move(pod));
  }
  return out;
}

json TraceCluster(const std::vector<TraceNode>& nodes, const TraceMapping& mapping) {
  std::map<std::string, std::vector<const TraceNode*>> by_model;
  for (const TraceNode& n : nodes) by_model[n.model].push_back(&n);
  std::map<std::string, bool> shared;  // node name -> time-sliced
  for (auto& [model, list] : by_model) {
    std::sort(list.begin(), list.end(),
              [](const TraceNode* a, const TraceNode* b) { return a->name < b->name; });
    size_t count = static_cast<size_t>(mapping.shared_fraction * list.size());
    for (size_t i = 0; i < list.size(); ++i) shared[list[i]->name] = i < count && list[i]->gpus;
  }
  json items = json::array();
  for (const TraceNode& n : nodes) {
    json labels = {{"kubernetes.io/hostname", n.name}};
    json allocatable = {{"cpu", Milli(n.cpu_milli)},
                        {"memory", Mebi(n.memory_mib)},
                        {"pods", std::to_string(mapping.max_pods)}};
    if (n.gpus > 0) {
      labels["nvidia.com/gpu.product"] = Product(n.model, mapping);
      labels["nvidia.com/gpu.count"] = std::to_string(n.gpus);
      if (shared[n.name]) {
        labels["nvidia.com/gpu.sharing-strategy"] = "time-slicing";
        labels["nvidia.com/gpu.replicas"] = std::to_string(mapping.shared_replicas);
        allocatable["nvidia.com/gpu.shared"] = std::to_string(n.gpus * mapping.shared_replicas);
      } else {
        allocatable["nvidia.com/gpu"] = std::to_string(n.gpus);
      }
    }
    items.push_back({{"apiVersion", "v1"},
                     {"kind", "Node"},
                     {"metadata", {{"name", n.name}, {"labels", labels}}},
                     {"status",
                      {{"allocatable", allocatable},
                       {"capacity", allocatable},
                       {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}});
  }
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(items)}};
}

json TracePodObject(const TracePod& pod, const std::string& name, const TraceMapping& mapping) {
  json container = {
      {"name", "main"},
      {"image", "trace"},
      {"resources",
       {{"requests", {{"cpu", Milli(pod.cpu_milli)}, {"memory", Mebi(pod.memory_mib)}}}}}};
  json metadata = {{"name", name}, {"namespace", "trace"}};
  json spec = {{"containers", json::array()}};
  if (pod.gpus > 0) {
    container["resources"]["limits"] = {{"nvidia.com/gpu", std::to_string(pod.gpus)}};
    metadata["annotations"] = {{"gpuadmit.io/gpu-milli", std::to_string(pod.gpu_milli)}};
    if (pod.qos == "LS") metadata["labels"] = {{"gpuadmit.io/workload-type", "inference"}};
    if (pod.qos == "BE") metadata["labels"] = {{"gpuadmit.io/workload-type", "batch"}};
    if (!pod.gpu_spec.empty()) {
      json products = json::array();
      size_t start = 0;
      while (start <= pod.gpu_spec.size()) {
        size_t bar = pod.gpu_spec.find('|', start);
        if (bar == std::string::npos) bar = pod.gpu_spec.size();
        std::string product = Product(pod.gpu_spec.substr(start, bar - start), mapping);
        if (std::find(products.begin(), products.end(), product) == products.end()) {
          products.push_back(product);
        }
        start = bar + 1;
      }
      spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
          {"nodeSelectorTerms",
           {{{"matchExpressions",
              {{{"key", "nvidia.com/gpu.product"}, {"operator", "In"}, {"values", products}}}}}}}};
    }
  }
  spec["containers"].push_back(std::move(container));
  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", metadata}, {"spec", spec}};
}

int64_t TraceDemandGpus(const TracePod& pod) { return pod.gpus; }

std::vector<Arrival> TraceArrivals(const std::vector<TracePod>& pods, const TraceMapping& mapping,
                                   uint64_t seed, double capacity_gpus) {
  std::mt19937_64 random(seed);
  std::vector<size_t> order(pods.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Fisher-Yates with a plain modulo, not std::shuffle or uniform_int_distribution, whose
  // algorithms the standard leaves to each library: one seed, one order, everywhere.
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[random() % i]);
  std::vector<Arrival> out;
  // Appends pod `i` as `name`; the GPUs it asks for.
  auto add = [&](size_t i, const std::string& name) {
    double at = static_cast<double>(out.size()) * mapping.spacing_seconds;
    out.push_back({at, std::nullopt, TracePodObject(pods[i], name, mapping)});
    return static_cast<double>(TraceDemandGpus(pods[i]));
  };
  double asked = 0;
  for (size_t i : order) asked += add(i, pods[i].name);
  const double target = mapping.inflate_to * capacity_gpus;
  const bool any_gpu = std::any_of(pods.begin(), pods.end(),
                                   [](const TracePod& p) { return TraceDemandGpus(p) > 0; });
  if (!any_gpu) return out;
  for (int64_t drawn = 0; asked < target; ++drawn) {
    size_t i = random() % pods.size();
    asked += add(i, pods[i].name + "-r" + std::to_string(drawn));
  }
  return out;
}

std::vector<Arrival> TraceArrivalsTimed(const std::vector<TracePod>& pods,
                                        const TraceMapping& mapping, double speedup) {
  std::vector<Arrival> out;
  for (const TracePod& pod : pods) {
    if (!pod.creation_time) continue;
    std::optional<double> duration;
    if (pod.deletion_time) {
      int64_t start = pod.scheduled_time.value_or(*pod.creation_time);
      duration = static_cast<double>(std::max<int64_t>(*pod.deletion_time - start, 0));
    }
    out.push_back({static_cast<double>(*pod.creation_time) / speedup, duration,
                   TracePodObject(pod, pod.name, mapping)});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Arrival& a, const Arrival& b) { return a.at < b.at; });
  return out;
}

}  // namespace gpuadmit
