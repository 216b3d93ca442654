#include "webhook/server/review_forwarder.h"

#include <httplib.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <cstdio>

#include "webhook/server/http_request.h"

namespace gpuadmit {

ReviewForwarder::ReviewForwarder(ForwarderOptions options) : options_(std::move(options)) {}

ReviewForwarder::~ReviewForwarder() = default;

Result<std::unique_ptr<ReviewForwarder>> ReviewForwarder::Create(ForwarderOptions options) {
  if (FILE* f = std::fopen(options.ca_file.c_str(), "r")) {
    std::fclose(f);
  } else {
    return Error{options.ca_file + ": cannot read the CA of the replicas' certificates"};
  }
  if (options.server_name.empty()) return Error{"no server name to verify the leader against"};
  return std::unique_ptr<ReviewForwarder>(new ReviewForwarder(std::move(options)));
}

std::unique_ptr<httplib::SSLClient> ReviewForwarder::Take(const std::string& address,
                                                          std::string& error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = idle_.find(address);
    if (it != idle_.end() && !it->second.empty()) {
      auto client = std::move(it->second.back());
      it->second.pop_back();
      return client;
    }
  }
  size_t colon = address.rfind(':');
  int port = colon == std::string::npos ? 0 : std::atoi(address.c_str() + colon + 1);
  if (colon == std::string::npos || port <= 0 || port > 65535) {
    error = "leader address \"" + address + "\" is not HOST:PORT";
    return nullptr;
  }
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  // Connect to the address, verify the certificate's name: httplib's host is the name (its SNI
  // and hostname check) and the address is where that name goes.
  auto client = std::make_unique<httplib::SSLClient>(
      options_.server_name, port, options_.client_cert_file, options_.client_key_file);
  if (!client->is_valid()) {
    error = options_.client_cert_file + ", " + options_.client_key_file +
            ": cannot load this replica's certificate to present to the leader";
    return nullptr;
  }
  client->set_hostname_addr_map({{options_.server_name, host}});
  client->set_ca_cert_path(options_.ca_file.c_str());
  client->enable_server_certificate_verification(true);
  client->set_keep_alive(true);
  client->set_tcp_nodelay(true);
  client->set_connection_timeout(options_.timeout);
  client->set_read_timeout(options_.timeout);
  client->set_write_timeout(options_.timeout);
  return client;
}

void ReviewForwarder::Give(const std::string& address, std::unique_ptr<httplib::SSLClient> client) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& idle = idle_[address];
  if (idle.size() < options_.max_idle_per_address) idle.push_back(std::move(client));
}

Result<std::string> ReviewForwarder::Forward(const std::string& address, std::string_view body,
                                             std::string_view scope) {
  std::string error;
  auto client = Take(address, error);
  if (!client) return Error{error};
  httplib::Headers headers = {{std::string(kForwardedHeader), std::string(ForwardedMark(scope))}};
  httplib::Result res =
      client->Post("/mutate", headers, body.data(), body.size(), "application/json");
  if (!res) {
    std::string why = httplib::to_string(res.error());
    if (res.error() == httplib::Error::SSLServerVerification) {
      why += " (the leader's certificate is not signed by the configured CA or does not name " +
             options_.server_name + ")";
    }
    return Error{"forward to " + address + ": " + why};
  }
  if (res->status != 200) {
    return Error{"forward to " + address + ": HTTP " + std::to_string(res->status)};
  }
  std::string answer = std::move(res->body);
  Give(address, std::move(client));
  return answer;
}

Result<std::string> CertificateDnsName(const std::string& cert_file) {
  FILE* f = std::fopen(cert_file.c_str(), "r");
  if (f == nullptr) return Error{cert_file + ": cannot open"};
  X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  if (cert == nullptr) return Error{cert_file + ": not a PEM certificate"};
  std::string name;
  auto* names =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names) && name.empty(); ++i) {
    const GENERAL_NAME* g = sk_GENERAL_NAME_value(names, i);
    if (g->type != GEN_DNS) continue;
    const ASN1_STRING* s = g->d.dNSName;
    name.assign(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                static_cast<size_t>(ASN1_STRING_length(s)));
  }
  GENERAL_NAMES_free(names);
  if (name.empty()) {
    char cn[256] = {};
    if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof cn) > 0) {
      name = cn;
    }
  }
  X509_free(cert);
  if (name.empty()) return Error{cert_file + ": the certificate names no host"};
  return name;
}

}  // namespace gpuadmit
