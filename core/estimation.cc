#include "core/estimation.h"

namespace gpuadmit {

// Not yet implemented: this stage decides nothing so far.
void PlanRequirements(const PodRequest&, const PlanContext&, PlanState&, Decision&) {}

}  // namespace gpuadmit
