// Snapshots beyond create and list (download as a tar archive, delete,
// recover from a file location, multipart upload, checksums, damaged and
// hostile archives), telemetry, and the timeout / consistency parameters.
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <strata/core/checksum.h>

#include "qdrant/qdrant_fixture.h"

namespace strata::qdrant {
namespace {

namespace fs = std::filesystem;

class QdrantSnapshotTest : public QdrantHandlerTest {
 protected:
  void SetUp() override {
    QdrantHandlerTest::SetUp();
    ExpectOk(Call("PUT", "/collections/s", R"({"vectors": {"size": 2, "distance": "Dot"},
        "sparse_vectors": {"t": {}}})"));
    ExpectOk(Call("PUT", "/collections/s/points?wait=true", R"({"points": [
        {"id": 1, "vector": {"": [1, 0], "t": {"indices": [3], "values": [1]}}, "payload": {"a": 1}},
        {"id": 2, "vector": {"": [0, 1]}, "payload": {"a": 2}}]})"));
  }

  std::string Snap() {
    json s = ExpectOk(Call("POST", "/collections/s/snapshots"));
    return s["name"].get<std::string>();
  }

  std::string Root() const { return manager_->root(); }

  // A multipart/form-data body with `bytes` in the "snapshot" field.
  static std::string Multipart(const std::string& bytes, const std::string& field = "snapshot") {
    return "--XyZ\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhello\r\n"
           "--XyZ\r\nContent-Disposition: form-data; name=\"" +
           field + "\"; filename=\"s.tar\"\r\nContent-Type: application/octet-stream\r\n\r\n" +
           bytes + "\r\n--XyZ--\r\n";
  }
  Answer Upload(const std::string& target, const std::string& body) {
    return Call("POST", target, body, {{"Content-Type", "multipart/form-data; boundary=XyZ"}});
  }
  size_t Count(const std::string& c) {
    return ExpectOk(Call("POST", "/collections/" + c + "/points/count", "{}"))["count"]
        .get<size_t>();
  }
};

TEST_F(QdrantSnapshotTest, DownloadUploadAndRecover) {
  const std::string snap = Snap();
  Answer dl = Call("GET", "/collections/s/snapshots/" + snap);
  ASSERT_EQ(dl.status, 200);
  EXPECT_EQ(dl.content_type, "application/octet-stream");
  ASSERT_GT(dl.text.size(), 1024u);
  EXPECT_EQ(dl.text.substr(257, 5), "ustar");
  // The collection changes; an upload of the archive brings it back.
  ExpectOk(Call("POST", "/collections/s/points/delete?wait=true", R"({"points": [1, 2]})"));
  EXPECT_EQ(Count("s"), 0u);
  ExpectOk(Upload("/collections/s/snapshots/upload?priority=snapshot", Multipart(dl.text)));
  EXPECT_EQ(Count("s"), 2u);
  json r = ExpectOk(Call("POST", "/collections/s/points/query",
                         R"({"query": {"indices": [3], "values": [2]}, "using": "t"})"));
  ASSERT_EQ(r["points"].size(), 1u);
  EXPECT_EQ(r["points"][0]["id"], 1);
  // Upload into a new name, with the right checksum.
  const std::string sum = [&] {
    std::string raw = Sha256(dl.text), hex;
    for (unsigned char c : raw) hex += fmt::format("{:02x}", c);
    return hex;
  }();
  ExpectOk(Upload("/collections/copy/snapshots/upload?checksum=" + sum, Multipart(dl.text)));
  EXPECT_EQ(Count("copy"), 2u);
  ExpectError(Upload("/collections/copy2/snapshots/upload?checksum=" + std::string(64, '0'),
                     Multipart(dl.text)),
              400, "checksum");
  ExpectError(Upload("/collections/copy2/snapshots/upload", Multipart(dl.text, "file")), 400,
              "snapshot");
  ExpectError(Upload("/collections/copy2/snapshots/upload?priority=replica", Multipart(dl.text)),
              400, "replica");
  EXPECT_EQ(Call("GET", "/collections/copy2").status, 404);
  // Recover from the archive on disk (a file:// location under the snapshot directory).
  const std::string tar = Root() + "/.snapshots/s/" + snap + ".tar";
  ASSERT_TRUE(fs::exists(tar));
  ExpectOk(Call("PUT", "/collections/rec/snapshots/recover",
                json{{"location", "file://" + tar}}.dump()));
  EXPECT_EQ(Count("rec"), 2u);
  ExpectError(Call("PUT", "/collections/rec/snapshots/recover",
                   json{{"location", "file:///etc/passwd"}}.dump()),
              400, "outside");
  ExpectError(Call("PUT", "/collections/rec/snapshots/recover",
                   R"({"location": "https://example.com/a.snapshot"})"),
              400, "upload");
  // Delete: gone from the list, 404 after.
  EXPECT_EQ(ExpectOk(Call("DELETE", "/collections/s/snapshots/" + snap)), true);
  EXPECT_TRUE(ExpectOk(Call("GET", "/collections/s/snapshots")).empty());
  EXPECT_EQ(Call("GET", "/collections/s/snapshots/" + snap).status, 404);
  EXPECT_EQ(Call("DELETE", "/collections/s/snapshots/" + snap).status, 404);
  EXPECT_EQ(Call("GET", "/collections/s/snapshots/..%2F..%2Fetc").status, 400);
}

TEST_F(QdrantSnapshotTest, DamagedArchivesChangeNothing) {
  const std::string snap = Snap();
  Answer dl = Call("GET", "/collections/s/snapshots/" + snap);
  ASSERT_EQ(dl.status, 200);
  // Truncated: the existing collection stays as it was.
  ExpectOk(Call("POST", "/collections/s/points/delete?wait=true", R"({"points": [2]})"));
  Answer a = Upload("/collections/s/snapshots/upload", Multipart(dl.text.substr(0, 1500)));
  EXPECT_GE(a.status, 400) << a.text;
  EXPECT_EQ(Count("s"), 1u);
  // A header with a bad checksum.
  std::string bad = dl.text;
  bad[10] ^= 0x5a;
  a = Upload("/collections/s/snapshots/upload", Multipart(bad));
  EXPECT_GE(a.status, 400) << a.text;
  EXPECT_EQ(Count("s"), 1u);
  // An entry escaping the directory.
  std::string evil(512, '\0');
  const std::string name = "../escape";
  std::copy(name.begin(), name.end(), evil.begin());
  std::copy_n("0000644", 7, evil.begin() + 100);
  std::copy_n("00000000000", 11, evil.begin() + 124);
  evil[156] = '0';
  std::copy_n("ustar", 5, evil.begin() + 257);
  std::fill_n(evil.begin() + 148, 8, ' ');
  unsigned sum = 0;
  for (char c : evil) sum += static_cast<unsigned char>(c);
  std::string oct = fmt::format("{:06o}", sum);
  std::copy(oct.begin(), oct.end(), evil.begin() + 148);
  evil[154] = '\0';
  evil += std::string(1024, '\0');
  ExpectError(Upload("/collections/evil/snapshots/upload", Multipart(evil)), 400, "unsafe path");
  EXPECT_FALSE(fs::exists(Root() + "/escape"));
  EXPECT_EQ(Call("GET", "/collections/evil").status, 404);
}

TEST_F(QdrantSnapshotTest, TelemetryTimeoutAndConsistency) {
  json t = ExpectOk(Call("GET", "/telemetry"));
  EXPECT_EQ(t["collections"]["number_of_collections"], 1);
  EXPECT_EQ(t["collections"]["points"], 2);
  EXPECT_EQ(t["collections"]["collections"][0]["sparse_vectors"], 1);
  const std::string q = R"({"query": [1, 0], "limit": 1})";
  ExpectOk(Call("POST", "/collections/s/points/query?timeout=10&consistency=majority", q));
  ExpectOk(Call("POST", "/collections/s/points/query?consistency=1", q));
  ExpectError(Call("POST", "/collections/s/points/query?consistency=2", q), 400, "replicas");
  ExpectError(Call("POST", "/collections/s/points/query?consistency=strong", q), 400,
              "consistency");
  ExpectError(Call("POST", "/collections/s/points/query?timeout=0", q), 400, "timeout");
  ExpectError(Call("POST", "/collections/s/points/query?timeout=1.5", q), 400, "timeout");
  ExpectError(Call("POST", "/collections/s/points/query", R"({"query": [1, 0], "timeout": 3})"),
              400, "URL parameter");
  // A request past its timeout answers Qdrant's timeout error (408). The
  // delay is injected through HandlerOptions::inject_delay (no sleep):
  // "after" makes the operation itself run long, "before" makes the request
  // wait past its timeout before it runs, and then a write is not applied.
  std::string stage_to_delay;
  HandlerOptions o;
  o.inject_delay = [&stage_to_delay](std::string_view stage) {
    return stage == stage_to_delay ? 2.5 : 0.0;
  };
  Open(o);
  stage_to_delay = "after";
  ExpectError(Call("POST", "/collections/s/points/query?timeout=2", q), 408, "Timeout error");
  ExpectOk(Call("POST", "/collections/s/points/query?timeout=3", q));  // 2.5 s < 3 s
  ExpectOk(Call("POST", "/collections/s/points/query", q));            // no timeout asked
  stage_to_delay = "before";
  ExpectError(Call("PUT", "/collections/s/points?wait=true&timeout=1",
                   R"({"points": [{"id": 3, "vector": {"": [1, 1]}}]})"),
              408, "nothing was applied");
  ExpectError(Call("POST", "/collections/s/points/delete?timeout=1", R"({"points": [1]})"), 408,
              "nothing was applied");
  stage_to_delay.clear();
  json c = ExpectOk(Call("POST", "/collections/s/points/count", "{}"));
  EXPECT_EQ(c["count"], 2) << "a write refused with 408 before it ran was applied";
  ExpectOk(Call("GET", "/collections/s/points/1"));
}

// Qdrant's `ordering` write parameter: one node orders every write through
// its WAL, so weak, medium and strong are all kept; anything else is a 400
// that changes nothing.
TEST_F(QdrantSnapshotTest, WriteOrdering) {
  for (const char* o : {"weak", "medium", "strong"}) {
    ExpectOk(Call("PUT", std::string("/collections/s/points?wait=true&ordering=") + o,
                  R"({"points": [{"id": 7, "vector": {"": [1, 1]}}]})"));
  }
  ExpectOk(Call("POST", "/collections/s/points/payload?ordering=strong",
                R"({"payload": {"b": 1}, "points": [7]})"));
  ExpectError(Call("PUT", "/collections/s/points?wait=true&ordering=strongest",
                   R"({"points": [{"id": 8, "vector": {"": [1, 1]}}]})"),
              400, "ordering must be weak, medium or strong");
  ExpectError(Call("POST", "/collections/s/points/delete?ordering=", R"({"points": [7]})"), 400,
              "ordering");
  json c = ExpectOk(Call("POST", "/collections/s/points/count", "{}"));
  EXPECT_EQ(c["count"], 3);  // 1, 2 and 7: neither refused write was applied
}

}  // namespace
}  // namespace strata::qdrant
