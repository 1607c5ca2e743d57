#include "vector/sparse_index.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <queue>

#include <fmt/format.h>

#include <strata/core/coding.h>

namespace strata::vector::internal {

Status NormalizeSparse(const SparseVector& in, SparseVector* out) {
  if (in.indices.size() != in.values.size()) {
    return Status::InvalidArgument(
        fmt::format("a sparse vector needs as many values as indices (got {} indices, {} values)",
                    in.indices.size(), in.values.size()));
  }
  std::vector<size_t> order(in.indices.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return in.indices[a] < in.indices[b]; });
  out->indices.clear();
  out->values.clear();
  out->indices.reserve(order.size());
  out->values.reserve(order.size());
  for (size_t i : order) {
    if (!out->indices.empty() && out->indices.back() == in.indices[i]) {
      return Status::InvalidArgument(
          fmt::format("a sparse vector's indices must be unique; {} appears twice", in.indices[i]));
    }
    if (!std::isfinite(in.values[i]))
      return Status::InvalidArgument("a sparse vector has a NaN or infinite value");
    out->indices.push_back(in.indices[i]);
    out->values.push_back(in.values[i]);
  }
  return Status::Ok();
}

void SparseColumn::Append(uint32_t row, const uint32_t* idx, const float* val, size_t n) {
  while (offsets_.size() <= row) offsets_.push_back(indices_.size());
  if (offsets_.size() > size_t(row) + 1) return;  // out of order: rows only grow
  indices_.insert(indices_.end(), idx, idx + n);
  values_.insert(values_.end(), val, val + n);
  offsets_.push_back(indices_.size());
  if (n > 0) ++present_;
  for (size_t i = 0; i < n; ++i) {
    Posting& p = postings_[idx[i]];
    if (p.rows.empty()) {
      p.max = p.min = val[i];
    } else {
      p.max = std::max(p.max, val[i]);
      p.min = std::min(p.min, val[i]);
    }
    p.rows.push_back(row);
    p.values.push_back(val[i]);
  }
}

size_t SparseColumn::RowSize(uint32_t row) const {
  if (size_t(row) + 1 >= offsets_.size()) return 0;
  return size_t(offsets_[row + 1] - offsets_[row]);
}

SparseVector SparseColumn::Row(uint32_t row) const {
  SparseVector v;
  const size_t n = RowSize(row);
  if (n == 0) return v;
  const uint64_t b = offsets_[row];
  v.indices.assign(indices_.begin() + b, indices_.begin() + b + n);
  v.values.assign(values_.begin() + b, values_.begin() + b + n);
  return v;
}

const SparseColumn::Posting* SparseColumn::Find(uint32_t term) const {
  auto it = postings_.find(term);
  return it == postings_.end() ? nullptr : &it->second;
}

size_t SparseColumn::MemoryBytes() const {
  size_t b = offsets_.capacity() * 8 + indices_.capacity() * 4 + values_.capacity() * 4;
  for (const auto& [t, p] : postings_) b += 48 + p.rows.capacity() * 4 + p.values.capacity() * 4;
  return b;
}

std::vector<std::pair<uint32_t, float>> SparseColumn::Search(const SparseVector& query, size_t k,
                                                             const RowSet* allowed) const {
  struct Term {
    const Posting* p;
    float w;
    float ub;  // the most this term adds to a row's score (>= 0)
    size_t pos = 0;
  };
  std::vector<Term> terms;
  for (size_t i = 0; i < query.indices.size(); ++i) {
    const float w = query.values[i];
    const Posting* p = Find(query.indices[i]);
    if (w == 0 || p == nullptr) continue;
    terms.push_back(Term{p, w, std::max(0.0f, w > 0 ? w * p->max : w * p->min)});
  }
  std::sort(terms.begin(), terms.end(), [](const Term& a, const Term& b) { return a.ub < b.ub; });
  const size_t n = terms.size();
  std::vector<double> prefix(n + 1, 0.0);  // prefix[i]: bounds of terms [0, i)
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + terms[i].ub;

  using Entry = std::pair<float, uint32_t>;  // score, row
  auto better = [](const Entry& a, const Entry& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  std::priority_queue<Entry, std::vector<Entry>, decltype(better)> heap(better);  // top: worst
  double threshold = -std::numeric_limits<double>::infinity();
  size_t first_essential = 0;  // terms below it cannot lift a row over the threshold alone
  if (k == 0) return {};
  while (true) {
    uint32_t row = std::numeric_limits<uint32_t>::max();
    for (size_t t = first_essential; t < n; ++t) {
      const Term& x = terms[t];
      if (x.pos < x.p->rows.size()) row = std::min(row, x.p->rows[x.pos]);
    }
    if (row == std::numeric_limits<uint32_t>::max()) break;
    double score = 0;
    for (size_t t = first_essential; t < n; ++t) {
      Term& x = terms[t];
      if (x.pos < x.p->rows.size() && x.p->rows[x.pos] == row) {
        score += double(x.w) * x.p->values[x.pos];
        ++x.pos;
      }
    }
    if (allowed != nullptr && !allowed->Test(row)) continue;
    bool pruned = false;
    for (size_t t = first_essential; t-- > 0;) {
      if (heap.size() == k && score + prefix[t + 1] <= threshold) {
        pruned = true;
        break;
      }
      Term& x = terms[t];
      const auto& rows = x.p->rows;
      x.pos = size_t(std::lower_bound(rows.begin() + x.pos, rows.end(), row) - rows.begin());
      if (x.pos < rows.size() && rows[x.pos] == row) score += double(x.w) * x.p->values[x.pos];
    }
    if (pruned) continue;
    Entry e{float(score), row};
    if (heap.size() < k) {
      heap.push(e);
    } else if (better(e, heap.top())) {
      heap.pop();
      heap.push(e);
    }
    if (heap.size() == k) {
      threshold = heap.top().first;
      while (first_essential < n && prefix[first_essential + 1] <= threshold) ++first_essential;
    }
  }
  std::vector<std::pair<uint32_t, float>> out;
  out.reserve(heap.size());
  while (!heap.empty()) {
    out.emplace_back(heap.top().second, heap.top().first);
    heap.pop();
  }
  std::reverse(out.begin(), out.end());
  return out;
}

void SparseColumn::Encode(uint32_t rows, std::string* out) const {
  for (uint32_t r = 0; r < rows; ++r) PutFixed32(out, uint32_t(RowSize(r)));
  for (uint32_t r = 0; r < rows; ++r) {
    const size_t n = RowSize(r);
    if (n > 0) out->append(reinterpret_cast<const char*>(&indices_[offsets_[r]]), n * 4);
  }
  for (uint32_t r = 0; r < rows; ++r) {
    const size_t n = RowSize(r);
    if (n > 0) out->append(reinterpret_cast<const char*>(&values_[offsets_[r]]), n * 4);
  }
}

bool SparseColumn::Decode(uint32_t rows, std::string_view* in) {
  if (in->size() < size_t(rows) * 4) return false;
  std::vector<uint32_t> counts(rows);
  uint64_t total = 0;
  for (uint32_t r = 0; r < rows; ++r) {
    counts[r] = DecodeFixed32(in->data() + size_t(r) * 4);
    total += counts[r];
  }
  in->remove_prefix(size_t(rows) * 4);
  if (in->size() / 8 < total) return false;
  const char* idx = in->data();
  const char* val = in->data() + total * 4;
  std::vector<uint32_t> ibuf;
  std::vector<float> vbuf;
  uint64_t at = 0;
  for (uint32_t r = 0; r < rows; ++r) {
    ibuf.resize(counts[r]);
    vbuf.resize(counts[r]);
    std::memcpy(ibuf.data(), idx + at * 4, size_t(counts[r]) * 4);
    std::memcpy(vbuf.data(), val + at * 4, size_t(counts[r]) * 4);
    at += counts[r];
    Append(r, ibuf.data(), vbuf.data(), counts[r]);
  }
  in->remove_prefix(total * 8);
  return true;
}

}  // namespace strata::vector::internal
