// The S3 routing table: one row per operation, naming the HTTP method, the
// resource it acts on (the service, a bucket, an object), the query
// sub-resource that selects it (or none), and its handler. Route() scans the
// rows of the request's resource in order and runs the first that matches, so
// where a request names several sub-resources the earlier row wins.
//
// The router is strict: no request reaches an operation other than the one it
// names. Every (method, sub-resource) pair S3 defines has a row; the ones
// Strata does not implement run NotImplemented (501, nothing touched). Each
// row lists the query parameters its operation reads (`params`); a request
// carrying any other parameter is refused before the handler runs: 405
// MethodNotAllowed when it is a sub-resource of some other row of the resource
// (DELETE /bucket?location), else 501 NotImplemented (PUT /bucket/key?frobnicate
// never becomes a PutObject). Accepted on every row: the presigned-URL
// parameters (X-Amz-*) and the SDKs' `x-id`. A `versionId` other than "null"
// answers NotImplemented (objects are unversioned). HEAD with a sub-resource
// runs that sub-resource's GET row (its answer without the body), never a
// handler that writes. A last row per resource (Method::kAny) answers
// MethodNotAllowed.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include <strata/core/http_server.h>

#include "s3/frontend_internal.h"

namespace strata::s3 {

enum class Method : uint8_t { kGet, kHead, kPut, kPost, kDelete, kOther, kAny };
enum class Resource : uint8_t { kService, kBucket, kObject };

// kOther for any method S3 does not serve (never kAny).
Method ParseMethod(std::string_view method);

// When the row's operation is authorized (write: any method but GET and HEAD).
enum class AuthStep : uint8_t {
  kAuthorizeThenName,  // Authorize, then name the operation (bucket and object operations)
  kNameThenAuthorize,  // name the operation, then Authorize (ListBuckets)
  kNameOnly,           // the handler authorizes (CreateBucket) or none is needed
};

struct RouteRow {
  Method method;
  Resource resource;
  const char* sub;        // query parameter that selects the row; nullptr: the fallback row
  const char* sub_value;  // nullptr: any value; else the parameter must equal it (list-type=2)
  const char* header;     // nullptr; else the request must carry it (x-amz-copy-source)
  const char* op;         // operation name: metrics label, logs, error mapping
  AuthStep auth;
  Status (Frontend::Impl::*handler)(Ctx& c);
  // Space-separated query parameters the operation reads besides `sub`
  // ("prefix max-keys"); nullptr: none.
  const char* params = nullptr;
};

// The whole table, rows of one resource together, in matching order.
std::span<const RouteRow> RouteTable();

// The row that serves a request: never nullptr (each resource ends in a kAny row).
const RouteRow* FindRoute(Method method, Resource resource,
                          const std::multimap<std::string, std::string>& query,
                          const http::Request& req);

// OK when every query parameter is one `row` reads (see above); else the
// MethodNotAllowed or NotImplemented error naming the parameter.
Status CheckQuery(const RouteRow& row, const std::multimap<std::string, std::string>& query);

// True when the row's handler only answers NotImplemented or MethodNotAllowed.
bool IsUnimplemented(const RouteRow& row);

}  // namespace strata::s3
