// The value types of schema.h, used without collection.h.
#include <string>

#include <gtest/gtest.h>

#include <strata/vector/schema.h>

#include "testutil/testutil.h"

namespace strata::vector {
namespace {

TEST(SchemaTest, PayloadTypeNamesRoundTrip) {
  for (PayloadType t : {PayloadType::kKeyword, PayloadType::kInteger, PayloadType::kFloat,
                        PayloadType::kBool, PayloadType::kTimestamp}) {
    ASSERT_OK_AND_ASSIGN(PayloadType parsed, ParsePayloadType(PayloadTypeName(t)));
    EXPECT_EQ(t, parsed) << PayloadTypeName(t);
  }
}

TEST(SchemaTest, ParsePayloadTypeAcceptsQdrantNames) {
  struct Case {
    const char* name;
    PayloadType type;
  };
  for (const Case& c :
       {Case{"datetime", PayloadType::kTimestamp}, Case{"uuid", PayloadType::kKeyword},
        Case{"text", PayloadType::kKeyword}, Case{"INTEGER", PayloadType::kInteger},
        Case{"double", PayloadType::kFloat}, Case{"boolean", PayloadType::kBool}}) {
    ASSERT_OK_AND_ASSIGN(PayloadType parsed, ParsePayloadType(c.name));
    EXPECT_EQ(c.type, parsed) << c.name;
  }
}

TEST(SchemaTest, ParsePayloadTypeRejectsUnknownNames) {
  auto t = ParsePayloadType("geo");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(StatusCode::kInvalidArgument, t.error().code());
  EXPECT_NE(std::string::npos, t.error().message().find("\"geo\"")) << t.error().message();
}

TEST(SchemaTest, RecordsAndOptionsHaveTheirDefaults) {
  Record r;
  EXPECT_EQ(0u, r.version);
  EXPECT_TRUE(r.payload.empty());
  EXPECT_TRUE(r.vectors.empty());
  CollectionOptions o;
  EXPECT_EQ(20'000u, o.segment_rows);
  EXPECT_TRUE(o.sync);
  EXPECT_TRUE(o.background);
  PayloadFieldSchema f;
  EXPECT_EQ(PayloadType::kKeyword, f.type);
  EXPECT_FALSE(f.is_list);
}

}  // namespace
}  // namespace strata::vector
