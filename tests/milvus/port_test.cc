// One port, two protocols: a real milvus::Server on a free port answers a
// gRPC stub (HTTP/2) and raw HTTP/1.1 REST requests on the same port, keeps
// serving while a connection sits silent or sends garbage, and with
// authentication on refuses a gRPC call without a token (UNAUTHENTICATED).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <strata/core/strings.h>
#include <strata/milvus/server.h>
#include <strata/vector/collection.h>

#include "milvus.grpc.pb.h"
#include "testutil/testutil.h"

namespace strata::milvus {
namespace {

namespace pbm = ::milvus::proto::milvus;

int Connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  return fd;
}

// Sends `req` and reads until the peer closes (the requests say Connection: close).
std::string Exchange(int port, const std::string& req) {
  int fd = Connect(port);
  EXPECT_EQ(::send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

std::string Post(const std::string& path, const std::string& body,
                 const std::string& extra_headers = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + extra_headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

class MilvusPortServerTest : public ::testing::Test {
 protected:
  void Start(AuthOptions auth) {
    vector::CollectionOptions o;
    o.background = false;
    o.sync = false;
    auto m = vector::CollectionManager::Open(dir_.path() + "/vector", o);
    ASSERT_OK(m);
    mgr_ = std::move(*m);
    ServerOptions so;
    so.address = "127.0.0.1:0";
    so.http.threads = 2;
    so.auth = std::move(auth);
    srv_ = std::make_unique<Server>(mgr_.get(), so);
    ASSERT_OK(srv_->Start());
    ASSERT_GT(srv_->port(), 0);
  }
  std::unique_ptr<pbm::MilvusService::Stub> Stub() {
    auto ch = grpc::CreateChannel("127.0.0.1:" + std::to_string(srv_->port()),
                                  grpc::InsecureChannelCredentials());
    return pbm::MilvusService::NewStub(ch);
  }

  ::strata::testing::TempDir dir_;
  std::unique_ptr<vector::CollectionManager> mgr_;
  std::unique_ptr<Server> srv_;
};

TEST_F(MilvusPortServerTest, GrpcAndRestOnOnePort) {
  Start({});
  // A silent connection and one with a partial HTTP/2 preface stay pending
  // without holding up the others.
  int silent = Connect(srv_->port());
  int partial = Connect(srv_->port());
  ASSERT_EQ(::send(partial, "PRI * HT", 8, 0), 8);

  auto stub = Stub();
  grpc::ClientContext ctx;
  pbm::CheckHealthRequest hreq;
  pbm::CheckHealthResponse hresp;
  ASSERT_TRUE(stub->CheckHealth(&ctx, hreq, &hresp).ok());
  EXPECT_TRUE(hresp.ishealthy());

  const std::string create = Exchange(
      srv_->port(),
      Post("/v2/vectordb/collections/create", R"({"collectionName":"shared","dimension":3})"));
  EXPECT_NE(create.find("200 OK"), std::string::npos) << create;
  EXPECT_NE(create.find(R"("code":0)"), std::string::npos) << create;
  // What REST created, gRPC sees.
  grpc::ClientContext ctx2;
  pbm::HasCollectionRequest has;
  has.set_collection_name("shared");
  pbm::BoolResponse b;
  ASSERT_TRUE(stub->HasCollection(&ctx2, has, &b).ok());
  EXPECT_TRUE(b.value());
  // Garbage is an HTTP/1.1 400 and the port keeps serving.
  const std::string bad = Exchange(srv_->port(), "NOT-HTTP\r\n\r\n");
  EXPECT_NE(bad.find("400"), std::string::npos) << bad;
  const std::string list = Exchange(srv_->port(), Post("/v2/vectordb/collections/list", "{}"));
  EXPECT_NE(list.find(R"("data":["shared"])"), std::string::npos) << list;
  ::close(silent);
  ::close(partial);
}

TEST_F(MilvusPortServerTest, AuthRefusesGrpcWithoutTokenAndAcceptsAGoodOne) {
  AuthOptions a;
  a.enabled = true;
  a.verify_password = [](std::string_view u, std::string_view p) { return u == "ak" && p == "sk"; };
  Start(std::move(a));
  auto stub = Stub();
  {
    grpc::ClientContext ctx;
    pbm::ShowCollectionsRequest req;
    pbm::ShowCollectionsResponse resp;
    grpc::Status st = stub->ShowCollections(&ctx, req, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(st.error_message(), "missing authorization in header");
  }
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", Base64Encode("ak:wrong"));
    pbm::ShowCollectionsRequest req;
    pbm::ShowCollectionsResponse resp;
    EXPECT_EQ(stub->ShowCollections(&ctx, req, &resp).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", Base64Encode("ak:sk"));
    pbm::ShowCollectionsRequest req;
    pbm::ShowCollectionsResponse resp;
    EXPECT_TRUE(stub->ShowCollections(&ctx, req, &resp).ok());
  }
  const std::string refused = Exchange(srv_->port(), Post("/v2/vectordb/collections/list", "{}"));
  EXPECT_NE(refused.find("401"), std::string::npos) << refused;
  EXPECT_NE(refused.find("1800"), std::string::npos) << refused;
  const std::string ok = Exchange(
      srv_->port(), Post("/v2/vectordb/collections/list", "{}", "Authorization: Bearer ak:sk\r\n"));
  EXPECT_NE(ok.find(R"("code":0)"), std::string::npos) << ok;
}

}  // namespace
}  // namespace strata::milvus
