#include "server/stream_reactor.h"

#include <vector>

namespace rolis::server {

void StreamRegistry::Register(DrainableStream* r) {
  bool drain;
  {
    std::lock_guard<std::mutex> g(mu_);
    streams_.insert(r);
    drain = draining_;
  }
  if (drain) {
    r->Drain();  // ends at once with UNAVAILABLE
  } else {
    r->Start();
  }
}

void StreamRegistry::Unregister(DrainableStream* r) {
  std::lock_guard<std::mutex> g(mu_);
  streams_.erase(r);
}

void StreamRegistry::DrainAll() {
  std::vector<DrainableStream*> open;
  {
    std::lock_guard<std::mutex> g(mu_);
    draining_ = true;
    for (auto* r : streams_) {
      r->Ref();
      open.push_back(r);
    }
  }
  for (auto* r : open) {
    r->Drain();
    r->Unref();
  }
}

size_t StreamRegistry::size() const {
  std::lock_guard<std::mutex> g(mu_);
  return streams_.size();
}

}  // namespace rolis::server
