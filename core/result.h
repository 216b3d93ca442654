// Result<T, E>: a value or an error, returned by every core API on the request path instead
// of throwing (STYLE rule 2).
//
//   Result<int64_t> r = ParseWholeQuantity("2");
//   if (!r.ok()) return Error{r.error().message};
//   int64_t n = r.value();
//
// Thread safety: a plain value type.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace gpuadmit {

// The default error: one line saying what went wrong and where.
struct Error {
  std::string message;
};

template <typename T, typename E = Error>
class [[nodiscard]] Result {
 public:
  // Implicit on purpose: `return value;` and `return Error{...};` read as the contract says.
  // A value or error is moved in once (a by-value parameter would move it twice: a request
  // of a dozen strings is returned so on every review).
  // cppcheck-suppress noExplicitConstructor
  Result(T&& value) : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT
  // cppcheck-suppress noExplicitConstructor
  Result(const T& value) : state_(std::in_place_index<0>, value) {}  // NOLINT
  // cppcheck-suppress noExplicitConstructor
  Result(E&& error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT
  // cppcheck-suppress noExplicitConstructor
  Result(const E& error) : state_(std::in_place_index<1>, error) {}  // NOLINT

  bool ok() const { return state_.index() == 0; }
  const T& value() const& { return std::get<0>(state_); }
  T& value() & { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  const E& error() const { return std::get<1>(state_); }

 private:
  std::variant<T, E> state_;
};

}  // namespace gpuadmit
