#include "webhook/cli/flags.h"

#include <charconv>

namespace gpuadmit {

std::string Flags::Parse(int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-" || arg.rfind("-", 0) != 0) {
      positional_.push_back(arg);
      continue;
    }
    if (arg == "--") {
      for (++i; i < argc; ++i) positional_.push_back(argv[i]);
      break;
    }
    std::string name = arg.substr(arg.rfind("--", 0) == 0 ? 2 : 1);
    std::string value;
    bool inline_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    if (switches_.count(name)) {
      if (inline_value) return "flag --" + name + " takes no value";
      values_[name] = "true";
    } else if (valued_.count(name)) {
      if (!inline_value) {
        if (i + 1 >= argc) return "flag --" + name + " needs a value";
        value = argv[++i];
      }
      if (all_.count(name) > 0 && repeatable_.count(name) == 0) {
        return "flag --" + name + " given twice; it takes one value";
      }
      values_[name] = value;
      all_[name].push_back(value);
    } else {
      return "unknown flag " + arg;
    }
  }
  return "";
}

std::string Flags::Value(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

std::vector<std::string> Flags::Values(const std::string& name) const {
  auto it = all_.find(name);
  return it == all_.end() ? std::vector<std::string>{} : it->second;
}

bool SplitHostPort(const std::string& address, std::string& host, int& port) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) host = "0.0.0.0";
  std::string p = address.substr(colon + 1);
  auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
  return ec == std::errc() && end == p.data() + p.size() && port >= 0 && port <= 65535;
}

}  // namespace gpuadmit
