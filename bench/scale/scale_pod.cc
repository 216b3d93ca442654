#include <array>
#include <string>
#include <vector>

#include "bench/scale/scale_objects.h"
#include "bench/scale/scale_text.h"

namespace gpuadmit::bench {
namespace {

using text::AppendHex;
using text::AppendSuffix;
using text::Ip;
using text::Time;
using text::Uuid;

uint64_t Hash(uint64_t index, uint64_t purpose) { return ScaleHash(index, purpose); }

// A JSON text with $X placeholders (X in A-Z, a-z), rendered by appending.
class Template {
 public:
  using Values = std::array<std::string_view, 52>;

  explicit Template(std::string_view text) {
    size_t start = 0;
    for (size_t at = text.find('$'); at != std::string_view::npos; at = text.find('$', start)) {
      char c = text[at + 1];
      parts_.push_back({text.substr(start, at - start), c >= 'a' ? 26 + (c - 'a') : c - 'A'});
      start = at + 2;
    }
    tail_ = text.substr(start);
  }

  void Render(std::string& out, const Values& values) const {
    for (const Part& p : parts_) {
      out += p.literal;
      out += values[p.slot];
    }
    out += tail_;
  }

 private:
  struct Part {
    std::string_view literal;
    int slot;
  };
  std::vector<Part> parts_;
  std::string_view tail_;
};

// A Deployment's pod as the apiserver sends it (kubectl get pod -o json, compact), after
// tests/fixtures/pods/pod-kubectl-get-o-json-kind-cluster.json with what current clusters add:
// managedFields of the controller and the kubelet, env from the downward API, a projected
// service-account volume (about 4.5 KB running, 3.6 KB pending). $A app, $C created, $G GPU
// toleration, $H pod-template-hash, $I image, $K kube-api-access volume, $M name, $N namespace, $O
// owner uid, $P pod IP, $Q resources, $R resourceVersion, $S nodeName or nodeSelector, $T status
// time, $U uid, $Z status.
constexpr std::string_view kPod =
    R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"$M","generateName":"$A-$H-","namespace":"$N","uid":"$U","resourceVersion":"$R","creationTimestamp":"$C","labels":{"app":"$A","pod-template-hash":"$H"},"annotations":{"prometheus.io/scrape":"true"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"$A-$H","uid":"$O","controller":true,"blockOwnerDeletion":true}],"managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"$C","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:prometheus.io/scrape":{}},"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"$O\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{},"f:env":{".":{},"k:{\"name\":\"POD_NAME\"}":{".":{},"f:name":{},"f:valueFrom":{".":{},"f:fieldRef":{}}}},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{".":{},"f:limits":{},"f:requests":{}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{},"f:tolerations":{}}}},{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"$T","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"$P\"}":{".":{},"f:ip":{}}},"f:startTime":{}}},"subresource":"status"}]},"spec":{"volumes":[{"name":"$K","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}},{"downwardAPI":{"items":[{"path":"namespace","fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"}}]}}],"defaultMode":420}}],"containers":[{"name":"main","image":"$I","env":[{"name":"POD_NAME","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.name"}}}],"resources":$Q,"volumeMounts":[{"name":"$K","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst",$S"serviceAccountName":"default","serviceAccount":"default","securityContext":{},"schedulerName":"default-scheduler","tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}$G],"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},"status":$Z})";

// A running pod's status. $B Ready status, $C created, $T status time, $I image, $J imageID,
// $L lastState, $X containerID, $b ready, $h host IP, $P pod IP, $r restartCount.
constexpr std::string_view kRunningStatus =
    R"({"phase":"Running","conditions":[{"type":"Initialized","status":"True","lastProbeTime":null,"lastTransitionTime":"$C"},{"type":"Ready","status":"$B","lastProbeTime":null,"lastTransitionTime":"$T"},{"type":"ContainersReady","status":"$B","lastProbeTime":null,"lastTransitionTime":"$T"},{"type":"PodScheduled","status":"True","lastProbeTime":null,"lastTransitionTime":"$C"}],"hostIP":"$h","hostIPs":[{"ip":"$h"}],"podIP":"$P","podIPs":[{"ip":"$P"}],"startTime":"$C","containerStatuses":[{"name":"main","state":{"running":{"startedAt":"$T"}},"lastState":$L,"ready":$b,"restartCount":$r,"image":"$I","imageID":"$J","containerID":"containerd://$X","started":$b}],"qosClass":"Burstable"})";

// $C created, $Q the resource the scheduler found short.
constexpr std::string_view kPendingStatus =
    R"({"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","lastProbeTime":null,"lastTransitionTime":"$C","reason":"Unschedulable","message":"0/5000 nodes are available: 12 node(s) were unschedulable, 4988 Insufficient $Q. preemption: 0/5000 nodes are available: 5000 No preemption victims found for incoming pod."}],"qosClass":"Burstable"})";

const Template& PodTemplate() {
  static const Template t(kPod);
  return t;
}
const Template& RunningStatusTemplate() {
  static const Template t(kRunningStatus);
  return t;
}
const Template& PendingStatusTemplate() {
  static const Template t(kPendingStatus);
  return t;
}

constexpr int Slot(char c) { return c >= 'a' ? 26 + (c - 'a') : c - 'A'; }

const char* ResourceName(GpuAsk ask) {
  switch (ask) {
    case GpuAsk::kGpu:
      return "nvidia.com/gpu";
    case GpuAsk::kMig1g:
      return "nvidia.com/mig-1g.10gb";
    case GpuAsk::kMig2g:
      return "nvidia.com/mig-2g.20gb";
    case GpuAsk::kMig3g:
      return "nvidia.com/mig-3g.40gb";
    case GpuAsk::kNone:
      break;
  }
  return "";
}

std::string Resources(GpuAsk ask, int count) {
  if (ask == GpuAsk::kNone) {
    return R"({"limits":{"memory":"512Mi"},"requests":{"cpu":"250m","memory":"256Mi"}})";
  }
  std::string gpu = std::string("\"") + ResourceName(ask) + "\":\"" + std::to_string(count) + "\"";
  return R"({"limits":{"cpu":"16","memory":"128Gi",)" + gpu +
         R"(},"requests":{"cpu":"8","memory":"64Gi",)" + gpu + "}}";
}

// The names a pod's generated details hang on.
struct PodNames {
  std::string ns;
  std::string app;
  std::string hash;  // pod-template-hash
  std::string name;
  uint64_t app_id = 0;
  const char* image = "";
};

PodNames NamesOf(int pod, const PodShape& shape) {
  PodNames n;
  if (shape.sentinel) {
    n.ns = "bench";
    n.app = "scale-sentinel";
    n.hash = "sentinel00";
    n.name = "scale-sentinel";
    n.image = "registry.k8s.io/pause:3.10";
    return n;
  }
  n.app_id = Hash(static_cast<uint64_t>(pod), 10) % 3000;
  static constexpr const char* kCpuKinds[] = {"web", "batch", "api"};
  static constexpr const char* kCpuImages[] = {"registry.example.com/platform/web-frontend:3.14.2",
                                               "registry.example.com/data/etl-runner:1.9.0",
                                               "registry.example.com/platform/api-gateway:2.3.7"};
  if (shape.ask == GpuAsk::kNone) {
    n.app = std::string(kCpuKinds[n.app_id % 3]) + "-" + std::to_string(n.app_id);
    n.image = kCpuImages[n.app_id % 3];
  } else if (shape.ask == GpuAsk::kGpu) {
    n.app = "train-" + std::to_string(n.app_id);
    n.image = "nvcr.io/nvidia/pytorch:24.05-py3";
  } else {
    n.app = "infer-" + std::to_string(n.app_id);
    n.image = "nvcr.io/nvidia/tritonserver:24.05-py3";
  }
  n.ns = "team-" + std::to_string(10 + n.app_id % 40);
  AppendSuffix(n.hash, Hash(n.app_id, 11), 10);
  n.name = n.app + "-" + n.hash + "-";
  AppendSuffix(n.name, static_cast<uint64_t>(pod), 5);
  return n;
}

}  // namespace

void AppendPod(std::string& out, int pod, const PodShape& shape, const PodVersion& version,
               std::string_view node_name, std::string_view wanted_node_name) {
  PodNames n = NamesOf(pod, shape);
  uint64_t seed = static_cast<uint64_t>(pod);
  std::string created = Time(Hash(seed, 12), false);
  std::string changed = Time(Hash(seed, 13 + version.restarts), true);
  std::string uid = Uuid(Hash(seed, 14));
  std::string owner_uid = Uuid(Hash(n.app_id, 16));
  std::string rv = std::to_string(version.resource_version);
  std::string pod_ip = Ip(64, seed);
  std::string volume = "kube-api-access-";
  AppendSuffix(volume, Hash(seed, 18), 5);
  std::string resources = Resources(shape.ask, shape.count);
  std::string placement;
  if (version.node >= 0) {
    placement = R"("nodeName":")" + std::string(node_name) + "\",";
  } else if (shape.wanted_node >= 0) {
    placement =
        R"("nodeSelector":{"kubernetes.io/hostname":")" + std::string(wanted_node_name) + "\"},";
  }
  std::string status;
  Template::Values v{};
  if (version.node >= 0) {
    std::string host_ip = Ip(128, static_cast<uint64_t>(version.node));
    std::string image_id = std::string(n.image);
    image_id = image_id.substr(0, image_id.find(':')) + "@sha256:";
    AppendHex(image_id, Hash(n.app_id % 3, 20), 64);
    std::string container_id;
    AppendHex(container_id, Hash(seed, 21 + version.restarts), 64);
    std::string last_state = "{}";
    if (version.restarts > 0) {
      last_state = R"({"terminated":{"exitCode":137,"reason":"OOMKilled","startedAt":")" + created +
                   R"(","finishedAt":")" + changed + R"(","containerID":"containerd://)";
      AppendHex(last_state, Hash(seed, 20 + version.restarts), 64);
      last_state += "\"}}";
    }
    bool ready = version.restarts % 3 != 1;
    std::string restarts = std::to_string(version.restarts);
    v[Slot('B')] = ready ? "True" : "False";
    v[Slot('C')] = created;
    v[Slot('T')] = changed;
    v[Slot('I')] = n.image;
    v[Slot('J')] = image_id;
    v[Slot('L')] = last_state;
    v[Slot('X')] = container_id;
    v[Slot('b')] = ready ? "true" : "false";
    v[Slot('h')] = host_ip;
    v[Slot('P')] = pod_ip;
    v[Slot('r')] = restarts;
    RunningStatusTemplate().Render(status, v);
  } else {
    v[Slot('C')] = created;
    v[Slot('Q')] = shape.ask == GpuAsk::kNone ? "cpu" : ResourceName(shape.ask);
    PendingStatusTemplate().Render(status, v);
    pod_ip.clear();
  }
  v = {};
  v[Slot('A')] = n.app;
  v[Slot('C')] = created;
  v[Slot('G')] = shape.ask == GpuAsk::kNone
                     ? ""
                     : R"(,{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"})";
  v[Slot('H')] = n.hash;
  v[Slot('I')] = n.image;
  v[Slot('K')] = volume;
  v[Slot('M')] = n.name;
  v[Slot('N')] = n.ns;
  v[Slot('O')] = owner_uid;
  v[Slot('P')] = pod_ip;
  v[Slot('Q')] = resources;
  v[Slot('R')] = rv;
  v[Slot('S')] = placement;
  v[Slot('T')] = changed;
  v[Slot('U')] = uid;
  v[Slot('Z')] = status;
  PodTemplate().Render(out, v);
}

std::string PodKey(int pod, const PodShape& shape) {
  PodNames n = NamesOf(pod, shape);
  return n.ns + "/" + n.name;
}

}  // namespace gpuadmit::bench
