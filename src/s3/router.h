// The S3 routing table: one row per operation, naming the HTTP method, the
// resource it acts on (the service, a bucket, an object), the query
// sub-resource that selects it (or none), and its handler. Route() scans the
// rows of the request's resource in order and runs the first that matches, so
// where a request names several sub-resources the earlier row wins.
//
// Each (method, resource) that S3 serves has a fallback row (no sub-resource)
// that also takes sub-resources no row names: PUT ?retention reaches PutObject,
// as before the table. Making the router strict (NotImplemented for an unknown
// sub-resource) is a check in FindRoute before a fallback row is taken.
// A last row per resource (Method::kAny) answers MethodNotAllowed.
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
};

// The whole table, rows of one resource together, in matching order.
std::span<const RouteRow> RouteTable();

// The row that serves a request: never nullptr (each resource ends in a kAny row).
const RouteRow* FindRoute(Method method, Resource resource,
                          const std::multimap<std::string, std::string>& query,
                          const http::Request& req);

}  // namespace strata::s3
