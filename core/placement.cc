#include "core/placement.h"

namespace gpuadmit {

// Not yet implemented: this stage decides nothing so far.
void PlanPlacement(const PodRequest&, const PlanContext&, PlanState&, Decision&) {}

}  // namespace gpuadmit
