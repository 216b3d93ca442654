// libFuzzer target: the bytes a client sends the TLS front end, after decryption. Frames them
// as the connection does (a head, then Content-Length bytes of body, repeated) and checks that
// every view the parser hands out lies inside the buffer it was given.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "webhook/server/http_request.h"

namespace {

bool Inside(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view pending(reinterpret_cast<const char*>(data), size);
  std::string out;
  while (!pending.empty()) {
    gpuadmit::HeadParse p = gpuadmit::ParseRequestHead(pending);
    if (p.state != gpuadmit::HeadParse::kComplete) {
      if (p.state == gpuadmit::HeadParse::kBad && (p.status < 400 || p.reason.empty())) {
        __builtin_trap();
      }
      break;
    }
    const gpuadmit::RequestHead& h = p.head;
    std::string_view head = pending.substr(0, p.head_size);
    if (p.head_size == 0 || p.head_size > pending.size() || !Inside(h.method, head) ||
        !Inside(h.path, head) || !Inside(h.query, head) || !Inside(h.content_type, head) ||
        h.path.empty() || h.path.front() != '/') {
      __builtin_trap();
    }
    gpuadmit::AppendResponseHead(out, 200, h.content_type, h.content_length, !h.keep_alive);
    pending.remove_prefix(p.head_size);
    if (h.content_length > pending.size()) break;  // the body has not all arrived
    pending.remove_prefix(h.content_length);
  }
  return 0;
}
