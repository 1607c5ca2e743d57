// Parquet's footer and page headers (apache/parquet-format parquet.thrift), the
// fields we read and write, decoded from and encoded to the Thrift compact
// protocol. Unknown fields are skipped on read. Plain structs; no invariants
// beyond what Parse* validated.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <strata/core/status.h>

namespace strata::features::pq {

enum Type : int32_t {
  BOOLEAN = 0,
  INT32 = 1,
  INT64 = 2,
  INT96 = 3,
  FLOAT = 4,
  DOUBLE = 5,
  BYTE_ARRAY = 6,
  FIXED_LEN_BYTE_ARRAY = 7,
};

enum ConvertedType : int32_t {
  CT_UTF8 = 0,
  CT_MAP = 1,
  CT_MAP_KEY_VALUE = 2,
  CT_LIST = 3,
  CT_ENUM = 4,
  CT_DECIMAL = 5,
  CT_DATE = 6,
  CT_TIME_MILLIS = 7,
  CT_TIME_MICROS = 8,
  CT_TIMESTAMP_MILLIS = 9,
  CT_TIMESTAMP_MICROS = 10,
  CT_UINT_8 = 11,
  CT_UINT_16 = 12,
  CT_UINT_32 = 13,
  CT_UINT_64 = 14,
  CT_INT_8 = 15,
  CT_INT_16 = 16,
  CT_INT_32 = 17,
  CT_INT_64 = 18,
  CT_JSON = 19,
  CT_BSON = 20,
  CT_INTERVAL = 21,
};

enum Repetition : int32_t { REQUIRED = 0, OPTIONAL = 1, REPEATED = 2 };

enum Encoding : int32_t {
  PLAIN = 0,
  PLAIN_DICTIONARY = 2,
  RLE = 3,
  BIT_PACKED = 4,
  DELTA_BINARY_PACKED = 5,
  DELTA_LENGTH_BYTE_ARRAY = 6,
  DELTA_BYTE_ARRAY = 7,
  RLE_DICTIONARY = 8,
  BYTE_STREAM_SPLIT = 9,
};

enum Codec : int32_t {
  UNCOMPRESSED = 0,
  SNAPPY = 1,
  GZIP = 2,
  LZO = 3,
  BROTLI = 4,
  LZ4 = 5,
  ZSTD = 6,
  LZ4_RAW = 7,
};

enum PageType : int32_t { DATA_PAGE = 0, INDEX_PAGE = 1, DICTIONARY_PAGE = 2, DATA_PAGE_V2 = 3 };

// LogicalType union members we act on; the rest are remembered as kOther.
enum class Logical : uint8_t {
  kNone,
  kString,
  kMap,
  kList,
  kEnum,
  kDecimal,
  kDate,
  kTime,
  kTimestamp,
  kInteger,
  kNull,
  kJson,
  kBson,
  kUuid,
  kFloat16,
  kOther,
};

struct LogicalType {
  Logical kind = Logical::kNone;
  // kTimestamp / kTime
  bool utc = false;
  int unit = 1;  // 0 millis, 1 micros, 2 nanos
  // kDecimal
  int32_t scale = 0, precision = 0;
  // kInteger
  int bit_width = 64;
  bool is_signed = true;
};

struct SchemaElement {
  std::optional<int32_t> type;
  int32_t type_length = 0;
  std::optional<int32_t> repetition;
  std::string name;
  int32_t num_children = 0;
  std::optional<int32_t> converted_type;
  int32_t scale = 0, precision = 0;
  LogicalType logical;
};

struct Statistics {
  std::optional<std::string> max, min;              // legacy (signed order)
  std::optional<int64_t> null_count, distinct_count;
  std::optional<std::string> max_value, min_value;  // column-order aware
};

struct ColumnMetaData {
  int32_t type = 0;
  std::vector<int32_t> encodings;
  std::vector<std::string> path;
  int32_t codec = 0;
  int64_t num_values = 0;
  int64_t total_uncompressed_size = 0;
  int64_t total_compressed_size = 0;
  int64_t data_page_offset = 0;
  std::optional<int64_t> dictionary_page_offset;
  std::optional<Statistics> statistics;
};

struct ColumnChunk {
  std::string file_path;
  int64_t file_offset = 0;
  std::optional<ColumnMetaData> meta;
};

struct RowGroup {
  std::vector<ColumnChunk> columns;
  int64_t total_byte_size = 0;
  int64_t num_rows = 0;
};

struct KeyValue {
  std::string key, value;
};

struct FileMetaData {
  int32_t version = 1;
  std::vector<SchemaElement> schema;
  int64_t num_rows = 0;
  std::vector<RowGroup> row_groups;
  std::vector<KeyValue> key_value_metadata;
  std::string created_by;
  bool has_column_orders = false;
};

struct DataPageHeader {
  int32_t num_values = 0;
  int32_t encoding = 0;
  int32_t definition_level_encoding = RLE;
  int32_t repetition_level_encoding = RLE;
  std::optional<Statistics> statistics;
};

struct DictionaryPageHeader {
  int32_t num_values = 0;
  int32_t encoding = PLAIN;
};

struct DataPageHeaderV2 {
  int32_t num_values = 0;
  int32_t num_nulls = 0;
  int32_t num_rows = 0;
  int32_t encoding = 0;
  int32_t definition_levels_byte_length = 0;
  int32_t repetition_levels_byte_length = 0;
  bool is_compressed = true;
  std::optional<Statistics> statistics;
};

struct PageHeader {
  int32_t type = 0;
  int32_t uncompressed_page_size = 0;
  int32_t compressed_page_size = 0;
  std::optional<int32_t> crc;
  std::optional<DataPageHeader> data;
  std::optional<DictionaryPageHeader> dict;
  std::optional<DataPageHeaderV2> data_v2;
};

// Decoders: fill `out` from `size` bytes; `*consumed` (page headers) gets the
// header's length. Errors are Corruption with the offending position.
Status ParseFileMetaData(const uint8_t* data, size_t size, FileMetaData* out);
Status ParsePageHeader(const uint8_t* data, size_t size, PageHeader* out, size_t* consumed);

// Encoders append to `out`.
void SerializeFileMetaData(const FileMetaData& md, std::string* out);
void SerializePageHeader(const PageHeader& h, std::string* out);

const char* TypeName(int32_t type);
const char* EncodingName(int32_t encoding);
const char* CodecName(int32_t codec);

}  // namespace strata::features::pq
