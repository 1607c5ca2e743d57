// The S3 frontend's test fixture: a LocalEngine in a temporary directory, a
// Frontend over it, and requests signed with core's SigV4 signer (as the S3
// client signs them) served through the real HTTP parser without a socket
// (http::ServeInMemory). Shared by the frontend's tests.
#pragma once

#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <strata/core/clock.h>
#include <strata/core/http_server.h>
#include <strata/core/sigv4.h>
#include <strata/objstore/local_engine.h>
#include <strata/s3/frontend.h>

#include "testutil/testutil.h"

namespace strata::s3 {
namespace s3test {

using Headers = std::vector<std::pair<std::string, std::string>>;

inline constexpr char kAk[] = "AKIDFRONTENDTEST";
inline constexpr char kSecret[] = "frontend-test-secret";

// Text of every <tag>...</tag> in document order.
inline std::vector<std::string> All(const std::string& xml, const std::string& tag) {
  std::vector<std::string> out;
  const std::regex re("<" + tag + ">([^<]*)</" + tag + ">");
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), re); it != std::sregex_iterator();
       ++it)
    out.push_back((*it)[1].str());
  return out;
}

// Text of the first <tag>...</tag>; "" if none.
inline std::string First(const std::string& xml, const std::string& tag) {
  auto v = All(xml, tag);
  return v.empty() ? std::string() : v.front();
}

// The Prefix of each CommonPrefixes element.
inline std::vector<std::string> CommonPrefixes(const std::string& xml) {
  std::vector<std::string> out;
  const std::regex re("<CommonPrefixes><Prefix>([^<]*)</Prefix></CommonPrefixes>");
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), re); it != std::sregex_iterator();
       ++it)
    out.push_back((*it)[1].str());
  return out;
}

inline std::string Header(const http::RecordedResponse& r, std::string_view name) {
  return std::string(r.Header(name).value_or(""));
}

// A LocalEngine for a test, in `dir` (no fsync: durability is the crash tests').
inline Result<std::unique_ptr<objstore::LocalEngine>> OpenTestEngine(const std::string& dir) {
  objstore::EngineOptions eo;
  eo.data_dir = dir;
  eo.sync = false;
  return objstore::LocalEngine::Open(eo);
}

// How SendSigned signs: an empty access key sends the request anonymously.
struct Signer {
  std::string access_key = kAk;
  std::string secret = kSecret;
  std::string region = "us-east-1";
  std::string service = "s3";
  bool unsigned_payload = false;
};

// One request to `f`, signed as a client signs it (Host 127.0.0.1:9000,
// Content-Length on bodies, PUT and POST), through the real HTTP parser.
inline http::RecordedResponse SendSigned(Frontend* f, const std::string& method,
                                         const std::string& target, Headers h,
                                         const std::string& body, const Signer& s = {}) {
  h.emplace_back("Host", "127.0.0.1:9000");
  if (!s.access_key.empty()) {
    const size_t q = target.find('?');
    sigv4::SigningParams sp;
    sp.credentials.access_key = s.access_key;
    sp.credentials.secret_key = s.secret;
    sp.region = s.region;
    sp.service = s.service;
    sp.now_ns = NowUnixNanos();
    const std::string payload =
        s.unsigned_payload ? std::string(sigv4::kUnsignedPayload) : sigv4::PayloadSha256Hex(body);
    sigv4::SignRequest(method, target.substr(0, q),
                       q == std::string::npos ? "" : target.substr(q + 1), h, payload, sp);
  }
  if (!body.empty() || method == "PUT" || method == "POST")
    h.emplace_back("Content-Length", std::to_string(body.size()));
  return http::ServeInMemory(http::FrontendHandler(f), http::FormatRequest(method, target, h, body),
                             http::WithFrontendErrors(http::ServerOptions{}, f));
}

class FrontendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(engine_, OpenTestEngine(dir_.Join("data")));
    fo_.users.push_back(User{"alice", kAk, kSecret, false});
    Reopen();
  }

  struct Call {
    std::string method = "GET";
    std::string target = "/";
    Headers headers;
    std::string body;
    std::string access_key = kAk;
    std::string secret = kSecret;
    bool unsigned_payload = false;
  };

  http::RecordedResponse Send(Call call) {
    Signer s;
    s.access_key = call.access_key;
    s.secret = call.secret;
    s.unsigned_payload = call.unsigned_payload;
    return SendSigned(frontend_.get(), call.method, call.target, std::move(call.headers), call.body,
                      s);
  }

  http::RecordedResponse Get(const std::string& target, Headers h = {}) {
    return Send({"GET", target, std::move(h)});
  }
  http::RecordedResponse Put(const std::string& target, std::string body, Headers h = {}) {
    return Send({"PUT", target, std::move(h), std::move(body)});
  }

  void CreateBucket(const std::string& name) {
    auto r = Put("/" + name, "");
    ASSERT_EQ(r.status, 200) << r.body;
  }

  // Checks the S3 error document: the code, a message, the resource and the
  // request id (the same as the x-amz-request-id header).
  static void ExpectError(const http::RecordedResponse& r, int status, const std::string& code,
                          const std::string& resource) {
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(First(r.body, "Code"), code) << r.body;
    EXPECT_FALSE(First(r.body, "Message").empty()) << r.body;
    EXPECT_EQ(First(r.body, "Resource"), resource) << r.body;
    EXPECT_FALSE(First(r.body, "RequestId").empty()) << r.body;
    EXPECT_EQ(First(r.body, "RequestId"), Header(r, "x-amz-request-id"));
    EXPECT_NE(r.body.find("<Error>"), std::string::npos) << r.body;
  }

  // Options of the frontend built in SetUp (Reopen applies changes).
  FrontendOptions fo_;
  void Reopen() { frontend_ = std::make_unique<Frontend>(engine_.get(), fo_); }

  testing::TempDir dir_;
  std::unique_ptr<objstore::LocalEngine> engine_;
  std::unique_ptr<Frontend> frontend_;
};

}  // namespace s3test
}  // namespace strata::s3
