#include "core/inventory/prometheus_samples.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

#include "core/json/json_tape.h"

namespace gpuadmit {
namespace {

bool IsNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }
bool IsBlank(char c) { return c == ' ' || c == '\t'; }

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// A sample value as Go's strconv.ParseFloat reads what Prometheus writes: decimal or exponent
// notation with an optional sign, "NaN", "Inf" / "+Inf" / "-Inf" in any case.
std::optional<double> ParseValue(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  if (EqualsIgnoringCase(text, "nan")) return std::numeric_limits<double>::quiet_NaN();
  if (EqualsIgnoringCase(text, "inf") || EqualsIgnoringCase(text, "infinity")) {
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  }
  // from_chars would read "nan"/"inf" itself after a sign was stripped; those cases are above.
  if (text.empty() || !(text.front() == '.' || (text.front() >= '0' && text.front() <= '9'))) {
    return std::nullopt;
  }
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return negative ? -value : value;
}

std::optional<int64_t> ParseTimestamp(std::string_view text) {
  int64_t ms = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return ms;
}

// Reads one sample line; nullopt when the line is not one.
class SampleLineParser {
 public:
  explicit SampleLineParser(std::string_view line) : line_(line) {}

  std::optional<PromSample> Parse() {
    PromSample sample;
    if (!ReadName(sample.name)) return std::nullopt;
    SkipBlanks();
    if (Peek() == '{' && !ReadLabels(sample.labels)) return std::nullopt;
    SkipBlanks();
    std::optional<double> value = ParseValue(ReadToken());
    if (!value) return std::nullopt;
    sample.value = *value;
    SkipBlanks();
    if (pos_ < line_.size()) {
      sample.timestamp_ms = ParseTimestamp(ReadToken());
      if (!sample.timestamp_ms) return std::nullopt;
      SkipBlanks();
    }
    if (pos_ != line_.size()) return std::nullopt;
    return sample;
  }

 private:
  char Peek() const { return pos_ < line_.size() ? line_[pos_] : '\0'; }
  void SkipBlanks() {
    while (pos_ < line_.size() && IsBlank(line_[pos_])) ++pos_;
  }
  std::string_view ReadToken() {
    size_t start = pos_;
    while (pos_ < line_.size() && !IsBlank(line_[pos_])) ++pos_;
    return line_.substr(start, pos_ - start);
  }
  bool ReadName(std::string& out) {
    if (!IsNameStart(Peek())) return false;
    size_t start = pos_;
    while (IsNameChar(Peek())) ++pos_;
    out.assign(line_.substr(start, pos_ - start));
    return true;
  }
  // `{name="value",...}`, a trailing comma allowed; the cursor is on '{'.
  bool ReadLabels(std::vector<PromLabel>& out) {
    ++pos_;
    for (;;) {
      SkipBlanks();
      if (Peek() == '}') {
        ++pos_;
        return true;
      }
      PromLabel label;
      // Label names may not hold ':', metric names may; the difference is not worth a reject.
      if (!ReadName(label.name)) return false;
      SkipBlanks();
      if (Peek() != '=') return false;
      ++pos_;
      SkipBlanks();
      if (!ReadQuoted(label.value)) return false;
      out.push_back(std::move(label));
      SkipBlanks();
      if (Peek() == ',') {
        ++pos_;
      } else if (Peek() != '}') {
        return false;
      }
    }
  }
  // A double-quoted label value. \\, \" and \n are the format's escapes; any other escaped
  // character is kept with its backslash, as Prometheus' own parser does.
  bool ReadQuoted(std::string& out) {
    if (Peek() != '"') return false;
    ++pos_;
    while (pos_ < line_.size()) {
      char c = line_[pos_++];
      if (c == '"') return true;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ == line_.size()) return false;
      char escaped = line_[pos_++];
      if (escaped == 'n') {
        out += '\n';
      } else if (escaped == '\\' || escaped == '"') {
        out += escaped;
      } else {
        out += '\\';
        out += escaped;
      }
    }
    return false;
  }

  std::string_view line_;
  size_t pos_ = 0;
};

Error AnswerError(std::string_view what) {
  return Error{"prometheus query answer: " + std::string(what)};
}

}  // namespace

std::string_view PromSample::Label(std::string_view label_name) const {
  auto it = std::find_if(labels.begin(), labels.end(),
                         [&](const PromLabel& label) { return label.name == label_name; });
  return it == labels.end() ? std::string_view() : std::string_view(it->value);
}

ExpositionSamples ParseExposition(std::string_view text) {
  ExpositionSamples out;
  size_t line_number = 0;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    while (!line.empty() && IsBlank(line.front())) line.remove_prefix(1);
    if (line.empty() || line.front() == '#') continue;
    std::optional<PromSample> sample = SampleLineParser(line).Parse();
    if (!sample) {
      if (out.skipped_lines++ == 0) out.first_skipped_line = line_number;
      continue;
    }
    out.samples.push_back(std::move(*sample));
  }
  return out;
}

Result<std::vector<PromSample>> ParseInstantQueryAnswer(std::string_view body) {
  std::string refusal;
  auto tape = JsonTape::Parse(body, kMaxJsonDepth, &refusal);
  if (tape == nullptr) return AnswerError(refusal);
  JsonView doc = tape->root();
  if (!doc.is_object()) return AnswerError("not a JSON object");
  auto [status, error_type, error, data] = doc.Fields({"status", "errorType", "error", "data"});
  if (status.string() == "error") {
    return AnswerError("status error: " + std::string(error_type.string()) + ": " +
                       std::string(error.string()));
  }
  if (status.string() != "success") return AnswerError("status is neither success nor error");
  if (!data.is_object()) return AnswerError("no data object");
  auto [result_type, result] = data.Fields({"resultType", "result"});
  if (result_type.string() != "vector") {
    return AnswerError("resultType " + std::string(result_type.string()) + ", not vector");
  }
  if (!result.is_array()) return AnswerError("data.result is not an array");

  std::vector<PromSample> samples;
  samples.reserve(result.size());
  for (JsonView item : result.Elements()) {
    auto [metric, value] = item.Fields({"metric", "value"});
    if (!metric.is_object() || !value.is_array() || value.size() != 2 || !value[0].is_number() ||
        !value[1].is_string()) {
      return AnswerError("a result is not {metric: {...}, value: [time, \"value\"]}");
    }
    PromSample sample;
    for (const JsonView::Member& label : metric.Members()) {
      if (!label.value.is_string()) return AnswerError("a label value is not a string");
      if (label.key == "__name__") {
        sample.name = label.value.string();
      } else {
        sample.labels.push_back({std::string(label.key), std::string(label.value.string())});
      }
    }
    std::optional<double> parsed = ParseValue(value[1].string());
    if (!parsed) return AnswerError("a sample value is not a number");
    sample.value = *parsed;
    // Seconds with millisecond decimals, e.g. 1795271159.511.
    sample.timestamp_ms = std::llround(value[0].number() * 1000.0);
    samples.push_back(std::move(sample));
  }
  return samples;
}

}  // namespace gpuadmit
