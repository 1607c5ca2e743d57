// UserStore: the S3 users of a running server and their user policies,
// changed while the server runs (the admin API, `strata user add|rm|ls|policy`)
// and consulted by the frontend on every request.
//
// Readers take a Snapshot (one shared_ptr copy under a shared lock): a table
// that never changes, so a request sees one consistent set of users from
// authentication to authorization, and writers never wait for requests.
// Writers build a new table, persist it (when the store has a path: JSON,
// mode 0600, replaced atomically), then publish it; a failed write changes
// nothing. The fixed users given at Open (root) are served but never written.
//
// Thread-safety: every method may be called concurrently.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <strata/core/result.h>

namespace strata::s3 {

class Policy;  // src/s3/policy.h

struct User {
  std::string name;
  std::string access_key;  // also the user's canonical id (ListBuckets Owner ID, ACL grants)
  std::string secret_key;
  bool admin = false;  // sees and manages every bucket
  std::string policy;  // user (identity) policy document, JSON; "" none
};

// Random credentials as `strata user add` makes them: "STRATA" + 14 of A-Z0-9,
// and 40 letters and digits.
std::string NewAccessKey();
std::string NewSecretKey();

class UserStore {
 public:
  struct Entry {
    User user;
    std::shared_ptr<const Policy> policy;  // parsed User::policy; nullptr none
  };
  struct Table {
    std::unordered_map<std::string, std::shared_ptr<const Entry>> by_key;  // access key ->
    std::vector<std::shared_ptr<const Entry>> ordered;                     // in creation order
  };

  // `path` "" keeps the users in memory only. A missing file is an empty
  // store; the legacy format (lines "name access_key secret_key") is read too.
  static Result<std::unique_ptr<UserStore>> Open(std::vector<User> fixed, std::string path);
  ~UserStore();

  std::shared_ptr<const Table> Snapshot() const {
    std::shared_lock lock(mu_);
    return table_;
  }

  // Creates a user; empty keys are generated. Names follow IAM's rules
  // (1-64 of A-Z a-z 0-9 +=,.@_-). kAlreadyExists for a taken name or key.
  Result<User> Add(User user);
  Status Remove(std::string_view name);
  // Sets (a JSON policy document, checked: MalformedPolicy) or removes the user's policy.
  Status SetPolicy(std::string_view name, std::optional<std::string> policy);
  std::optional<User> Find(std::string_view name) const;
  std::vector<User> List() const;

 private:
  UserStore() = default;
  // Persists, then swaps in `next`; write_mu_ held. Readers wait only for the swap.
  Status Publish(std::shared_ptr<Table> next);

  std::string path_;
  std::vector<std::string> fixed_keys_;  // never persisted
  mutable std::mutex write_mu_;          // serialises Add/Remove/SetPolicy
  mutable std::shared_mutex mu_;
  std::shared_ptr<const Table> table_;  // guarded by mu_
};

}  // namespace strata::s3
