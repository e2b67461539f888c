#include "mode.h"

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

Status MakeMode(const ModeOptions& options, std::unique_ptr<Mode>* mode) {
  if (options.mode == "unreplicated") {
    if (options.replicas != 1) {
      return Status::InvalidArgument("--replicas > 1 needs the replicated mode, which is not built yet");
    }
    *mode = std::make_unique<Unreplicated>(options);
    return Status::OK();
  }
  return Status::InvalidArgument("unknown --mode '" + options.mode + "' (supported: unreplicated)");
}

}  // namespace rolis::bench
