// The parts of a "host:port" address (a --peers entry, a listen address).
#pragma once

#include <string>

namespace rolis::replication {

// The host as written, an IPv6 literal with its brackets ("[::1]"), so that
// host + ":" + port is an address again. No colon: the whole string.
inline std::string HostOf(const std::string& hostport) {
  const size_t p = hostport.rfind(':');
  return p == std::string::npos ? hostport : hostport.substr(0, p);
}

// The port as written; empty without a colon.
inline std::string PortOf(const std::string& hostport) {
  const size_t p = hostport.rfind(':');
  return p == std::string::npos ? "" : hostport.substr(p + 1);
}

// The host as a resolver and a certificate name it: without IPv6 brackets.
inline std::string BareHost(const std::string& host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') return host.substr(1, host.size() - 2);
  return host;
}

}  // namespace rolis::replication
