// Text into HTML: every value the status page shows (node, pod and profile names, trail lines,
// the policy) goes through here, so a pod named `<script>` is shown, never run.
//
//   out += "<td>"; AppendHtml(out, node.name()); out += "</td>";
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace gpuadmit {

// Appends `text` with &, <, >, " and ' replaced by entities: safe in element content and in
// quoted attribute values.
void AppendHtml(std::string& out, std::string_view text);
std::string Html(std::string_view text);

// Appends `text` percent-encoded for a URL's query (RFC 3986 unreserved characters kept).
void AppendQueryValue(std::string& out, std::string_view text);

}  // namespace gpuadmit
