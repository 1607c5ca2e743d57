#include "features/parquet/format.h"

#include "features/parquet/thrift_compact.h"

namespace strata::features::pq {

using thrift::Reader;
using thrift::Writer;

namespace {

// Reads a list<i32>.
void ReadI32List(Reader& r, std::vector<int32_t>* out) {
  uint8_t et;
  const uint32_t n = r.ReadListHeader(&et);
  if (n > 0 && et != thrift::kI32) {
    for (uint32_t i = 0; i < n && r.ok(); ++i) r.Skip(et);
    return;
  }
  out->reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) out->push_back(r.ReadI32());
}

void ReadStringList(Reader& r, std::vector<std::string>* out) {
  uint8_t et;
  const uint32_t n = r.ReadListHeader(&et);
  if (n > 0 && et != thrift::kBinary) {
    r.Fail("expected a list of strings");
    return;
  }
  out->reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) out->push_back(r.ReadString());
}

// An empty struct (a union member's marker) or any struct we ignore.
void SkipStruct(Reader& r) { r.Skip(thrift::kStruct); }

void ReadTimeUnit(Reader& r, int* unit) {
  r.StructBegin();
  int16_t id;
  uint8_t t;
  while (r.NextField(&id, &t)) {
    if (id >= 1 && id <= 3 && t == thrift::kStruct) {
      *unit = id - 1;
      SkipStruct(r);
    } else {
      r.Skip(t);
    }
  }
  r.StructEnd();
}

void ReadLogicalType(Reader& r, LogicalType* lt) {
  r.StructBegin();
  int16_t id;
  uint8_t t;
  while (r.NextField(&id, &t)) {
    if (t != thrift::kStruct) {
      r.Skip(t);
      continue;
    }
    switch (id) {
      case 1: lt->kind = Logical::kString; SkipStruct(r); break;
      case 2: lt->kind = Logical::kMap; SkipStruct(r); break;
      case 3: lt->kind = Logical::kList; SkipStruct(r); break;
      case 4: lt->kind = Logical::kEnum; SkipStruct(r); break;
      case 5: {
        lt->kind = Logical::kDecimal;
        r.StructBegin();
        int16_t fid;
        uint8_t ft;
        while (r.NextField(&fid, &ft)) {
          if (fid == 1 && ft == thrift::kI32) lt->scale = r.ReadI32();
          else if (fid == 2 && ft == thrift::kI32) lt->precision = r.ReadI32();
          else r.Skip(ft);
        }
        r.StructEnd();
        break;
      }
      case 6: lt->kind = Logical::kDate; SkipStruct(r); break;
      case 7:
      case 8: {
        lt->kind = id == 7 ? Logical::kTime : Logical::kTimestamp;
        r.StructBegin();
        int16_t fid;
        uint8_t ft;
        while (r.NextField(&fid, &ft)) {
          if (fid == 1 && (ft == thrift::kTrue || ft == thrift::kFalse)) lt->utc = r.ReadBool(ft);
          else if (fid == 2 && ft == thrift::kStruct) ReadTimeUnit(r, &lt->unit);
          else r.Skip(ft);
        }
        r.StructEnd();
        break;
      }
      case 10: {
        lt->kind = Logical::kInteger;
        r.StructBegin();
        int16_t fid;
        uint8_t ft;
        while (r.NextField(&fid, &ft)) {
          if (fid == 1 && ft == thrift::kByte) lt->bit_width = r.ReadByte();
          else if (fid == 2 && (ft == thrift::kTrue || ft == thrift::kFalse)) lt->is_signed = r.ReadBool(ft);
          else r.Skip(ft);
        }
        r.StructEnd();
        break;
      }
      case 11: lt->kind = Logical::kNull; SkipStruct(r); break;
      case 12: lt->kind = Logical::kJson; SkipStruct(r); break;
      case 13: lt->kind = Logical::kBson; SkipStruct(r); break;
      case 14: lt->kind = Logical::kUuid; SkipStruct(r); break;
      case 15: lt->kind = Logical::kFloat16; SkipStruct(r); break;
      default: lt->kind = Logical::kOther; SkipStruct(r); break;
    }
  }
  r.StructEnd();
}

void ReadSchemaElement(Reader& r, SchemaElement* e) {
  r.StructBegin();
  int16_t id;
  uint8_t t;
  while (r.NextField(&id, &t)) {
    switch (id) {
      case 1: if (t == thrift::kI32) { e->type = r.ReadI32(); continue; } break;
      case 2: if (t == thrift::kI32) { e->type_length = r.ReadI32(); continue; } break;
      case 3: if (t == thrift::kI32) { e->repetition = r.ReadI32(); continue; } break;
      case 4: if (t == thrift::kBinary) { e->name = r.ReadString(); continue; } break;
      case 5: if (t == thrift::kI32) { e->num_children = r.ReadI32(); continue; } break;
      case 6: if (t == thrift::kI32) { e->converted_type = r.ReadI32(); continue; } break;
      case 7: if (t == thrift::kI32) { e->scale = r.ReadI32(); continue; } break;
      case 8: if (t == thrift::kI32) { e->precision = r.ReadI32(); continue; } break;
      case 10: if (t == thrift::kStruct) { ReadLogicalType(r, &e->logical); continue; } break;
      default: break;
    }
    r.Skip(t);
  }
  r.StructEnd();
}

void ReadStatistics(Reader& r, Statistics* s) {
  r.StructBegin();
  int16_t id;
  uint8_t t;
  while (r.NextField(&id, &t)) {
    if (t == thrift::kBinary && (id == 1 || id == 2 || id == 5 || id == 6)) {
      std::string v = r.ReadString();
      if (id == 1) s->max = std::move(v);
      else if (id == 2) s->min = std::move(v);
      else if (id == 5) s->max_value = std::move(v);
      else s->min_value = std::move(v);
    } else if (t == thrift::kI64 && id == 3) {
      s->null_count = r.ReadI64();
    } else if (t == thrift::kI64 && id == 4) {
      s->distinct_count = r.ReadI64();
    } else {
      r.Skip(t);
    }
  }
  r.StructEnd();
}

void ReadColumnMetaData(Reader& r, ColumnMetaData* m) {
  r.StructBegin();
  int16_t id;
  uint8_t t;
  while (r.NextField(&id, &t)) {
    switch (id) {
      case 1: if (t == thrift::kI32) { m->type = r.ReadI32(); continue; } break;
      case 2: if (t == thrift::kList) { ReadI32List(r, &m->encodings); continue; } break;
      case 3: if (t == thrift::kList) { ReadStringList(r, &m->path); continue; } break;
      case 4: if (t == thrift::kI32) { m->codec = r.ReadI32(); continue; } break;
      case 5: if (t == thrift::kI64) { m->num_values = r.ReadI64(); continue; } break;
      case 6: if (t == thrift::kI64) { m->total_uncompressed_size = r.ReadI64(); continue; } break;
      case 7: if (t == thrift::kI64) { m->total_compressed_size = r.ReadI64(); continue; } break;
      case 9: if (t == thrift::kI64) { m->data_page_offset = r.ReadI64(); continue; } break;
      case 11: if (t == thrift::kI64) { m->dictionary_page_offset = r.ReadI64(); continue; } break;
      case 12:
        if (t == thrift::kStruct) {
          m->statistics.emplace();
          ReadStatistics(r, &*m->statistics);
          continue;
        }
        break;
      default: break;
    }
    r.Skip(t);
  }
  r.StructEnd();
}

void ReadColumnChunk(Reader& r, ColumnChunk* c) {
  r.StructBegin();
  int16_t id;
  uint8_t t;
  while (r.NextField(&id, &t)) {
    if (id == 1 && t == thrift::kBinary) {
      c->file_path = r.ReadString();
    } else if (id == 2 && t == thrift::kI64) {
      c->file_offset = r.ReadI64();
    } else if (id == 3 && t == thrift::kStruct) {
      c->meta.emplace();
      ReadColumnMetaData(r, &*c->meta);
    } else {
      r.Skip(t);
    }
  }
  r.StructEnd();
}

void ReadRowGroup(Reader& r, RowGroup* g) {
  r.StructBegin();
  int16_t id;
  uint8_t t;
  while (r.NextField(&id, &t)) {
    if (id == 1 && t == thrift::kList) {
      uint8_t et;
      const uint32_t n = r.ReadListHeader(&et);
      if (n > 0 && et != thrift::kStruct) {
        r.Fail("row group columns are not structs");
        break;
      }
      g->columns.resize(n);
      for (uint32_t i = 0; i < n && r.ok(); ++i) ReadColumnChunk(r, &g->columns[i]);
    } else if (id == 2 && t == thrift::kI64) {
      g->total_byte_size = r.ReadI64();
    } else if (id == 3 && t == thrift::kI64) {
      g->num_rows = r.ReadI64();
    } else {
      r.Skip(t);
    }
  }
  r.StructEnd();
}

void WriteStatistics(Writer& w, int16_t field, const Statistics& s) {
  w.FieldStructBegin(field);
  if (s.max) w.FieldBinary(1, *s.max);
  if (s.min) w.FieldBinary(2, *s.min);
  if (s.null_count) w.FieldI64(3, *s.null_count);
  if (s.distinct_count) w.FieldI64(4, *s.distinct_count);
  if (s.max_value) w.FieldBinary(5, *s.max_value);
  if (s.min_value) w.FieldBinary(6, *s.min_value);
  w.StructEnd();
}

void WriteLogicalType(Writer& w, const LogicalType& lt) {
  w.FieldStructBegin(10);
  switch (lt.kind) {
    case Logical::kString: w.FieldStructBegin(1); w.StructEnd(); break;
    case Logical::kDate: w.FieldStructBegin(6); w.StructEnd(); break;
    case Logical::kTimestamp:
      w.FieldStructBegin(8);
      w.FieldBool(1, lt.utc);
      w.FieldStructBegin(2);
      w.FieldStructBegin(static_cast<int16_t>(lt.unit + 1));
      w.StructEnd();
      w.StructEnd();
      w.StructEnd();
      break;
    case Logical::kInteger:
      w.FieldStructBegin(10);
      w.FieldI8(1, static_cast<int8_t>(lt.bit_width));
      w.FieldBool(2, lt.is_signed);
      w.StructEnd();
      break;
    default: break;
  }
  w.StructEnd();
}

}  // namespace

Status ParseFileMetaData(const uint8_t* data, size_t size, FileMetaData* md) {
  Reader r(data, size);
  r.StructBegin();
  int16_t id;
  uint8_t t;
  bool saw_schema = false, saw_rows = false, saw_groups = false;
  while (r.NextField(&id, &t)) {
    if (id == 1 && t == thrift::kI32) {
      md->version = r.ReadI32();
    } else if (id == 2 && t == thrift::kList) {
      uint8_t et;
      const uint32_t n = r.ReadListHeader(&et);
      if (n > 0 && et != thrift::kStruct) {
        r.Fail("schema elements are not structs");
        break;
      }
      md->schema.resize(n);
      for (uint32_t i = 0; i < n && r.ok(); ++i) ReadSchemaElement(r, &md->schema[i]);
      saw_schema = true;
    } else if (id == 3 && t == thrift::kI64) {
      md->num_rows = r.ReadI64();
      saw_rows = true;
    } else if (id == 4 && t == thrift::kList) {
      uint8_t et;
      const uint32_t n = r.ReadListHeader(&et);
      if (n > 0 && et != thrift::kStruct) {
        r.Fail("row groups are not structs");
        break;
      }
      md->row_groups.resize(n);
      for (uint32_t i = 0; i < n && r.ok(); ++i) ReadRowGroup(r, &md->row_groups[i]);
      saw_groups = true;
    } else if (id == 5 && t == thrift::kList) {
      uint8_t et;
      const uint32_t n = r.ReadListHeader(&et);
      for (uint32_t i = 0; i < n && r.ok(); ++i) {
        if (et != thrift::kStruct) {
          r.Skip(et);
          continue;
        }
        KeyValue kv;
        r.StructBegin();
        int16_t fid;
        uint8_t ft;
        while (r.NextField(&fid, &ft)) {
          if (fid == 1 && ft == thrift::kBinary) kv.key = r.ReadString();
          else if (fid == 2 && ft == thrift::kBinary) kv.value = r.ReadString();
          else r.Skip(ft);
        }
        r.StructEnd();
        md->key_value_metadata.push_back(std::move(kv));
      }
    } else if (id == 6 && t == thrift::kBinary) {
      md->created_by = r.ReadString();
    } else if (id == 7 && t == thrift::kList) {
      md->has_column_orders = true;
      r.Skip(t);
    } else {
      r.Skip(t);
    }
  }
  r.StructEnd();
  if (!r.ok()) return r.status();
  if (!saw_schema || !saw_rows || !saw_groups) {
    return Status::Corruption("Parquet footer lacks a required field (schema, num_rows or row_groups)");
  }
  return Status::Ok();
}

Status ParsePageHeader(const uint8_t* data, size_t size, PageHeader* h, size_t* consumed) {
  Reader r(data, size);
  r.StructBegin();
  int16_t id;
  uint8_t t;
  while (r.NextField(&id, &t)) {
    if (id == 1 && t == thrift::kI32) {
      h->type = r.ReadI32();
    } else if (id == 2 && t == thrift::kI32) {
      h->uncompressed_page_size = r.ReadI32();
    } else if (id == 3 && t == thrift::kI32) {
      h->compressed_page_size = r.ReadI32();
    } else if (id == 4 && t == thrift::kI32) {
      h->crc = r.ReadI32();
    } else if (id == 5 && t == thrift::kStruct) {
      DataPageHeader d;
      r.StructBegin();
      int16_t fid;
      uint8_t ft;
      while (r.NextField(&fid, &ft)) {
        if (fid == 1 && ft == thrift::kI32) d.num_values = r.ReadI32();
        else if (fid == 2 && ft == thrift::kI32) d.encoding = r.ReadI32();
        else if (fid == 3 && ft == thrift::kI32) d.definition_level_encoding = r.ReadI32();
        else if (fid == 4 && ft == thrift::kI32) d.repetition_level_encoding = r.ReadI32();
        else r.Skip(ft);
      }
      r.StructEnd();
      h->data = d;
    } else if (id == 7 && t == thrift::kStruct) {
      DictionaryPageHeader d;
      r.StructBegin();
      int16_t fid;
      uint8_t ft;
      while (r.NextField(&fid, &ft)) {
        if (fid == 1 && ft == thrift::kI32) d.num_values = r.ReadI32();
        else if (fid == 2 && ft == thrift::kI32) d.encoding = r.ReadI32();
        else r.Skip(ft);
      }
      r.StructEnd();
      h->dict = d;
    } else if (id == 8 && t == thrift::kStruct) {
      DataPageHeaderV2 d;
      r.StructBegin();
      int16_t fid;
      uint8_t ft;
      while (r.NextField(&fid, &ft)) {
        if (fid == 1 && ft == thrift::kI32) d.num_values = r.ReadI32();
        else if (fid == 2 && ft == thrift::kI32) d.num_nulls = r.ReadI32();
        else if (fid == 3 && ft == thrift::kI32) d.num_rows = r.ReadI32();
        else if (fid == 4 && ft == thrift::kI32) d.encoding = r.ReadI32();
        else if (fid == 5 && ft == thrift::kI32) d.definition_levels_byte_length = r.ReadI32();
        else if (fid == 6 && ft == thrift::kI32) d.repetition_levels_byte_length = r.ReadI32();
        else if (fid == 7 && (ft == thrift::kTrue || ft == thrift::kFalse)) d.is_compressed = r.ReadBool(ft);
        else r.Skip(ft);
      }
      r.StructEnd();
      h->data_v2 = d;
    } else {
      r.Skip(t);
    }
  }
  r.StructEnd();
  if (!r.ok()) return r.status();
  *consumed = r.position();
  return Status::Ok();
}

void SerializePageHeader(const PageHeader& h, std::string* out) {
  Writer w;
  w.StructBegin();
  w.FieldI32(1, h.type);
  w.FieldI32(2, h.uncompressed_page_size);
  w.FieldI32(3, h.compressed_page_size);
  if (h.crc) w.FieldI32(4, *h.crc);
  if (h.data) {
    w.FieldStructBegin(5);
    w.FieldI32(1, h.data->num_values);
    w.FieldI32(2, h.data->encoding);
    w.FieldI32(3, h.data->definition_level_encoding);
    w.FieldI32(4, h.data->repetition_level_encoding);
    if (h.data->statistics) WriteStatistics(w, 5, *h.data->statistics);
    w.StructEnd();
  }
  if (h.dict) {
    w.FieldStructBegin(7);
    w.FieldI32(1, h.dict->num_values);
    w.FieldI32(2, h.dict->encoding);
    w.StructEnd();
  }
  if (h.data_v2) {
    const DataPageHeaderV2& d = *h.data_v2;
    w.FieldStructBegin(8);
    w.FieldI32(1, d.num_values);
    w.FieldI32(2, d.num_nulls);
    w.FieldI32(3, d.num_rows);
    w.FieldI32(4, d.encoding);
    w.FieldI32(5, d.definition_levels_byte_length);
    w.FieldI32(6, d.repetition_levels_byte_length);
    w.FieldBool(7, d.is_compressed);
    if (d.statistics) WriteStatistics(w, 8, *d.statistics);
    w.StructEnd();
  }
  w.StructEnd();
  out->append(w.buffer());
}

void SerializeFileMetaData(const FileMetaData& md, std::string* out) {
  Writer w;
  w.StructBegin();
  w.FieldI32(1, md.version);
  w.FieldListBegin(2, thrift::kStruct, static_cast<uint32_t>(md.schema.size()));
  for (const SchemaElement& e : md.schema) {
    w.StructBegin();
    if (e.type) w.FieldI32(1, *e.type);
    if (e.type && *e.type == FIXED_LEN_BYTE_ARRAY) w.FieldI32(2, e.type_length);
    if (e.repetition) w.FieldI32(3, *e.repetition);
    w.FieldBinary(4, e.name);
    if (!e.type) w.FieldI32(5, e.num_children);
    if (e.converted_type) w.FieldI32(6, *e.converted_type);
    if (e.logical.kind != Logical::kNone) WriteLogicalType(w, e.logical);
    w.StructEnd();
  }
  w.FieldI64(3, md.num_rows);
  w.FieldListBegin(4, thrift::kStruct, static_cast<uint32_t>(md.row_groups.size()));
  for (const RowGroup& g : md.row_groups) {
    w.StructBegin();
    w.FieldListBegin(1, thrift::kStruct, static_cast<uint32_t>(g.columns.size()));
    int64_t compressed = 0;
    for (const ColumnChunk& c : g.columns) {
      w.StructBegin();
      w.FieldI64(2, c.file_offset);
      const ColumnMetaData& m = *c.meta;
      compressed += m.total_compressed_size;
      w.FieldStructBegin(3);
      w.FieldI32(1, m.type);
      w.FieldListBegin(2, thrift::kI32, static_cast<uint32_t>(m.encodings.size()));
      for (int32_t e : m.encodings) w.Zigzag(e);
      w.FieldListBegin(3, thrift::kBinary, static_cast<uint32_t>(m.path.size()));
      for (const std::string& p : m.path) w.Binary(p);
      w.FieldI32(4, m.codec);
      w.FieldI64(5, m.num_values);
      w.FieldI64(6, m.total_uncompressed_size);
      w.FieldI64(7, m.total_compressed_size);
      w.FieldI64(9, m.data_page_offset);
      if (m.dictionary_page_offset) w.FieldI64(11, *m.dictionary_page_offset);
      if (m.statistics) WriteStatistics(w, 12, *m.statistics);
      w.StructEnd();
      w.StructEnd();
    }
    w.FieldI64(2, g.total_byte_size);
    w.FieldI64(3, g.num_rows);
    if (!g.columns.empty() && g.columns[0].meta) {
      const ColumnMetaData& m0 = *g.columns[0].meta;
      w.FieldI64(5, m0.dictionary_page_offset ? *m0.dictionary_page_offset : m0.data_page_offset);
    }
    w.FieldI64(6, compressed);
    w.StructEnd();
  }
  if (!md.key_value_metadata.empty()) {
    w.FieldListBegin(5, thrift::kStruct, static_cast<uint32_t>(md.key_value_metadata.size()));
    for (const KeyValue& kv : md.key_value_metadata) {
      w.StructBegin();
      w.FieldBinary(1, kv.key);
      w.FieldBinary(2, kv.value);
      w.StructEnd();
    }
  }
  w.FieldBinary(6, md.created_by);
  // ColumnOrder: TYPE_ORDER for every leaf, so readers trust min_value/max_value.
  size_t leaves = 0;
  for (const SchemaElement& e : md.schema) leaves += e.type.has_value();
  w.FieldListBegin(7, thrift::kStruct, static_cast<uint32_t>(leaves));
  for (size_t i = 0; i < leaves; ++i) {
    w.StructBegin();
    w.FieldStructBegin(1);
    w.StructEnd();
    w.StructEnd();
  }
  w.StructEnd();
  out->append(w.buffer());
}

const char* TypeName(int32_t type) {
  switch (type) {
    case BOOLEAN: return "BOOLEAN";
    case INT32: return "INT32";
    case INT64: return "INT64";
    case INT96: return "INT96";
    case FLOAT: return "FLOAT";
    case DOUBLE: return "DOUBLE";
    case BYTE_ARRAY: return "BYTE_ARRAY";
    case FIXED_LEN_BYTE_ARRAY: return "FIXED_LEN_BYTE_ARRAY";
  }
  return "UNKNOWN_TYPE";
}

const char* EncodingName(int32_t e) {
  switch (e) {
    case PLAIN: return "PLAIN";
    case PLAIN_DICTIONARY: return "PLAIN_DICTIONARY";
    case RLE: return "RLE";
    case BIT_PACKED: return "BIT_PACKED";
    case DELTA_BINARY_PACKED: return "DELTA_BINARY_PACKED";
    case DELTA_LENGTH_BYTE_ARRAY: return "DELTA_LENGTH_BYTE_ARRAY";
    case DELTA_BYTE_ARRAY: return "DELTA_BYTE_ARRAY";
    case RLE_DICTIONARY: return "RLE_DICTIONARY";
    case BYTE_STREAM_SPLIT: return "BYTE_STREAM_SPLIT";
  }
  return "UNKNOWN_ENCODING";
}

const char* CodecName(int32_t c) {
  switch (c) {
    case UNCOMPRESSED: return "UNCOMPRESSED";
    case SNAPPY: return "SNAPPY";
    case GZIP: return "GZIP";
    case LZO: return "LZO";
    case BROTLI: return "BROTLI";
    case LZ4: return "LZ4";
    case ZSTD: return "ZSTD";
    case LZ4_RAW: return "LZ4_RAW";
  }
  return "UNKNOWN_CODEC";
}

}  // namespace strata::features::pq
