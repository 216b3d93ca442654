// Flags: the command line of one gpuadmit subcommand, "--name value" or "--name=value", plus
// positional arguments. Declared flags only: an unknown flag is an error, not a surprise, and so
// is a second value for a flag that takes one (it would otherwise silently replace the first).
//
//   Flags f({"policy", "cluster"}, {"explain"});
//   Flags many({"policy", "strategy"}, {}, /*repeatable=*/{"policy", "strategy"});
//   if (auto err = f.Parse(argc, argv); !err.empty()) usage error;
//   std::string policy = f.Value("policy");
//
// Thread safety: a value type, used from main only.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace gpuadmit {

class Flags {
 public:
  // `valued` take a value; `switches` do not; those of `valued` also in `repeatable` may be
  // given more than once (Values()).
  Flags(std::set<std::string> valued, std::set<std::string> switches,
        std::set<std::string> repeatable = {})
      : valued_(std::move(valued)),
        switches_(std::move(switches)),
        repeatable_(std::move(repeatable)) {}

  // Parses argv[first..argc). Returns "" or a one-line error.
  std::string Parse(int argc, char** argv, int first);

  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  // The value given for `name` (the last, for a repeatable flag), or `fallback`.
  std::string Value(const std::string& name, const std::string& fallback = "") const;
  // Every value given for a repeatable flag, in order (--policy a --policy b).
  std::vector<std::string> Values(const std::string& name) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::set<std::string> valued_;
  std::set<std::string> switches_;
  std::set<std::string> repeatable_;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> all_;
  std::vector<std::string> positional_;
};

// Splits "host:port", "[v6]:port" or ":port" (host 0.0.0.0). False on a bad address or port.
bool SplitHostPort(const std::string& address, std::string& host, int& port);

}  // namespace gpuadmit
