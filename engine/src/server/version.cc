// Version(): alone in this file, so that a new commit recompiles only it.
#include "rolis_version.h"  // generated at build time (CMakeLists.txt)
#include "server/server.h"

namespace rolis::server {

const char* Version() { return ROLIS_VERSION; }

}  // namespace rolis::server
