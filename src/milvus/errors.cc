// Status -> common.Status (errors.h).
#include "milvus/errors.h"

#include <charconv>
#include <string_view>

#include <fmt/format.h>

namespace strata::milvus {

namespace pbc = ::milvus::proto::common;

namespace {
constexpr std::string_view kMarker = "milvus:";
}  // namespace

Status MilvusError(int32_t code, std::string message) {
  return Status::PreconditionFailed(fmt::format("{}{}:{}", kMarker, code, message));
}

void ToProtoStatus(const Status& st, pbc::Status* out) {
  if (st.ok()) {
    out->set_error_code(pbc::Success);
    out->set_code(0);
    return;
  }
  std::string reason = st.message();
  int32_t code = kCodeUndefined;
  std::string_view m = reason;
  if (m.substr(0, kMarker.size()) == kMarker) {
    m.remove_prefix(kMarker.size());
    auto colon = m.find(':');
    int32_t c = 0;
    if (colon != std::string_view::npos &&
        std::from_chars(m.data(), m.data() + colon, c).ec == std::errc()) {
      code = c;
      reason = std::string(m.substr(colon + 1));
    }
  } else if (st.code() == StatusCode::kNotFound && reason.find("collection") != std::string::npos) {
    code = kCodeCollectionNotFound;
  } else if (st.code() == StatusCode::kInvalidArgument || st.code() == StatusCode::kAlreadyExists) {
    code = kCodeParameterInvalid;
  }
  pbc::ErrorCode legacy = pbc::UnexpectedError;
  if (code == kCodeCollectionNotFound) legacy = pbc::CollectionNotExists;
  if (code == kCodeParameterInvalid) legacy = pbc::IllegalArgument;
  if (code == kCodeIndexNotFound) legacy = pbc::IndexNotExist;
  if (st.code() == StatusCode::kNotSupported) reason = "not supported: " + reason;
  out->set_error_code(legacy);
  out->set_code(code);
  out->set_reason(reason);
  out->set_retriable(st.code() == StatusCode::kUnavailable);
}

}  // namespace strata::milvus
