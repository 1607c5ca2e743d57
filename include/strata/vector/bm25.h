// A text-to-sparse helper: a tokenizer and BM25 weights computed from a
// collection's own text, so hybrid (dense + sparse) search can be tried
// without a model.
//
// The split follows Qdrant's BM25 convention: a document's sparse vector
// holds, per term, the BM25 term-frequency part
//   tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avg_len))
// and the IDF part is applied at query time by a sparse field declared with
// SparseModifier::kIdf; a query's vector has weight 1 per distinct term.
//
// Tokens: maximal runs of ASCII letters and digits (and any byte >= 0x80, so
// UTF-8 words stay whole), ASCII lowercased, with a short list of English
// stop words removed. A term's id is the 32-bit FNV-1a hash of the token, so
// documents and queries agree without a vocabulary (distinct tokens may
// collide, rarely).
//
// Pure functions, thread-safe; Bm25IndexField writes through Collection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <strata/core/result.h>
#include <strata/vector/collection.h>
#include <strata/vector/schema.h>

namespace strata::vector {

struct Bm25Options {
  float k1 = 1.2f;  // term-frequency saturation
  float b = 0.75f;  // length normalisation (0: none, 1: full)
  // Test-only hook (unset in production): called after the texts are read
  // and before the vectors are written, where a concurrent delete can land.
  std::function<void()> after_read;
};

std::vector<std::string> Bm25Tokenize(std::string_view text);
uint32_t Bm25TermId(std::string_view token);
// Weight 1 per distinct term of the text.
SparseVector Bm25QueryVector(std::string_view text);
// The BM25 term-frequency weights of one document, given the average
// document length (in tokens) of the corpus.
SparseVector Bm25DocumentVector(std::string_view text, double avg_len, const Bm25Options& o = {});

struct Bm25IndexResult {
  size_t points = 0;       // points given a sparse vector
  double avg_len = 0;      // average tokens per document
  uint64_t operation = 0;  // the WAL sequence number of the write
};

// Reads the string payload key `text_field` of every point, computes the
// average length, and writes each point's BM25 document vector into the
// sparse field `sparse_name` (one atomic update; points without the key, or
// whose text has no tokens, are left as they are; a point deleted after its
// text was read is skipped, not an error). kInvalidArgument when the
// sparse field does not exist.
Result<Bm25IndexResult> Bm25IndexField(Collection& c, const std::string& text_field,
                                       const std::string& sparse_name, const Bm25Options& o = {},
                                       const WriteOptions& wo = {});

}  // namespace strata::vector
