// The one mapping from Status to Milvus's common.Status: `code` as Milvus's
// merr numbers (100 collection not found, 700 index not found, 1100 invalid
// parameter, 65535 anything else) and the legacy `error_code` enum beside it,
// since older SDK paths still read that one. The reason is the Status message.
#pragma once

#include <strata/core/status.h>

#include "common.pb.h"

namespace strata::milvus {

inline constexpr int32_t kCodeCollectionNotFound = 100;
inline constexpr int32_t kCodeCollectionNotLoaded = 101;
inline constexpr int32_t kCodePartitionNotFound = 200;
inline constexpr int32_t kCodePartitionNotLoaded = 201;
inline constexpr int32_t kCodeIndexNotFound = 700;
inline constexpr int32_t kCodeParameterInvalid = 1100;
inline constexpr int32_t kCodeUndefined = 65535;

// A Status whose message starts with this marker and a code ("milvus:101:")
// keeps that code; the frontend uses it for Milvus-specific conditions.
Status MilvusError(int32_t code, std::string message);

void ToProtoStatus(const Status& st, ::milvus::proto::common::Status* out);

}  // namespace strata::milvus
