// liboctet_nccl's failure message (octet_nccl_last_error_message), shared
// by its sources.
#pragma once

#include <octet/octet.h>

#include <string>

namespace octet_nccl {

// Stores `message` as this thread's last failure and returns `status`.
octet_status failed(octet_status status, const std::string& message);

}  // namespace octet_nccl
