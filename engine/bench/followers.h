// The follower rolisd processes of a replicated benchmark run: started on
// loopback (optionally pinned to given CPUs), stopped and reaped at the end,
// and killed if rolis-bench is interrupted (SIGINT/SIGTERM) or dies (the
// children ask the kernel for SIGKILL when their parent goes).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "rolis/status.h"

namespace rolis::bench {

struct FollowerSpec {
  uint32_t id = 0;
  std::vector<std::string> args;  // argv[1..]
  std::string log_path;           // stdout and stderr go here
  std::vector<int> cpus;          // empty: not pinned
};

class FollowerSet {
 public:
  FollowerSet();
  ~FollowerSet();  // Stop(0)
  FollowerSet(const FollowerSet&) = delete;
  FollowerSet& operator=(const FollowerSet&) = delete;

  // fork + exec of `binary`; the child is pinned before exec.
  Status Spawn(const std::string& binary, const FollowerSpec& spec);
  // kInternal naming the first follower that has exited, with its log's tail
  // (one killed by Kill is not reported).
  Status CheckAlive();
  // SIGKILL to follower `id` (a crash, as --kill-follower-at wants it), then
  // reaps it. kInvalidArgument when there is no such follower alive.
  Status Kill(uint32_t id);
  // SIGTERM, then SIGKILL after `grace`; reaps every child. Idempotent.
  void Stop(std::chrono::milliseconds grace);

 private:
  struct Child {
    uint32_t id;
    pid_t pid;
    std::string log_path;
    int exit_status = -1;  // from waitpid, once reaped
    bool killed = false;   // by Kill
  };
  std::vector<Child> children_;
};

// The last `lines` lines of a file ("" if unreadable).
std::string FileTail(const std::string& path, int lines);

}  // namespace rolis::bench
