// Private to the collection layer: one sparse vector field of a segment.
//
// A SparseColumn keeps the rows' sparse vectors (CSR: per-row offsets into
// index/value arrays, each row sorted by term id) and an inverted index over
// them: per term id, a posting list of (row, weight) in row order with the
// largest and smallest weight, so a query can bound what a term can add.
// Rows are appended in increasing order (growing segment, rewrites), which
// keeps posting lists sorted without a separate build step.
//
// Search is exact top-k by dot product with max-score pruning: query terms
// are ordered by their upper bound; once k candidates are held, the terms
// whose summed bounds cannot lift a row over the k-th score become
// non-essential, rows are enumerated only from the essential terms' lists
// and the rest are probed (by binary search) only while the row can still
// beat the threshold. Only rows sharing a term with the query are candidates.
//
// Not thread-safe by itself: the collection's lock guards appends (growing
// segment only); sealed segments' columns are immutable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <strata/core/status.h>
#include <strata/vector/schema.h>

#include "vector/payload_index.h"

namespace strata::vector::internal {

// Checks a sparse vector (same lengths, unique indices, finite values) and
// returns it sorted by index.
Status NormalizeSparse(const SparseVector& in, SparseVector* out);

class SparseColumn {
 public:
  struct Posting {
    std::vector<uint32_t> rows;
    std::vector<float> values;
    float max = 0, min = 0;
  };

  // Appends `v` (sorted, unique indices) as row `row`, which must be >= every
  // row appended before; rows skipped have no sparse vector.
  void Append(uint32_t row, const uint32_t* idx, const float* val, size_t n);
  // Row `row`'s vector (empty when it has none).
  size_t RowSize(uint32_t row) const;
  SparseVector Row(uint32_t row) const;
  bool Has(uint32_t row) const { return RowSize(row) > 0; }
  size_t present() const { return present_; }
  const Posting* Find(uint32_t term) const;
  size_t MemoryBytes() const;

  // The k best rows by dot product with the query (sorted indices, weights
  // already scaled by IDF when the field has that modifier), among rows in
  // `allowed` (every row when null), best first (ties: lower row first).
  std::vector<std::pair<uint32_t, float>> Search(const SparseVector& query, size_t k,
                                                 const RowSet* allowed) const;

  // .dat meta encoding of the rows [0, rows): per row the entry count, then
  // the indices and values. Decode returns false on a truncated input.
  void Encode(uint32_t rows, std::string* out) const;
  bool Decode(uint32_t rows, std::string_view* in);

 private:
  std::vector<uint64_t> offsets_{0};  // rows + 1 (rows after the last append: none)
  std::vector<uint32_t> indices_;
  std::vector<float> values_;
  std::unordered_map<uint32_t, Posting> postings_;
  size_t present_ = 0;  // rows with at least one entry
};

}  // namespace strata::vector::internal
