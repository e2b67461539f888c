#include "followers.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

#include "driver.h"

namespace rolis::bench {
namespace {

// The pids a signal handler must kill: written by the main thread, read by
// the handler (lock-free atomics are async-signal-safe).
constexpr int kMaxChildren = 16;
std::atomic<pid_t> g_children[kMaxChildren];
std::atomic<bool> g_handler_installed{false};

void OnSignal(int sig) {
  for (auto& c : g_children) {
    pid_t p = c.load();
    if (p > 0) {
      kill(p, SIGKILL);
      waitpid(p, nullptr, 0);
    }
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

void Track(pid_t pid) {
  for (auto& c : g_children) {
    pid_t expected = 0;
    if (c.compare_exchange_strong(expected, pid)) return;
  }
}

void Untrack(pid_t pid) {
  for (auto& c : g_children) {
    pid_t expected = pid;
    c.compare_exchange_strong(expected, 0);
  }
}

std::string DescribeExit(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by ") + strsignal(WTERMSIG(status));
  return "stopped";
}

}  // namespace

std::string FileTail(const std::string& path, int lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  std::string out;
  for (size_t i = all.size() > static_cast<size_t>(lines) ? all.size() - lines : 0; i < all.size(); i++) {
    out += "  " + all[i] + "\n";
  }
  return out;
}

FollowerSet::FollowerSet() {
  if (!g_handler_installed.exchange(true)) {
    struct sigaction sa {};
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGHUP, &sa, nullptr);
  }
}

FollowerSet::~FollowerSet() {
  StopKillTimer(nullptr);
  Stop(std::chrono::milliseconds(0));
}

Status FollowerSet::Spawn(const std::string& binary, const FollowerSpec& spec) {
  if (children_.size() >= kMaxChildren) return Status::InvalidArgument("too many followers");
  // Everything the child needs is prepared before fork: after it, the child
  // (a copy of a multi-threaded process) calls only async-signal-safe code.
  std::vector<std::string> args = spec.args;
  args.insert(args.begin(), binary);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const cpu_set_t set = CpuSetOf(spec.cpus);
  const bool pin = !spec.cpus.empty();
  int log = open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log < 0) return Status::Internal("cannot create " + spec.log_path + ": " + strerror(errno));
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(log);
    return Status::Internal(std::string("fork: ") + strerror(errno));
  }
  if (pid == 0) {
    // The follower dies with rolis-bench, even on SIGKILL.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (pin) sched_setaffinity(0, sizeof set, &set);
    dup2(log, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(log);
  Track(pid);
  children_.push_back(Child{spec.id, pid, spec.log_path});
  return Status::OK();
}

Status FollowerSet::Kill(uint32_t id) {
  for (Child& c : children_) {
    if (c.id != id || c.exit_status >= 0) continue;
    if (kill(c.pid, SIGKILL) != 0) return Status::Internal("kill " + std::to_string(c.pid) + ": " + strerror(errno));
    int status = 0;
    waitpid(c.pid, &status, 0);
    c.exit_status = status;
    c.killed = true;
    Untrack(c.pid);
    return Status::OK();
  }
  return Status::InvalidArgument("no follower " + std::to_string(id) + " is running");
}

void FollowerSet::KillAfter(uint32_t id, std::chrono::duration<double> delay) {
  const auto at = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(delay);
  kill_timer_ = std::thread([this, id, at, delay] {
    {
      std::unique_lock<std::mutex> g(kill_mu_);
      if (kill_cv_.wait_until(g, at, [this] { return kill_cancel_; })) return;
    }
    kill_status_ = Kill(id);
    if (kill_status_.ok()) {
      killed_ = id;
      std::fprintf(stderr, "rolis-bench: killed follower %u (SIGKILL) %.2f s into the run\n", id, delay.count());
    }
  });
}

uint32_t FollowerSet::StopKillTimer(Status* kill_status) {
  {
    std::lock_guard<std::mutex> g(kill_mu_);
    kill_cancel_ = true;
  }
  kill_cv_.notify_all();
  if (kill_timer_.joinable()) kill_timer_.join();
  if (kill_status != nullptr) *kill_status = kill_status_;
  return killed_;
}

Status FollowerSet::CheckAlive() {
  for (Child& c : children_) {
    if (c.killed) continue;
    if (c.exit_status < 0) {
      int status = 0;
      if (waitpid(c.pid, &status, WNOHANG) != c.pid) continue;
      c.exit_status = status;
      Untrack(c.pid);
    }
    return Status::Internal("follower rolisd " + std::to_string(c.id) + " (pid " + std::to_string(c.pid) + ") " +
                            DescribeExit(c.exit_status) + "; the end of " + c.log_path + ":\n" +
                            FileTail(c.log_path, 15));
  }
  return Status::OK();
}

void FollowerSet::Stop(std::chrono::milliseconds grace) {
  for (Child& c : children_) {
    if (c.exit_status < 0) kill(c.pid, SIGTERM);
  }
  const auto deadline = std::chrono::steady_clock::now() + grace;
  for (Child& c : children_) {
    while (c.exit_status < 0) {
      int status = 0;
      pid_t r = waitpid(c.pid, &status, WNOHANG);
      if (r == c.pid || (r < 0 && errno == ECHILD)) {
        c.exit_status = r == c.pid ? status : 0;
        break;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        kill(c.pid, SIGKILL);
        waitpid(c.pid, &status, 0);
        c.exit_status = status;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    Untrack(c.pid);
  }
}

}  // namespace rolis::bench
