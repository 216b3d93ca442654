// What gpuadmit answers when it fails inside (a bug, an object it cannot read): open allows
// the object unchanged with a warning, closed denies it. The policy's `failureMode`.
//
// Thread safety: a value.
#pragma once

namespace gpuadmit {

enum class FailureMode { kOpen, kClosed };

}  // namespace gpuadmit
