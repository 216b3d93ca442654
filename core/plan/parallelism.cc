#include "core/plan/parallelism.h"

#include <algorithm>
#include <charconv>

#include "core/plan/command_line.h"

namespace gpuadmit {
namespace {

struct DimensionSpelling {
  std::string_view name;
  std::array<std::string_view, 5> flags;   // as inference servers spell them
  std::array<std::string_view, 5> inputs;  // annotation/label names
};

// vLLM: --tensor-parallel-size/-tp, --pipeline-parallel-size/-pp, --data-parallel-size/-dp,
// --decode-context-parallel-size/-dcp; SGLang: --tp-size/--tp, --pp-size, --dp-size/--dp;
// annotations and labels: tensor-parallel-size, tp-size, tp_size, tp, tpsize.
const DimensionSpelling kSpellings[kParallelDimensions] = {
    {"tp",
     {"--tensor-parallel-size", "--tp-size", "--tp_size", "--tp", "-tp"},
     {"tp-size", "tp_size", "tensor-parallel-size", "tp", "tpsize"}},
    {"pp",
     {"--pipeline-parallel-size", "--pp-size", "--pp_size", "--pp", "-pp"},
     {"pp-size", "pp_size", "pipeline-parallel-size", "pp", "ppsize"}},
    {"dp",
     {"--data-parallel-size", "--dp-size", "--dp_size", "--dp", "-dp"},
     {"dp-size", "dp_size", "data-parallel-size", "dp", "dpsize"}},
    {"cp",
     {"--context-parallel-size", "--cp-size", "--cp_size", "--cp", "-cp"},
     {"cp-size", "cp_size", "context-parallel-size", "cp", "cpsize"}},
    {"dcp",
     {"--decode-context-parallel-size", "--dcp-size", "--dcp_size", "--dcp", "-dcp"},
     {"dcp-size", "dcp_size", "decode-context-parallel-size", "dcp", "dcpsize"}},
};

std::optional<int64_t> ParseSize(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  int64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 1 || n > kMaxParallelSize) {
    return std::nullopt;
  }
  return n;
}

// Records `value` for dimension `d`, or a problem when it is not a size.
void Take(Parallelism& p, size_t d, const std::string& value, std::string source) {
  if (auto n = ParseSize(value)) {
    p.sizes[d] = ParallelSize{*n, std::move(source)};
    return;
  }
  p.problems.push_back(std::string(kSpellings[d].name) + " \"" + value + "\" from " + source +
                       " is not a size from 1 to " + std::to_string(kMaxParallelSize) +
                       ": ignored");
}

int64_t SizeOf(const Parallelism& p, ParallelDimension d) {
  const auto& s = p.sizes[static_cast<size_t>(d)];
  return s ? s->size : 1;
}

}  // namespace

std::string_view DimensionName(ParallelDimension d) {
  return kSpellings[static_cast<size_t>(d)].name;
}

bool Parallelism::Explicit() const {
  return std::any_of(sizes.begin(), sizes.end(), [](const auto& s) { return s.has_value(); });
}

int64_t Parallelism::WorldSize() const {
  int64_t data =
      std::max({SizeOf(*this, ParallelDimension::kData), SizeOf(*this, ParallelDimension::kContext),
                SizeOf(*this, ParallelDimension::kDecodeContext)});
  return SizeOf(*this, ParallelDimension::kTensor) * SizeOf(*this, ParallelDimension::kPipeline) *
         data;
}

void Parallelism::FillFrom(const Parallelism& other) {
  for (size_t d = 0; d < kParallelDimensions; ++d) {
    if (!sizes[d]) sizes[d] = other.sizes[d];
  }
  problems.insert(problems.end(), other.problems.begin(), other.problems.end());
}

std::string Parallelism::Describe() const {
  auto one = [&](size_t d) {
    return std::string(kSpellings[d].name) + " " + std::to_string(sizes[d]->size) + " (" +
           sizes[d]->source + ")";
  };
  std::vector<std::string> factors;
  std::vector<std::string> data;  // dp, cp, dcp: only their largest counts
  for (size_t d = 0; d < kParallelDimensions; ++d) {
    if (!sizes[d]) continue;
    (d < static_cast<size_t>(ParallelDimension::kData) ? factors : data).push_back(one(d));
  }
  if (data.size() == 1) factors.push_back(data.front());
  if (data.size() > 1) {
    std::string max = "max(";
    for (size_t i = 0; i < data.size(); ++i) max += (i == 0 ? "" : ", ") + data[i];
    factors.push_back(max + ")");
  }
  std::string out;
  for (const std::string& f : factors) out += (out.empty() ? "" : " x ") + f;
  return out;
}

Parallelism ParallelismFromArgs(const std::vector<std::string>& words) {
  Parallelism p;
  for (size_t d = 0; d < kParallelDimensions; ++d) {
    if (auto value = FlagValue(words, kSpellings[d].flags)) Take(p, d, *value, "args");
  }
  return p;
}

bool IsParallelismInput(std::string_view name) {
  return std::any_of(std::begin(kSpellings), std::end(kSpellings), [&](const DimensionSpelling& d) {
    return std::find(d.inputs.begin(), d.inputs.end(), name) != d.inputs.end();
  });
}

Parallelism ParallelismFromInputs(const InputLookup& lookup) {
  Parallelism p;
  for (size_t d = 0; d < kParallelDimensions; ++d) {
    for (std::string_view name : kSpellings[d].inputs) {
      auto found = lookup(name);
      if (!found) continue;
      Take(p, d, found->second, found->first);
      break;
    }
  }
  return p;
}

}  // namespace gpuadmit
