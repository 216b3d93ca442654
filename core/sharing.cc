#include "core/sharing.h"

namespace gpuadmit {

// Not yet implemented: this stage decides nothing so far.
void PlanSharing(const PodRequest&, const PlanContext&, PlanState&, Decision&) {}

}  // namespace gpuadmit
