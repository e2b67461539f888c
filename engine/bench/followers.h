// The follower rolisd processes of a replicated benchmark run: started on
// loopback (optionally pinned to given CPUs), stopped and reaped at the end,
// and killed if rolis-bench is interrupted (SIGINT/SIGTERM) or dies (the
// children ask the kernel for SIGKILL when their parent goes), or mid-run
// by --kill-follower-at (KillAfter).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
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
  // Kill(id) from a thread of its own after `delay`, unless StopKillTimer
  // comes first. Call neither Kill nor the others meanwhile.
  void KillAfter(uint32_t id, std::chrono::duration<double> delay);
  // Cancels or joins KillAfter's thread; then the follower it killed (0:
  // none) and how the kill went. Idempotent.
  uint32_t StopKillTimer(Status* kill_status);
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
  std::thread kill_timer_;
  std::mutex kill_mu_;
  std::condition_variable kill_cv_;
  bool kill_cancel_ = false;  // under kill_mu_
  uint32_t killed_ = 0;       // written by kill_timer_, read after it is joined
  Status kill_status_;
};

// The last `lines` lines of a file ("" if unreadable).
std::string FileTail(const std::string& path, int lines);

}  // namespace rolis::bench
