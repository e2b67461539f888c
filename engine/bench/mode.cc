#include "mode.h"

#include "replicated_mode.h"

namespace rolis::bench {
namespace {

class Unreplicated : public Mode {
 public:
  explicit Unreplicated(const ModeOptions& options) : options_(options) {}
  const ModeOptions& options() const override { return options_; }
  CommitHook* commit_hook() override { return nullptr; }

 private:
  ModeOptions options_;
};

}  // namespace

Status MakeMode(const ModeOptions& given, std::unique_ptr<Mode>* mode) {
  ModeOptions options = given;
  if (options.mode.empty()) options.mode = options.replicas > 1 ? "replicated" : "unreplicated";
  if (options.mode == "unreplicated") {
    if (options.replicas != 1) {
      return Status::InvalidArgument("--mode=unreplicated runs one replica: drop --replicas or use --mode=replicated");
    }
    if (options.durability != "memory") {
      return Status::InvalidArgument("--durability=" + options.durability +
                                     " needs the replicated mode (--replicas=3): durability is that of its members");
    }
    options.batch_size = 0;
    *mode = std::make_unique<Unreplicated>(options);
    return Status::OK();
  }
  if (options.mode == "replicated") return MakeReplicatedMode(options, mode);
  return Status::InvalidArgument("unknown --mode '" + options.mode + "' (supported: unreplicated, replicated)");
}

}  // namespace rolis::bench
