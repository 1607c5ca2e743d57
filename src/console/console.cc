#include <chrono>

#include <nlohmann/json.hpp>

#include <strata/console/console.h>
#include <strata/core/aead.h>
#include <strata/core/clock.h>
#include <strata/core/log.h>
#include <strata/core/sigv4.h>
#include <strata/core/strings.h>

#include "console/assets.h"
#include "console/console_internal.h"

namespace strata::console {
namespace {

constexpr log::Logger kLog("console");
constexpr std::string_view kCookie = "strata_console";
constexpr size_t kMaxSessions = 10000;

int64_t NowMs() { return NowUnixNanos() / 1'000'000; }

// The value of cookie `name` in a Cookie header, or "".
std::string_view CookieValue(std::string_view header, std::string_view name) {
  for (std::string_view part : Split(header, ';')) {
    part = Trim(part);
    if (part.size() > name.size() && StartsWith(part, name) && part[name.size()] == '=')
      return part.substr(name.size() + 1);
  }
  return {};
}

// An Origin header that names another host than the one asked (a page of
// another site posting to the console) is refused whatever the method.
bool CrossOrigin(const http::Request& req) {
  auto origin = req.Header("Origin");
  if (!origin || *origin == "null") return origin.has_value();
  auto host = req.Header("Host");
  size_t scheme = origin->find("://");
  std::string_view o = scheme == std::string_view::npos ? *origin : origin->substr(scheme + 3);
  return !host || !IEquals(o, *host);
}

void SecurityHeaders(http::ResponseWriter& w) {
  w.AddHeader("X-Content-Type-Options", "nosniff");
  w.AddHeader("X-Frame-Options", "DENY");
  w.AddHeader("Referrer-Policy", "same-origin");
  w.AddHeader("Cache-Control", "no-store");
}

void ServeAsset(http::Request& req, http::ResponseWriter& w, std::string_view name) {
  const Asset* a = FindAsset(name);
  if (a == nullptr || (req.method != "GET" && req.method != "HEAD")) {
    SendError(w, 404, "NotFound", "no such console page");
    return;
  }
  SecurityHeaders(w);
  w.AddHeader("Content-Security-Policy",
              "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; "
              "frame-ancestors 'none'; form-action 'self'; base-uri 'none'");
  w.AddHeader("Content-Type", a->content_type);
  (void)w.Send(std::string_view(reinterpret_cast<const char*>(a->data), a->size));
}

}  // namespace

void SendJson(http::ResponseWriter& w, int status, const std::string& json) {
  w.SetStatus(status);
  SecurityHeaders(w);
  w.AddHeader("Content-Type", "application/json");
  (void)w.Send(json);
}

void SendError(http::ResponseWriter& w, int status, std::string_view code,
               std::string_view message) {
  SendJson(w, status, nlohmann::json{{"error", code}, {"message", message}}.dump());
}

Console::Impl::Impl(ConsoleOptions o)
    : opts(std::move(o)),
      history(static_cast<size_t>(opts.metrics_window_s) * 1000 /
                  static_cast<size_t>(std::max(1, opts.metrics_interval_ms)) +
              1) {}

std::optional<std::pair<ConsoleUser, Session>> Console::Impl::Authenticate(
    http::Request& req, http::ResponseWriter& w) {
  std::string_view id;
  if (auto c = req.Header("Cookie")) id = CookieValue(*c, kCookie);
  std::optional<Session> s;
  if (!id.empty()) {
    std::lock_guard lock(mu);
    auto it = sessions.find(std::string(id));
    if (it != sessions.end() && it->second.expires_ms > NowMs())
      s = it->second;
    else if (it != sessions.end())
      sessions.erase(it);
  }
  std::optional<ConsoleUser> u;
  if (s && opts.find_user) u = opts.find_user(s->access_key);
  if (!u) {  // no session, expired, or the user was removed since
    SendError(w, 401, "Unauthorized", "not signed in (or the session expired): sign in first");
    return std::nullopt;
  }
  return std::make_pair(std::move(*u), std::move(*s));
}

void Console::Impl::Login(http::Request& req, http::ResponseWriter& w) {
  auto type = req.Header("Content-Type");
  if (req.method != "POST" || !type || !StartsWith(ToLower(*type), "application/json")) {
    SendError(w, 400, "BadRequest", "sign in with POST and a JSON body {access_key, secret_key}");
    return;
  }
  auto body = req.ReadAllBody(64 * 1024);
  nlohmann::json j;
  if (body) j = nlohmann::json::parse(*body, nullptr, false);
  if (!body || !j.is_object() || !j.contains("access_key") || !j["access_key"].is_string() ||
      !j.contains("secret_key") || !j["secret_key"].is_string()) {
    SendError(w, 400, "BadRequest",
              "expected a JSON object with access_key and secret_key strings");
    return;
  }
  const std::string ak = j["access_key"], sk = j["secret_key"];
  std::optional<ConsoleUser> u;
  if (opts.find_user && !ak.empty()) u = opts.find_user(ak);
  // Hashes compared, so neither the secret's length nor its prefix is timed.
  if (!u || !sigv4::ConstantTimeEquals(sigv4::PayloadSha256Hex(u->secret_key),
                                       sigv4::PayloadSha256Hex(sk))) {
    kLog.Info("console sign-in refused for access key \"{}\" from {}", ak, req.remote_addr);
    SendError(w, 401, "InvalidCredentials", "wrong access key or secret key");
    return;
  }
  Session s;
  s.access_key = u->access_key;
  s.csrf = HexEncode(crypto::RandomString(32));
  s.expires_ms = NowMs() + opts.session_ttl_s * 1000;
  std::string id = HexEncode(crypto::RandomString(32));
  {
    std::lock_guard lock(mu);
    if (sessions.size() >= kMaxSessions) {
      const int64_t now = NowMs();
      std::erase_if(sessions, [now](const auto& kv) { return kv.second.expires_ms <= now; });
      if (sessions.size() >= kMaxSessions) sessions.erase(sessions.begin());
    }
    sessions[id] = s;
  }
  w.AddHeader("Set-Cookie", fmt::format("{}={}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}",
                                        kCookie, id, opts.session_ttl_s));
  SessionInfo(*u, s, w);
}

void Console::Impl::Logout(http::Request& req, http::ResponseWriter& w) {
  if (auto c = req.Header("Cookie")) {
    std::lock_guard lock(mu);
    sessions.erase(std::string(CookieValue(*c, kCookie)));
  }
  w.AddHeader("Set-Cookie",
              fmt::format("{}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0", kCookie));
  SendJson(w, 200, "{}");
}

void Console::Impl::SessionInfo(const ConsoleUser& u, const Session& s, http::ResponseWriter& w) {
  nlohmann::json j = {
      {"user", u.name},
      {"access_key", u.access_key},
      {"admin", u.admin},
      {"csrf", s.csrf},
      {"s3_endpoint", opts.s3_endpoint},
      {"services",
       {{"s3", static_cast<bool>(opts.s3)},
        {"vector", static_cast<bool>(opts.vector)},
        {"features", static_cast<bool>(opts.features)},
        {"serving_log", !opts.serving_log_dir.empty()}}},
      {"datapath",
       {{"warm_dirs", opts.warm_dirs.size()}, {"checkpoint_dirs", opts.checkpoint_dirs.size()}}}};
  SendJson(w, 200, j.dump());
}

void Console::Impl::Api(http::Request& req, http::ResponseWriter& w) {
  std::string_view p = req.path.substr(std::string_view("/console/api/").size());
  if (CrossOrigin(req)) {
    SendError(w, 403, "Forbidden", "cross-origin request refused");
    return;
  }
  if (p == "login") return Login(req, w);
  auto who = Authenticate(req, w);
  if (!who) return;
  const auto& [user, session] = *who;
  if (req.method != "GET" && req.method != "HEAD") {
    auto token = req.Header("X-CSRF-Token");
    if (!token || token->size() != session.csrf.size() ||
        !sigv4::ConstantTimeEquals(*token, session.csrf)) {
      SendError(w, 403, "InvalidCsrfToken",
                "missing or wrong X-CSRF-Token header (reload the console to get a new one)");
      return;
    }
  }
  if (p == "session") return SessionInfo(user, session, w);
  if (p == "logout") return Logout(req, w);
  if (p == "presign") return Presign(req, w, user);
  if (p == "s3" || StartsWith(p, "s3/")) return S3(req, w, user, p.substr(2));
  if (StartsWith(p, "vector/")) return Vector(req, w, user, p.substr(6));
  if (p == "features" || StartsWith(p, "features/")) return Features(req, w, p.substr(8));
  if (p == "vector-filter") return VectorFilter(req, w);
  if (p == "fs/volume") return FsVolume(req, w, user);
  if (p == "datapath/warm") return WarmJobs(req, w, user);
  if (p == "datapath/checkpoints") return LocalCheckpoints(req, w, user);
  if (p == "metrics") {
    if (req.method != "GET")
      return SendError(w, 405, "MethodNotAllowed", "metrics are read with GET");
    return SendJson(w, 200, history.ChartsJson());
  }
  SendError(w, 404, "NotFound", fmt::format("no console API \"{}\"", p));
}

Console::Console(ConsoleOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Console::~Console() { Stop(); }

Status Console::Start() {
  if (!impl_->opts.metrics_text || impl_->sampler.joinable()) return Status::Ok();
  impl_->sampler = std::thread([this] {
    std::unique_lock lock(impl_->mu);
    while (!impl_->stopping) {
      lock.unlock();
      SampleMetrics(NowMs());
      lock.lock();
      impl_->cv.wait_for(lock, std::chrono::milliseconds(impl_->opts.metrics_interval_ms),
                         [this] { return impl_->stopping; });
    }
  });
  return Status::Ok();
}

void Console::Stop() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  if (impl_->sampler.joinable()) impl_->sampler.join();
}

void Console::SampleMetrics(int64_t now_ms) {
  if (impl_->opts.metrics_text) impl_->history.Add(now_ms, impl_->opts.metrics_text());
}

bool Console::Serves(std::string_view path) {
  return path == "/" || path == "/console" || StartsWith(path, "/console/");
}

void Console::Handle(http::Request& req, http::ResponseWriter& w) {
  std::string_view p = req.path;
  if (p == "/" || p == "/console" || p == "/console/") return ServeAsset(req, w, "index.html");
  if (StartsWith(p, "/console/assets/")) return ServeAsset(req, w, p.substr(16));
  if (StartsWith(p, "/console/api/")) return impl_->Api(req, w);
  SendError(w, 404, "NotFound", "no such console page");
}

void Console::HandleTransportError(int status, std::string_view message, http::ResponseWriter& w) {
  SendError(w, status, "BadRequest", message);
}

}  // namespace strata::console
