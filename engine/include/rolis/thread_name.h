// Names the calling thread, as top -H, ps -L, perf and gdb show it. Linux
// keeps 15 characters; longer names are cut there.
#pragma once

#include <pthread.h>

#include <string>

namespace rolis {

inline void NameThisThread(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace rolis
