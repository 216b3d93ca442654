#include "core/kube/quantity.h"

#include <cctype>
#include <string>

namespace gpuadmit {
namespace {

// __extension__: 128-bit arithmetic keeps the exact product before the range check (-Wpedantic).
__extension__ typedef __int128 Int;

// 2^63 milli-units: anything larger does not fit the int64 the rest of gpuadmit uses.
constexpr Int kMaxMilli = static_cast<Int>(INT64_MAX);

// Multiplies `v` (at most kMaxMilli) by `factor` `times` times; false as soon as it
// passes kMaxMilli. Each product is at most 10 x kMaxMilli, far inside Int.
bool ScaleUp(Int& v, Int factor, int times) {
  for (int i = 0; i < times; ++i) {
    v *= factor;
    if (v > kMaxMilli) return false;
  }
  return true;
}

// 10^n for n <= 37 (the largest that fits Int with room to spare).
Int PowerOfTen(int n) {
  Int r = 1;
  for (int i = 0; i < n; ++i) r *= 10;
  return r;
}

// ceil(v / 10^n) for v >= 0.
Int CeilDivPowerOfTen(Int v, int n) {
  if (n > 37) return v > 0 ? 1 : 0;  // v has at most 36 digits: less than one, rounded up
  Int d = PowerOfTen(n);
  return v / d + (v % d != 0 ? 1 : 0);
}

// The value in milli-units, rounded up, of mantissa x 10^-fraction_digits x suffix, or -1 when
// it passes kMaxMilli. Exact: no step overflows, whatever the exponent (the review and
// watch_event fuzz targets found "1e999"-style products that overflowed 128 bits).
Int ToMilli(Int mantissa, int fraction_digits, int base, int exponent) {
  if (mantissa == 0) return 0;
  if (base == 10) {  // mantissa x 10^(exponent + 3 - fraction_digits)
    int p = exponent + 3 - fraction_digits;
    if (p < 0) return CeilDivPowerOfTen(mantissa, -p);
    if (mantissa > kMaxMilli) return -1;
    return ScaleUp(mantissa, 10, p) ? mantissa : -1;
  }
  // mantissa x 2^exponent x 10^(3 - fraction_digits)
  int t = 3 - fraction_digits;
  if (t >= 0) {
    if (mantissa > kMaxMilli) return -1;
    return ScaleUp(mantissa, 10, t) && ScaleUp(mantissa, 2, exponent) ? mantissa : -1;
  }
  // Whole part q x 2^exponent, then the fraction r / d x 2^exponent by binary long division.
  Int d = PowerOfTen(-t);  // -t <= 33: the mantissa has at most 36 digits
  Int q = mantissa / d;
  Int r = mantissa % d;
  if (q > kMaxMilli || !ScaleUp(q, 2, exponent)) return -1;
  Int fraction = 0;
  for (int i = 0; i < exponent; ++i) {
    fraction *= 2;
    r *= 2;
    if (r >= d) {
      r -= d;
      fraction += 1;
    }
  }
  Int milli = q + fraction + (r != 0 ? 1 : 0);
  return milli > kMaxMilli ? -1 : milli;
}

struct Suffix {
  int base = 10;     // 10 (decimal SI and exponents) or 2 (binary SI)
  int exponent = 0;  // power of base
};

bool ParseSuffix(std::string_view s, Suffix& out) {
  if (s.empty()) return true;
  if (s.size() == 2 && s[1] == 'i') {
    static constexpr std::string_view kBinary = "KMGTPE";
    auto pos = kBinary.find(s[0]);
    if (pos == std::string_view::npos) return false;
    out = {2, 10 * static_cast<int>(pos + 1)};
    return true;
  }
  if (s.size() == 1) {
    switch (s[0]) {
      case 'n':
        out = {10, -9};
        return true;
      case 'u':
        out = {10, -6};
        return true;
      case 'm':
        out = {10, -3};
        return true;
      case 'k':
        out = {10, 3};
        return true;
      case 'M':
        out = {10, 6};
        return true;
      case 'G':
        out = {10, 9};
        return true;
      case 'T':
        out = {10, 12};
        return true;
      case 'P':
        out = {10, 15};
        return true;
      case 'E':
        out = {10, 18};
        return true;
      default:
        break;
    }
  }
  if (s[0] == 'e' || s[0] == 'E') {
    std::string_view digits = s.substr(1);
    bool negative = false;
    if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
      negative = digits[0] == '-';
      digits.remove_prefix(1);
    }
    // Three digits of exponent already overflow int64 milli-units.
    if (digits.empty() || digits.size() > 3) return false;
    int e = 0;
    for (char c : digits) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
      e = e * 10 + (c - '0');
    }
    out = {10, negative ? -e : e};
    return true;
  }
  return false;
}

// The message is built only for a quantity that fails, out of line: every GPU pod's review
// parses a few that do not.
[[gnu::cold, gnu::noinline]] Error QuantityError(std::string_view text, const char* why) {
  return Error{"quantity \"" + std::string(text) + "\" " + why};
}

}  // namespace

Result<int64_t> ParseQuantityMilli(std::string_view text) {
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  Int mantissa = 0;
  int digits = 0;
  int fraction_digits = 0;
  bool in_fraction = false;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '.' && !in_fraction) {
      in_fraction = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    // 36 significant digits is beyond any int64 value; more only risks overflowing Int.
    if (++digits > 36) return QuantityError(text, "has too many digits");
    mantissa = mantissa * 10 + (c - '0');
    if (in_fraction) ++fraction_digits;
  }
  if (digits == 0) return QuantityError(text, "is not a number");
  Suffix suffix;
  if (!ParseSuffix(s.substr(i), suffix)) {
    return QuantityError(text, "has an unknown suffix");
  }
  Int milli = ToMilli(mantissa, fraction_digits, suffix.base, suffix.exponent);
  if (milli < 0) return QuantityError(text, "is too large");
  return static_cast<int64_t>(negative ? -milli : milli);
}

Result<int64_t> ParseWholeQuantity(std::string_view text) {
  auto milli = ParseQuantityMilli(text);
  if (!milli.ok()) return milli.error();
  if (milli.value() < 0) return Error{"quantity \"" + std::string(text) + "\" is negative"};
  if (milli.value() % 1000 != 0) {
    return Error{"quantity \"" + std::string(text) +
                 "\" is not a whole number, as extended resources must be"};
  }
  return milli.value() / 1000;
}

Result<int64_t> ParseMemoryMib(std::string_view text) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  std::string quantity(text);
  bool bytes = !quantity.empty() && std::isalpha(static_cast<unsigned char>(quantity.back()));
  // "16GB", "16GiB": people write bytes so; Kubernetes quantities do not.
  if (quantity.size() > 2 && (quantity.back() == 'B' || quantity.back() == 'b') &&
      std::string_view("kMGTPEi").find(quantity[quantity.size() - 2]) != std::string_view::npos) {
    quantity.pop_back();
  }
  auto milli = ParseQuantityMilli(quantity);
  if (!milli.ok()) return Error{"\"" + std::string(text) + "\" is not a memory quantity"};
  if (milli.value() <= 0) return Error{"\"" + std::string(text) + "\" is not positive"};
  int64_t per_mib = bytes ? kMiB * 1000 : 1000;
  return (milli.value() + per_mib - 1) / per_mib;
}

}  // namespace gpuadmit
