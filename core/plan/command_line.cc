#include "core/plan/command_line.h"

#include <algorithm>
#include <cctype>

namespace gpuadmit {
namespace {

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

bool HasSpace(std::string_view s) { return std::any_of(s.begin(), s.end(), IsSpace); }

void AppendWords(JsonView list, std::vector<std::string>& out) {
  for (JsonView entry : list.Elements()) {
    if (!entry.is_string()) continue;
    std::string_view s = entry.string();
    if (!HasSpace(s)) {
      out.emplace_back(s);
      continue;
    }
    std::vector<std::string> words = SplitShellWords(s);
    out.insert(out.end(), words.begin(), words.end());
  }
}

// The value `word` carries for `name`: "" with matched for `--tp`, "4" for `--tp=4`.
std::optional<std::string_view> InlineValue(std::string_view word, std::string_view name) {
  if (word == name) return std::string_view();
  if (word.size() > name.size() && word.starts_with(name) && word[name.size()] == '=') {
    return word.substr(name.size() + 1);
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> SplitShellWords(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (IsSpace(c)) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      size_t end = text.find('\'', i + 1);
      if (end == std::string_view::npos) end = text.size();
      word.append(text.substr(i + 1, end - i - 1));
      i = end;
    } else if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size() && (text[i + 1] == '"' || text[i + 1] == '\\')) {
          ++i;
        }
        word += text[i];
      }
    } else if (c == '\\' && i + 1 < text.size()) {
      word += text[++i];
    } else {
      word += c;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

std::vector<std::string> CommandLineOf(JsonView container) {
  std::vector<std::string> words;
  auto [command, args] = container.Fields({"command", "args"});
  AppendWords(command, words);
  AppendWords(args, words);
  return words;
}

std::optional<std::string> FlagValue(const std::vector<std::string>& words,
                                     std::initializer_list<std::string_view> names) {
  return FlagValue(words, std::span<const std::string_view>(names.begin(), names.size()));
}

std::optional<std::string> FlagValue(const std::vector<std::string>& words,
                                     std::span<const std::string_view> names) {
  std::optional<std::string> value;
  for (size_t i = 0; i < words.size(); ++i) {
    for (std::string_view name : names) {
      auto inline_value = InlineValue(words[i], name);
      if (!inline_value) continue;
      if (!inline_value->empty()) {
        value = std::string(*inline_value);
      } else if (i + 1 < words.size()) {
        value = words[i + 1];
      }
      break;
    }
  }
  return value;
}

std::optional<std::string> ServedModel(const std::vector<std::string>& words) {
  if (auto m = FlagValue(words, {"--model", "--model-path", "--model-id"})) return m;
  auto serve = std::find(words.begin(), words.end(), "serve");
  if (serve != words.end() && serve + 1 != words.end() && !(serve + 1)->starts_with("-")) {
    return *(serve + 1);
  }
  return FlagValue(words, {"--served-model-name"});
}

}  // namespace gpuadmit
